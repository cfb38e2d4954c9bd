"""MBCT's inner workings: its bins' PUD beside histogram binning's, and the trees.

* :func:`pud_data` / :func:`pud_figure`: one bar per bin (a leaf of an MBCT
  tree; a histogram-binning bin) of the partition underestimated degree
  ``sum(labels) / sum(probs)`` (MBCT Eq. 6) of the raw scores ("before") and
  of the method's output ("after"), with 1.0 as the reference line. Above 1
  the bin is under-estimated, below 1 over-estimated. Histogram binning gets
  as many bins as the MBCT tree has leaves and is fitted on the rows the
  trees were grown on; both are judged on the check rows of the
  diagnostics (held out from the trees unless ``holdout = 0``) or on rows
  given by the caller.
* :func:`tree_table` / :func:`tree_figure`: each tree as a table (split
  feature, rows, scale factor, PUD per node) and as an icicle chart (area =
  rows, colour = scale factor, hover = rows, scale, PUD, local loss).
* :func:`boosting_data` / :func:`boosting_figure`: the global MVCE after
  each tree, on the training and on the check rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import calibrators, metrics
from .layout import base_layout
from .palette import UNCALIBRATED, color_of

__all__ = ["tree_table", "leaf_paths", "pud_data", "pud_figure", "tree_figure", "boosting_data",
           "boosting_figure", "inner_figures"]


# -- the trees as tables -------------------------------------------------------------------------
def tree_table(calibrator, tree_index: int = 0) -> pd.DataFrame:
    """One row per node of tree ``tree_index`` (0-based), as :meth:`MBCTCalibrator.tree_frame`.

    Columns: node, parent, depth, condition, split_on, rows, positives,
    scale, pud_score, loss_node, loss_split, check_rows, check_pud_before,
    check_pud_after.
    """
    return calibrator.diagnostics()["trees"][tree_index].copy()


def leaf_paths(table: pd.DataFrame) -> list[str]:
    """For each node of a tree table, the conditions from the root down to it, joined by " · "."""
    cond = table["condition"].tolist()
    parent = table["parent"].tolist()
    out = []
    for node in range(len(table)):
        parts = []
        while node > 0:
            parts.append(cond[node])
            node = parent[node]
        out.append(" · ".join(reversed(parts)) or "all rows")
    return out


# -- PUD bars --------------------------------------------------------------------------------------
def _pud_rows(method: str, group: np.ndarray, names: dict, scores, labels, after) -> pd.DataFrame:
    rows = []
    for g in np.unique(group):
        sel = group == g
        rows.append({"method": method, "bin": names[g][0], "path": names[g][1], "rows": int(sel.sum()),
                     "pud_before": metrics.pud(scores[sel], labels[sel]),
                     "pud_after": metrics.pud(after[sel], labels[sel])})
    return pd.DataFrame(rows)


def pud_data(calibrator, tree_index: int = 0, scores=None, labels=None, features=None) -> pd.DataFrame:
    """PUD of each bin before and after calibration, for MBCT's leaves and histogram binning's bins.

    Parameters
    ----------
    calibrator : fitted MBCTCalibrator
    tree_index : int
        Whose leaves are MBCT's bins (the first tree by default: later trees
        refine its output). "After" is always the full model's output.
    scores, labels, features : optional
        Rows to judge on; default: the check rows of ``calibrator.diagnostics()``.

    Returns
    -------
    DataFrame with columns ``method`` ("mbct" / "histogram"), ``bin`` (short
    name), ``path`` (the bin's conditions), ``rows``, ``pud_before``,
    ``pud_after``; attribute ``attrs["rows"]`` says which rows were used.
    """
    d = calibrator.diagnostics()
    if scores is None:
        check = d["check"]
        s, y = check["scores"], check["labels"]
        node, after = check["nodes"][:, tree_index], check["predictions"]
        which = "held-out rows" if check["held_out"] else "training rows"
    else:
        s, y = np.asarray(scores, dtype=float), np.asarray(labels)
        node = calibrator.apply(s, features)[:, tree_index]
        after = calibrator.predict(s, features)
        which = "given rows"
    table = d["trees"][tree_index]
    paths = leaf_paths(table)
    names = {k: (f"L{k}" if table["split_on"][k] == "" else f"N{k}*", paths[k]) for k in range(len(table))}
    mbct = _pud_rows("mbct", node, names, s, y, after)
    n_bins = max(2, int((table["split_on"] == "").sum()))
    hist = calibrators.get("histogram", n_bins=n_bins).fit(d["fit_scores"], d["fit_labels"])
    hb = hist.bin_of(s)
    edges = hist.diagnostics()["bins"]
    hnames = {b: (f"H{b}", f"score ∈ [{edges['lower'][b]:.4g}, {edges['upper'][b]:.4g})")
              for b in range(len(edges))}
    out = pd.concat([mbct, _pud_rows("histogram", hb, hnames, s, y, hist.predict(s))], ignore_index=True)
    out.attrs["rows"] = which
    return out


def pud_figure(data: pd.DataFrame, title: str | None = None, height: int = 420) -> go.Figure:
    """Two panels (MBCT's leaves | histogram binning's bins): PUD before and after, 1.0 dashed."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.1,
                        subplot_titles=("MBCT leaves", "Histogram binning bins"))
    for col, method in enumerate(("mbct", "histogram"), start=1):
        part = data[data["method"] == method]
        for kind, name, colour in (("pud_before", "raw scores", color_of(UNCALIBRATED)),
                                   ("pud_after", "after calibration", color_of(method))):
            label = name if kind == "pud_before" else f"after {'MBCT' if method == 'mbct' else 'histogram binning'}"
            fig.add_trace(go.Bar(
                x=part["bin"], y=part[kind], name=label, marker_color=colour,
                legendgroup=f"{method}-{kind}", showlegend=not (kind == "pud_before" and col == 2),
                customdata=[f"{path}<br>rows: {rows:,}" for path, rows in zip(part["path"], part["rows"])],
                hovertemplate=f"<b>%{{x}}</b> %{{customdata}}<br>PUD ({name}): %{{y:.3f}}<extra></extra>"),
                row=1, col=col)
        fig.add_hline(y=1.0, line=dict(color="#000000", dash="dash", width=1), row=1, col=col)
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_yaxes(title_text="PUD = Σ labels / Σ probabilities", row=1, col=1)
    fig.update_xaxes(title_text=f"bin (PUD on {data.attrs.get('rows', 'the check rows')})", row=1, col=1)
    fig.update_xaxes(title_text="bin", row=1, col=2)
    return base_layout(fig, title, height)


# -- the trees as icicles -----------------------------------------------------------------------------
def _node_hover(table: pd.DataFrame) -> list[str]:
    out = []
    for r in table.itertuples():
        text = (f"<b>{r.condition}</b> ({'splits on ' + r.split_on if r.split_on else 'leaf'})<br>"
                f"rows: {r.rows:,} · positives: {r.positives:,.0f}<br>scale: {r.scale:.3f} · "
                f"PUD of raw scores: {r.pud_score:.3f}")
        if np.isfinite(r.loss_split):
            text += f"<br>local MVCE: {r.loss_node:.5f} → {r.loss_split:.5f} after the split"
        elif np.isfinite(r.loss_node):
            text += f"<br>local MVCE: {r.loss_node:.5f} (no split lowered it)"
        text += f"<br>check rows: {r.check_rows:,} · their PUD after the tree: {r.check_pud_after:.3f}"
        out.append(text)
    return out


def tree_figure(tables: list[pd.DataFrame], title: str | None = None, height: int = 520) -> go.Figure:
    """Icicle chart of each tree (a menu picks the tree): area = training rows of the node,
    colour = log2 of its scale factor (red: scaled down, blue: scaled up)."""
    fig = go.Figure()
    for t, table in enumerate(tables):
        ids = [f"{t}-{k}" for k in table["node"]]
        parents = ["" if p < 0 else f"{t}-{p}" for p in table["parent"]]
        colour = np.log2(np.clip(table["scale"].to_numpy(dtype=float), 1e-3, None))
        fig.add_trace(go.Icicle(
            ids=ids, parents=parents, labels=table["condition"], values=table["rows"], branchvalues="total",
            visible=t == 0, name=f"tree {t + 1}",
            marker=dict(colors=colour, colorscale="RdBu", cmid=0.0, colorbar=dict(title="log2 scale")),
            customdata=_node_hover(table), hovertemplate="%{customdata}<extra></extra>"))
    if len(tables) > 1:
        buttons = [dict(label=f"tree {t + 1}", method="update",
                        args=[{"visible": [i == t for i in range(len(tables))]}]) for t in range(len(tables))]
        fig.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right",
                                            y=1.12, yanchor="top")])
    fig.update_layout(margin=dict(t=40))
    return base_layout(fig, title, height)


# -- boosting -------------------------------------------------------------------------------------------
def boosting_data(calibrator) -> pd.DataFrame:
    """One row per tree tried (tree 0: the raw scores): leaves, fit_mvce, check_mvce, kept."""
    return calibrator.diagnostics()["boosting"].copy()


def boosting_figure(data: pd.DataFrame, held_out: bool = True, title: str | None = None,
                    height: int = 340) -> go.Figure:
    """Global MVCE after each tree; a dropped tree is drawn as a hollow marker."""
    fig = go.Figure()
    for col, name, colour in (("fit_mvce", "training rows", color_of(UNCALIBRATED)),
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


def inner_figures(calibrator) -> list[tuple[str, go.Figure]]:
    """(title, figure): PUD bars beside histogram binning's, the trees, the boosting curve."""
    d = calibrator.diagnostics()
    return [
        ("PUD per bin: MBCT's leaves (first tree) beside histogram binning's bins",
         pud_figure(pud_data(calibrator))),
        ("Calibration trees (area: rows; colour: scale factor)", tree_figure(d["trees"])),
        ("Boosting: MVCE after each tree", boosting_figure(d["boosting"], d["check"]["held_out"])),
    ]
