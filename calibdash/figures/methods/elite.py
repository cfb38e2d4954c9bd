"""Drawing ELiTE's inner workings from an :class:`calibdash.explain.elite.ELiTEExplanation`: the map with its knots,
and each model's degrees of freedom, criterion and weight along the lambda path."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.elite import ELiTEExplanation, MIN_SUPPORT
from .. import draws
from ..layout import base_layout, data_groups_trace, identity_trace, map_trace, unit_axes
from ..palette import color_of, rgba
from .enir import DELTA_CAP, path_panels

__all__ = []


def map_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """The map (or the single trend filter) in bold, its knots as diamonds sized by their support (the total weight of
    the models with a knot there), the heaviest model faintly, the training rows as grey groups."""
    ex = explanation
    colour = color_of("elite")
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(data_groups_trace(ex.groups))
    if ex.mode == "ensemble" and ex.best_weight < 0.999:
        best = ex.models[ex.best]
        fig.add_trace(map_trace(best["score"], best["value"], f"heaviest single model (weight {ex.best_weight:.2f})",
                                rgba(colour, 0.45), "heaviest model", width=1.5, dash="dot", meta="best"))
    label = "ELiTE map" if ex.mode == "ensemble" else "single trend filter"
    fig.add_trace(map_trace(ex.curve["score"], ex.curve["prob"], label, colour, label, meta="map"))
    k = ex.knot_support
    if len(k):
        size = 7 + 9 * np.sqrt(k["support"].to_numpy())
        fig.add_trace(go.Scatter(
            x=k["score"], y=k["prob"], mode="markers", meta="knots",
            name="knots (size ∝ √weight of models with that knot)" if ex.mode == "ensemble" else "knots",
            marker=dict(symbol="diamond", color=colour, size=size, line=dict(color="#FFFFFF", width=1)),
            customdata=np.c_[k["support"], k["n_models"]],
            hovertemplate=("knot at score %{x:.4f}<br>map %{y:.4f}<br>"
                           "in %{customdata[1]} model(s), total weight %{customdata[0]:.3f}<extra></extra>")))
    unit_axes(fig)
    return base_layout(fig, title, height)


def path_figure(explanation, title: str | None = None, height: int | None = None,
                delta_cap: float = DELTA_CAP) -> go.Figure:
    """Panels over lambda / lambda_max (log, 1 to 10^-4): df (knots + 2), criterion minus its best and, for the
    ensemble, the weights; in single mode a dashed line marks the chosen lambda (the last). The criterion axis stops
    at ``delta_cap`` (weight < e^-cap/2)."""
    data = explanation.path
    colour = color_of("elite")
    crit = explanation.criterion_label
    ensemble = explanation.mode == "ensemble"
    rows = 3 if ensemble else 2
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    x = data["lam_ratio"]
    common = np.c_[data["lambda"], data["knots"], data[explanation.criterion], data["weight"]]
    hover = ("λ/λ_max %{x:.3g} (λ = %{customdata[0]:.4g})<br>%{customdata[1]} knots<br>"
             + crit + " %{customdata[2]:.2f}<br>weight %{customdata[3]:.4f}<extra></extra>")
    fig.add_trace(go.Scatter(x=x, y=data["df"], mode="lines+markers", name="df = knots + 2",
                             line=dict(color=colour, width=1.5), marker=dict(size=5),
                             customdata=common, hovertemplate=hover), row=1, col=1)
    path_panels(fig, x, data, crit, colour, common, hover, delta_cap, ensemble, cliponaxis=True)
    if not ensemble:
        fig.add_vline(x=float(x.iloc[-1]), line=dict(color=rgba(colour, 0.6), dash="dash", width=1.5))
    lo = min(float(x.min()), 1e-4)
    ticks = [10.0 ** -k for k in range(0, int(np.ceil(-np.log10(lo))) + 1)]
    fig.update_xaxes(type="log", range=[0.05, np.log10(lo) - 0.05], tickvals=ticks,
                     ticktext=["1" if t == 1 else f"10<sup>{int(round(np.log10(t)))}</sup>" for t in ticks])
    fig.update_xaxes(title_text="λ / λ_max (log; to the right: less penalty, more knots)", row=rows, col=1)
    fig.update_yaxes(title_text="df", row=1, col=1, rangemode="tozero")
    fig.update_layout(showlegend=False)
    return base_layout(fig, title, height or (540 if ensemble else 400))


@draws(ELiTEExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map with its knots, and the lambda path."""
    ex = explanation
    if ex.mode == "ensemble":
        n = len(ex.path)
        map_title = (f"ELiTE map: average of {n} trend filter{'s' if n != 1 else ''}, "
                     f"{len(ex.knot_support)} knots with weight ≥ {MIN_SUPPORT:g}")
        path_title = f"λ path: degrees of freedom, {ex.criterion_label} and weight of each model"
    else:
        n = int(ex.path["knots"].iloc[-1])
        map_title = f"Single trend filter at λ = {ex.path['lam_ratio'].iloc[-1]:.3g} λ_max: {n} knots"
        path_title = ("λ path, warm-started down to the chosen λ (dashed): degrees of freedom and "
                      + ex.criterion_label)
    return [(map_title, map_figure(ex)), (path_title, path_figure(ex))]
