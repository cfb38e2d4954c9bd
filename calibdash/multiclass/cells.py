"""K-class rows as binary score cells: the top-label and class-wise reductions, and the measures they give.

The calibration errors of :mod:`calibdash.multiclass.metrics` are binary
measures of two reductions of ``(P, y)`` (Gupta & Ramdas 2022,
"multiclass-to-binary"): the **confidence** reduction ``(max_k P_ik,
1[argmax_k P_ik = y_i])`` and, for each class ``k``, the **class-wise**
reduction ``(P_ik, 1[y_i = k])``. Each is a binary table, so each is
summarised by :class:`calibdash.cells.ScoreCells` (rows, positives and score
sums per part and distinct score, or per grid step beyond
:data:`calibdash.cells.MAX_EXACT` distinct scores), and :class:`ClassCells`
holds the K + 1 of them.

Design: one ``ScoreCells`` per reduction
----------------------------------------
``ClassCells.top`` holds the confidence cells and ``ClassCells.classes[k]``
class ``k``'s cells: K + 1 separate :class:`~calibdash.cells.ScoreCells`,
not one table with a class key. So every binary tool that takes score cells
(:func:`calibdash.evaluation.evaluate_cells`, the bootstrap of cells, the
reliability table) applies to one reduction unchanged, and each reduction
makes its own exact-or-grid choice (a class with few distinct probabilities
stays exact while the confidence goes to the grid). The engines
(:mod:`calibdash.engines.classes`) aggregate all K + 1 in one grouped query,
keyed by reduction, and split the result.

What cells give, and how exactly
--------------------------------
Every measure of :data:`calibdash.multiclass.metrics.MEASURES` can be
computed from these cells (:data:`CELL_MEASURES`), because each is a sum
over rows of a function of one reduction's ``(score, label)``:

* ECE, MCE, smECE, dCE: binary measures of the confidence cells' weighted
  rows (:meth:`~calibdash.cells.ScoreCells.weighted_rows`);
* Accuracy ``= sum n_pos / N`` and Overconfidence ``= (sum score_sum - sum
  n_pos) / N`` of the confidence cells;
* cwECE: the mean over classes of the binary ECE of each class's cells;
* **Brier**, though it reads each row's whole vector, is a sum over classes
  of binary Brier terms: ``sum_i sum_k (P_ik - 1[y_i = k])^2 = sum_k
  sum_i (P_ik - 1[y_i = k])^2``, the inner sum over class ``k``'s cells;
* **LogLoss** ``-(1/N) sum_i ln P_{i, y_i}``: row ``i`` is a *positive* row
  of class ``y_i``'s reduction at score ``P_{i, y_i}``, so the sum is over
  the positive weighted rows of every class's cells.

With exact cells (every reduction holds at most ``max_exact`` distinct
scores) each of them equals its value on the rows up to the order of
floating-point summation (a relative 1e-12 is allowed in the tests; the
binning is the same because the scores are the same). On grid cells (a
cell stands at its rows' mean score, which moves a row by less than
``2**-16``): Accuracy stays exact (counts) and Overconfidence too (score
sums are kept); Brier moves by at most ``2 * 2**-16`` per class and row
(``|(p - y)^2 - (s - y)^2| = |p - s| |p + s - 2y| <= 2 |p - s|`` with ``p``
and the cell's mean ``s`` within one step);
ECE, MCE and cwECE move by at most ``2**-16`` unless a bin edge falls inside
a cell (as for binary cells, :mod:`calibdash.cells`); smECE and dCE move
with the scores by an amount of that order; LogLoss has no useful bound near
``P = 0`` (``ln`` of the mean is not the mean of ``ln`` when a step spans
several orders of magnitude). :meth:`ClassCells.exact` says which case holds.

What cells cannot give: anything that needs a row's whole vector at once
beyond a sum of per-class terms, namely *fitting* a multi-class calibrator
(temperature, vector, matrix, Dirichlet scaling read all K log-scores of a
row together), joint (canonical) calibration, and the top-label calibration
that conditions on the predicted class (Gupta & Ramdas 2022), which would need
cells keyed by the predicted class as well.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..cells import MAX_EXACT, CellAccumulator, ScoreCells
from ..errors import DataError, SettingsError
from ..measures import binned, calibration, smooth_ece as smooth
from .base import as_scores
from .metrics import AVERAGES, N_BINS, check_binning, check_inputs, check_names

__all__ = ["ClassCells", "class_cells", "ClassCellAccumulator", "cell_measures", "CELL_MEASURES", "top_label_ece_cells",
           "top_label_mce_cells", "per_class_ece_cells", "classwise_ece_cells", "brier_cells", "log_loss_cells",
           "accuracy_cells", "overconfidence_cells", "smooth_ece_cells", "debiased_l2_cells"]


@dataclass(frozen=True)
class ClassCells:
    """The K + 1 binary reductions of K-class rows as score cells (see the module docstring).

    Attributes
    ----------
    top : ScoreCells
        Confidence cells: score ``max_k P_ik``, positive when the predicted
        class (argmax, lowest index on ties) is the label.
    classes : tuple of ScoreCells
        ``classes[k]``: score ``P_ik``, positive when the label is ``k``.
    n_rows : int
        Rows aggregated.
    """

    top: ScoreCells
    classes: tuple
    n_rows: int

    @property
    def k(self) -> int:
        """Number of classes."""
        return len(self.classes)

    @property
    def reductions(self) -> tuple:
        """``(top, class 0, ..., class K-1)``."""
        return (self.top,) + tuple(self.classes)

    @property
    def exact(self) -> bool:
        """Whether every reduction's cells are its distinct scores (then every measure equals the rows')."""
        return all(c.exact for c in self.reductions)

    @property
    def nbytes(self) -> int:
        return int(sum(c.nbytes for c in self.reductions))

    def __len__(self) -> int:
        return int(sum(len(c) for c in self.reductions))

    def describe(self) -> str:
        """``"1,000,000 rows of 10 classes summarised into 612,211 score cells (confidence: ...)"``."""
        how = "all exact" if self.exact else (
            "confidence " + ("exact" if self.top.exact else "on the grid") + ", "
            f"{sum(not c.exact for c in self.classes)} of {self.k} classes on the grid")
        return f"{self.n_rows:,} rows of {self.k} classes summarised into {len(self):,} score cells ({how})"

    def select_parts(self, parts) -> "ClassCells":
        """The cells of the rows in the given parts (e.g. ``[1]``: the held-out rows of a split)."""
        keep = [c.select(np.isin(c.part, np.asarray(parts))) for c in self.reductions]
        return ClassCells(top=keep[0], classes=tuple(keep[1:]), n_rows=int(keep[0].n.sum()))


def class_cells(P, y, part=None, *, logits: bool = False, max_exact: int = MAX_EXACT) -> ClassCells:
    """Aggregate K-class rows into :class:`ClassCells`.

    Parameters
    ----------
    P : array-like (n, K)
        Probabilities, measured as given (as :mod:`calibdash.multiclass.metrics`
        does), or logits (``logits=True``: softmaxed by
        :func:`~calibdash.multiclass.base.as_scores`).
    y : array-like (n,)
        Class indices 0..K-1.
    part : array-like of int, optional
        Each row's part (:func:`calibdash.cells.parts_for`); default all 0.
    max_exact : int
        Each reduction keeps its distinct scores as cells when it has at most
        this many, else goes to the grid (:func:`calibdash.cells.aggregate`).

    Raises
    ------
    DataError
        As :func:`calibdash.multiclass.metrics.check_inputs`.
    """
    if logits:
        P = as_scores(P, True).probabilities
    P, y, _ = check_inputs(P, y)
    return ClassCellAccumulator(P.shape[1], max_exact).add(P, y, part).result()


class ClassCellAccumulator:
    """K-class rows aggregated into :class:`ClassCells` batch by batch, in bounded memory.

    One :class:`calibdash.cells.CellAccumulator` per reduction: each keeps its distinct scores while they
    number at most ``max_exact`` and moves to the grid when a batch takes them over (an exact cell's grid
    step follows from its score, so nothing is lost in the move), so adding the rows in one batch or in
    many gives the same cells, and the same as :func:`class_cells` of all of them.
    """

    def __init__(self, k: int, max_exact: int = MAX_EXACT):
        self.k = int(k)
        self._acc = [CellAccumulator(max_exact) for _ in range(self.k + 1)]

    def add(self, P: np.ndarray, y: np.ndarray, part=None) -> "ClassCellAccumulator":
        """Add a batch: ``P`` (m, K) probabilities in [0, 1] (checked by the caller, as :func:`class_cells`
        does with :func:`~calibdash.multiclass.metrics.check_inputs`), class indices ``y``, parts."""
        P = np.asarray(P, dtype=float)
        y = np.asarray(y, dtype=np.int64)
        if P.ndim != 2 or P.shape[1] != self.k:
            raise DataError(f"a batch of {self.k}-class probabilities is needed, got shape {P.shape}.")
        pred = P.argmax(axis=1)
        self._acc[0].add(P[np.arange(P.shape[0]), pred], (pred == y).astype(np.int8), part)
        for k in range(self.k):
            self._acc[k + 1].add(P[:, k], (y == k).astype(np.int8), part)
        return self

    def result(self) -> ClassCells:
        """The cells of every row added so far."""
        out = [a.result() for a in self._acc]
        return ClassCells(top=out[0], classes=tuple(out[1:]), n_rows=int(out[0].n_rows))


# ----------------------------------------------------------------------------
# measures from cells: the binary measures of :mod:`calibdash.measures` on the cells' weighted rows
# ----------------------------------------------------------------------------
def top_label_ece_cells(cells: ClassCells, n_bins: int = N_BINS, strategy: str = "uniform") -> float:
    """Confidence ECE (Guo et al. 2017, Eq. 3) of the confidence cells: as
    :func:`calibdash.multiclass.metrics.top_label_ece`."""
    s, a, w = cells.top.weighted_rows()
    return calibration.ece(s, a, check_binning(n_bins, strategy), strategy, w)


def top_label_mce_cells(cells: ClassCells, n_bins: int = N_BINS, strategy: str = "uniform") -> float:
    """Confidence MCE (Guo et al. 2017, Eq. 5): as :func:`calibdash.multiclass.metrics.top_label_mce`."""
    s, a, w = cells.top.weighted_rows()
    return calibration.mce(s, a, check_binning(n_bins, strategy), strategy, w)


def per_class_ece_cells(cells: ClassCells, n_bins: int = N_BINS, strategy: str = "uniform") -> np.ndarray:
    """Each class's ECE, shape (K,): the binary ECE of class ``k``'s cells, as
    :func:`calibdash.multiclass.metrics.per_class_ece`. Every class's cells hold all N rows, so
    ``|B_bk| / N`` is the same share as on the rows."""
    n_bins = check_binning(n_bins, strategy)
    out = []
    for c in cells.classes:
        s, y, w = c.weighted_rows()
        out.append(calibration.ece(s, y, n_bins, strategy, w))
    return np.array(out)


def classwise_ece_cells(cells: ClassCells, n_bins: int = N_BINS, strategy: str = "uniform",
                        average: str = "mean") -> float:
    """Class-wise ECE (Kull et al. 2019, section 5) from the class cells: as
    :func:`calibdash.multiclass.metrics.classwise_ece` (``"mean"``: Kull et al.'s; ``"sum"``: K times it)."""
    if average not in AVERAGES:
        raise SettingsError(f"average must be one of {AVERAGES}, got {average!r}.")
    per_class = per_class_ece_cells(cells, n_bins, strategy)
    return float(per_class.mean() if average == "mean" else per_class.sum())


def brier_cells(cells: ClassCells) -> float:
    """Brier score (Brier 1950) ``(1/N) sum_k sum_i (P_ik - 1[y_i = k])^2``: each class's binary squared
    errors (:func:`calibdash.measures.calibration.squared_errors`) summed over its cells' weighted rows."""
    total = 0.0
    for c in cells.classes:
        s, y, w = c.weighted_rows()
        total += float(np.dot(calibration.squared_errors(s, y), w))
    return total / cells.n_rows


def log_loss_cells(cells: ClassCells, eps: float = calibration.LOG_LOSS_EPS) -> float:
    """Log-loss ``-(1/N) sum_i ln q_i``, ``q_i = P_{i, y_i}`` clipped to ``[eps, 1 - eps]`` as
    :func:`calibdash.multiclass.metrics.log_loss`: the positive weighted rows of every class's cells."""
    total = 0.0
    for c in cells.classes:
        q, w = c.score[c.n_pos > 0], c.n_pos[c.n_pos > 0].astype(float)
        total += float(np.dot(calibration.log_losses(q, np.ones_like(q), eps), w))
    return total / cells.n_rows


def accuracy_cells(cells: ClassCells) -> float:
    """Share of rows whose predicted class is right: ``sum n_pos / N`` of the confidence cells."""
    return float(cells.top.n_pos.sum()) / float(cells.top.n.sum())


def overconfidence_cells(cells: ClassCells) -> float:
    """Mean confidence minus accuracy (Guo et al. 2017, section 2): ``(sum score_sum - sum n_pos) / N``
    of the confidence cells (the raw score sums: exact on grid cells too)."""
    return float(cells.top.score_sum.sum() - cells.top.n_pos.sum()) / float(cells.top.n.sum())


def smooth_ece_cells(cells: ClassCells) -> float:
    """SmoothECE (Błasiok & Nakkiran 2023) of the confidence cells' weighted rows."""
    s, a, w = cells.top.weighted_rows()
    return smooth.smooth_ece(s, a, w)


def debiased_l2_cells(cells: ClassCells, n_bins: int = N_BINS) -> float:
    """Debiased l2 error of the confidence (Kumar, Liang & Ma 2019), 15 equal-mass bins, on the confidence
    cells' weighted rows (as :func:`calibdash.multiclass.metrics.debiased_top_label_l2`)."""
    s, a, w = cells.top.weighted_rows()
    return binned.debiased_l2_ce(s, a, w, n_bins=n_bins)


#: Measure name (as :data:`calibdash.multiclass.metrics.MEASURES`) -> its value from cells, at the table's
#: settings.
CELL_MEASURES: dict[str, Callable[[ClassCells], float]] = {
    "ECE": top_label_ece_cells, "MCE": top_label_mce_cells, "cwECE": classwise_ece_cells,
    "smECE": smooth_ece_cells, "dCE": debiased_l2_cells, "LogLoss": log_loss_cells, "Brier": brier_cells,
    "Accuracy": accuracy_cells, "Overconfidence": overconfidence_cells,
}


def cell_measures(cells: ClassCells, names=None) -> dict[str, float]:
    """The asked measures (default all of :data:`calibdash.multiclass.metrics.MEASURES`) from cells."""
    return {n: float(CELL_MEASURES[n](cells)) for n in check_names(names)}
