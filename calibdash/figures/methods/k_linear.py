"""Drawing a vector, matrix or Dirichlet calibration: ``W`` as a heatmap, ``b`` as bars, and its regularisation path
when recorded."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...explain.k_linear import LinearExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout
from ..palette import CLASS_COLORS

__all__ = []


def weights_figure(ex: LinearExplanation, title: str | None = None, height: int = 460) -> go.Figure:
    """``W`` as a heatmap: row k (output class) against column j (input log-score), diverging colours around 0
    (identity: 1 on the diagonal)."""
    W = ex.weights
    limit = float(np.max(np.abs(W))) or 1.0
    names = list(ex.classes)
    fig = go.Figure(go.Heatmap(z=W, x=names, y=names, colorscale="RdBu", zmid=0.0, zmin=-limit, zmax=limit,
                               colorbar=dict(title="W", thickness=12),
                               text=np.round(W, 2), texttemplate="%{text}" if len(names) <= 10 else None,
                               hovertemplate="output %{y}<br>input %{x}<br>W = %{z:.4f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text="output class (row of W)")
    fig.update_xaxes(title_text="input log-score (column of W)")
    return base_layout(fig, title, height)


def bias_figure(ex: LinearExplanation, title: str | None = None, height: int = 360) -> go.Figure:
    """``b`` as one bar per class (positive: the class's probability is raised)."""
    b = ex.bias
    fig = go.Figure(go.Bar(x=list(ex.classes), y=b, marker_color=[("#4477AA" if v >= 0 else "#CC6677") for v in b],
                           hovertemplate="%{x}<br>b = %{y:.4f}<extra></extra>"))
    fig.update_yaxes(title_text="b (added to the class's log-score)", zeroline=True)
    return base_layout(fig, title, height)


def path_figure(ex: LinearExplanation, title: str | None = None, height: int = 380) -> go.Figure:
    """The recorded regularisation path: the first column against each numeric column after it, the chosen
    value (a boolean column ``chosen``, when recorded) marked."""
    p = ex.path
    x = p.columns[0]
    fig = go.Figure()
    for i, col in enumerate(c for c in p.columns[1:] if c != "chosen" and np.issubdtype(p[c].dtype, np.number)):
        fig.add_trace(go.Scatter(x=p[x], y=p[col], mode="lines+markers", name=str(col),
                                 line=dict(color=CLASS_COLORS[i % len(CLASS_COLORS)])))
    if "chosen" in p:
        for v in p.loc[p["chosen"].astype(bool), x]:
            fig.add_vline(x=float(v), line=dict(color=DATA_GREY, dash="dash"))
    numeric = np.issubdtype(p[x].dtype, np.number) and (p[x] > 0).all()
    fig.update_xaxes(type="log" if numeric else None, title_text=str(x))
    return base_layout(fig, title, height)


@draws(LinearExplanation)
def inner_figures(ex: LinearExplanation) -> list[tuple[str, go.Figure]]:
    """``W``, ``b`` and the path (when recorded), as ``(title, figure)``; nothing when W and b were not found."""
    if ex.weights is None:
        return []
    out = [("Fitted W (new log-score of each class from the input log-scores)", weights_figure(ex)),
           ("Fitted b (one intercept per class)", bias_figure(ex))]
    if ex.path is not None and len(ex.path.columns) > 1:
        out.append(("Regularisation path (cross-validated choice)", path_figure(ex)))
    return out
