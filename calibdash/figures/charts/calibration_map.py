"""Calibration maps: score in, calibrated probability out. :func:`map_curves` computes them (a long DataFrame),
:func:`calibration_map` draws them over the distribution of the scores."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.venn_abers import weighted_quantiles
from ..layout import UNIT, base_layout, identity_trace, visibility
from ..palette import color_of, rgba

#: Most rows drawn as points for a feature-aware method (whose map is not a curve).
MAX_POINTS = 3000


def score_grid(scores=None, n: int = 301, sample_weight=None) -> np.ndarray:
    """Evaluation grid on [0, 1]: evenly spaced, refined at the scores' quantiles (``sample_weight``: how many rows
    each score stands for, so the quantiles are those of the rows)."""
    grid = np.linspace(0.0, 1.0, n)
    if scores is not None and len(scores):
        x, q = np.asarray(scores, dtype=float), np.linspace(0, 1, 201)
        qs = np.quantile(x, q) if sample_weight is None else weighted_quantiles(
            x, q, np.asarray(sample_weight, dtype=float))
        grid = np.union1d(grid, qs)
    return grid


def map_curves(models: Mapping[str, object], scores=None, features: pd.DataFrame | None = None,
               seed: int = 0, sample_weight=None) -> pd.DataFrame:
    """Calibrated probability against score, for each fitted model (key -> fitted calibrator).

    ``scores`` (optional) of the rows looked at refine the grid and, for feature-aware models, are the points drawn
    (with their ``features``); ``sample_weight``: how many rows each score stands for (score cells, which carry no
    features), so the grid is refined at the rows' quantiles. Returns a DataFrame ``method``, ``score``, ``prob``,
    ``kind`` (``"line"`` for a function of the score, ``"points"`` for a feature-aware model drawn as one point per
    row, at most :data:`MAX_POINTS` rows sampled).
    """
    grid = score_grid(scores, sample_weight=sample_weight)
    parts = []
    for key, model in models.items():
        if getattr(model, "uses_features", False) and features is not None and scores is not None:
            s = np.asarray(scores, dtype=float)
            idx = np.arange(s.size)
            if s.size > MAX_POINTS:
                idx = np.sort(np.random.default_rng(seed).choice(s.size, MAX_POINTS, replace=False))
            p = model.predict(s[idx], features.iloc[idx].reset_index(drop=True))
            parts.append(pd.DataFrame({"method": key, "score": s[idx], "prob": p, "kind": "points"}))
        else:
            parts.append(pd.DataFrame({"method": key, "score": grid, "prob": model.predict(grid), "kind": "line"}))
    if not parts:
        return pd.DataFrame(columns=["method", "score", "prob", "kind"])
    return pd.concat(parts, ignore_index=True)


#: Bars of the score histogram under the calibration map.
SCORE_BARS = 60


def score_bars(scores, sample_weight=None, n_bars: int = SCORE_BARS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(centres, rows, widths)`` of ``n_bars`` equal-width bars from the smallest score to the largest (the figure
    carries the bars, never one value per row); with ``sample_weight`` (rows per score cell) a bar counts rows."""
    s = np.asarray(scores, dtype=float)
    lo, hi = float(np.min(s)), float(np.max(s))
    if hi <= lo:                                  # one score: one bar around it
        lo, hi = lo - 0.005, hi + 0.005
    edges = np.linspace(lo, hi, n_bars + 1)
    counts, _ = np.histogram(s, edges, weights=None if sample_weight is None else np.asarray(sample_weight, float))
    return (edges[:-1] + edges[1:]) / 2, counts, np.diff(edges)


def calibration_map(curves: pd.DataFrame, scores=None, *, labels: Mapping[str, str] | None = None,
                    title: str | None = "Calibration map", height: int = 520, log_x: bool = False,
                    visible: Mapping[str, bool] | None = None, sample_weight=None,
                    bands: Mapping[str, pd.DataFrame] | None = None) -> go.Figure:
    """Draw :func:`map_curves` output: one curve (or point cloud) per method.

    ``scores``: drawn as a histogram under the map (:func:`score_bars`), so a user sees where the data is, its bars
    sums of ``sample_weight`` when given (rows per score cell). ``log_x``: log score axis, for scores crowded near 0
    (click rates). ``visible``: methods drawn hidden ("legendonly"). ``bands``: key -> interval of calibrated
    probabilities per score (``score``, ``p0`` lower, ``p1`` upper), shaded in the method's colour under its curve
    in its legend group, such as the Venn-Abers ``[p0, p1]`` of :func:`calibdash.explain.venn_abers.interval_band`
    (Vovk & Petej 2014).
    """
    labels = dict(labels or {})
    has_hist = scores is not None and len(scores) > 0
    fig = make_subplots(rows=2 if has_hist else 1, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        row_heights=[0.78, 0.22] if has_hist else [1.0])
    fig.add_trace(identity_trace(), row=1, col=1)
    for key, band in (bands or {}).items():
        name = labels.get(key, key)
        color = color_of(key)
        vis = visibility(visible, key)
        x = band["score"].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(x=x, y=band["p1"].to_numpy(dtype=float), mode="lines", legendgroup=key,
                                 line=dict(width=0.5, color=rgba(color, 0.5)), showlegend=False, visible=vis,
                                 hoverinfo="skip"), row=1, col=1)
        fig.add_trace(go.Scatter(
            x=x, y=band["p0"].to_numpy(dtype=float), mode="lines", name=f"{name} [p0, p1]", legendgroup=key,
            line=dict(width=0.5, color=rgba(color, 0.5)), fill="tonexty", fillcolor=rgba(color, 0.2),
            visible=vis, customdata=band["p1"].to_numpy(dtype=float),
            hovertemplate=f"{name}<br>score %{{x:.4f}} → [%{{y:.4f}}, %{{customdata:.4f}}]<extra></extra>"),
            row=1, col=1)
    for key, part in curves.groupby("method", sort=False):
        name = labels.get(key, key)
        color = color_of(key)
        common = dict(x=part["score"], y=part["prob"], name=name, legendgroup=key, visible=visibility(visible, key),
                      hovertemplate=f"{name}<br>score %{{x:.4f}} → %{{y:.4f}}<extra></extra>")
        if (part["kind"] == "points").all():
            trace = go.Scattergl(mode="markers", marker=dict(color=color, size=4, opacity=0.45), **common)
        else:
            trace = go.Scatter(mode="lines", line=dict(color=color, width=2.5), **common)
        fig.add_trace(trace, row=1, col=1)
    if has_hist:
        centers, counts, widths = score_bars(scores, sample_weight)
        fig.add_trace(go.Bar(x=centers, y=counts, width=widths, name="scores", showlegend=False,
                             marker=dict(color="#9E9E9E", line=dict(width=0)),
                             hovertemplate="score %{x:.4f}<br>rows: %{y:,}<extra></extra>"),
                      row=2, col=1)
        fig.update_yaxes(title_text="rows", row=2, col=1)
    fig.update_xaxes(**(dict(type="log") if log_x else dict(range=UNIT)))
    fig.update_xaxes(title_text="score", row=2 if has_hist else 1, col=1)
    fig.update_yaxes(range=UNIT, title_text="calibrated probability", row=1, col=1)
    return base_layout(fig, title, height)
