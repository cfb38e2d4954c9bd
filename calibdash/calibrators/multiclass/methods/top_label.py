"""Top-label calibration (Gupta & Ramdas, ICLR 2022): the predicted class's probability, calibrated per class."""
from __future__ import annotations

import numbers

import numpy as np
from scipy.special import softmax

from ...state import State
from ...base import HyperParam, check_setting
from ..base import Scores, as_scores
from .ovr import BinaryComposite, SubModel, class_list

__all__ = ["TopLabelCalibrator"]

#: Default ``min_rows``: the authors' code (github.com/aigen/df-posthoc-calibration, ``HB_toplabel``) asks 50 points
#: per histogram bin, so a class predicted in fewer than 50 rows gets no bin there.
MIN_ROWS = 50


class TopLabelCalibrator(BinaryComposite):
    """Top-label calibration (Gupta & Ramdas, 2022, "Top-label calibration and multiclass-to-binary
    reductions", ICLR): the multiclass-to-binary (M2B) top-label reduction with any binary calibrator.

    The predicted class ``c(x) = argmax_k P_k(x)`` is kept; its top score ``g(x) = P_c(x)`` is calibrated per
    predicted class ``l``: the paper's Algorithm 2 with a binary routine ``A`` fits
    ``h_l = A({(g(X_i), 1{Y_i = l}) : c(X_i) = l})`` and reports ``(c(x), h_c(x)(g(x)))``.

    Small classes. A class predicted in fewer than ``min_rows`` training rows (by weight; default 50, the authors'
    points per bin) uses one model pooled over every row's (top score, correct) pair: the paper's *confidence*
    reduction. The authors' code (``HB_toplabel``) leaves such a class uncalibrated (0 bins, the identity map); we
    follow the paper, since the identity would report uncalibrated scores for exactly the classes rarely predicted.
    A set of one outcome gets its observed rate (1 or 0).

    The row. The predicted class gets ``h``; the others share ``1 - h`` in proportion to their probabilities (the
    softmax of their log-probabilities: exact with logits where probabilities underflow), equally when all are 0.
    The paper says nothing of the other entries; proportional sharing keeps their ranking. :meth:`predict_top`
    returns the paper's pair ``(c, h)``; in :meth:`predict_proba`'s row ``h`` can fall below another share (only
    when ``h < 1/2``), and the row's argmax (:meth:`predict`) moves with it.

    Ties at the top. ``P_k`` is the score as given (:attr:`~calibdash.calibrators.multiclass.base.Scores.columns`).
    A row whose top is held by ``m > 1`` classes counts as the ``m`` rows each tie-break gives, each of weight
    ``1/m``, in the fit and the prediction: the expectation of a random tie-break, whatever the column order
    (BBQ's authors' variant refuses such fractional weights).

    Zeros and weights: as :class:`~calibdash.calibrators.multiclass.methods.ovr.OneVsRestCalibrator` (no floor; ``h =
    0`` gives the predicted class 0, ``h = 1`` every other class, as isotonic regression and histogram binning can; a
    fit where this happens at a training score warns and says so in ``notes_``); ``min_rows`` compares weight sums.

    Parameters
    ----------
    binary : str, default "isotonic"
        The binary calibrator's registry name (any of :func:`calibdash.calibrators.available`
        except those that use features). The paper uses histogram binning.
    params : dict, optional
        The binary calibrator's hyperparameters (default: its defaults).
    min_rows : float, default 50
        Training rows (total weight) a predicted class needs for its own model; fewer: the pooled model.
    logits : bool, default False
        Whether ``P`` holds logits (softmaxed first) rather than probabilities.

    Attributes
    ----------
    models_ : list
        Per class, its fitted binary calibrator, its rate (a float), or None (the pooled model).
    pooled_ : Calibrator or float
        The model fitted on every row's (top score, correct) pair, or its rate.
    notes_ : list of str
        Where the fitted map gives probabilities of exactly 0 (see "Zeros" above).
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
        self._keep(locals())

    @staticmethod
    def tops(x: Scores) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(r, c, g, share)``: an entry per row and class holding its top score, rows in order: the row, the
        class, the top score and ``1 / m`` for a top held by ``m`` classes."""
        cols = x.columns
        top = cols.max(axis=1)
        r, c = np.nonzero(cols == top[:, None])
        m = np.bincount(r, minlength=x.n)
        return r, c, top[r], 1.0 / m[r]

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:
        check_setting(lambda v: not isinstance(v, bool) and isinstance(v, numbers.Real) and v >= 0, self.min_rows,
                      "min_rows must be a number of rows >= 0")
        r, c, g, share = self.tops(x)
        correct = (y[r] == c).astype(np.int8)
        we = w if r.size == x.n else (share if w is None else w[r] * share)     # no tie: every row once
        weight = np.ones(r.size) if we is None else we
        models: list[SubModel | None] = []
        for label in range(x.k):
            rows = c == label
            if float(weight[rows].sum()) < self.min_rows or not rows.any():
                models.append(None)
            else:
                models.append(self._fit_binary(g[rows], correct[rows], None if we is None else we[rows]))
        self.models_ = models
        self.pooled_ = self._fit_binary(g, correct, we)
        h, notes = self._calibrated(c, g), []           # notes_: the predicted classes whose h is 0 or 1
        for value, what, whose in ((0.0, "the predicted class gets probability 0", "the predicted class"),
                                   (1.0, "every other class gets probability 0", "another class")):
            hit = np.unique(c[h == value])
            if hit.size:
                notes.append(f"where {hit.size:,} of {x.k:,} classes ({class_list(hit)}) are predicted, the "
                             f"calibrated top probability is {value:g} at some training scores: {what}, and a "
                             f"held-out row of {whose} there has an infinite log-loss. A binary method that "
                             "smooths (platt, beta, bbq) or more rows a class avoids it.")
        self._say(notes)

    def _calibrated(self, c: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``h``: each entry's top score ``g`` through its class ``c``'s model (or the pooled one)."""
        h = np.empty(g.size)
        for label in np.unique(c):
            rows = c == label
            model = self.models_[label]
            h[rows] = self.apply(self.pooled_ if model is None else model, g[rows])
        return h

    def _predict(self, x: Scores) -> np.ndarray:
        r, c, g, share = self.tops(x)
        h = self._calibrated(c, g)
        entry = np.arange(r.size)
        rest = x.log_probabilities[r]
        rest[entry, c] = -np.inf
        out = (1.0 - h)[:, None] * softmax(rest, axis=1)
        out[entry, c] = h
        if r.size == x.n:
            return out
        first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])           # rows are in order
        return np.add.reduceat(out * share[:, None], first, axis=0)

    def predict_top(self, P) -> tuple[np.ndarray, np.ndarray]:
        """The paper's top-label prediction ``(c, h)``: each row's predicted class (unchanged; the first on a tie)
        and its calibrated probability (on a tie, the mean of the tied classes' ``h``)."""
        self._check_fitted()
        x = as_scores(P, self.logits, self.n_classes_)
        r, c, g, share = self.tops(x)
        h = np.bincount(r, weights=share * self._calibrated(c, g), minlength=x.n)
        first = np.r_[True, r[1:] != r[:-1]]              # rows are in order, a row's classes ascending
        return c[first], np.clip(h, 0.0, 1.0)

    def _export_state(self) -> dict:
        """Per class its model's state, its rate, or ``{"pooled": true}``; the pooled model; the notes."""
        return {"models": [{"pooled": True} if m is None else self.model_state(m) for m in self.models_],
                "pooled": self.model_state(self.pooled_), "notes": list(self.notes_)}

    def _import_state(self, state: State) -> None:
        self.models_ = [None if e.get("pooled") is True else self.model_from(e)
                        for e in self.class_entries(state, "models")]
        self.pooled_ = self.model_from(state.object("pooled"))
        self._import_notes(state)
