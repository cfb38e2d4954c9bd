"""How a column's values become groups (:func:`make_groups`), one rule for every engine: one group per value (text,
booleans, dates, numbers with at most ``max_groups`` distinct values; missing values the group ``"(missing)"``), else
``n_quantiles`` equal-weight quantile groups ``"[a, b)"`` of the numbers (numpy's linear rule, tied edges merged);
groups lighter than ``min_rows`` pooled into ``"other"``, last; more than ``max_groups`` after pooling refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import SettingsError
from ..core.numbers import is_numeric

__all__ = ["MAX_GROUPS", "MIN_ROWS", "N_QUANTILES", "GroupCoding", "coding_for"]

#: Name of the group the small groups are pooled into.
OTHER = "other"
#: Name of the group of rows whose value is missing.
MISSING = "(missing)"
#: Most groups shown side by side.
MAX_GROUPS = 20
#: Groups with less weight than this are pooled into :data:`OTHER`.
MIN_ROWS = 50
#: Quantile groups of a numeric column with more than ``max_groups`` distinct values.
N_QUANTILES = 5


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _weighted_quantiles(x: np.ndarray, w: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Quantiles of ``x`` with weights ``w``: numpy's linear rule, a row of weight ``v`` counting as ``v`` rows."""
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    keep = ws > 0
    xs, ws = xs[keep], ws[keep]
    if np.all(ws == 1):
        return np.quantile(xs, q)
    # position of the k-th of N rows (0-based) under the linear rule: q * (N - 1); row i covers
    # positions [cum_i - w_i, cum_i - 1]
    cum = np.cumsum(ws)
    pos = q * (cum[-1] - 1)
    lo = np.floor(pos)
    frac = pos - lo
    at = lambda p: xs[np.minimum(np.searchsorted(cum - 1, p, side="left"), xs.size - 1)]  # noqa: E731
    return at(lo) * (1 - frac) + at(lo + 1) * frac


def quantile_edges(x: np.ndarray, n_quantiles: int, sample_weight=None) -> np.ndarray:
    """Edges of ``n_quantiles`` equal-weight groups of the present values ``x``: the distinct quantiles at
    ``linspace(0, 1, n_quantiles + 1)`` (numpy's linear rule; weighted as :func:`make_groups` weighs rows)."""
    x = np.asarray(x, dtype=float)
    w = np.ones(x.size) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    edges = np.unique(_weighted_quantiles(x, w, np.linspace(0, 1, int(n_quantiles) + 1)))
    if edges.size < 2:
        edges = np.array([x.min(), x.max()])
    return edges


def quantile_bin(x, edges) -> np.ndarray:
    """The quantile group of each value: how many inner edges lie at or below it (``[e_k, e_{k+1})``, the
    last group closed)."""
    return np.searchsorted(np.asarray(edges, dtype=float)[1:-1], np.asarray(x, dtype=float), side="right")


@dataclass(frozen=True)
class GroupCoding:
    """How a column's present values became raw group codes (``how``): the value as trimmed text (booleans, dates, any
    non-number), the number itself, or the quantile group (:func:`quantile_bin` of ``edges``, :func:`quantile_edges`,
    of ``weighted`` rows); ``n_distinct`` the column's distinct present values.
    """

    how: str
    n_distinct: int
    edges: np.ndarray = field(default_factory=lambda: np.empty(0))
    weighted: bool = False


def coding_for(is_number: bool, n_distinct: int, max_groups: int = MAX_GROUPS) -> str:
    """``"quantile"`` for a number column with more than ``max_groups`` distinct values, ``"number"`` for
    one with fewer, ``"text"`` for any other column (the rule every engine applies)."""
    if not is_number:
        return "text"
    return "quantile" if int(n_distinct) > int(max_groups) else "number"


def group_ids(values, sample_weight=None, *, max_groups: int = MAX_GROUPS, n_quantiles: int = N_QUANTILES
              ) -> tuple[np.ndarray, np.ndarray, GroupCoding]:
    """Each row's raw group code as an index into the distinct codes (-1 where missing): ``(ids, codes, coding)``,
    in one hash pass over the rows (10^7 rows of 50 segments: small integers and 50 codes, never a string per row)."""
    s = pd.Series(values).reset_index(drop=True)
    index, uniques = pd.factorize(s, use_na_sentinel=True)      # categories: read from their codes
    missing = index < 0
    n_distinct = len(uniques)
    how = coding_for(is_numeric(s), n_distinct, max_groups)
    if how == "text":
        shown = pd.Series(uniques).astype(str).str.strip().to_numpy(dtype=object)
        ids_of, codes = pd.factorize(shown)                        # values equal once trimmed: one code
        ids = np.where(missing, -1, ids_of[index])
        return ids, np.asarray(codes, dtype=object), GroupCoding("text", len(codes))
    if how == "quantile":
        x = np.asarray(uniques, dtype=float)[index[~missing]]
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)[~missing]
        edges = quantile_edges(x, n_quantiles, w)
        ids = np.full(s.size, -1, dtype=np.int64)
        ids[~missing], codes = pd.factorize(quantile_bin(x, edges))
        return ids, np.asarray(codes, dtype=np.int64), GroupCoding("quantile", n_distinct, edges,
                                                                   sample_weight is not None)
    return index.astype(np.int64), np.asarray(uniques, dtype=float), GroupCoding("number", n_distinct)


@dataclass(frozen=True)
class GroupNames:
    """The groups made of raw codes' weights: ``names``, the group of each raw code given, after pooling;
    ``missing``, the group of the missing rows (None when none); ``order``, ``notes``, ``pooled`` as
    :func:`make_groups` returns them."""

    names: list
    missing: str | None
    order: list
    notes: list
    pooled: list


def _number_text(v) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() else _fmt(v)


def name_groups(keys, sample_weight, coding: GroupCoding, *, n_missing: int = 0, missing_weight: float = 0.0,
                max_groups: int = MAX_GROUPS, n_quantiles: int = N_QUANTILES, min_rows: float = MIN_ROWS,
                name: str = "the column") -> GroupNames:
    """The groups shown (names, display order, pooling, notes) from what any engine can count where the rows live:
    the distinct raw codes ``keys`` of present values, the weight of each, and ``n_missing`` rows of
    ``missing_weight`` with no value. ``max_groups``, ``n_quantiles``, ``min_rows``, ``name`` and the SettingsError
    as :func:`make_groups`."""
    keys = list(keys)
    notes: list[str] = []
    if coding.how == "quantile":
        edges = coding.edges
        order = [f"[{_fmt(edges[k])}, {_fmt(edges[k + 1])}{']' if k == edges.size - 2 else ')'}"
                 for k in range(edges.size - 1)]
        first = [order[int(k)] for k in keys]
        notes.append(f"{name} has {coding.n_distinct:,} distinct numbers: it is cut into {len(order)} "
                     f"equal-count quantile groups of its values"
                     + (" (weighted)" if coding.weighted else "")
                     + (f" ({int(n_quantiles)} asked for; tied edges merged)" if len(order) < n_quantiles else "")
                     + ".")
    elif coding.how == "number":
        first = [_number_text(k) for k in keys]
        order = list(dict.fromkeys(_number_text(k) for k in sorted(float(k) for k in keys)))
    else:
        first = [str(k).strip() for k in keys]
        order = sorted(set(first), key=lambda v: (v.lower(), v))
    weight = pd.Series(np.asarray(sample_weight, dtype=float), dtype=float).groupby(
        pd.Index(first, dtype=object)).sum().to_dict() if keys else {}
    if n_missing:
        order.append(MISSING)
        weight[MISSING] = weight.get(MISSING, 0.0) + float(missing_weight)
        notes.append(f"{int(n_missing):,} rows have no value in {name}: they form the group {MISSING!r}.")
    small = [g for g in order if weight.get(g, 0.0) < min_rows]
    pooled_groups: list[str] = []
    rename = {}
    if small and len(small) < len(order):
        pooled = OTHER if OTHER not in order else f"{OTHER} (pooled)"
        rename = dict.fromkeys(small, pooled)
        order = [g for g in order if g not in small] + [pooled]
        pooled_groups = list(small)
        listed = ", ".join(map(repr, small[:8])) + (f" and {len(small) - 8} more" if len(small) > 8 else "")
        pooled_w = float(sum(weight.get(g, 0.0) for g in small))
        notes.append(f"{len(small)} group{'s' if len(small) > 1 else ''} with fewer than {min_rows:g} rows "
                     f"({listed}) {'are' if len(small) > 1 else 'is'} pooled into {pooled!r} "
                     f"({pooled_w:,.0f} rows)"
                     + (f"; {pooled!r} itself is still under {min_rows:g} rows" if pooled_w < min_rows else "")
                     + ".")
    elif small:
        notes.append(f"Every group of {name} has fewer than {min_rows:g} rows: none is pooled, and every "
                     "interval is wide.")
    names = [rename.get(g, g) for g in first]
    missing = rename.get(MISSING, MISSING) if n_missing else None
    seen = set(names) | ({missing} if missing else set())
    order = [g for g in order if g in seen]             # a quantile group can be empty after merged edges
    if len(order) > max_groups:
        raise SettingsError(
            f"{name} has {coding.n_distinct:,} distinct values, {len(order):,} groups after pooling those under "
            f"{min_rows:g} rows: more than the "
            f"{max_groups} that can be compared side by side. Bin the column into fewer values (a coarser "
            "category, or ranges of a number), or choose another column.")
    return GroupNames(names, missing, order, notes, pooled_groups)


def make_groups(values, sample_weight=None, *, max_groups: int = MAX_GROUPS, n_quantiles: int = N_QUANTILES,
                min_rows: float = MIN_ROWS, name: str = "the column"
                ) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """Each row's group, the groups in display order, notes saying how they were made, and the pooled groups.

    ``values``: the group column, one value per row (``name`` its name for notes and errors); ``sample_weight``: row
    weights (quantile groups hold equal weight, a group's size is its weight); ``max_groups`` (20): most groups kept, a
    numeric column with more distinct values cut into ``n_quantiles`` (5) quantile groups, any other refused;
    ``min_rows`` (50): lighter groups are pooled.

    Returns
    -------
    (labels, order, notes, pooled)
        Each row's group name (object array); the groups in display order (values in their natural order,
        :data:`OTHER` last); sentences for the user; the groups pooled into :data:`OTHER`.

    Raises
    ------
    SettingsError
        More than ``max_groups`` groups, or ``n_quantiles`` outside 2..``max_groups``.
    """
    s = pd.Series(values).reset_index(drop=True)
    n = len(s)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if not 2 <= int(n_quantiles) <= max_groups:
        raise SettingsError(f"n_quantiles must be between 2 and {max_groups}, got {n_quantiles}.")
    ids, distinct, coding = group_ids(s, sample_weight, max_groups=max_groups, n_quantiles=n_quantiles)
    missing = ids < 0
    keys, inv = pd.factorize(distinct[ids[~missing]], sort=False)
    named = name_groups(list(inv), np.bincount(keys, weights=w[~missing], minlength=len(inv)), coding,
                        n_missing=int(missing.sum()), missing_weight=float(w[missing].sum()),
                        max_groups=max_groups, n_quantiles=n_quantiles, min_rows=min_rows, name=name)
    labels = np.full(n, named.missing or MISSING, dtype=object)
    labels[~missing] = np.asarray(named.names, dtype=object)[keys] if len(inv) else labels[~missing]
    return labels, named.order, named.notes, named.pooled
