"""BBQ's inner workings: how much each binning model counts, and what the models say.

Drawn from a :class:`calibdash.explain.bbq.BBQExplanation` alone; nothing here fits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.bbq import BBQExplanation
from .. import draws
from ..layout import base_layout, identity_trace, map_trace, steps, unit_axes
from ..palette import color_of

__all__ = []

#: Opacity of the heaviest model's map; the others scale with their weight.
MAX_OPACITY = 0.6
#: At most this many kept models are drawn (the heaviest).
MAX_MODELS_DRAWN = 60
#: The log-likelihood axis shows at most this far below the best model (e^-40: no weight left).
LML_SPAN = 40.0
_PRUNED = "#BBBBBB"


def weights_figure(data: pd.DataFrame, title: str | None = None, height: int = 380) -> go.Figure:
    """Bars of posterior weight by B (kept in the method's colour, pruned in grey) and the log marginal likelihood as
    a line on the right axis."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for kept, name, colour in ((True, "posterior weight (kept)", color_of("bbq")),
                               (False, "posterior weight (pruned)", _PRUNED)):
        part = data[data["kept"] == kept]
        if part.empty:
            continue
        note = np.where(part["same_as"] >= 0, "<br>same bins as B = " + part["same_as"].astype(str), "")
        fig.add_trace(go.Bar(
            x=part["B"], y=part["posterior"], name=name, marker_color=colour,
            customdata=np.c_[part["n_bins"], note],
            hovertemplate="B = %{x} (%{customdata[0]} bins)<br>weight %{y:.4f}%{customdata[1]}<extra></extra>"),
            secondary_y=False)
    # models more than LML_SPAN below the best have no visible weight: zoom both axes on the rest,
    # so the kept models' bars are wide enough to see and the line stays inside its axis
    lml = data["log_marginal_likelihood"].to_numpy()
    near = data[lml >= lml.max() - LML_SPAN]
    fig.add_trace(go.Scatter(
        x=near["B"], y=near["log_marginal_likelihood"], mode="lines+markers", name="log marginal likelihood",
        marker=dict(size=4), opacity=0.8, line=dict(color="#000000", width=1.5),
        hovertemplate="B = %{x}<br>log P(D|M) = %{y:.2f}<extra></extra>"), secondary_y=True)
    fig.update_layout(bargap=0.1)
    fig.update_xaxes(title_text="number of bins B", range=[float(near["B"].min()) - 1.5, float(near["B"].max()) + 1.5])
    fig.update_yaxes(title_text="posterior weight", secondary_y=False, rangemode="tozero")
    top, low = float(lml.max()), float(max(lml.min(), lml.max() - LML_SPAN))
    pad = 0.05 * max(top - low, 1.0)
    fig.update_yaxes(title_text="log marginal likelihood", secondary_y=True, showgrid=False,
                     range=[low - pad, top + pad])
    return base_layout(fig, title, height)


@dataclass
class MapData:
    """Step curves to draw: ``models`` (long: ``B``, ``weight``, ``opacity``, ``x``, ``y``) and ``average`` (``x``,
    ``y``); a curve's value on ``[x_k, x_(k+1))`` is ``y_k``, its last point at 1."""

    models: pd.DataFrame
    average: pd.DataFrame
    n_kept: int
    n_drawn: int


def map_data(explanation, max_models: int = MAX_MODELS_DRAWN) -> MapData:
    """The kept models' step maps (the heaviest ``max_models``) and the averaged map."""
    models, bins = explanation.models, explanation.bins
    kept = models[models["weight"] > 0].sort_values("weight", ascending=False)
    drawn = kept.head(max_models)
    top = float(drawn["weight"].max())
    parts = []
    for B, w in zip(drawn["B"], drawn["weight"]):
        b = bins[bins["B"] == B]
        x, y = steps(b["lower"].to_numpy(), b["estimate"].to_numpy())
        parts.append(pd.DataFrame({"B": B, "weight": w, "opacity": MAX_OPACITY * w / top, "x": x, "y": y}))
    x, y = steps(explanation.map["lower"].to_numpy(), explanation.map["prob"].to_numpy())
    return MapData(models=pd.concat(parts, ignore_index=True), average=pd.DataFrame({"x": x, "y": y}),
                   n_kept=len(kept), n_drawn=len(drawn))


def map_figure(data: MapData, title: str | None = None, height: int = 460) -> go.Figure:
    """Each kept model faintly (opacity proportional to weight), the average in bold."""
    colour = color_of("bbq")
    fig = go.Figure()
    fig.add_trace(identity_trace())
    label = "kept models (opacity ∝ weight)"
    if data.n_drawn < data.n_kept:
        label = f"{data.n_drawn} heaviest of {data.n_kept} kept models (opacity ∝ weight)"
    for i, (B, part) in enumerate(data.models.groupby("B", sort=False)):
        w = float(part["weight"].iloc[0])
        fig.add_trace(map_trace(part["x"], part["y"], label, colour, f"B = {B}, weight {w:.3f}", width=1.2,
                                line_shape="hv", meta="model", opacity=float(part["opacity"].iloc[0]),
                                legendgroup="models", showlegend=i == 0))
    fig.add_trace(map_trace(data.average["x"], data.average["y"], "BBQ average", colour, "BBQ", width=3.5,
                            line_shape="hv", meta="average"))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(BBQExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the posterior over models, and the models' maps with their average."""
    return [
        ("Posterior weight of each binning model", weights_figure(explanation.models)),
        ("Kept models (faint, by weight) and their average", map_figure(map_data(explanation))),
    ]
