"""CORP reliability diagrams (Dimitriadis, Gneiting & Jordan): PAV-recalibrated probability against forecast.

The data is :func:`calibdash.corp.corp_curve`, :func:`calibdash.corp.corp_band`
and :func:`calibdash.corp.corp_decomposition` (one of each per method);
:func:`corp_diagram` only draws it.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..layout import base_layout
from ..palette import color_of, rgba

__all__ = ["corp_diagram", "decomposition_text"]


def decomposition_text(d: Mapping[str, float]) -> str:
    """``"MCB 0.018 · DSC 0.030 · UNC 0.244"`` for a :func:`calibdash.corp.corp_decomposition` result."""
    return " · ".join(f"{k} {d[k]:.3f}" for k in ("MCB", "DSC", "UNC") if k in d)


def _block_segments(x: np.ndarray, y: np.ndarray, block: np.ndarray):
    """Each block's flat piece (first to last row) as one polyline, NaN between blocks (a gap in plotly)."""
    first = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    last = np.r_[first[1:] - 1, block.size - 1]
    gap = np.full(first.size, np.nan)
    return (np.column_stack([x[first], x[last], gap]).ravel(),
            np.column_stack([y[first], y[last], gap]).ravel())


def corp_diagram(curves: Mapping[str, pd.DataFrame], bands: Mapping[str, pd.DataFrame] | None = None,
                 decompositions: Mapping[str, Mapping[str, float]] | None = None, *,
                 labels: Mapping[str, str] | None = None, title: str | None = "CORP reliability diagram",
                 height: int = 520, visible: Mapping[str, bool] | None = None) -> go.Figure:
    """Draw one or several methods' CORP curves, with their bands and score decompositions.

    Parameters
    ----------
    curves : mapping method key -> DataFrame
        From :func:`calibdash.corp.corp_curve` (``score``, ``calibrated``,
        ``weight``, ``block``). Each curve is drawn as the package draws it:
        its rows joined by straight lines, flat over each PAV block (drawn
        thick) and a slanted step between blocks.
    bands : mapping key -> DataFrame, optional
        From :func:`calibdash.corp.corp_band` (``score``, ``lower``,
        ``upper``), drawn as a shaded region in the method's colour.
    decompositions : mapping key -> dict, optional
        From :func:`calibdash.corp.corp_decomposition`; its MCB, DSC and UNC
        are shown in the method's legend entry.
    labels : mapping key -> display name, optional
    visible : mapping key -> bool, optional
        Methods drawn but hidden ("legendonly"), so the legend toggles them.
    """
    labels = dict(labels or {})
    bands = dict(bands or {})
    decompositions = dict(decompositions or {})
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                             line=dict(color="#BBBBBB", dash="dash", width=1), hoverinfo="skip"))
    for key, c in curves.items():
        label = labels.get(key, key)
        color = color_of(key)
        vis = True if visible is None or visible.get(key, True) else "legendonly"
        band = bands.get(key)
        if band is not None:
            x = band["score"].to_numpy(dtype=float)
            fig.add_trace(go.Scatter(x=x, y=band["upper"].to_numpy(dtype=float), mode="lines", line=dict(width=0),
                                     legendgroup=key, showlegend=False, visible=vis, hoverinfo="skip",
                                     connectgaps=True))
            fig.add_trace(go.Scatter(x=x, y=band["lower"].to_numpy(dtype=float), mode="lines", line=dict(width=0),
                                     fill="tonexty", fillcolor=rgba(color, 0.18), legendgroup=key, showlegend=False,
                                     visible=vis, hoverinfo="skip", connectgaps=True))
        name = label
        if key in decompositions:
            name = f"{label} · {decomposition_text(decompositions[key])}"
        x = c["score"].to_numpy(dtype=float)
        y = c["calibrated"].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=name, legendgroup=key, visible=vis, line=dict(color=color, width=1.5),
            customdata=np.column_stack([c["weight"].to_numpy(dtype=float), c["block"].to_numpy()]),
            hovertemplate=(f"<b>{label}</b><br>forecast %{{x:.3f}}<br>recalibrated %{{y:.3f}}"
                           "<br>block %{customdata[1]:.0f}, rows %{customdata[0]:,.0f}<extra></extra>"),
        ))
        # each PAV block's flat piece, thick (the package's CEP segments); None breaks the line between blocks
        seg_x, seg_y = _block_segments(x, y, c["block"].to_numpy())
        fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines+markers", legendgroup=key, showlegend=False,
                                 visible=vis, line=dict(color=color, width=4), marker=dict(size=4, color=color),
                                 hoverinfo="skip"))
    fig.update_xaxes(range=[-0.02, 1.02], title_text="forecast probability")
    fig.update_yaxes(range=[-0.02, 1.02], title_text="recalibrated probability (PAV)")
    return base_layout(fig, title, height)
