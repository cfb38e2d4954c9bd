"""Drawing calibration over time: per-period metrics with intervals (:func:`calibdash.monitoring.drift.over_time`),
and how a calibrator goes stale (:func:`calibdash.monitoring.drift.staleness`)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...monitoring.drift import FRESH_COL, RAW_COL, STALE_COL
from ..layout import base_layout
from ..palette import UNCALIBRATED, color_of, rgba

__all__ = ["drift_chart", "staleness_chart", "staleness_heatmap"]

_ECE = "#0072B2"
_LOGLOSS = "#CC79A7"
_RATE = "#009E73"
_SCORE = "#E69F00"
#: The never-refitted calibrator (vermillion, Okabe-Ito).
STALE_COLOR = "#D55E00"


def _line(fig, x, v, lo, hi, color, name, row, fmt=".4f"):
    """``v`` per period ``x``, its interval ``[lo, hi]`` shaded under it."""
    text = [f"<b>{p}</b><br>{name}: " + ("n/a (one class only)" if not np.isfinite(a) else
                                        f"{a:{fmt}}" + (f" [{b:{fmt}}, {c:{fmt}}]" if np.isfinite(b) else ""))
            for p, a, b, c in zip(x, v, lo, hi)]
    lo, hi = np.where(np.isfinite(lo), lo, v), np.where(np.isfinite(hi), hi, v)
    fig.add_trace(go.Scatter(x=list(x) + list(x)[::-1], y=list(hi) + list(lo)[::-1], fill="toself",
                             fillcolor=rgba(color, 0.18), line=dict(width=0), hoverinfo="skip",
                             name=name, showlegend=False, legendgroup=name), row=row, col=1)
    fig.add_trace(go.Scatter(x=x, y=v, mode="lines+markers", name=name, legendgroup=name, showlegend=True,
                             line=dict(color=color, width=2), marker=dict(size=6, color=color), connectgaps=False,
                             text=text, hoverinfo="text"), row=row, col=1)


def drift_chart(report, *, title: str | None = "Calibration over time", height: int = 780) -> go.Figure:
    """ECE, log-loss, positive rate against mean score, and rows, per period, stacked on one time axis, each value
    with its bootstrap interval shaded (the report's ``level``); a period of one class only has no ECE nor log-loss: a
    gap in those lines."""
    t = report.table
    x = list(t.index)
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.045,
                        row_heights=[0.32, 0.22, 0.28, 0.18],
                        subplot_titles=(f"ECE ({report.binning})", "log-loss",
                                        "positive rate and mean score", "rows"))

    def col(name):
        return (t[name].to_numpy(dtype=float), t[f"{name}_low"].to_numpy(dtype=float),
                t[f"{name}_high"].to_numpy(dtype=float))

    _line(fig, x, *col("ECE"), _ECE, "ECE", 1)
    _line(fig, x, *col("LogLoss"), _LOGLOSS, "log-loss", 2)
    _line(fig, x, *col("positive_rate"), _RATE, "positive rate", 3, ".3f")
    _line(fig, x, *col("mean_score"), _SCORE, "mean score", 3, ".3f")
    fig.add_trace(go.Bar(x=x, y=t["weight"], name="rows", marker=dict(color=rgba("#7F7F7F", 0.6)),
                         showlegend=False, hovertemplate="%{x}<br>rows: %{y:,.0f}<extra></extra>"), row=4, col=1)
    for row in (1, 3, 4):
        fig.update_yaxes(rangemode="tozero", row=row, col=1)
    fig.update_xaxes(type="category", title_text="period", row=4, col=1)
    fig.update_xaxes(type="category")
    fig.update_annotations(font_size=12, x=0.0, xanchor="left")
    return base_layout(fig, title, height)


def staleness_chart(st, *, title: str | None = None, labels: dict | None = None, height: int = 440) -> go.Figure:
    """Held-out ECE per period: raw scores, the calibrator fitted on the first period, and the one refitted on the
    period before. The first gap that keeps growing is where the calibrator went stale."""
    labels = dict(labels or {})
    t = st.table
    x = list(t.index)
    name = labels.get(st.method, st.method)
    series = ((RAW_COL, "uncalibrated", color_of(UNCALIBRATED), "dot"),
              (STALE_COL, f"{name} fitted on {st.matrix.index[0]} (never refitted)", STALE_COLOR, "solid"),
              (FRESH_COL, f"{name} refitted on the period before", color_of(st.method), "solid"))
    fig = go.Figure()
    for col, label, color, dash in series:
        v = t[col].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(x=x, y=v, mode="lines+markers", name=label, line=dict(color=color, width=2.2,
                                 dash=dash), marker=dict(size=7, color=color), connectgaps=False,
                                 text=[f"<b>{p}</b> (age {a})<br>{label}<br>ECE: "
                                       + ("n/a" if not np.isfinite(e) else f"{e:.4f}")
                                       for p, a, e in zip(x, t["age"], v)], hoverinfo="text"))
    fig.update_xaxes(type="category", title_text="period judged (held out)")
    fig.update_yaxes(title_text=f"held-out ECE ({st.binning})", rangemode="tozero")
    return base_layout(fig, title if title is not None else "Staleness: held-out ECE of a calibrator as it ages",
                       height)


def staleness_heatmap(st, *, title: str | None = "Held-out ECE by period fitted on and period judged on",
                      height: int | None = None) -> go.Figure:
    """:attr:`Staleness.matrix`: fitted on (rows, top to bottom) by judged on (columns); cells on and below the
    diagonal are blank, and along a row the colour darkening to the right is the calibrator ageing. Values are written
    in the cells up to 8 judged periods and always shown on hover."""
    m = st.matrix
    m = m.loc[m.notna().any(axis=1), m.notna().any(axis=0)]          # the last period fits nothing later, ...
    z = m.to_numpy(dtype=float)
    text = np.where(np.isfinite(z), np.char.mod("%.3f", np.nan_to_num(z)), "")
    fig = go.Figure(go.Heatmap(
        z=z, x=list(m.columns), y=list(m.index), colorscale="OrRd", zmin=0,
        zmax=float(np.nanmax(z)) if np.isfinite(z).any() else 1.0,
        text=text, texttemplate="%{text}" if m.shape[1] <= 8 else None, textfont=dict(size=10),
        colorbar=dict(title=dict(text="ECE", side="right"), thickness=14),
        hovertemplate="fitted on %{y}<br>judged on %{x}<br>ECE %{z:.4f}<extra></extra>", hoverongaps=False))
    fig.update_yaxes(autorange="reversed", type="category", title_text="calibrator fitted on")
    fig.update_xaxes(type="category", title_text="judged on (later period)")
    base_layout(fig, title, height or max(360, 160 + 26 * m.shape[0]))
    fig.update_layout(margin=dict(b=70))
    return fig
