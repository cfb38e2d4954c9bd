"""Reliability diagrams: observed frequency against mean prediction per bin, drawn from
:func:`calibdash.measures.binning.reliability_table`'s tables (:func:`calibdash.diagrams.reliability_tables`)."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..layout import UNIT, base_layout, error_bars, identity_trace, visibility
from ..palette import color_of, rgba

__all__ = ["reliability_diagram"]


#: Width of the count bar of an equal-count bin, drawn at the bin's mean prediction (its points, whose
#: spacing plotly would otherwise take as the bar width, can be arbitrarily close).
BAR_WIDTH = 0.012


def bin_hover(t: pd.DataFrame, label: str, gap: bool = True) -> list[str]:
    """Each bin's hover text ("" for an empty bin): its range, rows, mean prediction, observed frequency with its
    interval and, with ``gap``, its gap and PUD."""
    return ["" if r.count == 0 else
            f"<b>{label}</b><br>bin {r.lower:.3f} – {r.upper:.3f}<br>rows: {r.count:,}<br>"
            f"mean prediction: {r.mean_pred:.3f}<br>observed: {r.obs_freq:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"
            + (f"<br>gap: {r.gap:+.3f} · PUD {r.pud:.2f}" if gap else "") for r in t.itertuples()]


def reliability_diagram(tables: Mapping[str, pd.DataFrame], *, labels: Mapping[str, str] | None = None,
                        title: str | None = "Reliability diagram", show_counts: bool = True,
                        show_intervals: bool = True, height: int = 520,
                        visible: Mapping[str, bool] | None = None,
                        colors: Mapping[str, str] | None = None) -> go.Figure:
    """Draw one or several methods' reliability tables in one figure.

    Parameters
    ----------
    tables : mapping method key -> reliability table
        From :func:`calibdash.diagrams.reliability_tables` or :func:`calibdash.metrics.reliability_table`.
    labels : mapping key -> display name, optional
    show_counts : bool
        A histogram of rows per bin under the diagram (shared x axis).
    show_intervals : bool
        Error bars with each bin's 95% interval of the observed frequency.
    visible : mapping key -> bool, optional
        Methods drawn but hidden ("legendonly"), so the legend toggles them.
    colors : mapping key -> "#RRGGBB", optional
        Colours in place of :func:`~calibdash.figures.palette.color_of`'s (a multi-class chart's).

    Empty bins are left as gaps in the curve; hovering a point shows the bin's range, rows, mean prediction, observed
    frequency with its interval, gap and PUD.
    """
    labels = dict(labels or {})
    rows = 2 if show_counts else 1
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        row_heights=[0.75, 0.25] if show_counts else [1.0])
    fig.add_trace(identity_trace("perfect calibration"), row=1, col=1)
    overlay = False
    for i, (key, t) in enumerate(tables.items()):
        name = labels.get(key, key)
        color = (colors or {}).get(key) or color_of(key)
        vis = visibility(visible, key)
        fig.add_trace(go.Scatter(
            x=t["mean_pred"].to_numpy(dtype=float), y=t["obs_freq"].to_numpy(dtype=float), mode="lines+markers",
            name=name, legendgroup=key, visible=vis, line=dict(color=color, width=2), marker=dict(size=7, color=color),
            error_y=error_bars(t, color) if show_intervals else None, connectgaps=False, text=bin_hover(t, name),
            hoverinfo="text"), row=1, col=1)
        if show_counts:
            uniform_edges = np.isfinite(t["lower"]).all() and np.allclose(
                t["upper"] - t["lower"], (t["upper"] - t["lower"]).iloc[0])
            if uniform_edges:           # equal-width bins: grouped bars at the bins' centres
                bar = dict(x=(t["lower"] + t["upper"]) / 2)
            else:                       # equal-count bins: a thin bar at each bin's mean prediction
                bar = dict(x=t["mean_pred"], width=np.full(len(t), BAR_WIDTH))
                overlay = True
            fig.add_trace(go.Bar(
                y=t["count"], name=name, legendgroup=key, showlegend=False,
                visible=vis, marker=dict(color=rgba(color, 0.6)),
                hovertemplate=f"{name}<br>rows: %{{y:,}}<extra></extra>", **bar,
            ), row=2, col=1)
    fig.update_xaxes(range=UNIT, row=rows, col=1, title_text="mean predicted probability")
    fig.update_yaxes(range=UNIT, row=1, col=1, title_text="observed frequency")
    if show_counts:
        fig.update_yaxes(title_text="rows", row=2, col=1, rangemode="tozero")
        fig.update_layout(barmode="overlay" if overlay else "group", bargap=0.15)
    return base_layout(fig, title, height)
