"""Drawing calibration by group (:func:`calibdash.monitoring.groups.by_group`'s
:class:`~calibdash.monitoring.groups.GroupReport`): small multiples of reliability diagrams and a forest chart of
ECE."""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..layout import UNIT, base_layout, error_bars
from ..palette import UNCALIBRATED, color_of, rgba
from .reliability import bin_hover

__all__ = ["group_reliability_grid", "ece_forest"]

#: Colour of a group's own curve in its small multiple (the raw scores of that group).
GROUP_COLOR = "#0072B2"
_OVERALL = "#AAAAAA"


def _panel_title(name: str, row: dict) -> str:
    ece = row["ECE"]
    ece_text = "ECE n/a" if not np.isfinite(ece) else f"ECE {ece:.3f}"
    return f"<b>{name}</b><br>{ece_text} · {row['weight']:,.0f} rows"


def group_reliability_grid(report, *, cols: int = 4, title: str | None = "Reliability by group",
                           panel_height: int = 260, show_overall: bool = True) -> go.Figure:
    """One small reliability diagram per group, ``cols`` per row, on shared [0, 1] axes: the group's bins (with their
    95% intervals) over the diagonal and, in light grey, all rows' curve, so a group off the common curve stands out.
    The panel's title gives the group's ECE and rows.

    Parameters
    ----------
    report : GroupReport
    cols : int, default 4
    panel_height : int
        Height of one row of panels, in pixels.
    show_overall : bool
        Draw the curve of all rows in every panel.
    """
    groups = list(report.table.index)
    cols = max(1, min(int(cols), len(groups)))
    rows = max(1, math.ceil(len(groups) / cols))
    titles = [_panel_title(g, report.table.loc[g]) for g in groups]
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes=True, shared_yaxes=True, subplot_titles=titles,
                        horizontal_spacing=0.04, vertical_spacing=min(0.16, 0.6 / rows) if rows > 1 else 0.0)
    overall = getattr(report, "overall_reliability", None)
    for i, g in enumerate(groups):
        r, c = i // cols + 1, i % cols + 1
        first = i == 0
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#CCCCCC", dash="dash", width=1),
                                 name="perfect calibration", legendgroup="diag", showlegend=first,
                                 hoverinfo="skip"), row=r, col=c)
        if show_overall and overall is not None:
            fig.add_trace(go.Scatter(x=overall["mean_pred"], y=overall["obs_freq"], mode="lines",
                                     line=dict(color=_OVERALL, width=1.5), name="all rows", legendgroup="all",
                                     showlegend=first, hoverinfo="skip"), row=r, col=c)
        t = report.reliability[g]
        fig.add_trace(go.Scatter(x=t["mean_pred"], y=t["obs_freq"].to_numpy(dtype=float), mode="lines+markers",
                                 name="this group", legendgroup="group", showlegend=first,
                                 line=dict(color=GROUP_COLOR, width=2), marker=dict(size=5, color=GROUP_COLOR),
                                 error_y=error_bars(t, GROUP_COLOR, 0.45, 1, 2), connectgaps=False,
                                 text=bin_hover(t, g, gap=False), hoverinfo="text"), row=r, col=c)
    fig.update_xaxes(range=UNIT, tickvals=[0, 0.5, 1], showgrid=True)
    fig.update_yaxes(range=UNIT, tickvals=[0, 0.5, 1], showgrid=True)
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text="mean score", row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="observed", row=r, col=1)
    fig.update_annotations(font_size=12)
    base_layout(fig, title, 110 + 120 + panel_height * rows)
    fig.update_layout(margin=dict(b=110, t=90 if title else 60))
    return fig


def ece_forest(reports, *, metric: str = "ECE", labels: Mapping[str, str] | None = None,
               title: str | None = None, show_overall: bool = True) -> go.Figure:
    """A forest chart of ``metric`` per group with its interval; several reports side by side.

    Parameters
    ----------
    reports : GroupReport or mapping key -> GroupReport
        One report (the raw scores), or several with the same groups (such as
        :attr:`calibdash.monitoring.groups.GroupFix.reports`: the raw scores and each calibrator on the held-out
        rows), drawn as dodged points per group.
    metric : str, default "ECE"
        A name of :data:`calibdash.monitoring.groups.STATS`.
    labels : mapping key -> display name, optional
    show_overall : bool
        For a single report: a vertical line at the value on all rows.

    Groups run top to bottom in the report's order; a group whose value is NaN (one class only) is listed with no
    point and "n/a" in its hover text.
    """
    single = not isinstance(reports, Mapping)
    items = {UNCALIBRATED: reports} if single else dict(reports)
    labels = dict(labels or {})
    first = next(iter(items.values()))
    groups = list(first.table.index)
    n = len(items)
    offsets = np.linspace(0.22, -0.22, n) if n > 1 else np.zeros(1)      # the first series on top
    ypos = {g: float(len(groups) - 1 - i) for i, g in enumerate(groups)}
    fig = go.Figure()
    for (key, rep), off in zip(items.items(), offsets):
        t = rep.table.reindex(groups)
        v = t[metric].to_numpy(dtype=float)
        lo = t[f"{metric}_low"].to_numpy(dtype=float)
        hi = t[f"{metric}_high"].to_numpy(dtype=float)
        color = "#0072B2" if single else color_of(key)
        name = labels.get(key, key)
        hover = [f"<b>{g}</b> · {name}<br>{metric}: "
                 + ("n/a (one class only)" if not np.isfinite(a) else
                    f"{a:.4f}" + (f" [{b:.4f}, {c:.4f}]" if np.isfinite(b) else ""))
                 + f"<br>rows: {w:,.0f}" for g, a, b, c, w in zip(groups, v, lo, hi, t["weight"])]
        fig.add_trace(go.Scatter(
            x=v, y=[ypos[g] + off for g in groups], mode="markers", name=name, showlegend=not single,
            marker=dict(size=10, color=color, symbol="diamond" if key == UNCALIBRATED and not single else "circle"),
            error_x=dict(type="data", symmetric=False, array=np.nan_to_num(hi - v), arrayminus=np.nan_to_num(v - lo),
                         color=rgba(color, 0.7), thickness=2, width=5),
            text=hover, hoverinfo="text"))
    if single and show_overall and np.isfinite(first.overall.get(metric, np.nan)):
        fig.add_vline(x=first.overall[metric], line=dict(color="#888888", dash="dot", width=1.5),
                      annotation_text=f"all rows: {first.overall[metric]:.3f}", annotation_position="top")
    fig.update_yaxes(tickvals=[ypos[g] for g in groups], ticktext=[str(g) for g in groups],
                     range=[-0.6, len(groups) - 0.4], showgrid=False, zeroline=False)
    fig.update_xaxes(title_text=f"{metric}, {int(round(first.level * 100))}% interval", rangemode="tozero")
    if title is None:
        title = f"{metric} by group"
    base_layout(fig, title, max(300, 140 + 48 * len(groups) * (1 if n == 1 else 1.4)))
    fig.update_layout(margin=dict(l=120, b=110 if not single else 70))
    return fig
