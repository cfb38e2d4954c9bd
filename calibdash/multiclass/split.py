"""How rows of a K-class table are divided between fitting and judging, from their content alone.

The binary row path divides rows by position (:func:`calibdash.evaluation.split_plan`).
Here a row's part depends only on what the row holds (its class and its K values) and
the seed, so the same table in another row order is divided into the same parts (the
same multisets of rows) and every result that follows is the same:

* each row gets a seeded 32-bit key, :func:`calibdash.cells.row_hash` chained over the
  two 32-bit halves of each of its values' bit patterns and its class;
* within each class, rows are ordered by key, ties (identical rows have equal keys, and
  so may rare distinct ones) broken by the row's values, so rows that stay tied are
  identical and interchangeable;
* ``"split"``: the first ``ceil(test_size * n_c)`` rows of class ``c`` in that order
  are held out (stratified by class; a class of one row is fitted on, never only judged);
* ``"kfold"``: the rows of each class are dealt to the K folds in that order, each class
  starting where the last stopped (stratified; every fold non-empty when n >= K);
* ``"column"`` and ``"insample"`` as for binary data (:class:`calibdash.scheme.Scheme`).

:func:`content_sample` draws a stratified sample of some rows by the same keys, so a sample
of a large fitting part (what :func:`calibdash.multiclass.evaluation.evaluate_classes` fits
the parametric maps on) does not depend on the row order either.
"""
from __future__ import annotations

import math

import numpy as np

from ..cells import row_hash
from ..errors import DataError, SettingsError
from ..scheme import KINDS, Scheme, column_parts

__all__ = ["content_keys", "content_order", "content_sample", "class_quotas", "class_split_plan"]

_LOW = np.uint64(0xFFFFFFFF)


def content_keys(values: np.ndarray, labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """A seeded 32-bit key per row from its class and the bit patterns of its values (uint64 array)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    h = row_hash(np.asarray(labels, dtype=np.uint64), seed)
    for j in range(bits.shape[1]):
        col = bits[:, j]
        h = row_hash(h ^ (col & _LOW), seed)
        h = row_hash(h ^ (col >> np.uint64(32)), seed)
    return h


def content_order(values: np.ndarray, labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """Row indices ordered by class, then key, then the row's values: the same rows in the same
    order (up to identical rows) whatever order the table came in."""
    keys = content_keys(values, labels, seed)
    # one sort on (class, key) packed in 64 bits, then the rows that share both (identical rows, or
    # rare distinct rows whose keys collide) ordered by their values; the same order as
    # lexsort((values[:, K-1], ..., values[:, 0], keys, labels)), and stable like it
    packed = (np.asarray(labels).astype(np.uint64) << np.uint64(32)) | keys
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
    """Each class's places in a stratified sample of ``size`` of rows whose class counts are ``counts``.

    Hamilton's largest-remainder rule: class ``c`` gets ``floor(size n_c / n)`` places and the places left
    over go one each to the classes with the largest remainders (ties to the lower class index), so the
    places sum to ``size`` exactly. Every count when ``size >= n``.
    """
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
    """``size`` of ``rows`` (indices into ``values``), stratified by class and chosen by content: ascending.

    Class ``c``, holding ``n_c`` of the ``n`` rows, gets ``floor(size n_c / n)`` places, and the places
    left over go one each to the classes with the largest remainders ``size n_c / n - floor(.)`` (ties
    to the lower class index), so the sample has exactly ``size`` rows and each class its share to
    within one row (Hamilton's largest-remainder rule). Within a class the rows taken are the first in
    :func:`content_order` with ``seed``: the same rows (up to identical ones) whatever the row order.
    All of ``rows`` when ``size >= len(rows)``.

    Raises
    ------
    SettingsError
        ``size`` below 1.
    """
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    if int(size) != size or size < 1:
        raise SettingsError(f"a sample needs a whole number of rows of at least 1, got {size!r}.")
    n = rows.size
    if size >= n:
        return rows
    v = np.asarray(values, dtype=float)[rows]
    y = np.asarray(labels, dtype=np.int64)[rows]
    quota = class_quotas(np.bincount(y), size)
    order = content_order(v, y, seed)
    rank, _ = _within_class(y[order])
    return np.sort(rows[order[rank < quota[y[order]]]])


def _rows(k: int, what: str = "row") -> str:
    return f"{k:,} {what}{'s' if k != 1 else ''}"


def class_split_plan(values, labels, scheme: Scheme, split=None) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """(fit rows, judged rows) index pairs for ``scheme``, each ascending, and notes on how they were made.

    Parameters
    ----------
    values : ndarray (n, K)
        The table's probabilities or logits (what the keys are made of).
    labels : ndarray (n,)
        Class indices.
    scheme : Scheme
    split : array-like, optional
        The file's split column, for ``Scheme(kind="column")``.

    Raises
    ------
    DataError
        A part would be empty or the fitting part would hold one class only.
    SettingsError
        An unknown scheme kind, fewer than 2 folds, or a test size outside (0, 1).
    """
    y = np.asarray(labels, dtype=np.int64)
    n = y.size
    idx = np.arange(n)
    notes: list[str] = []
    if scheme.kind not in KINDS:
        raise SettingsError(f"scheme kind must be one of {KINDS}, got {scheme.kind!r}.")
    if scheme.kind == "insample":
        pairs = [(idx, idx)]
    elif scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        mask = column_parts(np.asarray(split), scheme.train_value)
        pairs = [(idx[mask], idx[~mask])]
    else:
        order = content_order(np.asarray(values, dtype=float), y, scheme.seed)
        sorted_y = y[order]
        starts = np.flatnonzero(np.r_[True, sorted_y[1:] != sorted_y[:-1]])
        rank, size = _within_class(sorted_y)                 # position within its class, its class's size
        if scheme.kind == "split":
            if not 0 < scheme.test_size < 1:
                raise SettingsError(f"test_size must lie strictly between 0 and 1, got {scheme.test_size}.")
            n_test = np.where(size > 1, np.ceil(scheme.test_size * size - 1e-9), 0).astype(np.int64)
            n_test = np.minimum(n_test, size - 1)
            held = np.zeros(n, dtype=bool)
            held[order[rank < n_test]] = True
            pairs = [(idx[~held], idx[held])]
            single = int(np.sum(np.diff(np.r_[starts, n]) == 1))
            if single:
                notes.append(f"{_rows(single, 'class')} with a single row: fitted on, not judged")
        else:
            k = int(scheme.n_folds)
            if k < 2:
                raise SettingsError(f"k-fold needs at least 2 folds, got {k}.")
            if k > n:
                raise DataError(f"{k}-fold cross-fitting needs at least {k} rows; there are {n:,}.")
            fold = np.empty(n, dtype=np.int64)
            fold[order] = np.arange(n) % k                   # dealt in turn, class after class
            pairs = [(idx[fold != f], idx[fold == f]) for f in range(k)]
            counts = np.bincount(y)
            few = int(np.sum((counts > 0) & (counts < k)))
            if few:
                notes.append(f"{_rows(few, 'class')} with fewer rows than the {k} folds: some folds fit "
                             "without them (each method's docstring says what it predicts for a class it did not see)")
    for tr, te in pairs:
        if te.size == 0:
            raise DataError("the held-out part is empty.")
        if tr.size == 0:
            raise DataError("the fitting part is empty.")
        if np.unique(y[tr]).size < 2:
            raise DataError(f"the fitting part ({_rows(tr.size)}) holds one class only; calibration needs at "
                            "least two.")
    return pairs, notes
