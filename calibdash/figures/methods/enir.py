"""ENIR drawn from an :class:`calibdash.explain.enir.ENIRExplanation`: each model's distinct values, criterion and
weight along the lambda path, and the averaged models' maps faintly under the ENIR map."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.enir import ENIRExplanation
from .. import draws
from ..layout import (MAX_MODELS_DRAWN, base_layout, capped_range, data_groups_trace, faint_maps, identity_trace,
                      map_trace, stems, unit_axes)
from ..palette import color_of

__all__ = []

#: The criterion panel shows differences up to this (a model 30 above the best weighs e^-15).
DELTA_CAP = 30.0
_DROPPED = "#BBBBBB"


def path_panels(fig, x, data, crit: str, colour: str, customdata, hover: str, delta_cap: float,
                weight_panel: bool = True, **delta) -> None:
    """A model path's criterion minus its best (row 2, the axis stopping at ``delta_cap``) and, with ``weight_panel``,
    the models' weights as stems and points (row 3); ``delta`` goes to the criterion's trace."""
    d = data["delta"].where(np.isfinite(data["delta"]))
    fig.add_trace(go.Scatter(x=x, y=d, mode="lines+markers", name=f"{crit} − best", marker=dict(size=5),
                             line=dict(color="#000000", width=1.5), customdata=customdata, hovertemplate=hover,
                             **delta), row=2, col=1)
    fig.update_yaxes(title_text=f"{crit} − best", row=2, col=1, range=capped_range(d, delta_cap))
    if weight_panel:
        fig.add_trace(stems(x, data["weight"], colour), row=3, col=1)
        fig.add_trace(go.Scatter(x=x, y=data["weight"], mode="markers", name="weight", customdata=customdata,
                                 marker=dict(color=colour, size=6), hovertemplate=hover), row=3, col=1)
        fig.update_yaxes(title_text="weight", row=3, col=1, rangemode="tozero")


def path_figure(explanation, title: str | None = None, height: int = 540, delta_cap: float = DELTA_CAP) -> go.Figure:
    """Three panels over lambda (log): distinct fitted values, criterion minus the best, and weight. Models left out
    of the average (lambda = 0, infinite score) are grey in the first panel."""
    ex = explanation
    colour = color_of("enir")
    positive = ex.path["lambda"] > 0
    # lambda = 0 has no place on a log axis (and no weight unless it is the only model: then a linear axis)
    data = ex.path[positive] if positive.any() else ex.path
    crit = ex.criterion_label
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    common = np.c_[data["df"], data["score"], data["weight"]]
    hover = ("λ = %{x:.4g}<br>%{customdata[0]} distinct values<br>" + crit
             + " %{customdata[1]:.2f}<br>weight %{customdata[2]:.4f}<extra></extra>")
    for kept, name, col in ((True, "distinct fitted values (averaged)", colour),
                            (False, "distinct fitted values (left out)", _DROPPED)):
        part = data[data["kept"] == kept]
        if part.empty:
            continue
        fig.add_trace(go.Scatter(x=part["lambda"], y=part["df"], mode="markers", name=name,
                                 marker=dict(color=col, size=6), customdata=common[(data["kept"] == kept).to_numpy()],
                                 hovertemplate=hover), row=1, col=1)
    path_panels(fig, data["lambda"], data, crit, colour, common, hover, delta_cap)
    fig.update_xaxes(type="log" if positive.any() else "linear")
    fig.update_xaxes(title_text="λ (log; to the right: more penalty, closer to isotonic)", row=3, col=1)
    fig.update_yaxes(title_text="distinct values", row=1, col=1, rangemode="tozero")
    fig.update_layout(showlegend=False)
    return base_layout(fig, title, height)


def map_figure(explanation, title: str | None = None, height: int = 460,
               max_models: int = MAX_MODELS_DRAWN) -> go.Figure:
    """Each averaged model faintly (the heaviest ``max_models``, opacity proportional to weight), the ENIR map in
    bold, the training rows as grey equal-count groups."""
    ex = explanation
    colour = color_of("enir")
    fig = go.Figure()
    fig.add_trace(identity_trace())
    fig.add_trace(data_groups_trace(ex.groups))

    def curve(model, wt):
        part = ex.models[ex.models["model"] == model]
        return part["score"], part["prob"], f"λ = {float(part['lambda'].iloc[0]):.4g}, weight {float(wt):.3f}"

    weights = ex.models.groupby("model", sort=False)["weight"].first().sort_values(ascending=False)
    faint_maps(fig, weights, curve, "models", colour, max_models)
    fig.add_trace(map_trace(ex.curve["score"], ex.curve["prob"], "ENIR average", colour, "ENIR", width=3.5,
                            meta="average"))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(ENIRExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the lambda path with the weights, and the models' maps with their average."""
    ex = explanation
    n = int((ex.path["weight"] > 0).sum())
    return [
        (f"λ path: {len(ex.path)} of {ex.n_breakpoints:,} breakpoints, distinct values, "
         f"{ex.criterion_label} and weight", path_figure(ex)),
        (f"Near-isotonic models (faint, by weight; {n} with weight > 0) and their average", map_figure(ex)),
    ]
