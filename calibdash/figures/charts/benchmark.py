"""Benchmark figures from a :class:`calibdash.benchmark.BenchmarkResult`'s numbers: the average-rank diagram, a
critical-difference style diagram after Demšar (2006, Figure 1) with the reference joined by a bar to the methods not
significantly different from it (the BBQ and ELiTE papers' Figures 3-7), and the per-data-set metric heatmap."""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd
import plotly.graph_objects as go

from ..layout import base_layout
from ..palette import color_of

__all__ = ["rank_diagram_data", "rank_diagram", "heatmap_data", "metric_heatmap"]

_AXIS = "#444444"
_ROW = 1.0          # vertical distance between two label rows
_BAR = "#222222"


def rank_diagram_data(avg_ranks: pd.Series | Mapping[str, float], reference: str | None = None,
                      joined: Iterable[str] | None = None) -> pd.DataFrame:
    """Where each method of the rank diagram goes.

    Parameters
    ----------
    avg_ranks : Series or mapping method -> average rank
    reference : str, optional
        The method the others were compared with.
    joined : iterable of str, optional
        The reference and the methods not significantly different from it (:meth:`BenchmarkResult.joined`); they share
        the bar.

    Returns
    -------
    DataFrame
        One row per method, worst first: ``method``, ``avg_rank``, ``side`` ("left": the worse half, label at the left
        end; "right"), ``row`` (1, 2, ... from the axis down, per side), ``reference`` and ``joined`` (bool).
    """
    r = pd.Series(avg_ranks, dtype=float).sort_values(ascending=False, kind="stable")
    joined = set(joined or ())
    k = r.size
    n_left = math.ceil(k / 2)
    side = ["left"] * n_left + ["right"] * (k - n_left)
    # left half: the worst method on the top row; right half: the best method on the top row
    row = list(range(1, n_left + 1)) + list(range(k - n_left, 0, -1))
    return pd.DataFrame({
        "method": r.index.astype(str), "avg_rank": r.to_numpy(), "side": side, "row": row,
        "reference": [m == reference for m in r.index],
        "joined": [m in joined for m in r.index],
    })


def rank_diagram(data: pd.DataFrame, *, k: int | None = None, labels: Mapping[str, str] | None = None,
                 title: str | None = "Average rank (1 = best)", axis_span: tuple[float, float] = (0.27, 0.73),
                 height: int | None = None) -> go.Figure:
    """Draw :func:`rank_diagram_data`: rank axis, leader lines, names and the significance bar.

    Parameters
    ----------
    data : DataFrame
        From :func:`rank_diagram_data`.
    k : int, optional
        Number of ranks on the axis (default: the number of methods).
    labels : mapping method -> display name, optional
    title : str, optional
    axis_span : (float, float)
        Where the axis starts (rank k) and ends (rank 1), as fractions of the width; the names use the room on either
        side.
    height : int, optional
        Default grows with the number of label rows.
    """
    labels = dict(labels or {})
    k = int(k or max(len(data), 2))
    left, right = axis_span
    rows = int(data["row"].max()) if len(data) else 1
    gap = 0.02                                     # between the axis ends and the names
    fig = go.Figure()

    def x_of(rank):
        """Horizontal position (0..1) of ``rank`` on the axis from rank k at ``left`` to rank 1 at ``right``."""
        return left + (right - left) * (k - rank) / (k - 1)

    # the axis with a tick per rank (and a short one per half rank), drawn by hand so it stops at k and 1
    fig.add_shape(type="line", x0=left, x1=right, y0=0, y1=0, line=dict(color=_AXIS, width=1.5))
    for t in range(1, k + 1):
        fig.add_shape(type="line", x0=x_of(t), x1=x_of(t), y0=0, y1=0.2, line=dict(color=_AXIS, width=1.5))
        fig.add_annotation(x=x_of(t), y=0.24, text=str(t), showarrow=False, yanchor="bottom",
                           font=dict(size=12, color=_AXIS))
    for t in range(1, k):
        fig.add_shape(type="line", x0=x_of(t + 0.5), x1=x_of(t + 0.5), y0=0, y1=0.1,
                      line=dict(color=_AXIS, width=1))
    for r in data.itertuples():
        y = -r.row * _ROW
        x = x_of(r.avg_rank)
        end = left - gap if r.side == "left" else right + gap
        color = color_of(r.method)
        name = labels.get(r.method, r.method)
        fig.add_trace(go.Scatter(
            x=[x, x, end], y=[0, y, y], mode="lines",
            line=dict(color=color, width=2.5 if r.reference else 1.5), hoverinfo="skip", showlegend=False))
        status = ("reference" if r.reference else
                  "not significantly different from the reference" if r.joined else
                  "significantly different from the reference" if data["reference"].any() else "")
        fig.add_trace(go.Scatter(
            x=[x], y=[0], mode="markers", name=name, showlegend=False,
            marker=dict(size=11 if r.reference else 9, color=color, line=dict(color="white", width=1)),
            hovertemplate=f"<b>{name}</b><br>average rank {r.avg_rank:.3f}"
                          + (f"<br>{status}" if status else "") + "<extra></extra>"))
        text = f"<b>{name}</b> ({r.avg_rank:.2f})" if r.reference else f"{name} ({r.avg_rank:.2f})"
        fig.add_annotation(x=end, y=y, text=text, showarrow=False,
                           xanchor="right" if r.side == "left" else "left",
                           xshift=-4 if r.side == "left" else 4, font=dict(size=13, color="#222222"))
    group = data[data["joined"]]
    if len(group) >= 2:
        ref = data.loc[data["reference"], "method"]
        who = labels.get(ref.iloc[0], ref.iloc[0]) if len(ref) else "the reference"
        xs = [x_of(group["avg_rank"].max()) - 0.006, x_of(group["avg_rank"].min()) + 0.006]
        fig.add_trace(go.Scatter(
            x=xs, y=[-0.45 * _ROW] * 2, mode="lines", line=dict(color=_BAR, width=6), showlegend=False,
            hovertemplate=f"not significantly different from {who}<extra></extra>"))
    fig.update_xaxes(visible=False, range=[0, 1], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-(rows + 0.6) * _ROW, 0.8], fixedrange=True)
    base_layout(fig, title, height or int(110 + 40 * rows))
    fig.update_layout(showlegend=False, margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    return fig


def heatmap_data(table: pd.DataFrame, ranks: pd.DataFrame, fmt: str = ".4f") -> pd.DataFrame:
    """Long table of the heatmap cells: dataset, method, value, rank, text."""
    rows = []
    for d in table.index:
        for m in table.columns:
            v, r = float(table.loc[d, m]), float(ranks.loc[d, m])
            rows.append({"dataset": str(d), "method": str(m), "value": v, "rank": r,
                         "text": f"{v:{fmt}}<br>({r:g})" if r.is_integer() else f"{v:{fmt}}<br>({r:.1f})"})
    return pd.DataFrame(rows, columns=["dataset", "method", "value", "rank", "text"])


def metric_heatmap(cells: pd.DataFrame, *, metric: str = "", labels: Mapping[str, str] | None = None,
                   title: str | None = None, height: int | None = None) -> go.Figure:
    """Draw :func:`heatmap_data`: data sets down, methods across, colour = rank (dark = best: it keeps data sets with
    different metric scales comparable), each cell printing the value and, in brackets, the rank."""
    labels = dict(labels or {})
    methods = list(dict.fromkeys(cells["method"]))
    datasets = list(dict.fromkeys(cells["dataset"]))
    z, text, value = (cells.pivot(index="dataset", columns="method", values=v).reindex(index=datasets, columns=methods)
                      for v in ("rank", "text", "value"))
    k = max(len(methods), 2)
    names = [labels.get(m, m).replace(" ", "<br>", 1) for m in methods]     # two short lines, not slanted
    fig = go.Figure(go.Heatmap(
        z=z.to_numpy(), x=names, y=datasets, text=text.to_numpy(), texttemplate="%{text}",
        customdata=value.to_numpy(), zmin=1, zmax=k, colorscale="Blues", reversescale=True,
        colorbar=dict(title=dict(text="rank"), tickvals=list(range(1, k + 1)), len=0.9),
        hovertemplate="%{y}<br>%{x}<br>" + (metric or "value") + " %{customdata:.4f}<br>rank %{z}<extra></extra>",
        xgap=2, ygap=2,
    ))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(side="top")
    base_layout(fig, title or (f"{metric} per data set, coloured by rank (1 = best)" if metric else None),
                height or int(120 + 46 * max(len(datasets), 1)))
    fig.update_layout(margin=dict(l=10, r=10, t=85 if title or metric else 40, b=10))
    return fig
