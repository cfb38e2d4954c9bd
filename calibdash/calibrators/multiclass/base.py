"""The contract every multi-class calibrator follows, and the checks at its edge.

A multi-class calibrator maps a classifier's K-class output to calibrated class probabilities with scikit-learn's
conventions (as :mod:`calibdash.calibrators.base`): hyperparameters are constructor arguments stored unchanged;
``fit`` validates, learns (state ends in ``_``) and returns ``self``. ``P`` holds probabilities (rows summing to 1
within :data:`~calibdash.core.validation.SUM_TOLERANCE`, then divided by their sum) or, with ``logits=True``, logits;
every method sees both through :class:`Scores`. A row's logits and log-probabilities differ by a constant, which the
softmax ignores: temperature scaling gives the same map on either; vector, matrix and Dirichlet scaling do not, and
use what was given. A class may be absent from the labels (each method says what it predicts for it).

Subclasses implement ``_fit(x, y, w)`` and ``_predict(x)`` on a validated :class:`Scores` (``w``: None or a float
array), and ``_export_state()`` / ``_import_state(state)`` for the JSON file (:mod:`calibdash.io.export`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Sequence

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator

from ..base import Calibrator, HyperParam
from ...core.errors import DataError
from ...core.validation import check_classes, check_weights, class_matrix, probability_rows

__all__ = ["MulticlassCalibrator", "Scores", "as_scores", "LOG_FLOOR"]

#: Probabilities are floored at this before their logarithm (log 1e-300 = -690.8): a probability 0 gives a finite
#: log-score.
LOG_FLOOR = 1e-300


def normalise_rows(Q: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; an all-zero row becomes uniform, as scikit-learn's ``CalibratedClassifierCV`` since
    its PR #19421 (netcal gives NaN there)."""
    Q = np.asarray(Q, dtype=float)
    total = Q.sum(axis=1, keepdims=True)
    out = np.empty_like(Q)
    zero = total[:, 0] <= 0
    np.divide(Q, total, out=out, where=~zero[:, None])
    out[zero] = 1.0 / Q.shape[1]
    return out


@dataclass(frozen=True)
class Scores:
    """A validated K-class output: ``given`` (n, K), the checked probabilities renormalised, or the logits (``logits``);
    ``as_given``, probabilities as the caller gave them before each row was divided by its sum (None: ``given``)."""

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
        """Per-class scores in [0, 1]: the probabilities as given (clipped at 1), or the softmax of the logits. A
        row's division by its sum moves each value by a few ulps (1% for rows rounded to 2 decimals), differently
        in each row, and would split scores equal as given: what scores one class (the composites) reads these."""
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
    """``P`` checked as probabilities or logits and wrapped; ``k``: the number of columns it must have."""
    if isinstance(P, Scores):
        x = P
    elif logits:
        x = Scores(class_matrix(P, "logits"), True)
    else:
        a = class_matrix(P, "probabilities")
        x = Scores(probability_rows(a, "probabilities"), False, a)
    if k is not None and x.k != k:
        raise DataError(f"the table has {x.k} columns but the calibrator was fitted on {k} classes.")
    return x


class MulticlassCalibrator(BaseEstimator):
    """Base class of the multi-class calibrators: validation at the edge, learned state in ``_fit``.

    Class attributes: ``name`` (registry key), ``composite`` (True: the name takes a binary method after a colon,
    ``"ovr:<binary>"``), ``label``, ``summary``, ``paper``, ``hyperparams`` (in the UI's order), ``order`` (place in
    every list; None: after the others, by name), ``color`` (``"#RRGGBB"``; None: picked from the name), ``parametric``
    (a fixed, small number of parameters, so a fit on a content-keyed sample of large data is as good:
    :func:`calibdash.evaluation.holdout.evaluate_classes` does so), ``input_form`` (the scores the paper calibrates:
    ``"logits"`` for Guo et al.'s scalings, else ``"probabilities"``; a caller that can get both gives this one).
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
    composite: ClassVar[bool] = False
    input_form: ClassVar[str] = "probabilities"
    _keep = Calibrator._keep
    _check_fitted = Calibrator._check_fitted

    def __init__(self, logits: bool = False):
        self.logits = logits

    def fit(self, P, y, sample_weight=None) -> "MulticlassCalibrator":
        """Learn the calibration map.

        Parameters
        ----------
        P : array-like of shape (n, K)
            Probabilities (rows summing to 1) or, with ``logits=True``, logits.
        y : array-like of shape (n,)
            Class indices 0..K-1 (in the columns' order).
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

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, x: Scores) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
