"""Drawing MBCT's inner workings from an :class:`calibdash.explain.mbct.MBCTExplanation`: the partition underestimated
degree ``sum(labels) / sum(probs)`` (MBCT Eq. 6) per bin beside histogram binning's, the trees as icicles and the
boosting curve. Everything drawn is in the explanation; nothing here fits."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...explain.mbct import MBCTExplanation
from .. import draws
from ..layout import base_layout
from ..palette import UNCALIBRATED, color_of

__all__ = []


def pud_figure(data: pd.DataFrame, rows: str = "the check rows", title: str | None = None,
               height: int = 420) -> go.Figure:
    """Two panels (MBCT's leaves | histogram binning's bins) of :attr:`MBCTExplanation.pud`: PUD before and after, 1.0
    dashed (above: the bin is under-estimated); ``rows``: which rows it was judged on."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.1,
                        subplot_titles=("MBCT leaves", "histogram bins"))
    for col, method in enumerate(("mbct", "histogram"), start=1):
        part = data[data["method"] == method]
        for kind, name, colour in (("pud_before", "raw scores", color_of(UNCALIBRATED)),
                                   ("pud_after", "after calibration", color_of(method))):
            label = name if kind == "pud_before" else f"after {'MBCT' if method == 'mbct' else 'histogram binning'}"
            fig.add_trace(go.Bar(
                x=part["bin"], y=part[kind], name=label, marker_color=colour,
                legendgroup=f"{method}-{kind}", showlegend=not (kind == "pud_before" and col == 2),
                customdata=[f"{path}<br>rows: {n:,}" for path, n in zip(part["path"], part["rows"])],
                hovertemplate=f"<b>%{{x}}</b> %{{customdata}}<br>PUD ({name}): %{{y:.3f}}<extra></extra>"),
                row=1, col=col)
        fig.add_hline(y=1.0, line=dict(color="#000000", dash="dash", width=1), row=1, col=col)
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_yaxes(title_text="PUD = Σ labels / Σ probabilities", row=1, col=1)
    fig.update_xaxes(title_text=f"bin (PUD on {rows})", row=1, col=1)
    fig.update_xaxes(title_text="bin", row=1, col=2)
    return base_layout(fig, title, height)


def _node_hover(table: pd.DataFrame) -> list[str]:
    out = []
    for r in table.itertuples():
        text = (f"<b>{r.condition}</b> ({'splits on ' + r.split_on if r.split_on else 'leaf'})<br>"
                f"rows: {r.rows:,} · positives: {r.positives:,.0f}<br>PUD before the tree: {r.scale:.3f} · "
                f"line: f' = {r.slope:.3f} f + {r.intercept:.3f}<br>"
                f"PUD of raw scores: {r.pud_score:.3f}")
        if np.isfinite(r.loss_split):
            text += f"<br>local MVCE: {r.loss_node:.5f} → {r.loss_split:.5f} after the split"
        elif np.isfinite(r.loss_node):
            text += f"<br>local MVCE: {r.loss_node:.5f} (no split lowered it)"
        text += f"<br>check rows: {r.check_rows:,} · their PUD after the tree: {r.check_pud_after:.3f}"
        out.append(text)
    return out


def tree_figure(tables: list[pd.DataFrame], title: str | None = None, height: int = 520) -> go.Figure:
    """Icicle chart of each tree table (:attr:`MBCTExplanation.trees`; a menu picks the tree): area = training rows of
    the node, colour = log2 of its PUD before the tree, sum of labels over sum of inputs (red: the inputs were too
    high, blue: too low; the node's line moves them to PUD 1)."""
    fig = go.Figure()
    for t, table in enumerate(tables):
        ids = [f"{t}-{k}" for k in table["node"]]
        parents = ["" if p < 0 else f"{t}-{p}" for p in table["parent"]]
        colour = np.log2(np.clip(table["scale"].to_numpy(dtype=float), 1e-3, 1e3))
        fig.add_trace(go.Icicle(
            ids=ids, parents=parents, labels=table["condition"], values=table["rows"], branchvalues="total",
            visible=t == 0, name=f"tree {t + 1}",
            marker=dict(colors=colour, colorscale="RdBu", cmid=0.0, colorbar=dict(title="log2 PUD before")),
            customdata=_node_hover(table), hovertemplate="%{customdata}<extra></extra>"))
    if len(tables) > 1:
        buttons = [dict(label=f"tree {t + 1}", method="update",
                        args=[{"visible": [i == t for i in range(len(tables))]}]) for t in range(len(tables))]
        fig.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right",
                                            y=1.12, yanchor="top")])
    fig.update_layout(margin=dict(t=40))
    return base_layout(fig, title, height)


def boosting_figure(data: pd.DataFrame, held_out: bool = True, title: str | None = None,
                    height: int = 340, sampled: bool = False) -> go.Figure:
    """Global MVCE after each tree (:attr:`MBCTExplanation.boosting`), training and check rows; a dropped tree is
    hollow. ``sampled``: the trees were grown on a sample, on which the training MVCE is."""
    fig = go.Figure()
    training = "training rows (growth sample)" if sampled else "training rows"
    for col, name, colour in (("fit_mvce", training, color_of(UNCALIBRATED)),
                              ("check_mvce", "held-out rows" if held_out else "check (training) rows",
                               color_of("mbct"))):
        fig.add_trace(go.Scatter(
            x=data["tree"], y=data[col], mode="lines+markers", name=name, line=dict(color=colour),
            marker=dict(symbol=np.where(data["kept"], "circle", "circle-open"), size=9),
            customdata=data["leaves"],
            hovertemplate="after tree %{x} (%{customdata} leaves)<br>MVCE %{y:.5f}<extra></extra>"))
    fig.update_xaxes(title_text="trees (0: raw scores)", dtick=1)
    fig.update_yaxes(title_text="MVCE")
    return base_layout(fig, title, height)


@draws(MBCTExplanation)
def inner_figures(explanation) -> list[tuple[str, go.Figure]]:
    """(title, figure): PUD bars beside histogram binning's, the trees, the boosting curve (not for a calibrator read
    from a file, which has no boosting history)."""
    ex = explanation
    tree = "first tree" if ex.pud_tree == 0 else f"tree {ex.pud_tree + 1}"
    sampled = ex.grow_rows.size < ex.fit_rows.size
    grown = (f"; grown on a seeded sample of {ex.grow_rows.size:,} of {ex.fit_rows.size:,} rows, "
             "lines fitted on all") if sampled else ""
    out = [(f"PUD per bin: MBCT's leaves ({tree}) beside histogram binning's bins",
            pud_figure(ex.pud, ex.pud_rows)),
           (f"Calibration trees (area: rows; colour: PUD before the tree{grown})", tree_figure(ex.trees))]
    if len(ex.boosting):
        out.append(("Boosting: MVCE after each tree", boosting_figure(ex.boosting, ex.held_out, sampled=sampled)))
    return out
