"""Keyed cells of rows in memory (the Groups & time page's rows and the in-memory engine): the key column read by
the rows' own rules (``group_ids``; ``as_dates``, which reads text dates in many formats where the SQL engines read
ISO-8601 only), the keys and cells made by :mod:`~calibdash.monitoring.keyed.assemble`, as every engine makes them."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...evaluation.cells import GRID, MAX_EXACT, grid_code
from ..periods import (DATE_SHARE, YMD_RANGE, as_dates, day_codes, freq_from_days, period_start_days, to_periods,
                       ymd_note)
from ...core.errors import DataError
from ..grouping import group_ids, make_groups
from ...core.validation import check_labels, check_scores
from . import PERIODS, Key, KeyedCells
from .assemble import group_cells, period_cells

__all__ = ["keyed_cells", "row_keys", "not_dates_error", "read_dates_check"]


def not_dates_error(name: str, example=()) -> DataError:
    """The refusal of a period key whose column holds no dates (every engine says it alike)."""
    shown = f" (such as {', '.join(map(repr, example))})" if len(example) else ""
    return DataError(f"{name} does not hold dates{shown}: a period key needs a column of dates or date-times "
                     "(2025-03-14, 2025-03-14 10:30), or of whole numbers YYYYMMDD.")


def read_dates_check(how: str, n_read: int, counts, name: str) -> list:
    """Refuse a period column that holds no dates, from an engine's statistics scan, as ``as_dates`` decides on rows;
    returns the notes on how the column was read. ``how``: ``"dates"`` (a date type: nothing to check), ``"text"``
    (``counts``: present entries, entries like numbers) or ``"ymd"`` (``counts``: present numbers, non-whole ones,
    their min and max); ``n_read`` the rows whose date was read."""
    notes = []
    if how == "text":
        n_text, n_numeric = int(counts[0]), int(counts[1])
        if n_text == 0 or n_numeric > 0.5 * n_text or n_read < DATE_SHARE * n_text:
            raise not_dates_error(name)
    elif how == "ymd":
        n_num, n_frac, lo, hi = int(counts[0]), int(counts[1]), counts[2], counts[3]
        if n_num == 0 or n_frac or lo < YMD_RANGE[0] or hi > YMD_RANGE[1] or n_read < DATE_SHARE * n_num:
            raise not_dates_error(name)
        notes.append(ymd_note(name))
    if n_read == 0:
        raise DataError(f"no row of {name} holds a date.")
    return notes


def keyed_cells(scores, labels, values, key: Key, part=None, *, max_exact: int = MAX_EXACT) -> KeyedCells:
    """Score cells of rows in memory, keyed by the group or period of ``values`` (one per row) as ``key`` says; the rest
    as :func:`calibdash.evaluation.cells.aggregate` takes it. A period key leaves out the rows without a readable date
    (``n_left_out``), ``freq="auto"`` choosing among :data:`~calibdash.monitoring.keyed.PERIODS` by ``freq_from_days``'s
    rule. DataError for other lengths, bad scores or labels, or no readable date; SettingsError for too many keys.
    """
    s = check_scores(scores)
    y = check_labels(labels, s.size, require_both=False)
    v = pd.Series(values).reset_index(drop=True)
    if len(v) != s.size:
        raise DataError(f"the key column {key.column!r} has {len(v)} values but there are {s.size} rows.")
    g = np.zeros(s.size, dtype=np.int8) if part is None else np.asarray(part).reshape(-1)
    if g.size != s.size:
        raise DataError(f"part has {g.size} values but scores has {s.size}.")
    codes = _exact_scores(s, int(max_exact))
    exact = codes is not None
    if key.kind == "group":
        kid, distinct, coding = group_ids(v, max_groups=key.max_groups, n_quantiles=key.n_quantiles)
        n_ids = len(distinct)
        kid[kid < 0] = n_ids                                           # the last id: no value
        values_of = np.empty(n_ids + 1, dtype=object if coding.how == "text" else float)
        values_of[:-1] = distinct
        kid, part, code, n, pos, ssum = _reduce_rows(kid, n_ids + 1, g, s, y, codes)
        return group_cells(values_of[kid], kid == n_ids, part, code, n, pos, ssum, exact=exact, coding=coding,
                           key=key)
    dates, notes = as_dates(v, key.column)
    if dates is None:
        raise not_dates_error(key.column, v.dropna().astype(str).head(3).tolist())
    # periods of the distinct date-times, then of the rows through their index (-1: no readable date, left out)
    ids, moments = pd.factorize(dates, use_na_sentinel=True)
    del dates
    if not len(moments):
        raise DataError(f"no row of {key.column} holds a date.")
    days = day_codes(moments)
    freq = freq_from_days(days, PERIODS) if key.freq == "auto" else key.freq
    starts, period_of = np.unique(period_start_days(days, freq), return_inverse=True)
    left_out = ids < 0
    kid = period_of.reshape(-1)[ids]
    kid[left_out] = -1
    del ids
    kid, part, code, n, pos, ssum = _reduce_rows(kid, starts.size, g, s, y, codes)
    return period_cells(starts[kid], part, code, n, pos, ssum, exact=exact, key=key, freq=freq,
                        first=moments.min(), last=moments.max(), n_left_out=int(left_out.sum()), notes=notes)


#: Rows reduced at a time: every temporary of :func:`_reduce_rows` and :func:`_exact_scores` is this long.
_BLOCK = 1 << 20
#: Most (key, part, score code) combinations counted by dense ``bincount`` arrays (beyond: each block's
#: combinations found by a sort and merged).
_DENSE_CELLS = 1 << 21


def _exact_scores(s: np.ndarray, max_exact: int) -> np.ndarray | None:
    """The sorted distinct scores when there are at most ``max_exact``, else None (the grid), block by block."""
    seen = np.empty(0, dtype=float)
    for lo in range(0, s.size, _BLOCK):
        seen = np.union1d(seen, pd.unique(s[lo:lo + _BLOCK]))
        if seen.size > max_exact:
            return None
    return seen


def _reduce_rows(kid, n_keys: int, part, s, y, codes):
    """Rows grouped by (key id, part, score code): ``(key id, part, code, n, n_pos, score_sum)`` per group; ``kid`` is
    each row's key id (-1: left out), ``codes`` the sorted distinct scores or None (grid steps). Rows are read
    :data:`_BLOCK` at a time, counted into dense arrays up to :data:`_DENSE_CELLS` combinations, else merged by sort.
    """
    p_lo = int(part.min()) if part.size else 0
    n_parts = int(part.max()) - p_lo + 1 if part.size else 1
    n_codes = codes.size if codes is not None else GRID
    size = n_keys * n_parts * n_codes
    dense = size <= _DENSE_CELLS
    if dense:
        acc = [np.zeros(size, np.int64), np.zeros(size), np.zeros(size)]
    else:
        acc = [np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0)]
    for lo in range(0, s.size, _BLOCK):
        rows = slice(lo, lo + _BLOCK)
        k, sc, yc, pc = kid[rows], s[rows], y[rows], part[rows]
        if (k < 0).any():
            keep = k >= 0
            k, sc, yc, pc = k[keep], sc[keep], yc[keep], pc[keep]
        rank = np.searchsorted(codes, sc) if codes is not None else grid_code(sc).astype(np.int64)
        index = (k * n_parts + (pc.astype(np.int64) - p_lo)) * n_codes + rank
        if dense:
            acc[0] += np.bincount(index, minlength=size)
            acc[1] += np.bincount(index, weights=yc, minlength=size)
            acc[2] += np.bincount(index, weights=sc, minlength=size)
            continue
        cell, inv = np.unique(index, return_inverse=True)
        block = [cell, np.bincount(inv), np.bincount(inv, weights=yc), np.bincount(inv, weights=sc)]
        acc = _merge_counts(acc, block) if acc[0].size else block
    if dense:
        cell = np.flatnonzero(acc[0])
        n, pos, ssum = acc[0][cell], acc[1][cell], acc[2][cell]
    else:
        cell, n, pos, ssum = acc
    rest = cell // n_codes
    code = codes[cell % n_codes] if codes is not None else (cell % n_codes).astype(float)
    return (rest // n_parts, rest % n_parts + p_lo, code, n.astype(np.int64), np.rint(pos).astype(np.int64), ssum)


def _merge_counts(a: list, b: list) -> list:
    """Two lists ``[combination, n, n_pos, score_sum]`` (each sorted by combination) merged into one."""
    cell, inv = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    return [cell] + [np.bincount(inv, weights=np.concatenate([x, z]), minlength=cell.size)
                     for x, z in zip(a[1:], b[1:])]


def row_keys(values, kc: KeyedCells) -> np.ndarray:
    """Each row's key among ``kc.labels`` (None without a readable date), for ``values``, the key column of the rows
    ``kc`` was made of, in any order: ``make_groups`` with the key's settings, or ``to_periods`` at the cells' period
    length. DataError when the rows give keys the cells do not have."""
    spec = kc.spec
    if spec.kind == "group":
        out, *_ = make_groups(values, max_groups=spec.max_groups, n_quantiles=spec.n_quantiles,
                              min_rows=spec.min_rows, name=spec.column)
        out = np.asarray(out, dtype=object)
    else:
        per = to_periods(values, spec.freq, name=spec.column)
        names = np.asarray(list(per.labels) + [None], dtype=object)
        out = names[np.where(per.codes < 0, len(per.labels), per.codes)]
    unknown = set(pd.unique(out[pd.notna(out)])) - set(kc.labels)
    if unknown:
        raise DataError(f"these rows of {spec.column!r} give keys the cells do not have "
                        f"({', '.join(map(repr, sorted(map(str, unknown))[:3]))}): they are not the cells' rows.")
    return out
