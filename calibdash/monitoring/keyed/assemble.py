"""From raw key codes to keyed cells: the step every engine shares after grouping its rows.

An engine groups its rows by (raw key code, part, score code), the raw key code being what it computes row by row
where the rows live: for a group, the value as trimmed text, the number itself or the quantile group
(:func:`~calibdash.monitoring.grouping.group_ids`); for a period, its first day in days since 1970-01-01
(:func:`~calibdash.monitoring.periods.period_start_days`). The keys shown are then made from the raw codes' rows
alone (:func:`~calibdash.monitoring.grouping.name_groups`, :func:`~calibdash.monitoring.periods.name_periods`) and the
rows merged into one cell per (key, part, score code) (:func:`reduce_keyed`), so every engine gives the same cells.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...evaluation.cells import ScoreCells
from ..periods import name_periods
from ..grouping import GroupCoding, name_groups
from . import Key, KeyedCells

__all__ = ["group_cells", "period_cells"]


def reduce_keyed(key, part, code, n, n_pos, score_sum, *, exact: bool) -> tuple[ScoreCells, np.ndarray]:
    """``(cells, key)``: one cell per (key, part, score code) from grouped rows (or single rows: ``n`` = 1), sorted
    by key, part, score, and each cell's key (int32). ``code`` is the exact score (``exact``) or the grid step; a
    cell's score its code or ``score_sum / n``, as in :mod:`calibdash.evaluation.cells`."""
    key = np.asarray(key, dtype=np.int64)
    part = np.asarray(part, dtype=np.int64)
    code = np.asarray(code, dtype=float)
    if code.size == 0:
        empty = ScoreCells(score=np.empty(0), n=np.empty(0, np.int64), n_pos=np.empty(0, np.int64),
                           score_sum=np.empty(0), part=np.empty(0, np.int16), exact=bool(exact), n_rows=0)
        return empty, np.empty(0, np.int32)
    # one int64 sort key (key, part, code rank): one argsort, not a 3-key lexsort
    ranks, rank = np.unique(code, return_inverse=True)
    p_lo, n_parts = part.min(), int(part.max() - part.min()) + 1
    order = np.argsort((key * n_parts + (part - p_lo)) * ranks.size + rank.reshape(-1), kind="stable")
    key, part, code = key[order], part[order], code[order]
    start = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (part[1:] != part[:-1]) | (code[1:] != code[:-1])])
    n = np.add.reduceat(np.asarray(n, dtype=np.int64)[order], start)
    pos = np.add.reduceat(np.asarray(n_pos, dtype=np.int64)[order], start)
    ssum = np.add.reduceat(np.asarray(score_sum, dtype=float)[order], start)
    score = code[start].copy() if exact else ssum / n
    cells = ScoreCells(score=score, n=n, n_pos=pos, score_sum=ssum, part=part[start].astype(np.int16),
                       exact=bool(exact), n_rows=int(n.sum()))
    return cells, key[start].astype(np.int32)


def group_cells(raw, missing, part, code, n, n_pos, score_sum, *, exact: bool, coding: GroupCoding,
                key: Key) -> KeyedCells:
    """Keyed cells of a group key from rows grouped by (raw code, part, score code): ``raw`` each grouped row's raw
    code (anything where ``missing``), ``coding`` how the codes were made; the rest as :func:`reduce_keyed`."""
    missing = np.asarray(missing, dtype=bool)
    n = np.asarray(n, dtype=np.int64)
    present = ~missing
    raw = np.asarray(raw, dtype=object if coding.how == "text" else float)
    ids, uniq = pd.factorize(raw[present], sort=False)
    weights = np.bincount(ids, weights=n[present], minlength=len(uniq))
    n_missing = int(n[missing].sum())
    named = name_groups(list(uniq), weights, coding, n_missing=n_missing, missing_weight=float(n_missing),
                        max_groups=key.max_groups, n_quantiles=key.n_quantiles, min_rows=key.min_rows,
                        name=key.column)
    index = {g: i for i, g in enumerate(named.order)}
    k = np.empty(raw.size, dtype=np.int64)
    k[present] = np.asarray([index[g] for g in named.names], dtype=np.int64)[ids] if len(uniq) else 0
    if missing.any():
        k[missing] = index[named.missing]
    cells, kk = reduce_keyed(k, part, code, n, n_pos, score_sum, exact=exact)
    return KeyedCells(cells=cells, key=kk, labels=tuple(named.order), spec=key, notes=tuple(named.notes),
                      pooled=tuple(named.pooled))


def period_cells(start, part, code, n, n_pos, score_sum, *, exact: bool, key: Key, freq: str, first, last,
                 n_left_out: int = 0, notes=()) -> KeyedCells:
    """Keyed cells of a period key from rows grouped by (period's first day ``start``, part, score code); ``freq``
    (resolved), ``first``, ``last``, ``n_left_out`` and ``notes`` as :func:`~calibdash.monitoring.periods.name_periods`
    takes them."""
    start = np.asarray(start, dtype=np.int64)
    labels, stamps, said = name_periods(np.unique(start), freq, first=first, last=last, auto=key.freq == "auto",
                                        n_left_out=n_left_out, name=key.column, notes=notes)
    k = np.searchsorted(np.unique(start), start)
    cells, kk = reduce_keyed(k, part, code, n, n_pos, score_sum, exact=exact)
    return KeyedCells(cells=cells, key=kk, labels=tuple(labels), spec=dataclasses.replace(key, freq=freq),
                      starts=tuple(stamps), notes=tuple(said), n_left_out=int(n_left_out))
