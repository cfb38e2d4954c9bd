"""Class-wise reliability of K-class predictions as small multiples (each shown class k: each method's share of rows
labelled k against its mean probability of k per bin), and the per-class table (:func:`class_table`). The bins are the
measures' (15 equal-width unless told); ``n_bins="auto"``: :func:`classwise_bin_count`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from ..measures.binning import reliability_table
from ..measures import class_measures as metrics
from .common import (AUTO, AUTO_RULE, BINNINGS, DEFAULT_TITLE, Diagram, auto_bin_count, bin_count, check_strategy,
                     class_labels, describe_rule, display_names)

__all__ = []

CLASSWISE = "Class-wise"
#: How :func:`prepare_classwise` orders the classes: by the first method's per-class ECE (largest first),
#: by index, or by rows (most first).
ORDERS = ("worst", "index", "frequency")
#: Panels of a class-wise diagram unless the caller picks the classes.
MAX_PANELS = 12
#: Height of one row of class-wise panels, in pixels.
PANEL_HEIGHT = 230
_ORDER_TEXT = {"worst": "shown worst first (largest per-class ECE of {first})", "index": "in index order",
               "frequency": "shown most frequent first", "picked": "as picked"}


def classwise_bin_count(n_bins, y, k: int, sample_weight=None) -> tuple[int, str]:
    """``(bin count, caption text)`` of the class-wise panels: a count as given, or for :data:`AUTO` the binary
    diagrams' rule (:data:`calibdash.diagrams.AUTO_RULE`) applied to the rows per class, ``n / K`` (the weights' sum
    over K when weighted): class k's panel estimates the share of rows labelled k near each probability, which rests
    on the rows of class k. With K = 100 and 3,000 held-out rows that is ``ceil(30^(1/3)) = 4`` bins, where 15 (the
    measures' bins) leave most bins of a panel with no row of its class.

    >>> classwise_bin_count("auto", np.zeros(3000, int), 100)[0]
    4

    With fewer rows than classes (fewer than one row per class) the rule's fewest bins, 2:

    >>> classwise_bin_count("auto", np.zeros(500, int), 1000)[0]
    2
    """
    if n_bins != AUTO:
        return bin_count(n_bins, y)
    if int(k) != k or k < 1:
        raise SettingsError(f"k must be a whole number of classes, got {k!r}.")
    total = float(np.sum(sample_weight)) if sample_weight is not None else float(len(y))
    if not total > 0:
        raise DataError("the class-wise panels need at least one held-out row of positive weight; there is none.")
    per_class = total / int(k)
    if per_class < 1:          # more classes than rows: the rule's fewest bins, said so (not "n must be >= 1")
        bins = auto_bin_count(1, AUTO_RULE)
        return bins, (f"auto: {bins} bins, the fewest (fewer than one row per class: {total:,.0f} rows over "
                      f"K = {int(k)} classes)")
    return (auto_bin_count(per_class, AUTO_RULE),
            f"auto: {describe_rule(per_class, AUTO_RULE)} per class, {total:,.0f} rows over K = {int(k)} classes")


@dataclass(frozen=True)
class ClasswiseData(Diagram):
    """Class-wise reliability as small multiples.

    Attributes
    ----------
    tables : dict
        Shown class index -> method key -> reliability table of ``(P[:, k], y == k)``, in panel order.
    classes : list of int
        The shown classes, in panel order.
    order : list of int
        Every class in the picker's order (``order_by``), for a class picker.
    names : list of str
        Every class's name (index -> name).
    ece : DataFrame
        Per-class ECE at these bins: index the class indices, one column per method.
    n_bins, strategy, bins_text, order_by :
        How the classes were binned and ordered (``order_by``: one of :data:`ORDERS`, or ``"picked"``).
    """
    tables: dict
    classes: list
    order: list
    names: list
    ece: pd.DataFrame
    n_bins: int
    strategy: str
    bins_text: str
    order_by: str
    kind: ClassVar[str] = CLASSWISE
    title: ClassVar[str] = "Class-wise reliability"
    problem: ClassVar[str] = "classes"
    position: ClassVar[float] = 2
    text: ClassVar[str] = (
        "Class-wise reliability: for each class k, the rows' probability of k binned ({bins}, "
        "{binning}) against the share of the bin's rows labelled k, with its 95% interval. Classes "
        "{order}; each panel's title gives its ECE (first method).")

    def caption(self, names: Mapping[str, str] | None = None) -> str:
        first = str(self.ece.columns[0])
        first = dict(names or {}).get(first, first)
        return self.text.format(bins=self.bins_text, binning=BINNINGS[self.strategy],
                                          order=_ORDER_TEXT[self.order_by].format(first=first))


def _per_class_ece(Ps: dict, y, w, bins: int, strategy: str) -> pd.DataFrame:
    return pd.DataFrame({key: metrics.per_class_ece(P, y, bins, strategy, w) for key, P in Ps.items()})


def _class_order(order: str, ece: pd.DataFrame, rows: np.ndarray) -> list[int]:
    if order not in ORDERS:
        raise SettingsError(f"order must be one of {ORDERS}, got {order!r}.")
    index = np.arange(rows.size)
    if order == "index":
        return index.tolist()
    key = ece.iloc[:, 0].to_numpy() if order == "worst" else rows
    return np.lexsort((index, -key)).tolist()          # largest first, ties by index


def _picked(classes, names: list[str]) -> list[int]:
    """Class indices of ``classes`` (indices or names), checked."""
    out = []
    for c in classes:
        if isinstance(c, str):
            if c not in names:
                raise DataError(f"no class is named {c!r}.")
            out.append(names.index(c))
        elif int(c) == c and 0 <= int(c) < len(names):
            out.append(int(c))
        else:
            raise DataError(f"class index {c!r} is not one of 0..{len(names) - 1}.")
    if not out:
        raise DataError("pick at least one class to draw.")
    return out


def prepare_classwise(P_by_method: Mapping[str, np.ndarray], y, classes=None, n_bins=metrics.N_BINS,
                      order: str = "worst", *, sample_weight=None, class_names: Sequence[str] | None = None,
                      strategy: str = "uniform", max_panels: int = MAX_PANELS) -> ClasswiseData:
    """The class-wise diagram's data: which classes to show, and each one's reliability table per method.

    Parameters
    ----------
    P_by_method : mapping key -> (n, K) probabilities
        The first method (the raw scores, usually) orders the classes for ``order="worst"``.
    y : array-like (n,)
    classes : sequence of class indices or names, optional
        The classes to show, in this order (a picker's choice); default: the first ``max_panels`` classes of
        ``order``.
    n_bins : int or "auto", default 15
        ``"auto"``: :func:`classwise_bin_count`, the binary diagrams' rule on the rows per class.
    order : {"worst", "index", "frequency"}, default "worst"
        The picker's order: largest per-class ECE of the first method first, index order, or most rows first (ties by
        index).
    sample_weight : array-like (n,), optional
    class_names : sequence of K str, optional
        Default ``"class 0"``, ``"class 1"``, ...
    strategy : {"uniform", "quantile"}, default "uniform"
    max_panels : int, default 12
    """
    Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
    k = next(iter(Ps.values())).shape[1]
    names = class_labels(k, class_names)
    check_strategy(strategy)
    bins, said = classwise_bin_count(n_bins, y, k, w)
    if int(max_panels) != max_panels or max_panels < 1:
        raise SettingsError(f"max_panels must be a whole number of at least 1, got {max_panels!r}.")
    ece = _per_class_ece(Ps, y, w, bins, strategy)
    rows = np.bincount(y, weights=w, minlength=k)
    ordered = _class_order(order, ece, rows)
    shown = ordered[:int(max_panels)] if classes is None else _picked(classes, names)
    tables = {c: {key: reliability_table(P[:, c], (y == c).astype(np.int8), bins, strategy, sample_weight=w)
                  for key, P in Ps.items()} for c in shown}
    return ClasswiseData(tables, shown, ordered, names, ece, bins, strategy, said,
                         order if classes is None else "picked")


def class_table(P_by_method: Mapping[str, np.ndarray], y, sample_weight=None, *,
                class_names: Sequence[str] | None = None, n_bins: int = metrics.N_BINS,
                strategy: str = "uniform") -> pd.DataFrame:
    """One row per class (index: class index): ``class`` (name), ``rows`` (labelled k; weight when weighted),
    ``frequency`` (their share), then per method ``mean p (key)``, the mean predicted probability of k over all rows
    (equal to ``frequency`` for a method calibrated in the large), and ``ECE (key)``, the class's ECE
    (:func:`calibdash.measures.class_measures.per_class_ece` at ``n_bins``, ``strategy``)."""
    Ps, y, w = metrics.check_methods(P_by_method, y, sample_weight)
    k = next(iter(Ps.values())).shape[1]
    rows = np.bincount(y, weights=w, minlength=k)
    out = pd.DataFrame({"class": class_labels(k, class_names),
                        "rows": rows if w is not None else rows.astype(np.int64),
                        "frequency": rows / rows.sum()})
    ece = _per_class_ece(Ps, y, w, n_bins, strategy)
    for key, P in Ps.items():
        out[f"mean p ({key})"] = np.average(P, axis=0, weights=w)
        out[f"ECE ({key})"] = ece[key].to_numpy()
    out.index.name = "class index"
    return out


def plot_classwise(data: ClasswiseData, *, names: Mapping[str, str] | None = None, cols: int = 4,
                   title=DEFAULT_TITLE, panel_height: int = PANEL_HEIGHT):
    """One panel per shown class (``data.classes``, in order): each method's share of rows labelled k against its mean
    probability of k per bin, over the diagonal. Panel title: the class and its ECE (first method). Traces: per panel
    the diagonal, then one per method (the legend shows each method once)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..figures.layout import UNIT, base_layout, error_bars, identity_trace
    from ..figures.palette import class_color_of

    shown = display_names(names, data.ece.columns)
    cols = max(1, min(int(cols), len(data.classes)))
    rows = math.ceil(len(data.classes) / cols)
    first = data.ece.columns[0]
    titles = [f"{data.names[c]} · ECE {data.ece.loc[c, first]:.3f}" for c in data.classes]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.05,
                        vertical_spacing=min(0.12, 0.5 / rows))
    for i, c in enumerate(data.classes):
        r, col = divmod(i, cols)
        fig.add_trace(identity_trace(None, showlegend=False), row=r + 1, col=col + 1)
        for key, t in data.tables[c].items():
            color = class_color_of(key)
            fig.add_trace(go.Scatter(
                x=t["mean_pred"], y=t["obs_freq"], mode="lines+markers", name=shown[key], legendgroup=key,
                showlegend=i == 0, line=dict(color=color, width=1.5), marker=dict(size=5, color=color),
                error_y=error_bars(t, color, thickness=1, width=2),
                customdata=np.column_stack([t["count"], t["lower"], t["upper"]]),
                hovertemplate=(f"<b>{shown[key]}</b> · {data.names[c]}<br>bin %{{customdata[1]:.3f}} – "
                               "%{customdata[2]:.3f}<br>rows: %{customdata[0]:,}<br>mean p: %{x:.3f}<br>"
                               "observed: %{y:.3f}<extra></extra>")), row=r + 1, col=col + 1)
    fig.update_annotations(font_size=12)                # the panel titles
    fig.update_xaxes(range=UNIT)
    fig.update_yaxes(range=UNIT)
    fig.update_xaxes(title_text="mean predicted probability", row=rows, col=1)
    fig.update_yaxes(title_text="observed frequency", row=1, col=1)
    return base_layout(fig, data._title(title), 120 + int(panel_height) * rows)


ClasswiseData.prepare = staticmethod(prepare_classwise)
ClasswiseData.figure = plot_classwise
