"""K-class explanations drawn: composites' binary maps, a linear map's ``W``, ``b`` and regularisation path, a
temperature's log-loss against ``T``, and for K = 3 the map on the simplex (after the method's own figures)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...explain.k_class import ClassExplanation, LinearExplanation, OneVsRestExplanation
from ...explain.k_temperature import ClassTemperatureExplanation
from .. import draws
from ..layout import DATA_GREY, base_layout, identity_trace
from ..palette import CLASS_COLORS, rgba

__all__ = []

_TEMPERATURE = "#CC6677"


def class_maps_figure(ex: OneVsRestExplanation, title: str | None = None, height: int = 460) -> go.Figure:
    """One curve per shown class over the identity; top-label: the pooled map dashed, black."""
    fig = go.Figure()
    fig.add_trace(identity_trace())
    top = ex.kind == "top_label"
    for i, c in enumerate(ex.shown):
        m = ex.maps[ex.maps["class"] == c]
        colour = CLASS_COLORS[i % len(CLASS_COLORS)]
        fig.add_trace(go.Scatter(x=m["score"], y=m["calibrated"], mode="lines", name=str(ex.classes[c]),
                                 line=dict(color=colour, width=2), meta=int(c),
                                 hovertemplate=f"{ex.classes[c]}<br>%{{x:.3f}} → %{{y:.3f}}<extra></extra>"))
    if top and ex.pooled_map is not None:
        pooled = ", ".join(str(ex.classes[c]) for c in ex.pooled)
        fig.add_trace(go.Scatter(x=ex.pooled_map["score"], y=ex.pooled_map["calibrated"], mode="lines",
                                 name="pooled" + (f" ({pooled})" if pooled else " (no class uses it)"),
                                 line=dict(color="#000000", width=2, dash="dash"), meta="pooled",
                                 hovertemplate="pooled<br>%{x:.3f} → %{y:.3f}<extra></extra>"))
    lo = float(ex.maps["score"].min()) if ex.maps is not None and len(ex.maps) else 0.0
    fig.update_xaxes(title_text="top probability of rows predicted as the class" if top
                     else "the class's probability", range=[min(lo, 0.0) - 0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


@draws(OneVsRestExplanation)
def ovr_figures(ex: OneVsRestExplanation) -> list[tuple[str, go.Figure]]:
    """The class maps, as ``(title, figure)`` (one-vs-rest: only when a class is shown)."""
    if ex.kind == "top_label":
        return [("Top-label maps per predicted class", class_maps_figure(ex))]
    return [("One binary map per class (one-vs-rest)", class_maps_figure(ex))] if ex.shown else []


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
    """The recorded regularisation path: the first column against each numeric column after it, the chosen value (a
    boolean column ``chosen``, when recorded) marked."""
    p = ex.path
    x = p.columns[0]
    fig = go.Figure()
    columns = [c for c in p.columns[1:] if c != "chosen" and np.issubdtype(p[c].dtype, np.number)]
    for i, col in enumerate(columns):
        fig.add_trace(go.Scatter(x=p[x], y=p[col], mode="lines+markers", name=str(col),
                                 line=dict(color=CLASS_COLORS[i % len(CLASS_COLORS)])))
    if len(columns) == 1:                            # no legend then: the axis says what is drawn
        fig.update_yaxes(title_text=str(columns[0]))
    if "chosen" in p:
        for v in p.loc[p["chosen"].astype(bool), x]:
            fig.add_vline(x=float(v), line=dict(color=DATA_GREY, dash="dash"))
    numeric = np.issubdtype(p[x].dtype, np.number) and (p[x] > 0).all()
    fig.update_xaxes(type="log" if numeric else None, title_text=str(x))
    return base_layout(fig, title, height)


@draws(LinearExplanation)
def linear_figures(ex: LinearExplanation) -> list[tuple[str, go.Figure]]:
    """``W``, ``b`` and the path (when recorded), as ``(title, figure)``; nothing when W and b were not found."""
    if ex.weights is None:
        return []
    out = [("Fitted W (new log-score of each class from the input log-scores)", weights_figure(ex)),
           ("Fitted b (one intercept per class)", bias_figure(ex))]
    if ex.path is not None and len(ex.path.columns) > 1:
        out.append(("Regularisation path (cross-validated choice)", path_figure(ex)))
    return out


def loss_curve_figure(ex: ClassTemperatureExplanation, title: str | None = None, height: int = 420) -> go.Figure:
    """Mean log-loss against T (log x axis): fitting rows (solid), held-out rows (dashed), the fitted T (star, dashed
    line) and T = 1 (the probabilities as they are, grey dot) on each curve."""
    c, t = ex.loss_curve, ex.temperature
    fig = go.Figure()
    for col, label, dash in (("fit", "fitting rows", "solid"), ("held_out", "held-out rows", "dash")):
        if col not in c:
            continue
        fig.add_trace(go.Scatter(x=c["temperature"], y=c[col], mode="lines", name=f"log-loss, {label}", meta=col,
                                 line=dict(color=_TEMPERATURE, width=2.5, dash=dash),
                                 hovertemplate=f"{label}<br>T = %{{x:.4g}}<br>log-loss %{{y:.5f}}<extra></extra>"))
        at = lambda v: float(np.interp(np.log(v), np.log(c["temperature"]), c[col]))
        fig.add_trace(go.Scatter(x=[1.0], y=[at(1.0)], mode="markers", showlegend=col == "fit",
                                 name="T = 1 (as given)", marker=dict(size=9, color=DATA_GREY),
                                 hovertemplate=f"{label}, T = 1<br>log-loss %{{y:.5f}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[t], y=[at(t)], mode="markers", showlegend=col == "fit",
                                 name=f"fitted T = {t:.4g}",
                                 marker=dict(symbol="star", size=14, color=_TEMPERATURE,
                                             line=dict(color="#FFFFFF", width=1)),
                                 hovertemplate=f"{label}, fitted T = %{{x:.5g}}<br>log-loss %{{y:.5f}}<extra></extra>"))
    fig.add_vline(x=t, line=dict(color=rgba(_TEMPERATURE, 0.6), dash="dot", width=1.5))
    fig.update_xaxes(type="log", title_text="temperature T (log scale; right: softer, left: sharper)")
    fig.update_yaxes(title_text="mean log-loss")
    return base_layout(fig, title, height)


@draws(ClassTemperatureExplanation)
def temperature_figures(ex: ClassTemperatureExplanation) -> list[tuple[str, go.Figure]]:
    """The log-loss curve, as ``(title, figure)``."""
    return [("Log-loss as a function of the temperature", loss_curve_figure(ex))]


@draws(ClassExplanation)
def simplex_figures(ex: ClassExplanation) -> list[tuple[str, go.Figure]]:
    """The simplex map when K = 3, as ``(title, figure)``."""
    if ex.simplex is None:
        return []
    return [("The map on the probability simplex", ex.simplex.figure(class_names=ex.classes, title=None))]
