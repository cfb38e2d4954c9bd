"""Score cells: the weighted sufficient statistics every calibrator, metric and interval can work from.

A score cell gathers the rows sharing a score (or a grid step of it) and a *part* (fold or split): rows ``n``,
positives ``n_pos``, raw score sum. Rows are touched once; then calibrators fit the weighted rows ``(score, 1)`` of
weight ``n_pos`` and ``(score, 0)`` of weight ``n - n_pos`` (with exact cells *the same fit* as on the rows), metrics
weigh the cells' predictions alike (exact but for MVCE, whose views shuffle rows) and intervals resample cells.

Cells are the **distinct scores** when at most ``max_exact`` (``2**16``), else steps of a grid of ``GRID = 2**16`` on
[0, 1] (``floor(score * 2**16)``, exact in any engine) at their rows' mean score: a row's score moves by less than
``2**-16``, ECE and MCE of the raw scores by at most that unless a bin edge falls in a cell, AUC by at most the
share of positive-negative pairs inside one cell (``tests/evaluation/test_cells.py`` checks the bounds). A row's
part comes from a seeded 32-bit hash of its position (:func:`row_hash`: ``fold = hash % k``, held out when ``hash <
test_size * 2**32``; not stratified, negligible at these sizes) or the split column, a rule every engine applies alike.

K-class rows: the K + 1 binary reductions (Gupta & Ramdas 2022), the **confidence** ``(max_k P_ik, 1[argmax = y_i])``
and per class ``(P_ik, 1[y_i = k])``, one :class:`ScoreCells` each (:class:`ClassCells`). Every measure of
:data:`calibdash.measures.class_measures.MEASURES` sums over one reduction's rows and follows from them
(:data:`CELL_MEASURES`), exactly on exact cells. On grid cells Accuracy and Overconfidence stay exact; Brier moves by
at most ``2 * 2**-16`` per class and row; ECE, MCE, cwECE by ``2**-16`` unless a bin edge falls in a cell; smECE and
dCE by that order; LogLoss has no useful bound near 0. Cells cannot *fit* a K-class calibrator (the scaling family
reads all K log-scores of a row), nor give joint or class-conditional top-label calibration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from ..measures import binned, calibration, smooth_ece as smooth
from ..calibrators.multiclass.base import as_scores
from ..measures.class_measures import N_BINS, check_inputs, check_names
from ..core.validation import check_labels, check_scores

__all__ = [
    "ScoreCells", "GRID", "MAX_EXACT", "row_hash", "parts_for", "aggregate", "ClassCells", "ClassCellAccumulator",
    "class_cells", "cell_measures", "grid_code"
]

#: Steps of the fallback grid on [0, 1].
GRID = 2 ** 16
#: At most this many distinct scores are kept exact.
MAX_EXACT = 2 ** 16


def grid_code(s: np.ndarray) -> np.ndarray:
    """The grid step of scores in [0, 1] (score 1 in the last step)."""
    return np.minimum(np.floor(np.asarray(s, dtype=float) * GRID), GRID - 1)


_MASK32 = np.uint64(0xFFFFFFFF)
#: Rows hashed at a time by :func:`parts_for`.
_HASH_BLOCK = 1 << 18


def _mul32(h: np.ndarray, c: int) -> np.ndarray:
    """``(h * c) mod 2**32`` for 32-bit ``h`` and ``c``, with every product below 2**48 (as SQL can do it)."""
    lo, hi = np.uint64(c & 0xFFFF), np.uint64(c >> 16)
    return (h * lo + (((h * hi) & np.uint64(0xFFFF)) << np.uint64(16))) & _MASK32


def row_hash(keys, seed: int = 0) -> np.ndarray:
    """A seeded 32-bit hash (uint64 in [0, 2**32)) of non-negative integer row keys: MurmurHash3's finaliser of
    ``key + seed``, every step a 32-bit xor, shift or a multiplication split into 16-bit halves, so DuckDB and Spark
    SQL reproduce it with their integer types."""
    k = np.asarray(keys, dtype=np.uint64)
    h = (k + np.uint64(int(seed) * 0x9E3779B1 & 0xFFFFFFFF)) & _MASK32
    h = h ^ (h >> np.uint64(16))
    h = _mul32(h, 0x85EBCA6B)
    h = h ^ (h >> np.uint64(13))
    h = _mul32(h, 0xC2B2AE35)
    return h ^ (h >> np.uint64(16))


def parts_for(n_rows: int, kind: str, *, seed: int = 0, k: int = 5, test_size: float = 0.3,
              split_train=None) -> np.ndarray:
    """The part of each row, from its key (position) alone or the file's split column.

    ``kind``: ``"kfold"``: part = fold 0..k-1; ``"split"``: 0 = fit, 1 = held out; ``"column"``: 0 where
    ``split_train`` (a boolean mask) is True, else 1; ``"insample"``: every row 0. Returns int16.
    """
    if kind == "insample":
        return np.zeros(n_rows, dtype=np.int16)
    if kind == "column":
        if split_train is None or len(split_train) != n_rows:
            raise DataError("the file's split column is needed for this scheme.")
        return np.where(np.asarray(split_train, dtype=bool), 0, 1).astype(np.int16)
    if kind == "kfold" and int(k) < 2:
        raise SettingsError(f"k-fold needs at least 2 folds, got {k}.")
    if kind == "split" and not 0 < float(test_size) < 1:
        raise SettingsError(f"test_size must lie strictly between 0 and 1, got {test_size}.")
    if kind not in ("kfold", "split"):
        raise SettingsError(f"unknown scheme kind {kind!r}.")
    div = np.uint64(int(k) if kind == "kfold" else int(float(test_size) * 2 ** 32))
    out = np.empty(n_rows, dtype=np.int16)
    # in blocks of rows: the hash's 8-byte temporaries stay a few MB, not several copies of 8 bytes a row
    for lo in range(0, n_rows, _HASH_BLOCK):
        h = row_hash(np.arange(lo, min(n_rows, lo + _HASH_BLOCK), dtype=np.uint64), seed)
        out[lo:lo + h.size] = h % div if kind == "kfold" else h < div
    return out


@dataclass(frozen=True)
class ScoreCells:
    """Per (part, score cell): rows ``n``, positives ``n_pos`` (int64) and the sum of their raw scores ``score_sum``,
    sorted by part then score. ``score`` is the distinct score (``exact`` cells: nothing lost) or the mean score of
    the cell's rows (grid cells); ``part`` (int16) the fold, or 0 = fit / 1 = held out (all 0 without a scheme);
    ``n_rows`` the rows aggregated.
    """

    score: np.ndarray
    n: np.ndarray
    n_pos: np.ndarray
    score_sum: np.ndarray
    part: np.ndarray
    exact: bool
    n_rows: int
    features: pd.DataFrame | None = field(default=None)

    def __len__(self) -> int:
        return int(self.score.size)

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (what a cache is charged for)."""
        own = sum(a.nbytes for a in (self.score, self.n, self.n_pos, self.score_sum, self.part))
        return int(own + (0 if self.features is None else self.features.memory_usage(deep=True).sum()))

    def describe(self) -> str:
        """``"10,000,000 rows summarised into 48,211 score cells"`` (+ how), for the pages."""
        how = "the distinct scores" if self.exact else f"a grid of {GRID:,} steps on [0, 1]"
        return f"{self.n_rows:,} rows summarised into {len(self):,} score cells ({how})"

    def select(self, mask) -> "ScoreCells":
        """The cells where ``mask`` holds (for example one part)."""
        m = np.asarray(mask, dtype=bool)
        feats = None if self.features is None else self.features.loc[m].reset_index(drop=True)
        return ScoreCells(score=self.score[m], n=self.n[m], n_pos=self.n_pos[m], score_sum=self.score_sum[m],
                          part=self.part[m], exact=self.exact, n_rows=int(self.n[m].sum()), features=feats)

    def weighted_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, labels, weights)``: each cell as a positive row of weight ``n_pos`` and a negative
        row of weight ``n - n_pos`` (zero-weight rows dropped), what ``fit(..., sample_weight=)`` takes."""
        return self.weighted_predictions(self.score)

    def weighted_predictions(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(predictions, labels, weights)`` of the cells' weighted rows, for the weighted metrics."""
        p = np.asarray(p, dtype=float)
        if p.shape != self.score.shape:
            raise DataError(f"one prediction per cell is needed ({len(self)}), got {p.shape}.")
        y = np.concatenate([np.ones(len(self), np.int8), np.zeros(len(self), np.int8)])
        w = np.concatenate([self.n_pos, self.n - self.n_pos]).astype(float)
        keep = w > 0
        return np.concatenate([p, p])[keep], y[keep], w[keep]


class CellAccumulator:
    """Aggregates rows into score cells chunk by chunk, in bounded memory (the in-memory engine): exact while the
    distinct scores seen stay at most ``max_exact``, then every cell moves to the grid; one chunk or many give the same
    cells (tested).
    """

    def __init__(self, max_exact: int = MAX_EXACT):
        self.max_exact = int(max_exact)
        self.exact = True
        self.n_rows = 0
        self._clear()

    def _clear(self) -> None:
        # _code: the exact score, or the grid step (as float) in grid mode
        self._part, self._code, self._n, self._pos, self._sum = (
            np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))

    def _merge(self, part, code, n, pos, ssum) -> None:
        part = np.concatenate([self._part, part])
        code = np.concatenate([self._code, code])
        if code.size == 0:
            return
        order = np.lexsort((code, part))
        part, code = part[order], code[order]
        n = np.concatenate([self._n, n])[order]
        pos = np.concatenate([self._pos, pos])[order]
        ssum = np.concatenate([self._sum, ssum])[order]
        start = np.flatnonzero(np.r_[True, (part[1:] != part[:-1]) | (code[1:] != code[:-1])])
        self._part, self._code = part[start], code[start]
        self._n, self._pos = np.add.reduceat(n, start), np.add.reduceat(pos, start)
        self._sum = np.add.reduceat(ssum, start)

    def _to_grid(self) -> None:
        self.exact = False
        steps = grid_code(self._code)
        part, n, pos, ssum = self._part, self._n, self._pos, self._sum
        self._clear()
        self._merge(part, steps, n, pos, ssum)

    def add(self, scores, labels, part=None) -> "CellAccumulator":
        """Add one chunk of rows (scores in [0, 1], 0/1 labels, optional part per row): one sort per part while
        exact, one ``np.bincount`` pass on the grid (a chunk of more than ``max_exact`` distinct scores moves the
        accumulator to the grid first)."""
        s = check_scores(scores)
        y = check_labels(labels, s.size, require_both=False)
        g = np.zeros(s.size, dtype=np.int64) if part is None else np.asarray(part, dtype=np.int64)
        if g.shape != s.shape:
            raise DataError(f"part has {g.size} values but scores has {s.size}.")
        present = np.unique(g) if part is not None else np.zeros(1, np.int64)
        if self.exact:
            chunk = []
            for p in present:
                rows = slice(None) if present.size == 1 else g == p
                uniq, inv = np.unique(s[rows], return_inverse=True)
                if uniq.size > self.max_exact:
                    chunk = None
                    break
                chunk.append((p, uniq, inv, rows))
            if chunk is None:
                self._to_grid()
            else:
                for p, uniq, inv, rows in chunk:
                    self._merge(np.full(uniq.size, p, np.int64), uniq,
                                np.bincount(inv, minlength=uniq.size).astype(np.int64),
                                np.bincount(inv, weights=y[rows], minlength=uniq.size).astype(np.int64),
                                np.bincount(inv, weights=s[rows], minlength=uniq.size))
        if not self.exact:
            self._add_to_grid(s, y, g, present)
        self.n_rows += int(s.size)
        if self.exact and np.unique(self._code).size > self.max_exact:
            self._to_grid()
        return self

    def _add_to_grid(self, s, y, g, present) -> None:
        """Aggregate a chunk by (part, grid step) in one pass of ``np.bincount``."""
        steps = np.minimum((s * GRID).astype(np.int64), GRID - 1)
        index = steps if present.size == 1 else np.searchsorted(present, g) * GRID + steps
        size = present.size * GRID
        n = np.bincount(index, minlength=size)
        cell = np.flatnonzero(n)
        pos = np.bincount(index, weights=y, minlength=size)[cell].astype(np.int64)
        ssum = np.bincount(index, weights=s, minlength=size)[cell]
        part = present[cell // GRID] if present.size > 1 else np.full(cell.size, present[0], np.int64)
        self._merge(part, (cell % GRID).astype(np.float64), n[cell].astype(np.int64), pos, ssum)

    def result(self) -> ScoreCells:
        """The cells of every row added so far, sorted by part then score."""
        score = self._code.copy() if self.exact else self._sum / self._n
        return ScoreCells(score=score, n=self._n.copy(), n_pos=self._pos.copy(), score_sum=self._sum.copy(),
                          part=self._part.astype(np.int16), exact=self.exact, n_rows=self.n_rows)


def aggregate(scores, labels, part=None, *, max_exact: int = MAX_EXACT, chunk_rows: int = 2_000_000) -> ScoreCells:
    """Aggregate rows (scores in [0, 1], 0/1 labels) into score cells, ``chunk_rows`` at a time, each row in its
    ``part`` (:func:`parts_for`; default all 0): the distinct scores when at most ``max_exact``, else the grid.
    """
    s = np.asarray(scores)
    acc = CellAccumulator(max_exact)
    for start in range(0, max(s.size, 1), int(chunk_rows)):
        stop = start + int(chunk_rows)
        acc.add(s[start:stop], np.asarray(labels)[start:stop], None if part is None else np.asarray(part)[start:stop])
    return acc.result()


@dataclass(frozen=True)
class ClassCells:
    """The K + 1 binary reductions of K-class rows as score cells: ``top``, the confidence cells (score ``max_k P_ik``,
    positive when the predicted class, argmax with ties to the lowest, is the label); ``classes[k]`` (score ``P_ik``,
    positive when the label is ``k``); ``n_rows``, the rows aggregated.
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
    """Aggregate K-class rows into :class:`ClassCells`: ``P`` (n, K) probabilities measured as given, or logits
    (``logits=True``: softmaxed), ``y`` class indices, ``part`` and ``max_exact`` as :func:`aggregate` (each reduction
    making its own exact-or-grid choice). DataError as :func:`calibdash.measures.class_measures.check_inputs`.
    """
    if logits:
        P = as_scores(P, True).probabilities
    P, y, _ = check_inputs(P, y)
    return ClassCellAccumulator(P.shape[1], max_exact).add(P, y, part).result()


class ClassCellAccumulator:
    """K-class rows aggregated into :class:`ClassCells` batch by batch, in bounded memory: one
    :class:`CellAccumulator` per reduction, so one batch or many give the same cells as :func:`class_cells`."""

    def __init__(self, k: int, max_exact: int = MAX_EXACT):
        self.k = int(k)
        self._acc = [CellAccumulator(max_exact) for _ in range(self.k + 1)]

    def add(self, P: np.ndarray, y: np.ndarray, part=None) -> "ClassCellAccumulator":
        """Add a batch: ``P`` (m, K) probabilities (checked by the caller), class indices ``y``, parts."""
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


# the measures of :data:`calibdash.measures.class_measures.MEASURES` from cells, at the table's settings (15 equal-width
# bins): the binary measures of :mod:`calibdash.measures` on the cells' weighted rows
def per_class_ece_cells(cells: ClassCells) -> np.ndarray:
    """Each class's ECE, shape (K,); every class's cells hold all N rows, so ``|B_bk| / N`` is the rows' share."""
    rows = [c.weighted_rows() for c in cells.classes]
    return np.array([calibration.ece(s, y, N_BINS, "uniform", w) for s, y, w in rows])


def brier_cells(cells: ClassCells) -> float:
    """Brier score (Brier 1950) ``(1/N) sum_k sum_i (P_ik - 1[y_i = k])^2``, summed over each class's cells."""
    total = 0.0
    for c in cells.classes:
        s, y, w = c.weighted_rows()
        total += float(np.dot(calibration.squared_errors(s, y), w))
    return total / cells.n_rows


def log_loss_cells(cells: ClassCells) -> float:
    """Log-loss ``-(1/N) sum_i ln q_i``, ``q_i = P_{i, y_i}`` clipped: the positive weighted rows of every class."""
    total = 0.0
    for c in cells.classes:
        q, w = c.score[c.n_pos > 0], c.n_pos[c.n_pos > 0].astype(float)
        total += float(np.dot(calibration.log_losses(q, np.ones_like(q), calibration.LOG_LOSS_EPS), w))
    return total / cells.n_rows


def _binned_top(measure, cells: ClassCells) -> float:
    s, a, w = cells.top.weighted_rows()
    return measure(s, a, N_BINS, "uniform", w)


#: Measure name (as :data:`calibdash.measures.class_measures.MEASURES`) -> its value from cells: ECE and MCE (Guo et
#: al. 2017, Eqs. 3, 5), SmoothECE (Błasiok & Nakkiran 2023) and the debiased l2 error (Kumar, Liang & Ma 2019) of the
#: confidence cells; class-wise ECE (Kull et al. 2019, section 5) the mean of the class cells' ECEs; Accuracy and
#: Overconfidence (mean confidence minus accuracy, Guo et al. section 2) from the confidence cells' sums (exact on grid
#: cells too).
CELL_MEASURES: dict[str, Callable[[ClassCells], float]] = {
    "ECE": lambda c: _binned_top(calibration.ece, c),
    "MCE": lambda c: _binned_top(calibration.mce, c),
    "cwECE": lambda c: float(per_class_ece_cells(c).mean()),
    "smECE": lambda c: smooth.smooth_ece(*c.top.weighted_rows()),
    "dCE": lambda c: binned.debiased_l2_ce(*c.top.weighted_rows(), n_bins=N_BINS),
    "LogLoss": log_loss_cells,
    "Brier": brier_cells,
    "Accuracy": lambda c: float(c.top.n_pos.sum()) / float(c.top.n.sum()),
    "Overconfidence": lambda c: float(c.top.score_sum.sum() - c.top.n_pos.sum()) / float(c.top.n.sum()),
}


def cell_measures(cells: ClassCells, names=None) -> dict[str, float]:
    """The asked measures (default all of :data:`calibdash.measures.class_measures.MEASURES`) from cells."""
    return {n: float(CELL_MEASURES[n](cells)) for n in check_names(names)}
