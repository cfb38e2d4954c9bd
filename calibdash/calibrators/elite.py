"""ELiTE: an ensemble of l1 linear trend filters (Pakdaman Naeini & Cooper, SDM 2016).

The map is continuous and piecewise linear in the score, with kinks the data choose: the order-1 l1 trend filter
(Eq. 3.2) fitted to the 0/1 labels of the sorted training scores, second differences scaled by their uneven spacing
(``A`` of Eq. 3.3). A path of ``T`` penalties ``lambda`` is solved, log-spaced from ``lambda_max`` (below which the fit
stops being the least-squares line) down to ``1e-4 lambda_max``, and the models are averaged with weights proportional
to ``exp(-AICc / 2)`` (Section 3, the averaging formula after Eq. 3.3).

Choices where the paper leaves room:

* Ties: rows sharing a score are one point, target their mean label, weight their count (footnote 6): the objective
  is ``1/2 sum_i w_i (p_i - z_i)^2 + lambda ||D A p||_1``.
* Sample weights: a row of weight ``v`` counts as ``v`` rows: a point's target is its rows' weighted mean label and
  ``w_i`` their total weight; the log-likelihood counts ``sum v y`` positives and ``sum v (1 - y)`` negatives per
  point, and the ``N`` of AICc and BIC is the total weight, so integer weights fit as the rows repeated (rows of weight
  0 are absent). Scaling weights by ``c`` leaves each trend filter unchanged (``lambda_max`` and the grid scale by
  ``c``), so single mode does not move; the ensemble does: log-likelihood and ``N`` scale by ``c`` but the penalty
  ``2 df`` does not, so ``c > 1`` acts like ``c`` times more data, shifting weight towards models with more knots
  (``c < 1`` towards the line).
* Degrees of freedom: knots + 2, the unbiased estimate for linear trend filtering (Tibshirani 2014, cited by the
  paper).
* Likelihood in AICc/AIC/BIC: Bernoulli, of all training rows under the model's fitted values clipped to [0, 1] (and to
  [1e-15, 1 - 1e-15] inside the logarithms, as ``metrics.log_loss``). ``AICc = -2 logL + 2 df + 2 df (df + 1) / (N -
  df - 1)``; a model with ``df >= N - 1`` scores infinite (weight 0).
* The authors' R package (README) defaults to BIC, the paper reports AICc: the default here is AICc (``criterion``).
  The grid ends at the paper's ``1e-4 lambda_max`` (glmgen's default is 1e-5); the authors' R code is published only
  as a tarball, not read here.
* Prediction: each model interpolates linearly between its nodes and extrapolates linearly beyond the first and last
  training score; the weighted average (piecewise linear, on the union of the knots) is clipped to [0, 1].

Solver: the paper uses the specialised ADMM of Ramdas & Tibshirani (glmgen), whose approximate solutions need a
threshold to read off the knots and whose fused-lasso step needs a compiled loop. Here an exact active-set method
(:mod:`._trend_filter`, numpy and scipy) solves the same convex problem, warm-started down the path: every fit meets
the KKT conditions to a relative ``tol`` (1e-9), its knots are the active set, and a fit stopped at the rounding floor
(seen only at 10^6 points and the smallest lambdas) is kept if its violation is below 1e-6, as the path table's ``kkt``
column and the explanation's notes show. 50 lambdas take about 0.5-1.5 s at 10^5 rows and 6-11 s at 10^6 rows on the
project's 2-core machine (``bench/bench_elite.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._trend_filter import TrendFilter, TrendFit, evaluate_linear, merge_ties
from .base import CurveCalibrator, HyperParam, check_setting

__all__ = ["ELiTE", "LambdaPath", "lambda_path", "CRITERION_LABEL"]

_EPS = 1e-15
MIN_RATIO = 1e-4            # the paper's smallest lambda / lambda_max
CRITERIA = ("aicc", "aic", "bic")
CRITERION_LABEL = {"aicc": "AICc", "aic": "AIC", "bic": "BIC"}
MODES = ("ensemble", "single")


def information_criteria(loglik: float, df: int, n: float) -> dict[str, float]:
    """AIC, AICc and BIC of a model with log-likelihood ``loglik``, ``df`` parameters and ``n`` rows (or total
    weight); AICc is infinite when ``n - df - 1 <= 0``."""
    aic = -2.0 * loglik + 2.0 * df
    aicc = aic + 2.0 * df * (df + 1) / (n - df - 1) if n - df - 1 > 0 else np.inf
    bic = -2.0 * loglik + df * np.log(n)
    return {"aic": float(aic), "aicc": float(aicc), "bic": float(bic)}


@dataclass
class LambdaPath:
    """Everything solved along one lambda path (what :func:`lambda_path` returns): the merged training points ``x, z,
    w`` (distinct scores, mean label, count or total weight), ``n_rows``
    (the ``N`` of the information criteria: rows, or total weight), ``lambda_max`` (the smallest ``lambda`` whose
    solution is the least-squares line; 0 when the line is exact or there are fewer than 3 distinct scores), ``fits``
    (the solved :class:`TrendFit`, by decreasing ``lambda``), ``table`` (one row per fit: lambda, lam_ratio, df,
    knots, loglik, aic, aicc, bic, kkt, converged, iterations, weight), the models' ``weights`` (sum to 1), and
    ``map_x, map_p``, the nodes and values of their weighted average."""

    x: np.ndarray
    z: np.ndarray
    w: np.ndarray
    n_rows: float
    lambda_max: float
    fits: list
    table: pd.DataFrame
    weights: np.ndarray
    map_x: np.ndarray
    map_p: np.ndarray

    @property
    def trivial(self) -> bool:
        """Whether the map is the least-squares line without a solve (fewer than 3 distinct scores
        or labels exactly linear in the score)."""
        return self.lambda_max == 0.0


def _affine_exact(x, z, w) -> bool:
    """Whether the labels lie exactly on a line in the score (then lambda_max = 0)."""
    X = np.column_stack([np.ones_like(x), x - x.mean()])
    sw = np.sqrt(w)
    coef = np.linalg.lstsq(X * sw[:, None], z * sw, rcond=None)[0]
    return bool(np.max(np.abs(X @ coef - z)) < 1e-12)


def lambda_path(scores: np.ndarray, labels: np.ndarray, *, sample_weight: np.ndarray | None = None,
                mode: str = "ensemble", n_lambdas: int = 50, criterion: str = "aicc", lam_ratio: float = 0.01,
                tol: float = 1e-9) -> LambdaPath:
    """Solve ELiTE's lambda path on checked ``scores``, 0/1 ``labels`` and weights (None: unit weights) with ELiTE's
    hyperparameters (deterministic: :func:`calibdash.explain.elite.explain` solves it again to show it)."""
    check_setting(lambda v: v in MODES, mode, f"mode must be one of {MODES}")
    check_setting(lambda v: v in CRITERIA, criterion, f"criterion must be one of {CRITERIA}")
    check_setting(lambda v: int(v) == v and v >= 1, n_lambdas, "n_lambdas must be an integer of at least 1")
    check_setting(lambda v: float(v) == v and 0.0 < v <= 1.0, lam_ratio, "lam_ratio must lie in (0, 1]")
    check_setting(lambda v: float(v) == v and v > 0, tol, "tol must be a positive number")
    s = np.asarray(scores, dtype=float)
    x, z, w = merge_ties(s, labels, sample_weight)
    n_rows = s.size if sample_weight is None else float(np.sum(sample_weight))
    if x.size < 3 or _affine_exact(x, z, w):             # the least-squares line (one point: itself), unsolved
        if x.size == 1:
            nodes_x, nodes_p = x.copy(), z.copy()
        else:
            X = np.column_stack([np.ones_like(x), x])
            sw = np.sqrt(w)
            a, b = np.linalg.lstsq(X * sw[:, None], z * sw, rcond=None)[0]
            nodes_x = x[[0, -1]].copy()
            nodes_p = a + b * nodes_x
        fits, lam_max = [TrendFit(lam=0.0, knots=np.zeros(0, dtype=np.int64), nodes_x=nodes_x, nodes_p=nodes_p,
                                  kkt=0.0, converged=True)], 0.0
    else:
        solver = TrendFilter(x, z, w, tol=float(tol))
        lam_max = solver.lambda_max
        n = int(n_lambdas)
        grid = lam_max * np.geomspace(1.0, MIN_RATIO, n) if n > 1 else np.array([lam_max])
        if mode == "single":                           # warm start down the grid, then the target itself
            target = lam_max * float(lam_ratio)
            grid = np.append(grid[grid > target * (1 + 1e-12)], target)
        fits = solver.path(grid)
    rows = []
    pos = w * z                                        # positives (weight) at each point
    for f in fits:
        # the fitted values clipped to [0, 1], and to [_EPS, 1 - _EPS] for finite logs (0 * log(q) = 0 at no rows)
        q = np.clip(evaluate_linear(f.nodes_x, f.nodes_p, x), _EPS, 1.0 - _EPS)
        ll = float(np.dot(pos, np.log(q)) + np.dot(w - pos, np.log1p(-q)))
        df = f.df if x.size >= 3 else x.size
        rows.append({"lambda": f.lam, "lam_ratio": f.lam / lam_max if lam_max > 0 else 1.0,
                     "df": df, "knots": df - 2 if x.size >= 3 else 0, "loglik": ll,
                     **information_criteria(ll, df, n_rows),
                     "kkt": f.kkt, "converged": f.converged, "iterations": f.iterations})
    table = pd.DataFrame(rows)
    scores = table[criterion].to_numpy()
    finite = np.isfinite(scores)
    weights = np.zeros(len(fits))
    if mode == "single" or not finite.any():          # the single model, or the first if every score is infinite
        weights[-1 if mode == "single" else 0] = 1.0
    else:                                              # proportional to exp(-score / 2)
        rel = np.exp(-(scores[finite] - scores[finite].min()) / 2.0)
        weights[finite] = rel / rel.sum()
    table["weight"] = weights
    used = [(f, wt) for f, wt in zip(fits, weights) if wt > 0]      # the weighted average of the models' maps
    map_x = np.unique(np.concatenate([f.nodes_x for f, _ in used]))
    total = sum(wt for _, wt in used)
    map_p = sum(wt * evaluate_linear(f.nodes_x, f.nodes_p, map_x) for f, wt in used) / total
    return LambdaPath(x=x, z=z, w=w, n_rows=n_rows, lambda_max=float(lam_max), fits=fits, table=table,
                      weights=weights, map_x=map_x, map_p=map_p)


class ELiTE(CurveCalibrator):
    """Ensemble of linear trend estimation (ELiTE); the module docstring says where it departs from the paper.

    Parameters
    ----------
    mode : {"ensemble", "single"}, default "ensemble"
        ``"ensemble"``: the paper's method, the criterion-weighted average of ``n_lambdas`` trend filters.
        ``"single"``: one trend filter at ``lambda = lam_ratio * lambda_max`` (to watch the fit go from a straight
        line, ratio 1, to the raw points, ratio -> 0).
    n_lambdas : int, default 50
        Number of models ``T`` on the path (paper: 50), log-spaced from ``lambda_max`` to ``1e-4 lambda_max``.
    criterion : {"aicc", "aic", "bic"}, default "aicc"
        Model score for the weights ``exp(-score / 2)`` (paper: AICc; AIC and BIC are the alternatives its footnote 9
        mentions).
    lam_ratio : float, default 0.01
        ``lambda / lambda_max`` of the single model (single mode only). The path is solved down to it from
        ``lambda_max``; far below ``1e-4`` the fit nears interpolation and, on large data, the solve gets slow.
    tol : float, default 1e-9
        Relative tolerance of the optimality conditions of each fit.

    Attributes
    ----------
    lambda_max_ : float
        Smallest ``lambda`` whose solution is the least-squares line.
    weights_ : ndarray
        Model weights along the path, by decreasing ``lambda`` (sum to 1).
    map_x_, map_p_ : ndarray
        Nodes and values of the averaged (piecewise-linear) map.

    The path itself is not kept: :mod:`calibdash.explain.elite` solves it again from the training rows
    (:func:`lambda_path`, deterministic) and checks that it gives the same map.
    """

    name = "elite"
    order = 70
    color = "#332288"   # indigo (Tol)
    label = "ELiTE"
    summary = "ensemble of linear trend filters"
    paper = ("M. Pakdaman Naeini, G. F. Cooper. Binary Classifier Calibration Using an Ensemble of "
             "Linear Trend Estimation. SIAM SDM 2016, 261-269.")
    hyperparams = (
        HyperParam("mode", "mode", "choice", "ensemble", choices=MODES,
                   help="Average the whole lambda path (paper) or show one trend filter."),
        HyperParam("n_lambdas", "T", "int", 50, low=5, high=100,
                   help="Number of trend filters on the path, lambda from lambda_max to 1e-4 lambda_max."),
        HyperParam("criterion", "IC", "choice", "aicc", choices=CRITERIA,
                   help="Model score behind the weights exp(-score/2); the paper uses AICc."),
        HyperParam("lam_ratio", "λ/λ_max", "float", 0.01, low=MIN_RATIO, high=1.0, log=True,
                   help="Single mode: penalty of the one trend filter (1: straight line; small: follows the data)."),
    )
    curve, steps, ends = ("map_x_", "map_p_", "x", "p"), False, "extend"

    def __init__(self, mode: str = "ensemble", n_lambdas: int = 50, criterion: str = "aicc",
                 lam_ratio: float = 0.01, tol: float = 1e-9):
        self._keep(locals())

    def _fit(self, s: np.ndarray, y: np.ndarray, features, w: np.ndarray | None) -> None:
        path = lambda_path(s, y, sample_weight=w, **self.get_params())
        self.lambda_max_ = path.lambda_max
        self.weights_ = path.weights
        self.map_x_, self.map_p_ = path.map_x, path.map_p
