"""The contract every multi-class calibrator follows, and the checks at its edge.

A multi-class calibrator maps a classifier's K-class output, one row per
example, to calibrated class probabilities. It follows scikit-learn's
conventions, like the binary calibrators (:mod:`calibdash.calibrators.base`):

* hyperparameters are constructor arguments with documented defaults, stored
  unchanged on ``self``; each class declares them as
  :class:`~calibdash.calibrators.base.HyperParam` records for the UI;
* ``fit(P, y, sample_weight=None)`` validates, learns, returns ``self``;
  learned state ends in ``_``. A row of weight ``w`` counts as ``w`` rows;
* ``predict_proba(P)`` gives an (n, K) array of rows that sum to 1;
  ``predict(P)`` the most probable class index.

The input ``P`` holds either probabilities or logits, which the constructor
argument ``logits`` says (default False: probabilities). Probabilities must be
non-negative rows summing to 1 within :data:`~calibdash.core.validation.SUM_TOLERANCE` (they are then
divided by their sum); logits are any finite reals and are softmaxed. Every
method sees both forms through :class:`Scores`: the probabilities, and the
log-scores (the logits as given, or the logarithm of the probabilities clipped
below at :data:`LOG_FLOOR`, so that a probability of exactly 0 stays finite).
A row's logits and its log-probabilities differ by a constant per row, which
the softmax ignores: temperature scaling gives the same map on either;
vector, matrix and Dirichlet scaling do not, and use what was given.

Labels ``y`` are class indices 0..K-1 (the column order of ``P``). A class
may be absent from the fitted labels (a fold that misses a rare class); each
method's docstring says what it predicts for it.

Subclasses implement ``_fit(x, y, w)`` and ``_predict(x)`` on a validated
:class:`Scores` ``x`` (``w``: None for unit weights, else a float array), and
``_export_state()`` / ``_import_state(state)`` for the JSON file
(:mod:`calibdash.io.export`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Sequence

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator

from ..base import HyperParam
from ...core.errors import DataError, NotFittedError
from ...core.validation import check_classes, check_logits, check_weights, class_matrix, probability_rows

__all__ = ["MulticlassCalibrator", "Scores", "as_scores", "LOG_FLOOR"]

#: Probabilities below this are taken as this before their logarithm (log 1e-300 = -690.8), so a
#: probability of exactly 0 gives a finite log-score.
LOG_FLOOR = 1e-300


def normalise_rows(Q: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; a row whose entries are all 0 becomes uniform (1/K each), as
    scikit-learn's ``CalibratedClassifierCV`` does since its PR #19421 (netcal gives NaN there)."""
    Q = np.asarray(Q, dtype=float)
    total = Q.sum(axis=1, keepdims=True)
    out = np.empty_like(Q)
    zero = total[:, 0] <= 0
    np.divide(Q, total, out=out, where=~zero[:, None])
    out[zero] = 1.0 / Q.shape[1]
    return out


@dataclass(frozen=True)
class Scores:
    """A validated K-class output in both forms a method may want.

    Attributes
    ----------
    given : ndarray of shape (n, K)
        The values as given (checked probabilities, renormalised; or logits).
    logits : bool
        Whether ``given`` holds logits.
    as_given : ndarray of shape (n, K), optional
        Probabilities exactly as the caller gave them (in float64), before each row was divided by its
        sum; None: ``given`` (logits, or rows taken as they are).
    """

    given: np.ndarray
    logits: bool
    as_given: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.given.shape[0]

    @property
    def k(self) -> int:
        return self.given.shape[1]

    @cached_property
    def probabilities(self) -> np.ndarray:
        """Rows of probabilities: the given ones, or the softmax of the logits."""
        return softmax(self.given, axis=1) if self.logits else self.given

    @cached_property
    def columns(self) -> np.ndarray:
        """Per-class scores in [0, 1], the same numbers however the table was given: the probabilities
        as given (clipped at 1), or the softmax of the logits. A row's division by its sum, which
        :attr:`given` holds, moves each value by a few ulps (more for rounded input: 1% for rows rounded
        to 2 decimals), differently in each row, so it would split scores that are equal as given;
        what scores one class (the binary methods of one-vs-rest and top-label) reads these."""
        if self.as_given is None:
            return self.probabilities
        return np.minimum(self.as_given, 1.0)

    @cached_property
    def log_scores(self) -> np.ndarray:
        """The logits as given, or the logarithm of the probabilities (floored at :data:`LOG_FLOOR`)."""
        return self.given if self.logits else np.log(np.maximum(self.given, LOG_FLOOR))

    @cached_property
    def log_probabilities(self) -> np.ndarray:
        """Log-softmax of the log-scores: the logarithm of each row's probabilities, finite."""
        return log_softmax(self.log_scores, axis=1)

    def take(self, rows) -> "Scores":
        """The scores of ``rows`` (a mask or indices)."""
        return Scores(self.given[rows], self.logits, None if self.as_given is None else self.as_given[rows])


def as_scores(P, logits: bool, k: int | None = None) -> Scores:
    """Check ``P`` as probabilities or logits (see :func:`~calibdash.core.validation.check_probabilities`,
    :func:`~calibdash.core.validation.check_logits`) and wrap it; ``k``: the number of columns it must have."""
    if isinstance(P, Scores):
        x = P
    else:
        if logits:
            x = Scores(check_logits(P), True)
        else:
            a = class_matrix(P, "probabilities")
            x = Scores(probability_rows(a, "probabilities"), False, a)
    if k is not None and x.k != k:
        raise DataError(f"the table has {x.k} columns but the calibrator was fitted on {k} classes.")
    return x


class MulticlassCalibrator(BaseEstimator):
    """Base class of the multi-class calibrators: validation at the edge, learned state in ``_fit``.

    Class attributes
    ----------------
    name : str
        Registry key (``"temperature"``, ``"dirichlet"``); the composite methods
        (one-vs-rest, top-label) are named ``"ovr:<binary>"`` and ``"top_label:<binary>"``.
    label, summary, paper : str
        Display name, a few words of what it does, and the paper it follows.
    hyperparams : tuple of HyperParam
        The tunable hyperparameters, in the order the UI shows them.
    order : float or None
        Place in every list of multi-class methods; None: after those that declare one, by name.
    color : str or None
        ``"#RRGGBB"``, its colour in every chart; None: picked stably from its name.
    parametric : bool
        Whether the map has a fixed, small number of parameters (the scaling family: temperature,
        vector, matrix, Dirichlet), so that on large data a fit on a sample of the fitting rows is as
        good as one on all of them: :func:`calibdash.evaluation.holdout.evaluate_classes` then fits
        it on a content-keyed sample of ``max_fit_rows`` rows. False (the default): fitted on every row.
    input_form : {"probabilities", "logits"}
        The scores the method's paper calibrates (``"logits"``: Guo et al.'s temperature, vector and
        matrix scaling; ``"probabilities"``: the rest). Every method accepts either (``logits``);
        a caller that can obtain both from a model (:class:`calibdash.sklearn.CalibratedClassifier`)
        gives it this one.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    hyperparams: ClassVar[Sequence[HyperParam]] = ()
    order: ClassVar[float | None] = None
    color: ClassVar[str | None] = None
    parametric: ClassVar[bool] = False
    multiclass: ClassVar[bool] = True
    input_form: ClassVar[str] = "probabilities"

    def __init__(self, logits: bool = False):
        self.logits = logits

    # -- public API ----------------------------------------------------------
    def fit(self, P, y, sample_weight=None) -> "MulticlassCalibrator":
        """Learn the calibration map.

        Parameters
        ----------
        P : array-like of shape (n, K)
            Probabilities (rows summing to 1) or, with ``logits=True``, logits.
        y : array-like of shape (n,)
            Class indices 0..K-1.
        sample_weight : array-like of shape (n,), optional
            Non-negative weight of each row (default 1): a row of weight ``w`` counts as ``w`` rows.

        Returns
        -------
        self
        """
        x = as_scores(P, self.logits)
        labels = check_classes(y, x.n, x.k)
        w = check_weights(sample_weight, x.n)
        self._fit(x, labels, w)
        self.n_classes_ = int(x.k)
        self.n_train_ = int(x.n)
        return self

    def predict_proba(self, P) -> np.ndarray:
        """Calibrated class probabilities, shape (n, K), each row summing to 1."""
        self._check_fitted()
        x = as_scores(P, self.logits, self.n_classes_)
        return normalise_rows(np.clip(np.asarray(self._predict(x), dtype=float), 0.0, None))

    def predict(self, P) -> np.ndarray:
        """The most probable class index of each row after calibration."""
        return np.argmax(self.predict_proba(P), axis=1)

    # -- for subclasses --------------------------------------------------------
    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, x: Scores) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_train_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet: call fit() first.")

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Hyperparameter defaults as a dict (name -> default)."""
        return {h.name: h.default for h in cls.hyperparams}
