"""Explaining a fitted ELiTE (which keeps only its averaged map and the models' weights) by solving its lambda path
again (:func:`calibdash.calibrators.elite.lambda_path`, deterministic, with the same ``sample_weight``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..calibrators._trend_filter import FLOOR_TOL, evaluate_linear
from ..calibrators.elite import CRITERION_LABEL, ELiTE, LambdaPath, lambda_path
from . import Explanation, check_map, explains, training_rows
from .enir import pooled_groups

__all__ = ["ELiTEExplanation", "MIN_SUPPORT"]

#: The training rows are pooled into at most this many equal-count groups.
N_GROUPS = 200
#: Knots held by models with less total weight than this are not listed in ``knot_support``.
MIN_SUPPORT = 0.01
#: Largest difference between the fitted map and the map solved again from the rows.
MAP_TOL = 1e-9


@dataclass(kw_only=True)
class ELiTEExplanation(Explanation):
    """What :func:`explain` finds behind a fitted ELiTE: ``mode``, ``criterion`` (the hyperparameters) and
    ``criterion_label`` ("AICc"); ``lambda_max``, the smallest lambda whose solution is the least-squares line (0
    when the map is that line without a solve); ``path``, one row per lambda, decreasing: ``lambda``, ``lam_ratio``,
    ``df`` (knots + 2), ``knots``, ``loglik``, ``aic``, ``aicc``, ``bic``, ``kkt`` (largest relative violation of the
    optimality conditions), ``converged``, ``iterations``, ``weight``, ``delta`` (the criterion minus its smallest
    finite value); ``knots`` (knot scores) and ``models`` (nodes ``score``, ``value``) of each model of the path;
    ``best``, the heaviest model (the single one in single mode); ``map``, the averaged map's nodes; ``curve``, the
    map (``score``, ``prob``) on 501 points of [0, 1] and its nodes; ``knot_support``, knots held by models of total
    weight at least ``MIN_SUPPORT``: ``score``, ``prob``, ``support`` (that weight), ``n_models``; ``points``, the
    merged training points: ``score``, ``target`` (mean label, weighted in a weighted fit), ``count`` (rows, or total
    weight as a float), ``fitted``; ``groups``, the rows in about ``N_GROUPS`` equal-count groups
    (:func:`calibdash.explain.enir.pooled_groups`)."""

    mode: str
    criterion: str
    criterion_label: str
    lambda_max: float
    path: pd.DataFrame
    knots: list = field(default_factory=list)
    models: list = field(default_factory=list)
    best: int
    map: pd.DataFrame
    curve: pd.DataFrame
    knot_support: pd.DataFrame
    points: pd.DataFrame
    groups: pd.DataFrame

    @property
    def best_weight(self) -> float:
        """Weight of the heaviest model."""
        return float(self.path["weight"].iloc[self.best])


def _knot_support(cal, knots: list, weights: np.ndarray, min_support: float) -> pd.DataFrame:
    """Each knot's support: the total weight (and number) of the models of positive weight with a knot there."""
    held = [(np.asarray(ks, dtype=float), wt) for ks, wt in zip(knots, weights) if wt > 0]
    ks, at = np.unique(np.concatenate([np.empty(0)] + [k for k, _ in held]), return_inverse=True)
    support = np.bincount(at, np.concatenate([np.empty(0)] + [np.full(k.size, wt) for k, wt in held]), ks.size)
    keep = support >= min_support
    return pd.DataFrame({"score": ks[keep], "prob": cal.predict(ks[keep]) if keep.any() else ks[keep],
                         "support": support[keep], "n_models": np.bincount(at, minlength=ks.size)[keep]})


def _notes(cal, path: LambdaPath, n_rows: int, weighted: bool) -> list[str]:
    table, label = path.table, CRITERION_LABEL[cal.criterion]
    if weighted:
        notes = [f"{n_rows:,} rows of total weight {path.n_rows:,.6g} (N of the criteria); tied scores merged "
                 f"into {path.x.size:,} distinct points of positive weight (target: their weighted mean label, "
                 "weight: their total weight)."]
    else:
        notes = [f"{n_rows:,} rows; tied scores merged into {path.x.size:,} distinct points "
                 "(target: their mean label, weight: their count)."]
    if path.trivial:
        notes.append("Fewer than 3 distinct scores (or labels exactly linear in the score): "
                     "the map is the least-squares line through the points.")
    if cal.mode == "ensemble" and not np.isfinite(table[cal.criterion]).any():
        notes.append(f"Too few rows for {label} (N - df - 1 <= 0 for every model): the straight line "
                     "gets all the weight.")
    if not path.trivial:
        notes.append(f"Solved {len(table)} trend filter(s) exactly (active-set method), "
                     f"λ from λ_max = {path.lambda_max:.4g} down to {table['lam_ratio'].min():.1e} λ_max; "
                     f"each satisfies the optimality conditions to a relative {cal.tol:.0e} unless noted.")
        floor = table[(table["kkt"] > cal.tol) & table["converged"]]
        if len(floor):
            notes.append(f"{len(floor)} fit(s) stopped at the rounding floor of the objective; their "
                         f"optimality conditions hold to {floor['kkt'].max():.1e} (accepted up to {FLOOR_TOL:.0e}).")
        bad = table[~table["converged"]]
        if len(bad):
            notes.append(f"{len(bad)} fit(s) did not converge (largest violation {bad['kkt'].max():.1e}); "
                         "their maps are approximate.")
    if cal.mode == "ensemble":
        best = int(np.argmax(path.weights))
        notes.append(f"Weights by {label}: the best model (λ/λ_max = {table['lam_ratio'].iloc[best]:.2g}, "
                     f"{int(table['knots'].iloc[best])} knots) carries {path.weights[best]:.0%} of the weight.")
    else:
        notes.append(f"Single trend filter at λ = {table['lam_ratio'].iloc[-1]:.3g} λ_max with "
                     f"{int(table['knots'].iloc[-1])} knots; the other rows of the path are the warm-start "
                     "steps (weight 0).")
    return notes


@explains(ELiTE)
def explain(calibrator, scores, labels, features=None, *, sample_weight=None, n_groups: int = N_GROUPS,
            min_support: float = MIN_SUPPORT) -> ELiTEExplanation:
    """Explain a fitted ELiTE by solving its lambda path again from the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`; ``n_groups``: how many equal-count groups of training rows ``groups`` holds at
    most; ``min_support``: the least total weight of the models holding a knot for ``knot_support``)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    path = lambda_path(s, y, sample_weight=w, **cal.get_params())
    check_map("ELiTE", (cal.map_x_, cal.map_p_), (path.map_x, path.map_p), MAP_TOL,
              "solving its path again from them does not give its map",
              f"the maps have {path.map_x.size:,} and {cal.map_x_.size:,} nodes")

    table = path.table.copy()
    crit = table[cal.criterion].to_numpy(dtype=float)
    finite = np.isfinite(crit)
    table["delta"] = crit - (crit[finite].min() if finite.any() else 0.0)
    knots = [f.knot_x.copy() for f in path.fits]
    models = [pd.DataFrame({"score": f.nodes_x, "value": f.nodes_p}) for f in path.fits]
    nodes = pd.DataFrame({"score": cal.map_x_, "value": cal.map_p_})
    grid = np.union1d(np.linspace(0.0, 1.0, 501), cal.map_x_[(cal.map_x_ >= 0) & (cal.map_x_ <= 1)])
    curve = pd.DataFrame({"score": grid, "prob": cal.predict(grid)})
    fitted = np.clip(evaluate_linear(cal.map_x_, cal.map_p_, path.x), 0.0, 1.0)
    count = path.w if w is not None else path.w.astype(np.int64)
    points = pd.DataFrame({"score": path.x, "target": path.z, "count": count, "fitted": fitted})
    return ELiTEExplanation(
        method=cal.name, notes=_notes(cal, path, s.size, w is not None),
        tables={"path": table, "map": nodes, "points": points},
        mode=cal.mode, criterion=cal.criterion, criterion_label=CRITERION_LABEL[cal.criterion],
        lambda_max=path.lambda_max, path=table, knots=knots, models=models, best=int(np.argmax(path.weights)),
        map=nodes, curve=curve, knot_support=_knot_support(cal, knots, path.weights, min_support),
        points=points, groups=pooled_groups(path.x, path.z, count, n_groups))
