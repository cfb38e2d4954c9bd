"""How tables of numbers are shown: the best value in bold, display names, and what the binning was."""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import numpy as np
import pandas as pd

from calibdash.evaluation import bootstrap as cboot
from calibdash import measures
from calibdash.measures import calibration as metrics
from pages.parts.labels import method_labels

__all__ = ["BEST_STYLE", "best_cells", "bold_best", "best_of", "metrics_frame", "interval_frame", "binning_note",
           "group_table", "per_class", "PER_CLASS"]

#: What the per-class table shows per method: a column prefix of :func:`calibdash.diagrams.class_table`.
PER_CLASS = {"ECE": "class's ECE", "mean p": "mean predicted probability"}

#: CSS of a cell holding the best value of its column (or row).
BEST_STYLE = "font-weight: 700; background-color: #E8F4EA"

Direction = bool | None | Mapping[str, bool | None] | Collection[str] | Callable


def _badness(name, line: np.ndarray, lower_is_better: Direction) -> np.ndarray | None:
    """``line`` turned so that its lowest value is the best, or None when no value of it is "best"."""
    if lower_is_better is None:
        return None
    if callable(lower_is_better):
        return lower_is_better(name, line)
    if isinstance(lower_is_better, (bool, np.bool_)):
        lower = bool(lower_is_better)
    elif isinstance(lower_is_better, Mapping):
        if lower_is_better[name] is None:
            return None
        lower = bool(lower_is_better[name])
    else:
        lower = name in lower_is_better
    return line if lower else -line


def best_cells(values: pd.DataFrame, lower_is_better: Direction, axis: int = 0) -> np.ndarray:
    """Boolean array, True where a cell holds (to ``np.isclose``) the best value of its column or row.

    Parameters
    ----------
    values : DataFrame of numbers
    lower_is_better : bool, None, mapping name -> bool or None, collection of names, or callable
        The direction of every column (``axis=0``) or row (``axis=1``): one
        bool for all, a bool per name (None: no best there), the names where
        lower is better (such as :data:`calibdash.metrics.LOWER_IS_BETTER`;
        any other name is better higher), None for no best anywhere, or
        ``f(name, values) -> values turned lower-is-better, or None`` (such
        as a wrapper of :func:`calibdash.measures.oriented`, where the best
        slope is the one closest to 1).
    axis : {0, 1}
        0: the best of each column; 1: the best of each row.
    """
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (columns) or 1 (rows), got {axis!r}.")
    arr = values.to_numpy(dtype=float)
    lines, names = (arr.T, values.columns) if axis == 0 else (arr, values.index)
    mask = np.zeros(lines.shape, dtype=bool)
    for i, (line, name) in enumerate(zip(lines, names)):
        bad = None if np.all(np.isnan(line)) else _badness(name, line, lower_is_better)
        if bad is None:
            continue
        mask[i] = np.isclose(bad, np.nanmin(bad))
    return mask.T if axis == 0 else mask


def bold_best(frame: pd.DataFrame, lower_is_better: Direction, axis: int = 0, *,
              values: pd.DataFrame | None = None) -> "pd.io.formats.style.Styler":
    """``frame`` styled with the best value of each column (``axis=0``) or row (``axis=1``) in bold.

    Parameters
    ----------
    frame : DataFrame
        What is shown.
    lower_is_better, axis
        As for :func:`best_cells`.
    values : DataFrame, optional
        The numbers compared, of ``frame``'s shape, when ``frame`` shows text
        (such as "value [low, high]"); default ``frame`` itself.

    Returns
    -------
    Styler
        Chain ``.format(...)`` on it for the numbers' format.
    """
    mask = best_cells(frame if values is None else values, lower_is_better, axis)
    if mask.shape != frame.shape:
        raise ValueError(f"values have shape {mask.shape}, the table {frame.shape}.")
    return frame.style.apply(lambda _: np.where(mask, BEST_STYLE, ""), axis=None)


def _display_names(keys) -> list[str]:
    labels = method_labels(keys)
    return [labels[k] for k in keys]


def metrics_frame(table: pd.DataFrame, labels: Mapping[str, str] | None = None,
                  direction: Direction | None = None) -> "pd.io.formats.style.Styler":
    """A measures table (methods x measures) with display names (``labels``, default the binary methods') and
    the best value of each measure in bold (``direction`` as :func:`best_cells` takes it, default
    :func:`best_of`)."""
    t = table.copy()
    t.index = _display_names(t.index) if labels is None else [labels.get(k, k) for k in t.index]
    return bold_best(t, best_of if direction is None else direction).format("{:.4f}")


def interval_frame(boot: cboot.BootstrapResult, labels: Mapping[str, str] | None = None,
                   direction: Direction | None = None) -> "pd.io.formats.style.Styler":
    """'value [low, high]' per cell, display names, the best value of each metric in bold.

    ``labels``: method key -> display name (default the binary methods' labels); ``direction``: each
    column's direction as :func:`best_cells` takes it (default :func:`best_of`, the binary names')."""
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))
    index = _display_names(t.index) if labels is None else [labels.get(k, k) for k in t.index]
    text = pd.DataFrame({n: [f"{v:.4f} [{lo:.3f}, {hi:.3f}]" for v, lo, hi in
                             zip(t[(n, "value")], t[(n, "low")], t[(n, "high")])] for n in names}, index=index)
    values = pd.DataFrame({n: t[(n, "value")].to_numpy() for n in names}, index=index)
    return bold_best(text, best_of if direction is None else direction, values=values)


def best_of(name: str, values: np.ndarray) -> np.ndarray | None:
    """A metric's or measure's values turned lower-is-better (the slope's distance to 1), or None when no
    value of it is best (UNC): the direction of every table of :mod:`calibdash.measures`' names."""
    return measures.oriented(name, values) if measures.rankable(name) else None


def binning_note(binning: str) -> str:
    """The sentence under a metrics table saying how ECE and MCE were binned (``Evaluation.binning``)."""
    why = " (calibdash's default, the BBQ authors' convention)" if binning == metrics.binning_label() else ""
    return f"ECE and MCE use {binning}{why}."


def group_table(table: pd.DataFrame, stats, names: dict, fmt: str = "{:.4f}", classwise: pd.Series | None = None
                ) -> pd.DataFrame:
    """Groups' or periods' statistics (:mod:`calibdash.monitoring.group_metrics`' table) as text, 'value [low, high]' per
    statistic of ``stats`` (headed as ``names`` says); "n/a" for a NaN value (one class only); the rows first,
    then, for a K-class table, its class-wise ECE per row (``classwise``, no interval), then any note."""
    out = {}
    for name in stats:
        cells = []
        for v, lo, hi in zip(table[name], table[f"{name}_low"], table[f"{name}_high"]):
            if not np.isfinite(v):
                cells.append("n/a")
            elif np.isfinite(lo) and np.isfinite(hi):
                cells.append(f"{fmt.format(v)} [{fmt.format(lo)}, {fmt.format(hi)}]")
            else:
                cells.append(fmt.format(v))
        out[names.get(name, name)] = cells
    frame = pd.DataFrame(out, index=table.index)
    frame.insert(0, "rows", [f"{w:,.0f}" for w in table["weight"]])
    if classwise is not None:
        frame["cwECE"] = [fmt.format(v) if np.isfinite(v) else "n/a" for v in classwise.reindex(table.index)]
    notes = table["note"].fillna("")
    if notes.astype(bool).any():
        frame["note"] = notes.to_numpy()
    return frame


def per_class(table: pd.DataFrame, keys, labels: Mapping[str, str], shown: str) -> "pd.io.formats.style.Styler":
    """One row per class of :func:`calibdash.diagrams.class_table`: its rows and share, then per method
    (``keys``, shown as ``labels`` say) the column ``shown`` of :data:`PER_CLASS`."""
    out = table[["class", "rows", "frequency"]].assign(
        **{labels.get(k, k): table[f"{shown} ({k})"] for k in keys}).set_index("class")
    numbers = {c: "{:.4f}" for c in out.columns if c not in ("rows", "frequency")}
    numbers["frequency"] = "{:.2%}"
    return out.style.format(numbers)
