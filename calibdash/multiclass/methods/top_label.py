"""Top-label calibration (Gupta & Ramdas, ICLR 2022): the predicted class's probability, calibrated per predicted class."""
from __future__ import annotations

import numbers

import numpy as np
from scipy.special import softmax

from ... import export
from ...calibrators.base import HyperParam
from ...errors import SettingsError
from ..base import Scores, as_scores
from .ovr import BinaryComposite, SubModel

__all__ = ["TopLabelCalibrator", "MIN_ROWS"]

#: Default ``min_rows``: the authors' code (github.com/aigen/df-posthoc-calibration, ``HB_toplabel``)
#: asks 50 points per histogram bin, so a class predicted in fewer than 50 rows gets no bin there.
MIN_ROWS = 50


class TopLabelCalibrator(BinaryComposite):
    """Top-label calibration (Gupta & Ramdas, 2022, "Top-label calibration and multiclass-to-binary
    reductions", ICLR): the multiclass-to-binary (M2B) top-label reduction with any binary calibrator.

    The predicted class ``c(x) = argmax_k P_k(x)`` (the first on ties) is kept. Its probability,
    the top score ``g(x) = P_c(x)``, is calibrated separately for each predicted class ``l``: the
    paper's top-label calibrator (its Algorithm 2 with a binary routine ``A``) fits
    ``h_l = A({(g(X_i), 1{Y_i = l}) : c(X_i) = l})`` on the training rows predicted ``l`` and
    reports the pair ``(c(x), h_c(x)(g(x)))``; the calibrator is top-label calibrated when
    ``P(Y = c(X) | c(X), h(X)) = h(X)``.

    Small classes. A class predicted in fewer than ``min_rows`` training rows (by weight) is
    calibrated by one model pooled over every row's (top score, correct) pair: the paper's
    *confidence* reduction (the same Algorithm with every row in one set). The authors' code
    leaves such a class uncalibrated instead (``HB_toplabel`` gives it ``floor(n / 50) = 0``
    bins and the identity map); we follow the paper's framework rather than the code because
    the identity would report the uncalibrated score for exactly the classes the model rarely
    predicts, and the pooled map is the reduction the paper gives when per-class data are short.
    The default 50 is the authors' points per bin: below it their histogram binning has no bin.
    A set whose rows are all correct or all wrong cannot be fitted by a binary calibrator; it
    gets its observed rate (1 or 0), what binning and isotonic fits give there.

    The row. The predicted class gets ``h = h_c(g)``; the other classes share ``1 - h`` in
    proportion to their probabilities (computed as the softmax of their log-probabilities, so
    with logits the shares stay exact where the probabilities underflow). When the top
    probability is exactly 1 (the others exactly 0, as probabilities given), the others share
    ``1 - h`` equally. The paper calibrates only the pair ``(c, h)`` and says nothing of the
    other entries; proportional sharing keeps their ranking.

    The predicted class. We keep the paper's pair: :meth:`predict_top` returns ``(c, h)``, the
    predicted class unchanged, and top-label measures should be computed from it. In the row of
    :meth:`predict_proba`, though, ``h`` can fall below another class's share (only when
    ``h < 1/2``: a predicted class whose rows at that score are mostly wrong); the row's argmax,
    and so :meth:`predict`, then moves to that class, as for every multi-class method, whose
    ``predict`` is the argmax of its rows.

    Sample weights: the per-class and pooled fits get the rows' weights, and ``min_rows``
    compares the total weight of the rows predicted ``l``, so a row of whole weight ``w``
    counts as ``w`` rows exactly when the binary method's fit does.

    Parameters
    ----------
    binary : str, default "isotonic"
        The binary calibrator's registry name (any of :func:`calibdash.calibrators.available`
        except those that use features). The paper uses histogram binning.
    params : dict, optional
        The binary calibrator's hyperparameters (default: its defaults).
    min_rows : float, default 50
        Training rows (total weight) a predicted class needs for its own model; fewer: the
        pooled model.
    logits : bool, default False
        Whether ``P`` holds logits (softmaxed first) rather than probabilities.

    Attributes
    ----------
    models_ : list
        Per class, its fitted binary calibrator, its constant rate (a float), or None: the
        class uses the pooled model.
    pooled_ : Calibrator or float
        The model fitted on every row's (top score, correct) pair, or its rate.
    """

    name = "top_label"
    prefix = "Top-label"
    base_order = 2000.0
    darken = 0.35
    summary = "the predicted class's probability, calibrated per predicted class"
    paper = "Gupta & Ramdas (ICLR 2022), Top-label calibration and multiclass-to-binary reductions"
    own_hyperparams = (
        HyperParam("min_rows", "n_min", "int", MIN_ROWS, low=1, high=1000, log=True,
                   help="Rows a predicted class needs for its own calibrator; fewer: one pooled over all rows."),
    )

    def __init__(self, binary: str = "isotonic", params: dict | None = None, min_rows: float = MIN_ROWS,
                 logits: bool = False):
        self.binary = binary
        self.params = params
        self.min_rows = min_rows
        self.logits = logits

    @staticmethod
    def top(x: Scores) -> tuple[np.ndarray, np.ndarray]:
        """``(c, g)``: each row's predicted class (argmax of the values given, the first on ties) and
        its probability."""
        c = np.argmax(x.given, axis=1)
        return c, x.probabilities[np.arange(x.n), c]

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:
        if (isinstance(self.min_rows, bool) or not isinstance(self.min_rows, numbers.Real)
                or not self.min_rows >= 0):
            raise SettingsError(f"min_rows must be a number of rows >= 0, got {self.min_rows!r}.")
        c, g = self.top(x)
        correct = (y == c).astype(np.int8)
        weight = np.ones(x.n) if w is None else w
        models: list[SubModel | None] = []
        for label in range(x.k):
            rows = c == label
            if float(weight[rows].sum()) < self.min_rows or not rows.any():
                models.append(None)
            else:
                models.append(self._fit_binary(g[rows], correct[rows], None if w is None else w[rows]))
        self.models_ = models
        self.pooled_ = self._fit_binary(g, correct, w)

    def _calibrated_top(self, x: Scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(c, g, h)``: predicted class, its probability and its calibrated probability."""
        c, g = self.top(x)
        h = np.empty(x.n)
        for label in np.unique(c):
            rows = c == label
            model = self.models_[label]
            h[rows] = self.apply(self.pooled_ if model is None else model, g[rows])
        return c, g, h

    def _predict(self, x: Scores) -> np.ndarray:
        c, _, h = self._calibrated_top(x)
        rows = np.arange(x.n)
        rest = x.log_probabilities.copy()
        rest[rows, c] = -np.inf
        out = (1.0 - h)[:, None] * softmax(rest, axis=1)
        out[rows, c] = h
        return out

    def predict_top(self, P) -> tuple[np.ndarray, np.ndarray]:
        """The paper's top-label prediction: ``(c, h)``, each row's predicted class (unchanged by
        calibration) and its calibrated probability."""
        self._check_fitted()
        c, _, h = self._calibrated_top(as_scores(P, self.logits, self.n_classes_))
        return c, np.clip(h, 0.0, 1.0)

    def _export_state(self) -> dict:
        """Per class its model's state, its rate, or ``{"pooled": true}``; and the pooled model."""
        return {"models": [{"pooled": True} if m is None else self.model_state(m) for m in self.models_],
                "pooled": self.model_state(self.pooled_)}

    def _import_state(self, state: export.State) -> None:
        self.models_ = [None if e.get("pooled") is True else self.model_from(e)
                        for e in self.class_entries(state, "models")]
        self.pooled_ = self.model_from(state.object("pooled"))
