"""How a column's values become groups (:func:`make_groups`), for :mod:`calibdash.groups`.

How groups are made (:func:`make_groups`)
-----------------------------------------
* text, boolean or date values, and numbers with at most ``max_groups``
  distinct values: one group per value (missing values are a group of their
  own, ``"(missing)"``);
* numbers with more distinct values: cut into ``n_quantiles`` equal-weight
  quantile groups (numpy's linear quantile rule on the weighted rows; tied
  edges merged), labelled by their ranges ``"[a, b)"``, the last closed;
* groups with less than ``min_rows`` rows (weight) are pooled into one group
  ``"other"`` (:data:`OTHER`), last, and the report says which;
* more than ``max_groups`` groups left after pooling is refused
  (:class:`~calibdash.errors.SettingsError`) with a hint to bin the column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import SettingsError

__all__ = ["OTHER", "MISSING", "MAX_GROUPS", "MIN_ROWS", "N_QUANTILES", "make_groups"]

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


def _is_number_column(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _weighted_quantiles(x: np.ndarray, w: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Quantiles of ``x`` with weights ``w``: numpy's linear rule on the rows, a row of weight ``v`` counting
    as ``v`` rows (exact for whole weights, interpolated on the cumulative weight otherwise)."""
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


def make_groups(values, sample_weight=None, *, max_groups: int = MAX_GROUPS, n_quantiles: int = N_QUANTILES,
                min_rows: float = MIN_ROWS, name: str = "the column"
                ) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """Each row's group, the groups in display order, notes saying how they were made, and the pooled groups.

    Parameters
    ----------
    values : array-like or Series
        The group column, one value per row.
    sample_weight : array-like, optional
        Row weights: quantile groups hold equal weight, and a group's size is its weight.
    max_groups : int, default 20
        Most groups kept; a numeric column with more distinct values is cut
        into ``n_quantiles`` quantile groups, any other column with more
        groups (after pooling) is refused.
    n_quantiles : int, default 5
    min_rows : float, default 50
        Groups lighter than this are pooled into :data:`OTHER`.
    name : str
        The column's name, for the notes and errors.

    Returns
    -------
    (labels, order, notes, pooled)
        ``labels``: object array of each row's group name (text);
        ``order``: the groups, in the order to show them (values in their
        natural order, :data:`OTHER` last); ``notes``: sentences for the user;
        ``pooled``: the groups pooled into :data:`OTHER`.

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
    notes: list[str] = []
    missing = s.isna().to_numpy()
    present = s[~missing]
    labels = np.full(n, MISSING, dtype=object)
    if _is_number_column(s) and present.nunique() > max_groups:
        x = present.to_numpy(dtype=float)
        qs = _weighted_quantiles(x, w[~missing], np.linspace(0, 1, int(n_quantiles) + 1))
        edges = np.unique(qs)
        if edges.size < 2:
            edges = np.array([x.min(), x.max()])
        inner = edges[1:-1]
        idx = np.searchsorted(inner, x, side="right")           # [e_k, e_{k+1}), the last bin closed
        names = [f"[{_fmt(edges[k])}, {_fmt(edges[k + 1])}{']' if k == edges.size - 2 else ')'}"
                 for k in range(edges.size - 1)]
        labels[~missing] = np.asarray(names, dtype=object)[idx]
        order = list(names)
        notes.append(f"{name} has {present.nunique():,} distinct numbers: it is cut into {len(names)} "
                     f"equal-count quantile groups of its values"
                     + (" (weighted)" if sample_weight is not None else "")
                     + (f" ({int(n_quantiles)} asked for; tied edges merged)" if len(names) < n_quantiles else "")
                     + ".")
    else:
        if _is_number_column(s):
            uniq = np.sort(present.unique())
            text = {v: _fmt(float(v)) if not float(v).is_integer() else str(int(v)) for v in uniq}
            labels[~missing] = present.map(text).to_numpy(dtype=object)
            order = [text[v] for v in uniq]
        else:
            as_text = present.astype(str).str.strip()
            labels[~missing] = as_text.to_numpy(dtype=object)
            order = sorted(as_text.unique(), key=lambda v: (v.lower(), v))
    if missing.any():
        order.append(MISSING)
        notes.append(f"{int(missing.sum()):,} rows have no value in {name}: they form the group {MISSING!r}.")
    weight = pd.Series(w).groupby(labels).sum()
    small = [g for g in order if weight.get(g, 0.0) < min_rows]
    pooled_groups: list[str] = []
    if small and len(small) < len(order):
        pooled = OTHER if OTHER not in order else f"{OTHER} (pooled)"
        labels = np.where(np.isin(labels, small), pooled, labels).astype(object)
        order = [g for g in order if g not in small] + [pooled]
        pooled_groups = list(small)
        listed = ", ".join(map(repr, small[:8])) + (f" and {len(small) - 8} more" if len(small) > 8 else "")
        pooled_w = float(weight[small].sum())
        notes.append(f"{len(small)} group{'s' if len(small) > 1 else ''} with fewer than {min_rows:g} rows "
                     f"({listed}) {'are' if len(small) > 1 else 'is'} pooled into {pooled!r} "
                     f"({pooled_w:,.0f} rows)"
                     + (f"; {pooled!r} itself is still under {min_rows:g} rows" if pooled_w < min_rows else "")
                     + ".")
    elif small:
        notes.append(f"Every group of {name} has fewer than {min_rows:g} rows: none is pooled, and every "
                     "interval is wide.")
    seen = set(labels)
    order = [g for g in order if g in seen]             # a quantile group can be empty after merged edges
    if len(order) > max_groups:
        raise SettingsError(
            f"{name} has {present.nunique():,} distinct values, {len(order):,} groups after pooling those under "
            f"{min_rows:g} rows: more than the "
            f"{max_groups} that can be compared side by side. Bin the column into fewer values (a coarser "
            "category, or ranges of a number), or choose another column.")
    return labels, order, notes, pooled_groups
