"""ELiTE's inner workings: the piecewise-linear map with its knots, and the lambda path.

* :func:`map_data` / :func:`map_figure`: the averaged calibration map (or the
  single trend filter) in bold, its knots as markers sized by their support
  (the total weight of the models that put a knot there), the heaviest model
  faintly, and the training data as equal-count groups of rows.
* :func:`path_data` / :func:`path_figure`: along the lambda path (log x axis,
  lambda / lambda_max), each model's degrees of freedom (knots + 2), its
  criterion (AICc by default) relative to the best, and its weight.

Everything is computed from ``calibrator.diagnostics()`` and
``calibrator.predict``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..calibrators.elite import CRITERION_LABEL
from .layout import base_layout
from .palette import color_of, rgba

__all__ = ["MapData", "map_data", "map_figure", "path_data", "path_figure", "inner_figures",
           "N_GROUPS", "MIN_SUPPORT", "DELTA_CAP"]

#: The training rows are drawn as at most this many equal-count groups.
N_GROUPS = 200
#: Knots held by models with less total weight than this are not marked.
MIN_SUPPORT = 0.01
#: The criterion panel shows differences up to this (a model 30 above the best weighs e^-15).
DELTA_CAP = 30.0
_DATA = "#7F7F7F"


@dataclass
class MapData:
    """What the map figure draws.

    ``curve`` (score, prob): the calibrated map on [0, 1]; ``knots`` (score,
    prob, support, n_models); ``best`` (score, value): the heaviest model's
    nodes and its weight ``best_weight``; ``groups`` (score, rate, rows): the
    training rows in equal-count groups; ``mode``.
    """

    curve: pd.DataFrame
    knots: pd.DataFrame
    best: pd.DataFrame
    best_weight: float
    groups: pd.DataFrame
    mode: str


def _groups(points: pd.DataFrame, n_groups: int) -> pd.DataFrame:
    """Merged training points pooled into about ``n_groups`` groups of equal row count."""
    count = points["count"].to_numpy(dtype=float)
    if len(points) <= n_groups:
        return pd.DataFrame({"score": points["score"], "rate": points["target"], "rows": count.astype(np.int64)})
    before = np.cumsum(count) - count
    gid = np.minimum((before * n_groups / count.sum()).astype(np.int64), n_groups - 1)
    rows = np.bincount(gid, count)
    keep = rows > 0
    score = np.bincount(gid, count * points["score"].to_numpy())[keep] / rows[keep]
    rate = np.bincount(gid, count * points["target"].to_numpy())[keep] / rows[keep]
    return pd.DataFrame({"score": score, "rate": rate, "rows": rows[keep].astype(np.int64)})


def map_data(calibrator, n_groups: int = N_GROUPS, min_support: float = MIN_SUPPORT) -> MapData:
    """The map, its knots with their support, the heaviest model and the grouped data."""
    d = calibrator.diagnostics()
    weights = d["path"]["weight"].to_numpy()
    nodes = d["map"]["score"].to_numpy()
    grid = np.union1d(np.linspace(0.0, 1.0, 501), nodes[(nodes >= 0) & (nodes <= 1)])
    curve = pd.DataFrame({"score": grid, "prob": calibrator.predict(grid)})
    support: dict[float, list] = {}
    for knots, wt in zip(d["knots"], weights):
        if wt <= 0:
            continue
        for k in np.asarray(knots).tolist():
            entry = support.setdefault(k, [0.0, 0])
            entry[0] += wt
            entry[1] += 1
    ks = np.array(sorted(k for k, (s, _) in support.items() if s >= min_support), dtype=float)
    knots = pd.DataFrame({"score": ks, "prob": calibrator.predict(ks) if ks.size else ks,
                          "support": [support[k][0] for k in ks.tolist()],
                          "n_models": [support[k][1] for k in ks.tolist()]})
    best_i = int(np.argmax(weights))
    best = d["models"][best_i]
    return MapData(curve=curve, knots=knots, best=best, best_weight=float(weights[best_i]),
                   groups=_groups(d["points"], n_groups), mode=d["mode"])


def map_figure(data: MapData, title: str | None = None, height: int = 460) -> go.Figure:
    """The map in bold, knots as diamonds sized by support, data groups in grey."""
    colour = color_of("elite")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="identity", hoverinfo="skip",
                             line=dict(color="#BBBBBB", dash="dash", width=1)))
    g = data.groups
    fig.add_trace(go.Scatter(
        x=g["score"], y=g["rate"], mode="markers", name="training rows (equal-count groups)",
        marker=dict(color=rgba(_DATA, 0.45), size=5), customdata=g["rows"],
        hovertemplate="mean score %{x:.4f}<br>positive rate %{y:.4f}<br>%{customdata:,} rows<extra></extra>"))
    if data.mode == "ensemble" and data.best_weight < 0.999:
        fig.add_trace(go.Scatter(
            x=data.best["score"], y=data.best["value"], mode="lines", meta="best",
            name=f"heaviest single model (weight {data.best_weight:.2f})",
            line=dict(color=rgba(colour, 0.45), width=1.5, dash="dot"),
            hovertemplate="heaviest model<br>score %{x:.4f} → %{y:.4f}<extra></extra>"))
    label = "ELiTE map" if data.mode == "ensemble" else "single trend filter"
    fig.add_trace(go.Scatter(
        x=data.curve["score"], y=data.curve["prob"], mode="lines", name=label, meta="map",
        line=dict(color=colour, width=3),
        hovertemplate=label + "<br>score %{x:.4f} → %{y:.4f}<extra></extra>"))
    k = data.knots
    if len(k):
        size = 7 + 9 * np.sqrt(k["support"].to_numpy())
        fig.add_trace(go.Scatter(
            x=k["score"], y=k["prob"], mode="markers", meta="knots",
            name="knots (size ∝ √weight of models with that knot)" if data.mode == "ensemble" else "knots",
            marker=dict(symbol="diamond", color=colour, size=size, line=dict(color="#FFFFFF", width=1)),
            customdata=np.c_[k["support"], k["n_models"]],
            hovertemplate=("knot at score %{x:.4f}<br>map %{y:.4f}<br>"
                           "in %{customdata[1]} model(s), total weight %{customdata[0]:.3f}<extra></extra>")))
    fig.update_xaxes(title_text="score", range=[-0.02, 1.02])
    fig.update_yaxes(title_text="calibrated probability", range=[-0.02, 1.02])
    return base_layout(fig, title, height)


def path_data(calibrator) -> pd.DataFrame:
    """One row per lambda: ``lam_ratio``, ``df``, ``knots``, ``criterion`` (its value),
    ``delta`` (minus the smallest finite value), ``weight``, ``chosen`` (single mode)."""
    d = calibrator.diagnostics()
    p = d["path"]
    crit = p[d["criterion"]].to_numpy(dtype=float)
    finite = np.isfinite(crit)
    best = crit[finite].min() if finite.any() else 0.0
    out = pd.DataFrame({"lam_ratio": p["lam_ratio"], "lambda": p["lambda"], "df": p["df"],
                        "knots": p["knots"], "criterion": crit, "delta": crit - best,
                        "weight": p["weight"]})
    out["chosen"] = False
    if d["mode"] == "single":
        out.loc[out.index[-1], "chosen"] = True
    out.attrs["criterion"] = CRITERION_LABEL.get(d["criterion"], d["criterion"])
    out.attrs["mode"] = d["mode"]
    return out


def path_figure(data: pd.DataFrame, title: str | None = None, height: int | None = None,
                delta_cap: float = DELTA_CAP) -> go.Figure:
    """Panels over lambda / lambda_max (log, 1 to 10^-4): df, criterion minus its best and, for
    the ensemble, the weights. The criterion axis stops at ``delta_cap`` (weight < e^-cap/2)."""
    colour = color_of("elite")
    crit = data.attrs.get("criterion", "score")
    ensemble = data.attrs.get("mode", "ensemble") == "ensemble"
    rows = 3 if ensemble else 2
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    x = data["lam_ratio"]
    common = np.c_[data["lambda"], data["knots"], data["criterion"], data["weight"]]
    hover = ("λ/λ_max %{x:.3g} (λ = %{customdata[0]:.4g})<br>%{customdata[1]} knots<br>"
             + crit + " %{customdata[2]:.2f}<br>weight %{customdata[3]:.4f}<extra></extra>")
    fig.add_trace(go.Scatter(x=x, y=data["df"], mode="lines+markers", name="df = knots + 2",
                             line=dict(color=colour, width=1.5), marker=dict(size=5),
                             customdata=common, hovertemplate=hover), row=1, col=1)
    delta = data["delta"].where(np.isfinite(data["delta"]))
    fig.add_trace(go.Scatter(x=x, y=delta, mode="lines+markers", name=f"{crit} − best",
                             line=dict(color="#000000", width=1.5), marker=dict(size=5),
                             customdata=common, hovertemplate=hover, cliponaxis=True), row=2, col=1)
    if ensemble:
        # weights as stems (bars have no sensible width on a log axis)
        xs = np.repeat(np.asarray(x, dtype=float), 3)
        ys = np.c_[np.zeros(len(x)), data["weight"], np.full(len(x), np.nan)].ravel()
        xs[2::3] = np.nan
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=2),
                                 hoverinfo="skip", showlegend=False), row=3, col=1)
        fig.add_trace(go.Scatter(x=x, y=data["weight"], mode="markers", name="weight",
                                 marker=dict(color=colour, size=6), customdata=common,
                                 hovertemplate=hover), row=3, col=1)
        fig.update_yaxes(title_text="weight", row=3, col=1, rangemode="tozero")
    for lam in data.loc[data["chosen"], "lam_ratio"]:
        fig.add_vline(x=float(lam), line=dict(color=rgba(colour, 0.6), dash="dash", width=1.5))
    lo = min(float(x.min()), 1e-4)
    ticks = [10.0 ** -k for k in range(0, int(np.ceil(-np.log10(lo))) + 1)]
    fig.update_xaxes(type="log", range=[0.05, np.log10(lo) - 0.05], tickvals=ticks,
                     ticktext=["1" if t == 1 else f"10<sup>{int(round(np.log10(t)))}</sup>" for t in ticks])
    fig.update_xaxes(title_text="λ / λ_max (log; to the right: less penalty, more knots)", row=rows, col=1)
    fig.update_yaxes(title_text="df", row=1, col=1, rangemode="tozero")
    finite = delta.dropna()
    top = min(float(finite.max()) if len(finite) else 1.0, delta_cap)
    fig.update_yaxes(title_text=f"{crit} − best", row=2, col=1, range=[-0.04 * top - 0.5, top * 1.05 + 0.5])
    fig.update_layout(showlegend=False)
    return base_layout(fig, title, height or (540 if ensemble else 400))


def inner_figures(calibrator) -> list[tuple[str, go.Figure]]:
    """(title, figure): the map with its knots, and the lambda path."""
    md = map_data(calibrator)
    pd_ = path_data(calibrator)
    if md.mode == "ensemble":
        n = len(pd_)
        map_title = (f"ELiTE map: average of {n} trend filter{'s' if n != 1 else ''}, "
                     f"{len(md.knots)} knots with weight ≥ {MIN_SUPPORT:g}")
        path_title = f"λ path: degrees of freedom, {pd_.attrs['criterion']} and weight of each model"
    else:
        n = int(pd_["knots"].iloc[-1])
        map_title = f"Single trend filter at λ = {pd_['lam_ratio'].iloc[-1]:.3g} λ_max: {n} knots"
        path_title = ("λ path, warm-started down to the chosen λ (dashed): degrees of freedom and "
                      + pd_.attrs["criterion"])
    return [(map_title, map_figure(md)), (path_title, path_figure(pd_))]
