"""Inductive Venn-Abers predictors (Vovk & Petej, 2014; Vovk, Petej & Fedorova, 2015).

An inductive Venn-Abers predictor (IVAP) is fitted on a calibration set. For a test score ``s`` it fits isotonic
regression on the calibration set plus the test row ``(s, 0)``, and plus ``(s, 1)``: the two values at ``s`` are the
multiprobability prediction ``(p0, p1)``, ``p0 <= p1``, one of which (the one whose assumed label is true) is perfectly
calibrated by Venn prediction theory; the pair is merged into one probability (Section 4 of the 2015 paper). Instead of
a refit per test score (``O(n)`` each), the 2015 paper (Section 2, Algorithms 1 to 4) computes once ``F0`` and ``F1`` at
every distinct calibration score from the cumulative sum diagram (CSD) and two stacks of its greatest convex minorant
(GCM), in ``O(n log n)``; predicting is a binary search (:func:`fit_tables`, :func:`interval_at`).

Where the paper, its authors' code and this module differ:

* Ties. A test score equal to a calibration score is pooled with the tied rows, as isotonic regression pools tied
  scores and the CSD merges them: ``p0``, ``p1`` there are ``F0[i]``, ``F1[i]``. The widely used ptocca/VennABERS
  (``getFVal``) looks such a score up as if just beside the tied rows (``p1`` above, ``p0`` below): on calibration rows
  (0.2, 0), (0.5, 1), (0.8, 0), (0.9, 1) it gives ``p1(0.2) = 2/3``, ``p0(0.5) = 0``, ``p1(0.8) = 1``, ``p0(0.9) =
  1/3`` where refitting gives 1/2, 1/3, 2/3 and 1/2 (we ran both). We follow the definition, checked against refitting
  (``tests/calibrators/test_venn_abers.py``).
* Between calibration scores the paper gives nothing. For ``s`` strictly between ``s'_{i-1}`` and ``s'_i``: ``p1(s) =
  F1[i]``, ``p0(s) = F0[i-1]``; below the smallest score ``p0 = 0``, ``p1 = F1[first]``; above the largest ``p0 =
  F0[last]``, ``p1 = 1``. (Moving a test row of label 1 from the gap into the next tied group leaves the GCM's slope
  over it unchanged: the corner removed lies on or above the GCM, one unit of height above a point of the diagram,
  the GCM's slopes being at most 1; symmetrically for label 0. Below the smallest score a test row of label 0 is its
  own block of value 0; above the largest, one of label 1 a block of value 1.)
* Algorithms 1 and 3 (the stack scans building the GCM) are scikit-learn's compiled pool-adjacent-violators
  (:func:`_gcm_vertices`); the sweeps of Algorithms 2 and 4 stay in Python.
* The extra point of Algorithm 3: the text sets ``P_{k'+1} = P_{k'} + (1, 1)``, but (as ptocca/VennABERS notes) a test
  row of label 0 adds weight 1 and no positive, so the point is ``P_{k'} + (1, 0)``, as that code uses and refitting
  confirms.
* Weights: the CSD uses weight sums, so a row of weight ``w`` counts as ``w`` rows (integer weights equal repeated
  rows exactly). The test row always weighs 1: scaling every calibration weight by ``c`` narrows the intervals as
  ``c`` times as many rows would.

Merging ``(p0, p1)`` (Section 4): the ``p`` of smallest worst-case regret against the prediction the assumed label
would have given, ``max(L(p, 0) - L(p0, 0), L(p, 1) - L(p1, 1))``, where both regrets are equal: for log loss
(``merge="log"``, the paper's) ``p = p1 / (1 - p0 + p1)``; for Brier loss (``merge="brier"``) ``p = p1 + (p0**2 -
p1**2) / 2`` (from ``p**2 - p0**2 = (1 - p)**2 - (1 - p1)**2``). Both lie in ``[p0, p1]``; the tests check that each
equalises the regrets and that no ``p`` on a fine grid does better.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import isotonic_regression

from ..core.errors import ProgrammingError, SettingsError
from ..core.sql_forms import StepMap
from ..core.validation import check_scores
from ..core.step_maps import collapse_ties
from .base import Calibrator, HyperParam

__all__ = ["VennAbersCalibrator", "fit_tables", "interval_at", "merge"]

MERGES = ("log", "brier")


@dataclass(frozen=True)
class Tables:
    """What the fast IVAP algorithm computes from a calibration set: the distinct calibration ``scores`` (of positive
    weight), the CSD's steps ``weight`` and ``positives`` at each, and ``f0``, ``f1``: ``F0[i]``, ``F1[i]``, the
    isotonic fit at ``s'_i`` of the calibration set plus the test row ``(s'_i, 0)``, resp. ``(s'_i, 1)``."""

    scores: np.ndarray
    weight: np.ndarray
    positives: np.ndarray
    f0: np.ndarray
    f1: np.ndarray


def _gcm_vertices(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Indices (ascending: 0, the block ends, ``len(dx)``) of the vertices of the GCM of the points ``Q_0 = (0, 0), Q_j
    = Q_{j-1} + (dx_j, dy_j)``. The GCM's slopes are the isotonic regression of the steps' slopes ``dy / dx`` weighted
    by ``dx`` (Barlow et al., 1972), so its vertices are the ends of the blocks scikit-learn's compiled
    pool-adjacent-violators finds: the stack scans of Algorithms 1 and 3 without a Python loop; the coordinates are read
    from the exact cumulative sums."""
    fitted = isotonic_regression(dy / dx, sample_weight=dx, increasing=True)
    return np.concatenate([[0], np.flatnonzero(np.diff(fitted) != 0) + 1, [dx.size]])


def _sweep(sx: list, sy: list, qx, qy, right_to_left: bool) -> list:
    """Algorithms 2 and 4: the slope of the GCM over the test row, as the test row moves. ``sx, sy``: the GCM's vertices
    as the stack Algorithm 1 (3) leaves, its top (last element) the first point scanned: the leftmost for F1, the
    rightmost for F0. ``qx, qy``: the points that enter the diagram one per step (``P_i - (1, 1)`` for F1, left to
    right; ``P_{i-1} + (1, 0)`` for F0, right to left). At each step the slope between the top two points of the stack
    is the value, then the new point enters: if it lies below the line through the top two points, the points it hides
    are popped and it is pushed."""
    out = []
    tx, ty, nx, ny = sx[-1], sy[-1], sx[-2], sy[-2]
    slope = (ny - ty) / (nx - tx)
    for x, y in zip(qx, qy):
        out.append(slope)
        if y >= ty + slope * (x - tx):      # not below the line: the GCM over the test row is unchanged
            continue
        del sx[-1], sy[-1]
        while len(sx) > 1:
            tx, ty, nx, ny = sx[-1], sy[-1], sx[-2], sy[-2]
            cross = (tx - x) * (ny - ty) - (ty - y) * (nx - tx)
            if (cross >= 0) if right_to_left else (cross <= 0):
                del sx[-1], sy[-1]
            else:
                break
        sx.append(x)
        sy.append(y)
        tx, ty, nx, ny = x, y, sx[-2], sy[-2]
        slope = (ny - ty) / (nx - tx)
    return out


def csd_tables(rows: np.ndarray, positives: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``F0`` and ``F1`` (each of shape (k,)) at each distinct score from the CSD's steps, ``rows`` (> 0; rows count
    with their weights) and ``positives`` at each distinct calibration score in score order (Algorithms 1 to 4 of the
    2015 paper).

    The CSD is ``P_0 = (0, 0)``, ``P_i = (W_i, Y_i)`` with ``W_i``, ``Y_i`` the cumulative weights and positives. A
    test row of label 1 pooled with ``s'_i`` moves the points from ``P_i`` on by ``(1, 1)``; translated by ``(-1,
    -1)`` the diagram is ``P_t - (1, 1)`` for ``t < i`` and ``P_v`` for ``v >= i``, and ``F1[i]`` is its GCM's slope
    over the test row. Algorithm 1 builds the GCM of ``P_{-1} = (-1, -1), P_0, ..., P_k`` (here by PAV,
    :func:`_gcm_vertices`); Algorithm 2 sweeps ``i = 1..k``, replacing ``P_{i}`` by ``P_i - (1, 1)`` after reading
    ``F1[i]``. Algorithms 3 and 4 do the mirror image for ``F0`` with ``P_{k+1} = P_k + (1, 0)``, sweeping ``i =
    k..1``. Each point is pushed and popped at most once per sweep: ``O(k)``.
    """
    W = np.concatenate([[0.0], np.cumsum(rows, dtype=float)])
    Y = np.concatenate([[0.0], np.cumsum(positives, dtype=float)])
    k = W.size - 1
    if k < 1:
        raise ProgrammingError("the Venn-Abers tables need at least one calibration score.")
    w, c = np.asarray(rows, dtype=float), np.asarray(positives, dtype=float)
    one = np.ones(1)
    # F1: steps the test row's (1, 1), then the CSD's; the stack's top is P_{-1}
    v = _gcm_vertices(np.concatenate([one, w]), np.concatenate([one, c]))
    hx = np.concatenate([[-1.0], W])[v]
    hy = np.concatenate([[-1.0], Y])[v]
    f1 = _sweep(hx[::-1].tolist(), hy[::-1].tolist(), (W[1:] - 1.0).tolist(), (Y[1:] - 1.0).tolist(),
                right_to_left=False)
    # F0: the stack's top is P_{k+1}
    v = _gcm_vertices(np.concatenate([w, one]), np.concatenate([c, [0.0]]))
    hx = np.concatenate([W, [W[-1] + 1.0]])[v]
    hy = np.concatenate([Y, [Y[-1]]])[v]
    f0 = _sweep(hx.tolist(), hy.tolist(), (W[k - 1::-1] + 1.0).tolist(), Y[k - 1::-1].tolist(),
                right_to_left=True)
    # + 0.0 turns the -0.0 of a flat slope read right to left into 0.0.
    return np.asarray(f0[::-1], dtype=float) + 0.0, np.asarray(f1, dtype=float) + 0.0


def fit_tables(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> Tables:
    """The IVAP tables of checked calibration scores ``s``, 0/1 labels ``y`` and weights (tied scores: one CSD point
    of their weight sum)."""
    values, counts, positives = collapse_ties(s, y, sample_weight)
    counts = counts.astype(float)
    f0, f1 = csd_tables(counts, positives)
    return Tables(scores=values, weight=counts, positives=positives, f0=f0, f1=f1)


#: From this many test scores on, :func:`interval_at` sorts them first: binary searches for sorted keys
#: walk the table in order (cache-friendly), which more than pays for the sort.
SORT_FROM = 1 << 14


def _lookup(scores: np.ndarray, f0: np.ndarray, f1: np.ndarray, s: np.ndarray):
    k = scores.size
    j = np.searchsorted(scores, s, side="left")             # first calibration score >= s
    p1 = np.where(j < k, f1[np.minimum(j, k - 1)], 1.0)
    j = np.searchsorted(scores, s, side="right") - 1        # last calibration score <= s
    p0 = np.where(j >= 0, f0[np.maximum(j, 0)], 0.0)
    return p0, p1


def interval_at(scores: np.ndarray, f0: np.ndarray, f1: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(p0, p1)`` at test scores ``s`` by binary search in the tables: ``p1 = F1`` at the first calibration score
    ``>= s`` (1 above the largest) and ``p0 = F0`` at the last ``<= s`` (0 below the smallest). At least
    :data:`SORT_FROM` test scores are sorted first."""
    s = np.asarray(s, dtype=float)
    if s.size < SORT_FROM:
        return _lookup(scores, f0, f1, s)
    order = np.argsort(s)
    p0, p1 = np.empty(s.size), np.empty(s.size)
    p0[order], p1[order] = _lookup(scores, f0, f1, s[order])
    return p0, p1


def merge(p0, p1, rule: str = "log") -> np.ndarray:
    """One probability from ``(p0, p1)``, the minimax-regret merge of Section 4 of the 2015 paper: ``"log"``: ``p1 /
    (1 - p0 + p1)``; ``"brier"``: ``p1 + (p0**2 - p1**2) / 2``."""
    p0 = np.asarray(p0, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    if rule == "log":
        return p1 / (1.0 - p0 + p1)
    if rule == "brier":
        return p1 + (p0 * p0 - p1 * p1) / 2.0
    raise SettingsError(f"merge must be one of {', '.join(MERGES)}, got {rule!r}.")


class VennAbersCalibrator(Calibrator):
    """Inductive Venn-Abers predictor (IVAP): isotonic regression with the test row labelled 0 and 1.

    ``fit`` computes the tables ``F0``, ``F1`` (module docstring: the algorithm, ties, scores between calibration
    scores, weights, and where this differs from ptocca/VennABERS); :meth:`predict_interval` returns ``(p0, p1)`` for
    any test score by a binary search; :meth:`predict` merges them.

    Parameters
    ----------
    merge : {"log", "brier"}, default "log"
        How :meth:`predict` merges ``(p0, p1)`` into one probability: the minimax-regret choice for log loss, ``p1 /
        (1 - p0 + p1)`` (the paper's), or for Brier loss, ``p1 + (p0**2 - p1**2) / 2``.

    Attributes
    ----------
    scores_ : ndarray of float
        The distinct calibration scores, ascending.
    f0_, f1_ : ndarray of float
        ``F0`` and ``F1`` at them.
    """

    name = "venn_abers"
    order = 120
    color = "#AA4499"   # purple (Tol)
    label = "Venn-Abers"
    summary = "isotonic fits with the test label 0 and 1"
    monotone = True
    paper = ("Vovk & Petej (2014), Venn-Abers predictors; Vovk, Petej & Fedorova (2015), Large-scale "
             "probabilistic prediction with and without validity guarantees")
    hyperparams = (
        HyperParam("merge", "", "choice", "log", choices=MERGES,
                   help="How the interval [p0, p1] becomes one probability: minimax regret for log loss "
                        "(p1 / (1 - p0 + p1)) or for Brier loss."),
    )

    def __init__(self, merge: str = "log"):
        self.merge = merge

    def _fit(self, s, y, features, w):
        merge(0.5, 0.5, self.merge)                       # an unknown merge rule fails here, not at predict
        t = fit_tables(s, y, w)
        self.scores_, self.f0_, self.f1_ = t.scores, t.f0, t.f1

    def predict_interval(self, scores) -> tuple[np.ndarray, np.ndarray]:
        """The multiprobability prediction ``(p0, p1)`` at ``scores``, ``p0 <= p1``: the isotonic fit at the score of
        the calibration set plus the test row labelled 0 (1)."""
        self._check_fitted()
        s = check_scores(scores)
        p0, p1 = interval_at(self.scores_, self.f0_, self.f1_, s)
        return np.clip(p0, 0.0, 1.0), np.clip(p1, 0.0, 1.0)

    def _predict(self, s, features):
        p0, p1 = interval_at(self.scores_, self.f0_, self.f1_, s)
        return merge(p0, p1, self.merge)

    def sql_map(self) -> StepMap:
        """A step map: constant between calibration scores (``p1 = F1[j]`` at the first calibration score ``j`` at or
        above ``s``, ``p0 = F0[j]`` at a calibration score, else ``F0[j - 1]``), so the pieces start just after each
        score (``nextafter``), with the scores themselves as points."""
        below = merge(np.r_[0.0, self.f0_], np.r_[self.f1_, 1.0], self.merge)    # on (scores[k-1], scores[k])
        return StepMap(np.nextafter(self.scores_, np.inf), below, self.scores_, merge(self.f0_, self.f1_, self.merge))

    def _export_state(self) -> dict:
        return {"scores": self.scores_.tolist(), "f0": self.f0_.tolist(), "f1": self.f1_.tolist()}

    def _import_state(self, state) -> None:
        scores = state.array("scores", sorted=True)
        if scores.size == 0:
            raise state.error("'scores' is empty")
        if np.any(np.diff(scores) == 0):
            raise state.error("'scores' must be distinct")
        f0, f1 = (state.array(key, size=scores.size, unit=True) for key in ("f0", "f1"))
        self.scores_, self.f0_, self.f1_ = scores, f0, f1
