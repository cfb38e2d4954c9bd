"""Explaining a fitted MBCT: its trees, its boosting, and its bins' PUD beside histogram binning's.

:func:`explain` reproduces the fit's use of the rows it was fitted on (their canonical form, the growth sample and the
split into tree rows and check rows: :func:`calibdash.calibrators.mbct.canonical_rows` and
:func:`calibdash.calibrators.mbct.tree_rows`, as ``fit``) and checks that the trees' sums are those of the tree rows.
It tables each tree node by node, the boosting history, the coded features, and the partition underestimated degree
``sum(labels) / sum(probs)`` (MBCT Eq. 6) of each bin before and after calibration, for MBCT's leaves and for
histogram binning with as many bins (fitted here on the tree rows), judged on the check rows or on rows the caller
gives.

Identical rows (score, feature codes, label) are one row to MBCT, and a row of whole weight ``k`` is ``k`` rows, each
held out or sampled on its own. Rows of weight 0 are left out as ``fit`` leaves them out, and rows, positives and PUD
are sums of weights. A calibrator whose trees were grown on a sample is explained from all its rows: its node sums are
those of all the tree rows; the node-local losses are the sample's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import calibrators
from ..calibrators._mbct_codes import CATEGORICAL
from ..calibrators._mbct_tree import node_conditions, node_sums
from ..calibrators.mbct import CanonicalRows, MBCTCalibrator, TreeRows, canonical_rows, tree_rows, weighted_rows
from ..core.errors import ProgrammingError, SettingsError
from ..core.validation import check_labels, check_scores, check_weights
from . import Explanation, explains, training_rows

__all__ = ["MBCTExplanation"]

#: Columns of :attr:`MBCTExplanation.boosting`.
BOOSTING_COLUMNS = ("tree", "leaves", "fit_mvce", "check_mvce", "kept")
#: Columns of :attr:`MBCTExplanation.pud`.
PUD_COLUMNS = ("method", "bin", "path", "rows", "pud_before", "pud_after")


@dataclass(kw_only=True)
class MBCTExplanation(Explanation):
    """What :func:`explain` finds inside a fitted MBCT.

    Attributes
    ----------
    fit_rows, check_rows : ndarray of int
        Indices (into the rows given to :func:`explain`) of the tree rows, whose sums are the nodes' (every row but
        the check rows), and of the held-out rows that decided how many trees to keep (empty when none were held out).
        Rows of weight 0 are in neither; a row of whole weight above 1, or repeated, can be in both.
    grow_rows : ndarray of int
        Indices of the rows the trees were grown on: ``fit_rows``, or the growth sample's rows among them.
    fit_weight, check_weight : ndarray of float
        Per row given, the weight (rows) it has among the tree rows and the check rows (0 for a row of weight 0): the
        units MBCT drew from identical rows are shared out over those rows in the order given.
    held_out : bool
        Whether rows were held out; if not, the check columns are over the rows the trees were grown on.
    trees : list of DataFrame
        One table per kept tree, one row per node: ``node``, ``parent``, ``depth``, ``condition`` (how rows reach the
        node), ``split_on`` ("" for a leaf), ``rows``, ``positives``, ``scale`` (``sum y / sum f`` on all the tree
        rows = the node's PUD before this tree), ``slope`` and ``intercept`` (the node's line ``f' = slope f +
        intercept``), ``pud_score`` (PUD of the raw scores), ``loss_node`` / ``loss_split`` (node-local MVCE before /
        after the chosen split, on the rows the tree was grown on), ``check_rows``, ``check_pud_before`` /
        ``check_pud_after`` (PUD of the tree's input / output on the check rows, or without them on the rows the trees
        were grown on; rows stopped at an internal node count there and above).
    boosting : DataFrame
        One row per tree tried (tree 0: the raw scores): ``tree``, ``leaves``, ``fit_mvce``, ``check_mvce``, ``kept``;
        empty for a calibrator read from a file.
    features : DataFrame
        Each coded column: ``feature``, ``kind``, ``codes``.
    pud : DataFrame
        One row per bin: ``method`` ("mbct" / "histogram"), ``bin`` (short name), ``path`` (the bin's conditions),
        ``rows``, ``pud_before``, ``pud_after``.
    pud_rows : str
        Which rows the PUD was judged on ("held-out rows", "training rows" or "given rows").
    pud_tree : int
        Whose leaves (0-based tree index) are MBCT's bins in :attr:`pud`.
    """

    fit_rows: np.ndarray
    check_rows: np.ndarray
    grow_rows: np.ndarray
    fit_weight: np.ndarray
    check_weight: np.ndarray
    held_out: bool
    trees: list = field(default_factory=list)
    boosting: pd.DataFrame
    features: pd.DataFrame
    pud: pd.DataFrame
    pud_rows: str
    pud_tree: int = 0


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


def _same(recomputed: np.ndarray, fitted: np.ndarray) -> bool:
    """Equal up to the rounding of summing in another order."""
    return bool(np.all(np.abs(recomputed - fitted) <= 1e-9 * np.maximum(1.0, np.abs(fitted))))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _rows(total: np.ndarray, weighted: bool) -> np.ndarray:
    """Row counts as integers, or total weights as they are."""
    return total if weighted else total.astype(np.int64)


def _tree_table(cal, t: int, rows: TreeRows, data: CanonicalRows, nodes: np.ndarray, stages: np.ndarray,
                weighted: bool) -> pd.DataFrame:
    tree = cal.trees_[t]
    s, y = data.s, data.y
    wf, wj = rows.fit, rows.judge
    grown = node_sums(tree, nodes[:, t], wf, wf * y, wf * stages[:, t], wf * s)
    if not (_same(grown[1], tree.positives) and _same(grown[2], tree.sum_input)):
        raise ProgrammingError(
            f"the rows given are not the ones MBCT was fitted on: tree {t + 1}'s sums of labels and inputs "
            "per node differ from the sums over the tree rows; pass the scores, labels, features "
            "(and sample_weight) it was fitted on.")
    check = node_sums(tree, nodes[:, t], wj, wj * y, wj * stages[:, t], wj * stages[:, t + 1])
    names = [c.name for c in cal.columns_]
    return pd.DataFrame({
        "node": np.arange(tree.n_nodes), "parent": tree.parent, "depth": tree.depth,
        "condition": node_conditions(tree, cal.columns_),
        "split_on": [names[j] if j >= 0 else "" for j in tree.feature],
        "rows": _rows(grown[0], weighted), "positives": tree.positives, "scale": tree.scale,
        "slope": tree.slope, "intercept": tree.intercept,
        "pud_score": _ratio(grown[1], grown[3]), "loss_node": tree.loss_node, "loss_split": tree.loss_split,
        "check_rows": _rows(check[0], weighted), "check_pud_before": _ratio(check[1], check[2]),
        "check_pud_after": _ratio(check[1], check[3]),
    })


def _pud_rows(method: str, group: np.ndarray, names: dict, scores, labels, after, w, weighted: bool) -> list[dict]:
    """One row per group present: its rows (weight), PUD (MBCT Eq. 6: ``sum(w y) / sum(w probs)``, NaN when that is 0)
    of ``scores`` and of ``after``, all groups summed at once."""
    present, local = np.unique(group, return_inverse=True)
    wt = np.ones(group.size) if w is None else w
    rows, pos, before, later = (np.bincount(local, weights=v, minlength=present.size)
                                for v in (wt, wt * labels, wt * scores, wt * after))
    pud_before, pud_after = _ratio(pos, before), _ratio(pos, later)
    return [{"method": method, "bin": names[g][0], "path": names[g][1],
             "rows": float(rows[i]) if weighted else int(round(rows[i])),
             "pud_before": float(pud_before[i]), "pud_after": float(pud_after[i])}
            for i, g in enumerate(present.tolist())]


def _spread(amount: np.ndarray, inverse: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each canonical row's ``amount`` shared out over the rows given that make it (``inverse``), in the order given,
    each taking up to its ``capacity`` (whole numbers: exact)."""
    order = np.argsort(inverse, kind="stable")
    cap = capacity[order]
    group = inverse[order]
    cum = np.cumsum(cap)
    first = np.ones(group.size, dtype=bool)
    first[1:] = group[1:] != group[:-1]
    before = cum - cap
    before -= np.maximum.accumulate(np.where(first, before, 0.0))      # weight before the row, in its group
    out = np.empty(order.size)
    out[order] = np.clip(amount[group] - before, 0.0, cap)
    return out


def _given_weights(data: CanonicalRows, rows: TreeRows, weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row given (of positive weight ``weights``): its fit, check and grow weight."""
    c = data.inverse
    if not rows.units:                               # rows drawn whole
        return tuple(np.where(r[c] > 0, weights, 0.0) for r in (rows.fit, rows.check, rows.grow))
    check = _spread(rows.check, c, weights)
    fit = weights - check
    return fit, check, _spread(rows.grow, c, fit)


def _pud_table(table: pd.DataFrame, node: np.ndarray, s: np.ndarray, y: np.ndarray, after: np.ndarray,
               hist, w: np.ndarray | None, weighted: bool) -> pd.DataFrame:
    """PUD before and after per MBCT bin (node rows end at) and per histogram-binning bin."""
    paths = leaf_paths(table)
    names = {k: (f"L{k}" if table["split_on"][k] == "" else f"N{k}*", paths[k]) for k in range(len(table))}
    edges = np.concatenate([[0.0], hist.cuts_, [1.0]])
    hnames = {b: (f"H{b}", f"score ∈ [{edges[b]:.4g}, {edges[b + 1]:.4g})") for b in range(edges.size - 1)}
    hbin = np.searchsorted(hist.cuts_, s, side="right")
    rows = (_pud_rows("mbct", node, names, s, y, after, w, weighted)
            + _pud_rows("histogram", hbin, hnames, s, y, hist.predict(s), w, weighted))
    return pd.DataFrame(rows, columns=list(PUD_COLUMNS))


def _notes(cal, rows: TreeRows, boosting: pd.DataFrame, w: np.ndarray | None, n_absent: int,
           merged: int) -> list[str]:
    notes = []
    cats = [c.name for c in cal.columns_[1:] if c.kind == CATEGORICAL]
    nums = [c.name for c in cal.columns_[1:] if c.kind != CATEGORICAL]
    if len(cal.columns_) == 1:
        notes.append("No feature columns were given: the trees split on the score alone "
                     f"({cal.score_bins} equal-width bins).")
    else:
        text = f"Trees split on the score ({cal.score_bins} equal-width bins)"
        if cats:
            text += f", categorical columns {', '.join(cats)}"
        if nums:
            text += f", numeric columns {', '.join(nums)} in {cal.n_quantiles} quantile bins"
        notes.append(text + ".")
    held_out = rows.held_out
    n_grow, n_check, n_fit = rows.count(rows.grow), rows.count(rows.check), rows.count(rows.fit)
    if merged:
        notes.append(f"{merged:,} row(s) repeated others (same score, feature codes and label): MBCT "
                     "counts each copy as a row, and the fit does not depend on the order of the rows.")
    if rows.sampled:
        notes.append(f"Trees were grown on a seeded sample of {n_grow:,} of {n_fit:,} rows; "
                     f"node lines use all {n_fit:,} rows.")
    if held_out and rows.sampled:
        notes.append(f"{n_check:,} held-out rows ({float(cal.holdout):.0%} of the stratified sample of "
                     f"{n_grow + n_check:,}; not among the {n_fit:,}) decided how many trees "
                     "to keep.")
    elif held_out:
        notes.append(f"Trees were grown on {n_grow:,} rows; {n_check:,} held-out "
                     f"rows ({float(cal.holdout):.0%}, stratified) decided how many trees to keep.")
    else:
        notes.append(f"No rows were held out: the number of trees was decided on the training rows"
                     f"{' of the sample' if rows.sampled else ''}, which favours more trees.")
    text = f"{len(cal.trees_)} of at most {cal.n_trees} tree(s) kept."
    if boosting.empty:
        text += " The calibrator was read from a file, which does not hold the boosting history."
    elif (~boosting["kept"]).any():
        r = boosting[~boosting["kept"]].iloc[0]
        text += (f" Tree {int(r['tree'])} did not lower the {'held-out' if held_out else 'training'} "
                 f"MVCE ({boosting[boosting['kept']]['check_mvce'].iloc[-1]:.5f} → {r['check_mvce']:.5f}) "
                 "and was dropped.")
    notes.append(text)
    if getattr(cal, "fallback_", False):
        notes.append(f"The kept trees' training MVCE ({boosting[boosting['kept']]['fit_mvce'].iloc[-1]:.5f}) "
                     f"was above that of a single leaf ({cal.single_leaf_mvce_:.5f}): MBCT is its single-leaf "
                     "linear calibrator, one line fitted on all the tree rows.")
    leaves = [(t.intercept[t.feature < 0] != 0) for t in cal.trees_]
    notes.append("Each node maps its input f by a line f' = a f + b through its mean point (its PUD after it is 1): "
                 "the paper's scale (b = 0) unless the node's rows reject it, then the least-squares line (a >= 0), "
                 "kept in [0, 1] on the node's inputs; a scale alone could not reach the rates of two distinct "
                 f"scores. {sum(int(x.sum()) for x in leaves)} of {sum(x.size for x in leaves)} leaves have b != 0.")
    notes.append(f"Split loss: MVCE with {cal.views} views of {cal.loss_bin_size_:,} rows.")
    if w is not None:
        notes.append(f"Rows are weighted (total weight {w.sum():,.6g}): bin sizes, node sums, PUD and the MVCE's "
                     f"bins count weight, not rows; {n_absent:,} row(s) of weight 0 were left out.")
    return notes


@explains(MBCTCalibrator)
def explain(calibrator, scores, labels, features=None, *, sample_weight=None, pud_tree: int = 0,
            judge_scores=None, judge_labels=None, judge_features=None, judge_weight=None) -> MBCTExplanation:
    """Explain a fitted MBCT from the rows it was fitted on (``scores``, ``labels``, ``features`` and
    ``sample_weight`` as given to ``fit``; ProgrammingError when the trees' per-node sums differ).

    Parameters
    ----------
    pud_tree : int, default 0
        Whose leaves are MBCT's bins in the PUD table (the first tree: later trees refine its output). "After" is
        always the full model's output. SettingsError unless the index of a kept tree.
    judge_scores, judge_labels, judge_features, judge_weight : optional
        Rows (and their weights) to judge the PUD on, for example held-out test rows; by default the check rows of the
        fit (held out from the trees unless ``holdout = 0``).
    """
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    if not 0 <= int(pud_tree) < len(cal.trees_):
        raise SettingsError(f"pud_tree must be the index of a kept tree (0 to {len(cal.trees_) - 1}), "
                            f"got {pud_tree!r}.")
    n_rows = s.size
    kept, s, y, df, w = weighted_rows(s, y, features, check_weights(sample_weight, s.size, y))
    weighted = w is not None                         # unit weights: no weights, as fit takes them
    index = np.arange(n_rows) if kept is None else kept
    data = canonical_rows(s, y, cal._codes(s, df), w, inverse=True)
    rows = tree_rows(data, cal.holdout, cal.seed, cal.growth_rows)
    nodes, stages = cal._trace(data.s, data.codes)
    trees = [_tree_table(cal, t, rows, data, nodes, stages, weighted) for t in range(len(cal.trees_))]
    per_row = [np.zeros(n_rows) for _ in range(3)]
    for out, part in zip(per_row, _given_weights(data, rows, np.ones(s.size) if w is None else w)):
        out[index] = part
    fit_w, check_w, grow_w = per_row

    history = getattr(cal, "history_", None)
    boosting = pd.DataFrame({c: history[c] for c in BOOSTING_COLUMNS} if history is not None
                            else {c: [] for c in BOOSTING_COLUMNS})
    feats = pd.DataFrame({"feature": [c.name for c in cal.columns_], "kind": [c.kind for c in cal.columns_],
                          "codes": [int(c.n_codes) for c in cal.columns_]})

    table = trees[pud_tree]
    fit = np.flatnonzero(rows.fit > 0)
    hist = calibrators.get("histogram", n_bins=max(2, int((table["split_on"] == "").sum()))).fit(
        data.s[fit], data.y[fit], sample_weight=rows.fit[fit])
    if judge_scores is None:
        judge = np.flatnonzero(rows.judge > 0)
        js, jy, node, after = data.s[judge], data.y[judge], nodes[judge, pud_tree], stages[judge, -1]
        jw = rows.judge[judge]
        which = "held-out rows" if rows.held_out else "training rows"
    else:
        js = check_scores(judge_scores)
        jy = check_labels(judge_labels, js.size, require_both=False)
        jw = check_weights(judge_weight, js.size)
        node = cal.apply(js, judge_features)[:, pud_tree]
        after = cal.predict(js, judge_features)
        which = "given rows"
        weighted = jw is not None
    pud = _pud_table(table, node, js, jy, after, hist, jw, weighted)

    tables = {"boosting": boosting, "features": feats}
    tables.update({f"tree {t + 1}": tab for t, tab in enumerate(trees)})
    tables["PUD per bin"] = pud
    return MBCTExplanation(
        method=cal.name, notes=_notes(cal, rows, boosting, w, n_rows - s.size, s.size - data.size), tables=tables,
        fit_rows=np.flatnonzero(fit_w > 0), check_rows=np.flatnonzero(check_w > 0),
        grow_rows=np.flatnonzero(grow_w > 0), fit_weight=fit_w, check_weight=check_w, held_out=rows.held_out,
        trees=trees, boosting=boosting, features=feats, pud=pud, pud_rows=which, pud_tree=int(pud_tree))
