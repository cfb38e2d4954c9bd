"""The Bayesian binnings' inner workings: BBQ's weight per binning model and the models' maps, SBB's single best
binning on the calibration map, and ABB's averaged map over the prior and posterior probability of a bin boundary in
each gap."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.bbq import BBQExplanation
from ...explain.sbb import ABBExplanation, SBBExplanation
from .. import draws
from ..layout import MAX_MODELS_DRAWN, UNIT, base_layout, faint_maps, identity_trace, map_trace, steps, unit_axes
from ..palette import color_of, rgba

__all__ = []

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


def map_figure(explanation, title: str | None = None, height: int = 460,
               max_models: int = MAX_MODELS_DRAWN) -> go.Figure:
    """Each kept model's step map faintly (the heaviest ``max_models``, opacity proportional to weight), the average
    in bold."""
    colour = color_of("bbq")
    models, bins = explanation.models, explanation.bins
    fig = go.Figure()
    fig.add_trace(identity_trace())

    def curve(B, wt):
        b = bins[bins["B"] == B]
        return *steps(b["lower"].to_numpy(), b["estimate"].to_numpy()), f"B = {B}, weight {float(wt):.3f}"

    kept = models[models["weight"] > 0].sort_values("weight", ascending=False)
    faint_maps(fig, kept.set_index("B")["weight"], curve, "kept models", colour, max_models, line_shape="hv")
    fig.add_trace(map_trace(*steps(explanation.map["lower"].to_numpy(), explanation.map["prob"].to_numpy()),
                            "BBQ average", colour, "BBQ", width=3.5, line_shape="hv", meta="average"))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(BBQExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the posterior over models, and the models' maps with their average."""
    return [
        ("Posterior weight of each binning model", weights_figure(explanation.models)),
        ("Kept models (faint, by weight) and their average", map_figure(explanation)),
    ]


def bins_figure(explanation, title: str | None = None, height: int = 460) -> go.Figure:
    """The step map over the chosen bins as alternately shaded bands, and a marker per bin at the middle of its
    training scores, sized by its rows, its counts on hover."""
    colour = color_of("sbb")
    b = explanation.bins
    fig = go.Figure()
    xs, ys = [], []                      # every other bin shaded: its rectangle, None between rectangles
    for lo, hi in zip(b["lower"].to_numpy()[::2], b["upper"].to_numpy()[::2]):
        xs += [lo, hi, hi, lo, lo, None]
        ys += [0, 0, 1, 1, 0, None]
    fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=rgba(colour, 0.10), mode="lines",
                             line=dict(width=0), name="bins (alternate shading)", hoverinfo="skip"))
    fig.add_trace(identity_trace())
    fig.add_trace(map_trace(*steps(b["lower"].to_numpy(), b["estimate"].to_numpy()), "SBB map", colour, "SBB",
                            line_shape="hv"))
    size = 6 + 14 * np.sqrt(b["n"] / b["n"].max())
    fig.add_trace(go.Scatter(
        x=(b["score_min"] + b["score_max"]) / 2, y=b["estimate"], mode="markers", name="bin (size ∝ √rows)",
        marker=dict(color=colour, size=size, line=dict(color="#FFFFFF", width=1)),
        customdata=np.c_[b["lower"], b["upper"], b["n"], b["n1"], b["score_min"], b["score_max"]],
        hovertemplate=("bin [%{customdata[0]:.4f}, %{customdata[1]:.4f})<br>"
                       "training scores %{customdata[4]:.4f} to %{customdata[5]:.4f}<br>"
                       "%{customdata[3]:,} positives of %{customdata[2]:,} rows<br>"
                       "estimate (n1+1)/(n+2) = %{y:.4f}<extra></extra>")))
    unit_axes(fig)
    return base_layout(fig, title, height)


@draws(SBBExplanation)
def sbb_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): SBB's chosen bins on the calibration map."""
    title = (f"SBB's best binning: {len(explanation.bins)} bins "
             f"(posterior probability {explanation.posterior_of_best:.3g})")
    return [(title, bins_figure(explanation))]


def abb_figure(explanation, title: str | None = None, height: int = 560) -> go.Figure:
    """The map (top, linear between training positions as ``predict``) and, on the same score axis below, the prior
    and posterior probability of a boundary in each gap (at its midpoint)."""
    colour = color_of("abb")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.62, 0.38])
    fig.add_trace(identity_trace(), row=1, col=1)
    fig.add_trace(map_trace(explanation.curve["x"], explanation.curve["y"], "ABB map", colour, "ABB"), row=1, col=1)
    b = explanation.boundaries
    fig.add_trace(go.Scatter(
        x=b["score"], y=b["prior"], mode="lines", name="prior P(boundary)",
        line=dict(color="#7F7F7F", dash="dot", width=1.2),
        hovertemplate="gap %{x:.4f}<br>prior %{y:.4f}<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Scatter(
        x=b["score"], y=b["posterior"], mode="lines+markers" if len(b) <= 300 else "lines",
        name="posterior P(boundary)", line=dict(color=colour, width=1.5), marker=dict(size=5),
        customdata=np.c_[b["left"], b["right"], b["prior"]],
        hovertemplate=("gap between %{customdata[0]:.4f} and %{customdata[1]:.4f}<br>"
                       "posterior %{y:.4f} (prior %{customdata[2]:.4f})<extra></extra>")), row=2, col=1)
    fig.update_xaxes(range=UNIT)
    fig.update_xaxes(title_text="score", row=2, col=1)
    fig.update_yaxes(title_text="calibrated probability", range=UNIT, row=1, col=1)
    fig.update_yaxes(title_text="P(boundary in gap)", range=UNIT, row=2, col=1)
    return base_layout(fig, title, height)


@draws(ABBExplanation)
def abb_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map over the posterior boundary probability at each gap."""
    title = (f"ABB's map and where it believes the bin boundaries are "
             f"(posterior mean {explanation.expected_bins:.1f} bins)")
    return [(title, abb_figure(explanation))]
