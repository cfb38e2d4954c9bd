"""Teaching figures for the synthetic scenarios (:mod:`calibdash.synthetic`): the known truth (black) beside the
estimates: one sample's reliability diagram, the calibrators' maps, and each estimator's bias and variance over
repeated draws."""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ... import synthetic
from ...measures import calibration as metrics
from ...core.errors import DataError
from .calibration_map import score_grid
from ..layout import UNIT, base_layout, identity_trace
from ..palette import class_color_of, color_of, rgba
from .reliability import reliability_diagram

__all__ = ["size_curve_figure", "scenario_data", "scenario_figure", "maps_data", "maps_figure", "bias_data",
           "bias_figure"]

#: Key (and palette name) of the true curve.
TRUTH = "truth"
#: Estimates drawn by :func:`bias_figure`: column of the study -> display name.
ESTIMATORS = {"ece": "ECE", "mvce": "MVCE"}
_SAMPLE = "uncalibrated"


def _truth_frame(name: str, scores=None) -> pd.DataFrame:
    """The true curve on a grid over the scenario's support (refined where ``scores`` lie)."""
    lo, hi = synthetic.support(name)
    grid = np.union1d(score_grid(scores), np.linspace(lo, hi, 401))
    grid = grid[(grid >= lo) & (grid <= hi)]
    return pd.DataFrame({"score": grid, "prob": synthetic.true_curve(name, grid)})


def _truth_trace(truth: pd.DataFrame, showlegend: bool = True) -> go.Scatter:
    return go.Scatter(x=truth["score"], y=truth["prob"], mode="lines", name="true calibration curve",
                      legendgroup=TRUTH, showlegend=showlegend, line=dict(color=color_of(TRUTH), width=3),
                      hovertemplate="truth<br>score %{x:.4f} → P(y=1) %{y:.4f}<extra></extra>")


@dataclass
class ScenarioData:
    """``truth`` (score, prob): the true curve; ``table``: the sample's reliability table (raw scores)."""

    truth: pd.DataFrame
    table: pd.DataFrame
    n_rows: int


def scenario_data(name: str, scores, labels, n_bins: int = metrics.DEFAULT_N_BINS,
                  strategy: str = metrics.DEFAULT_STRATEGY) -> ScenarioData:
    """The true curve of scenario ``name`` and the reliability table of a sample's raw ``scores``."""
    return ScenarioData(truth=_truth_frame(name, scores),
                        table=metrics.reliability_table(scores, labels, n_bins, strategy),
                        n_rows=len(scores))


def scenario_figure(data: ScenarioData, title: str | None = None, height: int = 480) -> go.Figure:
    """The sample's reliability diagram (grey, 95% intervals, rows per bin below) with the true curve in black."""
    label = f"this sample ({data.n_rows:,} rows, binned)"
    fig = reliability_diagram({_SAMPLE: data.table}, labels={_SAMPLE: label}, title=title, height=height)
    fig.add_trace(_truth_trace(data.truth), row=1, col=1)
    fig.update_xaxes(title_text="score", row=2, col=1)
    return fig


def maps_data(name: str, models: Mapping[str, object], scores=None) -> pd.DataFrame:
    """Long DataFrame (``method``, ``score``, ``prob``): the true curve (method :data:`TRUTH`) and each fitted model's
    map, on a grid over the scenario's support refined at ``scores``."""
    truth = _truth_frame(name, scores)
    grid = truth["score"].to_numpy()
    parts = [truth.assign(method=TRUTH)]
    parts += [pd.DataFrame({"score": grid, "prob": model.predict(grid), "method": key})
              for key, model in models.items()]
    return pd.concat(parts, ignore_index=True)[["method", "score", "prob"]]


def maps_figure(data: pd.DataFrame, *, labels: Mapping[str, str] | None = None,
                errors: Mapping[str, float] | None = None, cols: int = 3, title: str | None = None,
                panel_height: int = 300) -> go.Figure:
    """Small multiples of :func:`maps_data`: per calibrator, its map (method colour) and the true curve (black) on one
    panel, ``cols`` per row; ``labels``: key -> display name, ``errors``: key -> true calibration error, shown in the
    panel's title."""
    labels = dict(labels or {})
    errors = dict(errors or {})
    truth = data[data["method"] == TRUTH]
    methods = [m for m in dict.fromkeys(data["method"]) if m != TRUTH]
    cols = max(1, min(cols, len(methods) or 1))
    rows = max(1, math.ceil(len(methods) / cols))
    titles = ["<b>" + "<br>".join(textwrap.wrap(labels.get(m, m), 26)) + "</b>"
              + (f"<br>true error {errors[m]:.3f}" if m in errors else "") for m in methods]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles or [""], shared_xaxes="all",
                        shared_yaxes="all", horizontal_spacing=0.04, vertical_spacing=0.16 if rows > 1 else 0.1)
    lo, hi = float(truth["score"].min()), float(truth["score"].max())
    for i, m in enumerate(methods or [None]):
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(identity_trace("identity (raw scores)", lo, hi, legendgroup="identity", showlegend=i == 0),
                      row=r, col=c)
        fig.add_trace(_truth_trace(truth, showlegend=i == 0), row=r, col=c)
        if m is None:
            continue
        part = data[data["method"] == m]
        name = labels.get(m, m)
        fig.add_trace(go.Scatter(x=part["score"], y=part["prob"], mode="lines", name=name, legendgroup=m,
                                 showlegend=False, line=dict(color=color_of(m), width=2.5),
                                 hovertemplate=f"{name}<br>score %{{x:.4f}} → %{{y:.4f}}<extra></extra>"),
                      row=r, col=c)
    pad = 0.02 * max(hi - lo, 1e-9)
    fig.update_xaxes(range=[lo - pad, hi + pad])
    fig.update_yaxes(range=UNIT)
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text="score", row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="probability", row=r, col=1)
    fig.update_annotations(font_size=13)
    fig = base_layout(fig, title, panel_height * rows + 190)
    fig.update_layout(margin=dict(t=120 if title else 70))      # room for the panels' two- or three-line titles
    return fig


def bias_data(study: pd.DataFrame, against: str = "score") -> pd.DataFrame:
    """Long DataFrame of a :func:`calibdash.synthetic.estimator_study`: one row per (seed, method, estimator) with
    ``estimate``, ``true`` and ``difference`` (estimate - true); ``against``: the true error against the ``"score"``
    (``true_error``) or the ``"prediction"`` (``true_error_pred``)."""
    column = synthetic.TRUE_ERROR_COLUMNS.get(against)
    if column is None:
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    return pd.concat([pd.DataFrame({"seed": study["seed"], "method": study["method"], "estimator": est,
                                    "estimate": study[col], "true": study[column],
                                    "difference": study[col] - study[column]}) for col, est in ESTIMATORS.items()],
                     ignore_index=True)


def bias_figure(data: pd.DataFrame, *, labels: Mapping[str, str] | None = None, seed: int | None = None,
                title: str | None = None, height: int = 440) -> go.Figure:
    """Estimate - true error: per estimator a group of boxes, one per method (its colour), every draw a point;
    ``seed`` marks that draw's points (the draw shown elsewhere on the page) with a black diamond."""
    labels = dict(labels or {})
    estimators = list(dict.fromkeys(data["estimator"]))
    methods = list(dict.fromkeys(data["method"]))
    k = len(methods)
    width = 0.8 / max(k, 1)
    fig = go.Figure()
    for i, m in enumerate(methods):
        name = labels.get(m, m)
        colour = color_of(m)
        for j, est in enumerate(estimators):
            rows = data[(data["method"] == m) & (data["estimator"] == est)]
            x = j + (i - (k - 1) / 2) * width
            fig.add_trace(go.Box(
                x=np.full(len(rows), x), y=rows["difference"], name=name, legendgroup=m, showlegend=j == 0,
                width=0.8 * width, boxpoints="all", jitter=0.6, pointpos=0, boxmean=True,
                marker=dict(color=colour, size=5, opacity=0.75), line=dict(color=colour, width=1.5),
                fillcolor=rgba(colour, 0.15),
                customdata=np.c_[rows["seed"], rows["estimate"], rows["true"]],
                hovertemplate=(f"{name}, seed %{{customdata[0]}}<br>{est} %{{customdata[1]:.4f}} − true "
                               "%{customdata[2]:.4f} = %{y:+.4f}<extra></extra>")))
            if seed is not None:
                cur = rows[rows["seed"] == seed]
                fig.add_trace(go.Scatter(
                    x=np.full(len(cur), x), y=cur["difference"], mode="markers", legendgroup="current",
                    name=f"the draw above (seed {seed})", showlegend=bool(i == 0 and j == 0),
                    marker=dict(symbol="diamond", size=12, color="rgba(0,0,0,0)",
                                line=dict(color="#000000", width=2)),
                    hovertemplate=f"{name}, seed {seed}: %{{y:+.4f}}<extra></extra>"))
    fig.add_hline(y=0, line=dict(color="#000000", width=1, dash="dot"))
    fig.update_xaxes(tickvals=list(range(len(estimators))), ticktext=[f"{e} − true error" for e in estimators],
                     range=[-0.5, len(estimators) - 0.5], showgrid=False, zeroline=False)
    fig.update_yaxes(title_text="estimate − true error", zeroline=False)
    return base_layout(fig, title, height)


def size_curve_figure(summary: pd.DataFrame, *, labels: Mapping[str, str] | None = None,
                      title: str | None = "True calibration error against the sample size",
                      height: int = 440) -> go.Figure:
    """Mean true error per (n, method) of :func:`calibdash.synthetic.multiclass_study.size_summary`, with 95%
    intervals of the mean (± 1.96 se), log x axis; one trace per method, in the summary's order."""
    fig = go.Figure()
    for method in dict.fromkeys(summary["method"]):
        s = summary[summary["method"] == method].sort_values("n")
        colour = class_color_of(method)          # K-class methods: their own colours
        name = (labels or {}).get(method, method)
        fig.add_trace(go.Scatter(
            x=s["n"], y=s["mean"], mode="lines+markers", name=name, meta=method,
            line=dict(color=colour, width=2.5, dash="dot" if method == "uncalibrated" else "solid"),
            error_y=dict(type="data", array=1.96 * s["se"], color=rgba(colour, 0.6), thickness=1.2, width=3),
            customdata=s[["sd", "draws"]].to_numpy(),
            hovertemplate=(f"<b>{name}</b><br>n = %{{x:,}}<br>mean true error %{{y:.4f}}<br>"
                           "SD %{customdata[0]:.4f} over %{customdata[1]} draws<extra></extra>")))
    sizes = sorted(set(summary["n"]))
    fig.update_xaxes(type="log", title_text="rows drawn n (half fit, half judged; log scale)", tickvals=sizes,
                     ticktext=[f"{n:,}" for n in sizes])
    fig.update_yaxes(title_text="true error E‖P(y|x) − q(x)‖₁", rangemode="tozero")
    return base_layout(fig, title, height)
