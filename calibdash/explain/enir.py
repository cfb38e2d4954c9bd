"""Explaining a fitted ENIR (which keeps only its averaged map and the models' penalties and weights) by building its
near-isotonic path again (:func:`calibdash.calibrators.enir.enir_path`, as ``fit``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators.enir import CRITERION_LABEL, ENIR, ENIRPath, enir_path, map_knots
from . import Explanation, check_map, explains, training_rows

__all__ = ["ENIRExplanation"]

#: Largest difference between the calibrator's map and the models built again.
MAP_TOL = 1e-12
#: The training rows are pooled into at most this many equal-count groups.
N_GROUPS = 200
#: Points of the regular grid on [0, 1] the maps are evaluated on.
GRID_POINTS = 501


@dataclass(kw_only=True)
class ENIRExplanation(Explanation):
    """What :func:`explain` finds behind a fitted ENIR: ``criterion`` (``"bic"``) and ``criterion_label`` (``"BIC"``);
    ``n_breakpoints`` of the whole path (lambda = 0 included) before thinning to ``max_models``; ``path``, one row per
    breakpoint used by increasing lambda: ``model`` (index), ``lambda``, ``df`` (distinct fitted values),
    ``loglik``, ``score`` (the criterion), ``delta`` (score minus the smallest finite score of the averaged models),
    ``kept`` (averaged: not lambda = 0, finite score), ``weight``; ``models``, the averaged models' maps on the grid
    (``model``, ``lambda``, ``weight``, ``score``, ``prob``); ``curve``, the ENIR map (``score``, ``prob``) on it;
    ``points``, the merged training points (``score``, ``target`` the mean label, ``count`` rows or total weight,
    ``fitted``); ``groups``, the rows in about ``N_GROUPS`` equal-count groups (:func:`pooled_groups`)."""

    criterion: str
    criterion_label: str
    n_breakpoints: int
    path: pd.DataFrame
    models: pd.DataFrame
    curve: pd.DataFrame
    points: pd.DataFrame
    groups: pd.DataFrame


def pooled_groups(x, target, count, n_groups: int) -> pd.DataFrame:
    """Merged points (``x``, mean label ``target``, ``count`` rows or weight) pooled into about ``n_groups`` groups of
    equal count (a group starts where the cumulative count crosses a share): ``score`` and ``rate`` (their means),
    ``rows``."""
    if x.size <= n_groups:
        return pd.DataFrame({"score": x, "rate": target, "rows": count})
    before = np.cumsum(count) - count
    gid = np.minimum((before * n_groups / count.sum()).astype(np.int64), n_groups - 1)
    rows = np.bincount(gid, count)
    keep = rows > 0
    return pd.DataFrame({"score": np.bincount(gid, count * x)[keep] / rows[keep],
                         "rate": np.bincount(gid, count * target)[keep] / rows[keep],
                         "rows": rows[keep].astype(count.dtype)})


def _notes(cal, res: ENIRPath, n_rows: int, weighted: bool) -> list[str]:
    label = CRITERION_LABEL[cal.criterion]
    if weighted:
        notes = [f"{n_rows:,} rows of total weight {res.n_rows:,.6g} (N of {label}); tied scores merged into "
                 f"{res.x.size:,} points (target: their weighted mean label, weight: their total weight)."]
    else:
        notes = [f"{n_rows:,} rows; tied scores merged into {res.x.size:,} points "
                 "(target: their mean label, weight: their count)."]
    used = res.lam.size
    thin = (f", {used} of them taken evenly by index (max_models = {cal.max_models})"
            if used < res.n_breakpoints else "")
    if used > 1:
        notes.append(f"The near-isotonic path from λ = 0 (the data) to the isotonic fit has {res.n_breakpoints:,} "
                     f"breakpoints{thin}; the model at λ = 0 is left out, as in the authors' code.")
    else:
        notes.append("The near-isotonic path has no merge (the mean labels of the points never decrease with the "
                     "score, or there is one point): the model at λ = 0, the data, is the only one, as in the "
                     "authors' code.")
    inf = int((~np.isfinite(res.score)).sum())
    if inf:
        notes.append(f"{inf} model(s) have an infinite {label} (a fitted value rounded to 0 or 1 under a row of the "
                     "other class) and get no weight.")
    if not np.isfinite(res.score[res.kept]).any():
        notes.append(f"No model has a finite {label}: the isotonic end of the path is used alone.")
    best = int(np.argmax(res.weight))
    notes.append(f"Weights exp(−Δ{label}/2): the best model (λ = {res.lam[best]:.4g}, {int(res.df[best])} distinct "
                 f"values) carries {res.weight[best]:.1%} of the weight; {int((res.weight > 0).sum())} model(s) have "
                 "positive weight.")
    notes.append("Each model's values are smoothed towards the mean score of each run of equal values and joined "
                 "linearly between neighbouring training scores, as in the authors' code.")
    return notes


@explains(ENIR)
def explain(calibrator, scores, labels, features=None, sample_weight=None,
            n_groups: int = N_GROUPS) -> ENIRExplanation:
    """Explain a fitted ENIR by building its path again from the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`; ``n_groups``: how many equal-count groups of rows ``groups`` holds at most).
    """
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    res = enir_path(s, y, sample_weight=w, max_models=cal.max_models, criterion=cal.criterion)
    kx, kp = map_knots(res.x, res.map_p)
    check_map("ENIR", (cal.knots_, cal.values_), (kx, kp), MAP_TOL,
              "building its path again from them does not give its map",
              f"the maps have {kx.size:,} and {cal.knots_.size:,} knots")

    score = res.score
    ref = score[res.kept & np.isfinite(score)]
    path = pd.DataFrame({"model": np.arange(res.lam.size), "lambda": res.lam, "df": res.df, "loglik": res.loglik,
                         "score": score, "delta": score - (ref.min() if ref.size else 0.0), "kept": res.kept,
                         "weight": res.weight})
    lo, hi = (float(res.x[0]), float(res.x[-1])) if res.x.size else (0.0, 1.0)
    grid = np.union1d(np.linspace(0.0, 1.0, GRID_POINTS), np.linspace(lo, hi, GRID_POINTS))    # refined over the rows
    models = pd.concat([pd.DataFrame({"model": int(i), "lambda": res.lam[i], "weight": res.weight[i], "score": grid,
                                      "prob": np.interp(grid, res.x, res.values[i])})
                        for i in np.flatnonzero(res.weight > 0)], ignore_index=True)
    curve = pd.DataFrame({"score": grid, "prob": cal.predict(grid)})
    count = res.wt if w is not None else res.wt.astype(np.int64)
    target = res.pos / res.wt
    points = pd.DataFrame({"score": res.x, "target": target, "count": count, "fitted": cal.predict(res.x)})
    return ENIRExplanation(
        method=cal.name, notes=_notes(cal, res, s.size, w is not None),
        tables={"path": path, "points": points},
        criterion=cal.criterion, criterion_label=CRITERION_LABEL[cal.criterion], n_breakpoints=res.n_breakpoints,
        path=path, models=models, curve=curve, points=points,
        groups=pooled_groups(res.x, target, count, n_groups))
