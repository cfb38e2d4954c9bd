"""Column coding of the MBCT calibrator: every input column becomes small integer codes (:class:`ColumnCode`): the
score in equal-width bins, numeric columns in (weighted) quantile bins, categorical columns as they are; and the
children a split may make of a node's codes (:func:`ordered_slots`, :func:`categorical_slots`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..measures import calibration as metrics
from ..core.errors import DataError

__all__ = ["CATEGORICAL"]

#: Kinds of coded column. "score" and "numeric" codes are ordered (a split
#: cuts them into ranges); "categorical" codes are not (a split groups values).
SCORE, NUMERIC, CATEGORICAL = "score", "numeric", "categorical"


@dataclass
class ColumnCode:
    """How one input column (``name``: the DataFrame column, or ``"score"``) of ``kind`` ``"score"``, ``"numeric"`` or
    ``"categorical"`` is turned into integer codes ``0 .. n_codes - 1``: a numeric column by its inner bin ``edges``
    (a value on an edge goes to the upper bin; the score's equal-width edges follow from ``n_codes``, :attr:`cuts`), a
    categorical one by the values seen at fit time, ``categories`` in code order. ``missing_code`` is the code of a
    missing value (NaN), or -1 when none was seen at fit time (a missing value is then *unseen*)."""

    name: str
    kind: str
    n_codes: int
    edges: np.ndarray | None = None
    categories: pd.Index | None = None
    missing_code: int = -1

    @property
    def cuts(self) -> np.ndarray:
        """Inner bin edges of an ordered column (the score's: ``k / n_codes``)."""
        if self.kind == SCORE:
            return np.arange(1, self.n_codes) / self.n_codes
        return self.edges

    @property
    def ordered(self) -> bool:
        """Whether codes are ordered (split into ranges rather than groups)."""
        return self.kind != CATEGORICAL

    def encode(self, values) -> np.ndarray:
        """Codes of ``values`` (an array or a Series; int32); -1 marks a value unseen at fit time. A categorical
        column is factorized first (a ``category`` column already is), so that only its distinct values are looked up:
        integer work per row."""
        if self.kind == SCORE:
            return metrics.bin_assignments(values, self.n_codes, "uniform").astype(np.int32)
        if self.kind == NUMERIC:
            x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
            code = np.searchsorted(self.edges, x, side="right").astype(np.int32)
            code[np.isnan(x)] = self.missing_code
            return code
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            col = pd.Series(values)
            local, distinct = col.cat.codes.to_numpy(), col.cat.categories
        else:
            local, distinct = pd.factorize(pd.Series(values, dtype=getattr(values, "dtype", object)))
        # code of each distinct value, then the code of a missing value (local code -1)
        lookup = np.append(self.categories.get_indexer(distinct), self.missing_code).astype(np.int32)
        return lookup[local]

    def describe(self, codes: np.ndarray) -> str:
        """Plain text for a set of codes: ``"x ∈ [0.2, 0.5)"``, ``"site = 3"``."""
        codes = np.sort(np.asarray(codes, dtype=int))
        missing = self.missing_code >= 0 and codes.size and codes[-1] == self.missing_code
        if missing:
            codes = codes[:-1]
        parts = []
        if codes.size and self.ordered:
            edges = self.cuts
            lo = -np.inf if codes[0] == 0 else edges[codes[0] - 1]
            hi = np.inf if codes[-1] >= edges.size else edges[codes[-1]]
            if self.kind == SCORE:
                lo, hi = max(lo, 0.0), min(hi, 1.0)
            parts.append(f"{self.name} ∈ [{lo:.4g}, {hi:.4g}{']' if hi == 1.0 and self.kind == SCORE else ')'}")
        elif codes.size:
            vals = [str(self.categories[c]) for c in codes]
            if len(vals) == 1:
                parts.append(f"{self.name} = {vals[0]}")
            else:
                shown = ", ".join(vals[:4]) + (f", … (+{len(vals) - 4})" if len(vals) > 4 else "")
                parts.append(f"{self.name} ∈ {{{shown}}}")
        if missing:
            parts.append(f"{self.name} missing")
        return " or ".join(parts)


def column_kind(col: pd.Series) -> str:
    """``"categorical"`` for category, string, object and bool columns; ``"numeric"`` for numbers."""
    dt = col.dtype
    if (isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt)
            or pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt)):
        return CATEGORICAL
    if pd.api.types.is_numeric_dtype(dt):
        return NUMERIC
    raise DataError(f"feature column {col.name!r} has type {dt}, which MBCT cannot use; "
                    "pass numbers, strings or a category column.")


def weighted_quantiles(x: np.ndarray, weights: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Quantiles ``qs`` of ``x`` whose values count ``weights`` times each. ``numpy.quantile``'s default (linear) rule
    on the values repeated by their weights, computed as numpy computes it: with ``N = sum(weights)`` and ``h = (N - 1)
    q``, the values at positions ``floor(h)`` and ``floor(h) + 1`` of the sorted repeated values (the last one when ``h
    >= N - 1``) mixed by ``numpy.lib``'s ``_lerp`` with ``t = h - floor(h)`` (``a + (b - a) t``, or ``b - (b - a)(1 -
    t)`` when ``t >= 1/2``); the value at position ``j`` is the first whose cumulative weight exceeds ``j``. Integer
    weights thus give ``np.quantile(np.repeat(x, weights))`` bit for bit; other weights use the same cumulative-weight
    positions. Values are sorted by value, then weight, so the result does not depend on the order of the rows."""
    x = np.asarray(x, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = np.lexsort((w, x))
    xs = x[order]
    cum = np.cumsum(w[order])
    q = np.asarray(qs, dtype=float)
    h = (cum[-1] - 1.0) * q
    j = np.floor(h)
    last = h >= cum[-1] - 1.0
    lo = xs[np.where(last, xs.size - 1, np.minimum(np.searchsorted(cum, j, side="right"), xs.size - 1))]
    hi = xs[np.where(last, xs.size - 1, np.minimum(np.searchsorted(cum, j + 1.0, side="right"), xs.size - 1))]
    t = h - j
    diff = hi - lo
    return np.where(t >= 0.5, hi - diff * (1 - t), lo + diff * t)


def _value_order(values: pd.Index) -> pd.Index:
    """``values`` sorted: by value, else (mixed types that do not compare) by type name, then text."""
    try:
        return values.sort_values()
    except TypeError:
        keys = [(type(v).__name__, str(v)) for v in values]
        return values[sorted(range(len(values)), key=keys.__getitem__)]


def learn_codes(col: pd.Series, n_quantiles: int, weights: np.ndarray | None = None) -> ColumnCode:
    """Learn the coding of one feature column from its training values: numeric columns are cut at their
    ``n_quantiles``-quantiles (:func:`weighted_quantiles` with ``weights``; repeated quantiles merge, so few distinct
    values give fewer bins); categorical columns keep each value seen. A missing value seen at fit time gets a code of
    its own (the last)."""
    name = str(col.name)
    has_nan = bool(col.isna().any())
    if column_kind(col) == NUMERIC:
        x = col.to_numpy(dtype=float, na_value=np.nan)
        seen = ~np.isnan(x)
        finite = x[seen]
        qs = np.linspace(0.0, 1.0, int(n_quantiles) + 1)[1:-1]
        if not finite.size:
            edges = np.empty(0)
        elif weights is None:
            edges = np.unique(np.quantile(finite, qs))
        else:
            edges = np.unique(weighted_quantiles(finite, np.asarray(weights)[seen], qs))
        n = edges.size + 1
        return ColumnCode(name, NUMERIC, n + has_nan, edges=edges, missing_code=n if has_nan else -1)
    if isinstance(col.dtype, pd.CategoricalDtype):
        local = col.cat.codes.to_numpy()
        used = np.bincount(local[local >= 0] if has_nan else local, minlength=len(col.cat.categories)) > 0
        cats = pd.Index(col.cat.categories[used])
    else:
        cats = _value_order(pd.Index(np.asarray(col.dropna().unique(), dtype=object)))
    n = len(cats)
    return ColumnCode(name, CATEGORICAL, n + has_nan, categories=cats, missing_code=n if has_nan else -1)


def score_code(n_bins: int) -> ColumnCode:
    """The score as a feature: ``n_bins`` equal-width bins on [0, 1] (the paper's 100)."""
    return ColumnCode("score", SCORE, int(n_bins))


def encode(codes: list[ColumnCode], s: np.ndarray, features: pd.DataFrame | None) -> np.ndarray:
    """Code matrix (n, len(codes)), int32: column 0 the score, then the features; a feature column absent from
    ``features`` (or ``features=None``) is coded -1 (unseen) on every row."""
    out = np.empty((s.size, len(codes)), dtype=np.int32)
    out[:, 0] = codes[0].encode(s)
    for j, c in enumerate(codes[1:], start=1):
        out[:, j] = -1 if features is None else c.encode(features[c.name])
    return out


def ordered_slots(counts: np.ndarray, min_rows: int, tail_code: int = -1) -> np.ndarray:
    """Child slot of each code of an ordered feature: consecutive ranges of at least ``min_rows`` rows (``counts`` may
    be weights). A range closes as soon as it holds ``min_rows`` and the codes left hold ``min_rows`` more (the last
    takes the rest); codes without rows join the range around them. ``tail_code`` (the missing-value code) is placed
    last, and is -1 (unseen) when absent."""
    k = counts.size
    order = np.arange(k)
    if tail_code >= 0:
        order = np.concatenate([order[order != tail_code], [tail_code]])
    slots = np.empty(k, dtype=np.int32)
    remaining = counts.sum()
    child, acc = 0, 0
    for code in order:
        c = counts[code]
        slots[code] = child
        acc += c
        remaining -= c
        if acc >= min_rows and remaining >= min_rows:
            child, acc = child + 1, 0
    if tail_code >= 0 and counts[tail_code] == 0:
        slots[tail_code] = -1
    return slots


def categorical_slots(counts: np.ndarray, min_rows: int) -> np.ndarray:
    """Child slot of each code of a categorical feature: each value with at least ``min_rows`` rows (or weight) is a
    child; smaller values are pooled into one "other" child or, when the pool holds fewer than ``min_rows``, join the
    smallest large child; values without rows in the node get -1 (unseen here)."""
    slots = np.full(counts.size, -1, dtype=np.int32)
    big = np.flatnonzero(counts >= min_rows)
    slots[big] = np.arange(big.size)
    small = (counts > 0) & (counts < min_rows)
    if small.any():
        if counts[small].sum() >= min_rows or big.size == 0:
            slots[small] = big.size
        else:
            slots[small] = slots[big[np.argmin(counts[big])]]
    return slots

