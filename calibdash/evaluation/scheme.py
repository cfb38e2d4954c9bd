"""How rows are divided between fitting and judging: :class:`Scheme`, and the one dealer of its parts.

Kinds: ``"split"``, a stratified random split holding out ``test_size`` of each class; ``"column"``, the file's split
column (:data:`TRAIN_WORDS` fit, :data:`TEST_WORDS` are judged, or ``train_value`` marks the training rows);
``"kfold"``, K-fold cross-fitting (every row judged once, out of fold); ``"insample"``, fit and judge on all rows
(optimistic, offered because users ask).

The parts are dealt by the rows' **content**, never their positions, so any row order gives the same parts: each row
gets a seeded 32-bit key (:func:`content_keys`: ``row_hash`` chained over the 32-bit halves of its values' bit patterns
and its class), and within each class rows are ordered by key, ties broken by their values (:func:`content_order`).
:func:`split_plan` deals over that order: binary rows by scikit-learn's stratified ``train_test_split`` and
``StratifiedKFold`` (at random, with a note, when a part is too small for both classes); K-class rows directly, the
first ``ceil(test_size * n_c)`` rows of class ``c`` held out (a single-row class is fitted on), or each class's rows
dealt to the folds in turn. A held-out binary scheme needs 2 rows of each class, else a DataError suggests the
in-sample scheme. :func:`content_sample` draws a stratified sample by the same keys.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold, train_test_split

from .cells import parts_for, row_hash
from ..core.errors import DataError, SettingsError

__all__ = ["Scheme", "column_parts", "class_quotas", "split_plan", "cell_parts", "part_plan"]

TRAIN_WORDS = frozenset({"train", "training", "calib", "calibration", "cal", "fit", "dev"})
TEST_WORDS = frozenset({"test", "testing", "holdout", "hold-out", "valid", "validation", "val", "eval"})
KINDS = ("split", "column", "kfold", "insample")

#: What a refusal for too few rows of a class suggests instead.
FEW_ROWS_ADVICE = ("Choose the in-sample scheme (Scheme('insample'), --scheme insample, the pages' "
                   "'In-sample'; optimistic: fitted and judged on the same rows), or add rows of that class.")
_LOW = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class Scheme:
    """How rows are divided between fitting and judging (module docstring): ``kind`` {"split", "column", "kfold",
    "insample"}; ``test_size``, the held-out fraction of ``"split"``; ``seed`` of the split or fold shuffle;
    ``n_folds``, K of ``"kfold"``; ``train_value``, the ``"column"`` value marking training rows (others held out).
    """

    kind: str = "split"
    test_size: float = 0.3
    seed: int = 0
    n_folds: int = 5
    train_value: str | None = None

    def describe(self, on_cells: bool = False) -> str:
        """One line for the sidebar and reports; ``on_cells``: rows divided by their hashed position
        (:mod:`calibdash.evaluation.cells`), not stratified by label."""
        how = "Random split by row hash" if on_cells else "Stratified split"
        if self.kind == "split":
            return (f"{how}: {100 * (1 - self.test_size):.0f}% fit / "
                    f"{100 * self.test_size:.0f}% held out (seed {self.seed})")
        if self.kind == "column":
            return "The file's split column" + (f" (train = {self.train_value!r})" if self.train_value else "")
        if self.kind == "kfold":
            return f"{self.n_folds}-fold cross-fitting{' by row hash' if on_cells else ''} (seed {self.seed})"
        if self.kind == "insample":
            return "In-sample: fitted and judged on the same rows (optimistic)"
        return self.kind


def column_parts(split: np.ndarray, train_value: str | None) -> np.ndarray:
    """Boolean mask of training rows from a split column: the value ``train_value`` marks them, or else the words
    of :data:`TRAIN_WORDS` (every value must then be one of :data:`TRAIN_WORDS` or :data:`TEST_WORDS`, case and
    surrounding spaces aside). DataError when no row has ``train_value`` or a value names neither part."""
    vals = pd.Series(split).astype(str).str.strip()
    if train_value is not None:
        mask = (vals == str(train_value)).to_numpy()
        if not mask.any():
            raise DataError(f"no row of the split column has the value {train_value!r}; "
                            f"its values are {sorted(vals.unique())[:10]}.")
        return mask
    low = vals.str.lower()
    is_train = low.isin(TRAIN_WORDS).to_numpy()
    is_test = low.isin(TEST_WORDS).to_numpy()
    unknown = sorted(vals[~(is_train | is_test)].unique())
    if unknown:
        raise DataError(
            f"the split column has values {unknown[:10]} that name neither a training part "
            f"({', '.join(sorted(TRAIN_WORDS))}) nor a test part ({', '.join(sorted(TEST_WORDS))}); "
            "choose which value marks the training rows."
        )
    return is_train


def content_keys(values: np.ndarray, labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """A seeded 32-bit key per row from its class and the bit patterns of its values (uint64 array);
    ``values`` (n, K), or (n,) for one score column."""
    bits = np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(len(labels), -1)).view(np.uint64)
    h = row_hash(np.asarray(labels, dtype=np.uint64), seed)
    for j in range(bits.shape[1]):
        col = bits[:, j]
        h = row_hash(h ^ (col & _LOW), seed)
        h = row_hash(h ^ (col >> np.uint64(32)), seed)
    return h


def content_order(values, labels, seed: int = 0) -> np.ndarray:
    """Row indices ordered by class, then key, then the row's values: the same rows in the same order (up to
    identical rows) whatever order the table came in; ``values`` (n, K), or (n,) for one score column.

    The order does not read feature columns, so every method of one evaluation gets the same parts; for MBCT, which
    of rows with the same label and score lands in which part still follows their positions.
    """
    labels = np.asarray(labels, dtype=np.int64)
    values = np.asarray(values, dtype=float).reshape(labels.size, -1)
    keys = content_keys(values, labels, seed)
    # one sort on (class, key) packed in 64 bits, then the rows that share both (identical rows, or
    # rare distinct rows whose keys collide) ordered by their values; the same order as
    # lexsort((values[:, K-1], ..., values[:, 0], keys, labels)), and stable like it
    packed = (labels.astype(np.uint64) << np.uint64(32)) | keys
    order = np.argsort(packed, kind="stable")
    p = packed[order]
    same = p[1:] == p[:-1]
    if same.any():
        tied = np.r_[same, False] | np.r_[False, same]          # positions in a run of equal (class, key)
        group = np.cumsum(np.r_[True, ~same])[tied]             # the run of each such position
        rows = order[tied]
        sub = values[rows]
        order[tied] = rows[np.lexsort([*(sub[:, j] for j in range(sub.shape[1] - 1, -1, -1)), group])]
    return order


def _within_class(sorted_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For labels sorted by class: each row's position within its class, and its class's size."""
    n = sorted_y.size
    starts = np.flatnonzero(np.r_[True, sorted_y[1:] != sorted_y[:-1]])
    sizes = np.diff(np.r_[starts, n])
    return np.arange(n) - np.repeat(starts, sizes), np.repeat(sizes, sizes)


def class_quotas(counts, size: int) -> np.ndarray:
    """Each class's places in a stratified sample of ``size`` of rows whose class counts are ``counts``: Hamilton's
    largest-remainder rule (``floor(size n_c / n)`` each, the places left over one each to the largest remainders,
    ties to the lower class), summing to ``size`` exactly. Every count when ``size >= n``."""
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if int(size) >= n:
        return counts.copy()
    share = int(size) * counts / n
    quota = np.floor(share).astype(np.int64)
    extra = int(size) - int(quota.sum())
    quota[np.lexsort((np.arange(counts.size), -(share - quota)))[:extra]] += 1
    return quota


def content_sample(values, labels, rows, size: int, seed: int = 0) -> np.ndarray:
    """``size`` of ``rows`` (indices into ``values``), ascending: each class its :func:`class_quotas` places, taken
    first in :func:`content_order` with ``seed``. All of ``rows`` when ``size >= len(rows)``; SettingsError when
    ``size`` is below 1."""
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    if int(size) != size or size < 1:
        raise SettingsError(f"a sample needs a whole number of rows of at least 1, got {size!r}.")
    if size >= rows.size:
        return rows
    v = np.asarray(values, dtype=float)[rows]
    y = np.asarray(labels, dtype=np.int64)[rows]
    quota = class_quotas(np.bincount(y), size)
    order = content_order(v, y, seed)
    rank, _ = _within_class(y[order])
    return np.sort(rows[order[rank < quota[y[order]]]])


def rows_text(k: int, what: str = "row") -> str:
    """``"1 row"``, ``"1,200 rows"``: a count for people."""
    return f"{k:,} {what}{'s' if k != 1 else ''}"


def _smaller_class(y: np.ndarray) -> tuple[str, int]:
    """("positive" or "negative", its count): the 0/1 label's smaller class."""
    n_pos = int(y.sum())
    return ("positive", n_pos) if n_pos <= y.size - n_pos else ("negative", int(y.size - n_pos))


def refuse_too_few(which: str, small: int, n: int, what: str) -> None:
    """DataError unless the smaller class (``which``, ``small`` of ``n`` rows) has the 2 rows a held-out scheme
    (``what``) needs, one to fit on and one to judge."""
    if small < 2:
        raise DataError(f"{what} needs at least 2 rows of each class, one to fit on and one to judge; the {which} "
                        f"class has {rows_text(small)} among {n:,}. {FEW_ROWS_ADVICE}")


def _binary_split(y: np.ndarray, scheme: Scheme, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The random split of 0/1 labels: stratified by class when it can be, else a plain random split saying
    why in ``notes``."""
    n = y.size
    idx = np.arange(n)
    refuse_too_few(*_smaller_class(y), n, "a held-out split")
    n_test = int(np.ceil(scheme.test_size * n))        # scikit-learn's sizes
    n_fit = n - n_test
    if n_test < 1 or n_fit < 1:
        raise DataError(f"test_size={scheme.test_size} of {n:,} rows leaves the "
                        f"{'held-out' if n_test < 1 else 'fitting'} part empty; choose a test_size between "
                        f"{1 / n:.3g} and {1 - 1 / n:.3g}.")
    try:
        tr, te = train_test_split(idx, test_size=scheme.test_size, random_state=scheme.seed, stratify=y)
    except ValueError:
        why = (f"the {'held-out' if n_test <= n_fit else 'fitting'} part would hold "
               f"{rows_text(min(n_test, n_fit))}, too few to hold both classes")
        tr, te = train_test_split(idx, test_size=scheme.test_size, random_state=scheme.seed, shuffle=True)
        notes.append(f"the split is not stratified by class: {why}, so the rows were split at random instead "
                     f"(seed {scheme.seed})")
    return np.sort(tr), np.sort(te)


def _binary_folds(y: np.ndarray, k: int, seed: int, notes: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """K stratified folds of 0/1 labels: scikit-learn's ``StratifiedKFold``, or, when every class has fewer than K
    rows (which it refuses), each class's rows shuffled with ``seed`` and dealt to the folds in turn."""
    n = y.size
    idx = np.arange(n)
    which, small = _smaller_class(y)
    refuse_too_few(which, small, n, f"{k}-fold cross-fitting")
    if n - small >= k:
        folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        with warnings.catch_warnings():       # "The least populated class in y has only ... members": said below
            warnings.simplefilter("ignore", UserWarning)
            pairs = list(folds.split(idx, y))
    else:
        rng = np.random.default_rng(seed)
        fold = np.empty(n, dtype=np.int64)
        start = 0
        for cls in (0, 1):
            rows = rng.permutation(np.flatnonzero(y == cls))
            fold[rows] = (start + np.arange(rows.size)) % k
            start += rows.size
        pairs = [(idx[fold != f], idx[fold == f]) for f in range(k)]
    if small < k:
        blind = sum(1 for _, te in pairs if np.unique(y[te]).size < 2)
        notes.append(f"only {rows_text(small, which + ' row')} for {k} folds: {rows_text(blind, 'fold')} judge "
                     "rows of one class only (every fold still fits on both classes, and every row is judged once)")
    return pairs


def _class_deal(values, y: np.ndarray, scheme: Scheme, notes: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The split or folds of K-class rows, dealt in :func:`content_order` class by class."""
    n = y.size
    idx = np.arange(n)
    order = content_order(values, y, scheme.seed)
    sorted_y = y[order]
    rank, size = _within_class(sorted_y)                 # position within its class, its class's size
    if scheme.kind == "split":
        n_test = np.where(size > 1, np.ceil(scheme.test_size * size - 1e-9), 0).astype(np.int64)
        held = np.zeros(n, dtype=bool)
        held[order[rank < np.minimum(n_test, size - 1)]] = True
        single = int(np.sum(np.bincount(y) == 1))
        if single:
            notes.append(f"{rows_text(single, 'class')} with a single row: fitted on, not judged")
        return [(idx[~held], idx[held])]
    k = int(scheme.n_folds)
    fold = np.empty(n, dtype=np.int64)
    fold[order] = np.arange(n) % k                       # dealt in turn, class after class
    counts = np.bincount(y)
    few = int(np.sum((counts > 0) & (counts < k)))
    if few:
        notes.append(f"{rows_text(few, 'class')} with fewer rows than the {k} folds: some folds fit "
                     "without them (each method's docstring says what it predicts for a class it did not see)")
    return [(idx[fold != f], idx[fold == f]) for f in range(k)]


def split_plan(labels, scheme: Scheme, split=None, *, order=None, values=None
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """(fit rows, judged rows) index pairs for ``scheme``, each ascending, and notes on how they were made.

    ``labels``: 0/1 labels, or class indices with ``values`` (the K-class probabilities or logits the content keys are
    made of); ``split``: the file's split column, for ``Scheme(kind="column")``; ``order``: binary rows' order to deal
    the split and folds in (:func:`content_order` of scores and labels; without it, the positions). DataError when a
    part would be empty or fit on one class only, a binary class has a single row, or the split column is unusable;
    SettingsError for an unknown scheme kind, fewer than 2 folds, or a test size outside (0, 1).
    """
    y = np.asarray(labels) if values is None else np.asarray(labels, dtype=np.int64)
    if values is None and order is not None and scheme.kind in ("split", "kfold"):
        order = np.asarray(order)
        pairs, notes = split_plan(y[order], scheme, split)
        return [(np.sort(order[tr]), np.sort(order[te])) for tr, te in pairs], notes
    n = y.size
    idx = np.arange(n)
    notes: list[str] = []
    if scheme.kind not in KINDS:
        raise SettingsError(f"scheme kind must be one of {KINDS}, got {scheme.kind!r}.")
    if scheme.kind == "split" and not 0 < scheme.test_size < 1:
        raise SettingsError(f"test_size must lie strictly between 0 and 1, got {scheme.test_size}.")
    if scheme.kind == "kfold":
        if int(scheme.n_folds) < 2:
            raise SettingsError(f"k-fold needs at least 2 folds, got {int(scheme.n_folds)}.")
        if int(scheme.n_folds) > n:
            raise DataError(f"{int(scheme.n_folds)}-fold cross-fitting needs at least {int(scheme.n_folds)} rows; "
                            f"there are {n:,}.")
    if scheme.kind == "insample":
        pairs = [(idx, idx)]
    elif scheme.kind == "column":
        mask = _train_mask(split, scheme)
        pairs = [(idx[mask], idx[~mask])]
    elif values is not None:
        pairs = _class_deal(values, y, scheme, notes)
    elif scheme.kind == "split":
        pairs = [_binary_split(y, scheme, notes)]
    else:
        pairs = _binary_folds(y, int(scheme.n_folds), scheme.seed, notes)
    for tr, te in pairs:
        if te.size == 0:
            raise DataError("the held-out part is empty.")
        if tr.size == 0:
            raise DataError("the fitting part is empty.")
        if np.unique(y[tr]).size < 2:
            which, small = _smaller_class(y) if values is None else ("", 0)
            why = (f"calibrators need both (the {which} class has {rows_text(small)} among {y.size:,})"
                   if values is None else "calibration needs at least two")
            raise DataError(f"the fitting part ({rows_text(tr.size)}) holds one class only; {why}.")
    if values is None and scheme.kind in ("split", "column"):
        judged = y[pairs[0][1]]
        for cls, name in ((1, "positive"), (0, "negative")):
            if not (judged == cls).any():
                notes.append(f"the held-out rows hold no {name} row: AUC is undefined (NaN) there, and "
                             "calibration is judged on one class")
    return pairs, notes


def _train_mask(split, scheme: Scheme) -> np.ndarray:
    if split is None:
        raise DataError("this data set has no split column; choose a random split or k-fold instead.")
    return column_parts(np.asarray(split), scheme.train_value)


def cell_parts(n_rows: int, scheme: Scheme, split=None) -> np.ndarray:
    """Each row's part under ``scheme`` from its position alone or the split column, as every engine decides it
    (:mod:`calibdash.evaluation.cells`): 0 = fit, 1 = held out; k-fold: the fold."""
    if scheme.kind == "column":
        return parts_for(n_rows, "column", split_train=_train_mask(split, scheme))
    return parts_for(n_rows, scheme.kind, seed=scheme.seed, k=scheme.n_folds, test_size=scheme.test_size)


def part_plan(scheme: Scheme) -> tuple[list[list[int]], list[list[int]]]:
    """The parts (of :func:`cell_parts`) each fit is made on, and those its model judges, one entry per fit."""
    if scheme.kind == "kfold":
        k = int(scheme.n_folds)
        return [[p for p in range(k) if p != f] for f in range(k)], [[f] for f in range(k)]
    if scheme.kind == "insample":
        return [[0]], [[0]]
    return [[0]], [[1]]
