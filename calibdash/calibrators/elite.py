"""ELiTE: an ensemble of l1 linear trend filters (Pakdaman Naeini & Cooper, SDM 2016).

The calibration map is a continuous piecewise-linear function of the score
whose kinks the data choose: the l1 trend filter of order 1 (paper, Eq. 3.2)
fitted to the 0/1 labels of the sorted training scores, with second
differences scaled by the uneven spacing of the scores (the matrix ``A`` of
Eq. 3.3). A path of ``T`` penalties ``lambda`` is solved, log-spaced from
``lambda_max`` (below which the fit stops being the least-squares line) down
to ``1e-4 lambda_max``; the models are averaged with weights proportional
to ``exp(-AICc / 2)`` (paper, Section 3, the averaging formula after Eq. 3.3).

Choices where the paper leaves room
-----------------------------------
* Ties: rows sharing a score become one point whose target is their mean
  label, weighted by their count (footnote 6), so the objective is
  ``1/2 sum_i w_i (p_i - z_i)^2 + lambda ||D A p||_1``.
* Degrees of freedom: number of knots + 2, the unbiased estimate for linear
  trend filtering (Tibshirani 2014, cited by the paper).
* Likelihood in AICc/AIC/BIC: Bernoulli log-likelihood of all training rows
  under the model's fitted values clipped to [0, 1] (and to
  [1e-15, 1 - 1e-15] inside the logarithms, as ``metrics.log_loss``).
  ``AICc = -2 logL + 2 df + 2 df (df + 1) / (N - df - 1)`` with ``N`` rows; a
  model with ``df >= N - 1`` gets an infinite score (weight 0).
* The authors' R package (README) defaults to BIC while the paper reports
  AICc; the default here is the paper's AICc (``criterion``). The grid's
  lower end is the paper's ``1e-4 lambda_max`` (glmgen's own default is
  1e-5); the authors' R code is only published as a tarball, not read here.
* Prediction: each model interpolates linearly between its nodes and
  extrapolates linearly beyond the first and last training score; the
  weighted average (itself piecewise linear, on the union of the knots) is
  clipped to [0, 1].

Solver: paper versus this implementation
----------------------------------------
The paper solves each problem with the specialised ADMM of Ramdas &
Tibshirani (glmgen). ADMM gives approximate solutions whose knots must be
read off with a threshold, and its fused-lasso step needs a compiled loop.
This implementation solves the same convex problem exactly with an
active-set method (``_trend_filter``), warm-started down the path. Every
returned fit satisfies the KKT conditions to a relative tolerance ``tol``
(1e-9): with ``nu`` solving ``(D A)^T nu = W (z - p)``, ``|nu_i| <= lambda (1 +
tol)`` everywhere and ``nu_i = lambda * sign(kink)`` at every knot. When no
step can lower the objective by more than its float rounding any more (seen
only at 10^6 points and the smallest lambdas, at violations near 2e-9) the
fit is kept if its violation is below 1e-6 and the notes say so; the
violation of every fit is in ``path_["kkt"]``. Knots are the active set of
that exact solution; kinks that move the fitted values by less than 1e-9 are
not counted. Pure numpy and scipy, no compiled helper: 50 lambdas take about
0.5-1.5 s at 10^5 rows and 6-11 s at 10^6 rows on the project's 2-core
machine (``bench/bench_elite.py``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DataError
from ._trend_filter import FLOOR_TOL, TrendFilter, TrendFit, evaluate_linear, merge_ties
from .base import Calibrator, HyperParam

__all__ = ["ELiTE", "information_criteria"]

_EPS = 1e-15
MIN_RATIO = 1e-4            # the paper's smallest lambda / lambda_max
CRITERIA = ("aicc", "aic", "bic")
CRITERION_LABEL = {"aicc": "AICc", "aic": "AIC", "bic": "BIC"}
MODES = ("ensemble", "single")


def information_criteria(loglik: float, df: int, n: int) -> dict[str, float]:
    """AIC, AICc and BIC of a model with log-likelihood ``loglik``, ``df`` parameters, ``n`` rows.

    AICc is infinite when ``n - df - 1 <= 0`` (the correction is undefined).
    """
    aic = -2.0 * loglik + 2.0 * df
    aicc = aic + 2.0 * df * (df + 1) / (n - df - 1) if n - df - 1 > 0 else np.inf
    bic = -2.0 * loglik + df * np.log(n)
    return {"aic": float(aic), "aicc": float(aicc), "bic": float(bic)}


def _bernoulli_loglik(p: np.ndarray, z: np.ndarray, w: np.ndarray) -> float:
    """Log-likelihood of ``w z`` positives and ``w (1 - z)`` negatives at each merged point."""
    q = np.clip(p, _EPS, 1.0 - _EPS)          # finite logs, so 0 * log(q) = 0 where a count is 0
    pos = w * z
    return float(np.dot(pos, np.log(q)) + np.dot(w - pos, np.log1p(-q)))


def _criterion_weights(scores: np.ndarray) -> np.ndarray:
    """Weights proportional to ``exp(-score / 2)`` (0 for infinite scores)."""
    finite = np.isfinite(scores)
    out = np.zeros(scores.size)
    if not finite.any():
        out[0] = 1.0
        return out
    rel = np.exp(-(scores[finite] - scores[finite].min()) / 2.0)
    out[finite] = rel / rel.sum()
    return out


class ELiTE(Calibrator):
    """Ensemble of linear trend estimation (ELiTE).

    Parameters
    ----------
    mode : {"ensemble", "single"}, default "ensemble"
        ``"ensemble"``: the paper's method, the criterion-weighted average of
        ``n_lambdas`` trend filters. ``"single"``: one trend filter at
        ``lambda = lam_ratio * lambda_max`` (to watch the fit go from a
        straight line, ratio 1, to the raw points, ratio -> 0).
    n_lambdas : int, default 50
        Number of models ``T`` on the path (paper: 50), log-spaced from
        ``lambda_max`` to ``1e-4 lambda_max``.
    criterion : {"aicc", "aic", "bic"}, default "aicc"
        Model score for the weights ``exp(-score / 2)`` (paper: AICc; AIC
        and BIC are the alternatives its footnote 9 mentions).
    lam_ratio : float, default 0.01
        ``lambda / lambda_max`` of the single model (single mode only). The
        path is solved down to it from ``lambda_max``; far below ``1e-4`` the
        fit nears interpolation and, on large data, the solve gets slow.
    tol : float, default 1e-9
        Relative tolerance of the optimality conditions of each fit.

    Attributes
    ----------
    lambda_max_ : float
        Smallest ``lambda`` whose solution is the least-squares line.
    fits_ : list of TrendFit
        The solved trend filters, by decreasing ``lambda``.
    path_ : pandas.DataFrame
        One row per ``lambda``: df, log-likelihood, AIC, AICc, BIC, weight.
    weights_ : ndarray
        Model weights (sum to 1).
    map_x_, map_p_ : ndarray
        Nodes and values of the averaged (piecewise-linear) map.
    x_, z_, w_ : ndarray
        Merged training points: distinct scores, mean label, count.
    """

    name = "elite"
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

    def __init__(self, mode: str = "ensemble", n_lambdas: int = 50, criterion: str = "aicc",
                 lam_ratio: float = 0.01, tol: float = 1e-9):
        self.mode = mode
        self.n_lambdas = n_lambdas
        self.criterion = criterion
        self.lam_ratio = lam_ratio
        self.tol = tol

    # -- fitting -----------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.mode not in MODES:
            raise DataError(f"mode must be one of {MODES}, got {self.mode!r}.")
        if self.criterion not in CRITERIA:
            raise DataError(f"criterion must be one of {CRITERIA}, got {self.criterion!r}.")
        if int(self.n_lambdas) < 1:
            raise DataError(f"n_lambdas must be at least 1, got {self.n_lambdas}.")
        if not (0.0 < float(self.lam_ratio) <= 1.0):
            raise DataError(f"lam_ratio must lie in (0, 1], got {self.lam_ratio}.")

    def _lambdas(self, lam_max: float) -> np.ndarray:
        grid = lam_max * np.geomspace(1.0, MIN_RATIO, int(self.n_lambdas)) if self.n_lambdas > 1 \
            else np.array([lam_max])
        if self.mode == "ensemble":
            return grid
        target = lam_max * float(self.lam_ratio)
        # warm start down the grid, then the target itself
        return np.append(grid[grid > target * (1 + 1e-12)], target)

    def _fit(self, s: np.ndarray, y: np.ndarray, features) -> None:
        self._check_params()
        x, z, w = merge_ties(s, y)
        n_rows = s.size
        self.x_, self.z_, self.w_ = x, z, w
        notes = [f"{n_rows:,} rows; tied scores merged into {x.size:,} distinct points "
                 "(target: their mean label, weight: their count)."]
        if x.size < 3 or self._affine_exact(x, z, w):
            fits = [self._trivial_fit(x, z, w)]
            self.lambda_max_ = 0.0
            notes.append("Fewer than 3 distinct scores (or labels exactly linear in the score): "
                         "the map is the least-squares line through the points.")
        else:
            solver = TrendFilter(x, z, w, tol=float(self.tol))
            self.lambda_max_ = solver.lambda_max
            fits = solver.path(self._lambdas(solver.lambda_max))
        self.fits_ = fits
        rows = []
        for f in fits:
            fitted = np.clip(evaluate_linear(f.nodes_x, f.nodes_p, x), 0.0, 1.0)
            ll = _bernoulli_loglik(fitted, z, w)
            df = f.df if x.size >= 3 else x.size
            rows.append({"lambda": f.lam,
                         "lam_ratio": f.lam / self.lambda_max_ if self.lambda_max_ > 0 else 1.0,
                         "df": df, "knots": df - 2 if x.size >= 3 else 0, "loglik": ll,
                         **information_criteria(ll, df, n_rows),
                         "kkt": f.kkt, "converged": f.converged, "iterations": f.iterations})
        path = pd.DataFrame(rows)
        if self.mode == "ensemble":
            weights = _criterion_weights(path[self.criterion].to_numpy())
            if not np.isfinite(path[self.criterion]).any():
                notes.append(f"Too few rows for {CRITERION_LABEL[self.criterion]} (N - df - 1 <= 0 for "
                             "every model): the straight line gets all the weight.")
        else:
            weights = np.zeros(len(fits))
            weights[-1] = 1.0
        path["weight"] = weights
        self.path_ = path
        self.weights_ = weights
        self.map_x_, self.map_p_ = self._average(fits, weights)
        self._notes = notes + self._solver_notes(path)

    @staticmethod
    def _affine_exact(x, z, w) -> bool:
        """Whether the labels lie exactly on a line in the score (then lambda_max = 0)."""
        X = np.column_stack([np.ones_like(x), x - x.mean()])
        sw = np.sqrt(w)
        coef = np.linalg.lstsq(X * sw[:, None], z * sw, rcond=None)[0]
        return bool(np.max(np.abs(X @ coef - z)) < 1e-12)

    @staticmethod
    def _trivial_fit(x, z, w) -> TrendFit:
        if x.size == 1:
            nodes_x, nodes_p = x.copy(), z.copy()
        else:
            X = np.column_stack([np.ones_like(x), x])
            sw = np.sqrt(w)
            a, b = np.linalg.lstsq(X * sw[:, None], z * sw, rcond=None)[0]
            nodes_x = x[[0, -1]].copy()
            nodes_p = a + b * nodes_x
        return TrendFit(lam=0.0, knots=np.zeros(0, dtype=np.int64), nodes_x=nodes_x, nodes_p=nodes_p,
                        kkt=0.0, converged=True)

    @staticmethod
    def _average(fits, weights) -> tuple[np.ndarray, np.ndarray]:
        """The weighted average of piecewise-linear maps, as nodes and values."""
        used = [(f, wt) for f, wt in zip(fits, weights) if wt > 0]
        xs = np.unique(np.concatenate([f.nodes_x for f, _ in used]))
        total = sum(wt for _, wt in used)
        ps = sum(wt * evaluate_linear(f.nodes_x, f.nodes_p, xs) for f, wt in used) / total
        return xs, ps

    def _solver_notes(self, path: pd.DataFrame) -> list[str]:
        notes = []
        if self.lambda_max_ > 0:
            lo = path["lam_ratio"].min()
            notes.append(f"Solved {len(path)} trend filter(s) exactly (active-set method), "
                         f"λ from λ_max = {self.lambda_max_:.4g} down to {lo:.1e} λ_max; "
                         f"each satisfies the optimality conditions to a relative {self.tol:.0e} "
                         "unless noted.")
            floor = path[(path["kkt"] > self.tol) & path["converged"]]
            if len(floor):
                notes.append(f"{len(floor)} fit(s) stopped at the rounding floor of the objective; "
                             f"their optimality conditions hold to {floor['kkt'].max():.1e} "
                             f"(accepted up to {FLOOR_TOL:.0e}).")
            bad = path[~path["converged"]]
            if len(bad):
                notes.append(f"{len(bad)} fit(s) did not converge (largest violation "
                             f"{bad['kkt'].max():.1e}); their maps are approximate.")
        if self.mode == "ensemble":
            best = int(np.argmax(self.weights_))
            notes.append(f"Weights by {CRITERION_LABEL[self.criterion]}: the best model (λ/λ_max = "
                         f"{path['lam_ratio'].iloc[best]:.2g}, {int(path['knots'].iloc[best])} knots) "
                         f"carries {self.weights_[best]:.0%} of the weight.")
        else:
            notes.append(f"Single trend filter at λ = {path['lam_ratio'].iloc[-1]:.3g} λ_max "
                         f"with {int(path['knots'].iloc[-1])} knots; the other rows of the path "
                         "are the warm-start steps (weight 0).")
        return notes

    # -- prediction ------------------------------------------------------------------
    def _predict(self, s: np.ndarray, features) -> np.ndarray:
        return np.clip(evaluate_linear(self.map_x_, self.map_p_, s), 0.0, 1.0)

    def _export_state(self) -> dict:
        """What ``predict`` needs (for :mod:`calibdash.export`): the nodes of the averaged map
        (not the path of trend filters behind it)."""
        return {"x": self.map_x_.tolist(), "p": self.map_p_.tolist()}

    def _import_state(self, state) -> None:
        """Restore the state of :meth:`_export_state` (``state``: a :class:`calibdash.export.State`)."""
        self.map_x_ = state.array("x", sorted=True)
        self.map_p_ = state.array("p", size=self.map_x_.size)

    def model_predict(self, k: int, scores) -> np.ndarray:
        """Predictions of the ``k``-th trend filter of the path alone (not clipped)."""
        self._check_fitted()
        f = self.fits_[k]
        return evaluate_linear(f.nodes_x, f.nodes_p, np.asarray(scores, dtype=float))

    # -- internals for the dashboard ---------------------------------------------------
    def diagnostics(self) -> dict:
        """Internals the dashboard draws.

        Returns
        -------
        dict with
            ``path`` : DataFrame, one row per lambda (by decreasing lambda):
                lambda, lam_ratio, df, knots, loglik, aic, aicc, bic, kkt,
                converged, iterations, weight.
            ``knots`` : list of arrays, the knot scores of each model.
            ``models`` : list of DataFrames (score, value), the nodes of each model.
            ``map`` : DataFrame (score, value), nodes of the averaged map.
            ``points`` : DataFrame (score, target, count, fitted), the merged
                training points and the (clipped) averaged map there.
            ``fitted`` : ndarray, the ``fitted`` column.
            ``lambda_max``, ``mode``, ``criterion``, ``notes``.
        """
        self._check_fitted()
        fitted = np.clip(evaluate_linear(self.map_x_, self.map_p_, self.x_), 0.0, 1.0)
        return {
            "mode": self.mode,
            "criterion": self.criterion,
            "lambda_max": float(self.lambda_max_),
            "path": self.path_.copy(),
            "knots": [f.knot_x.copy() for f in self.fits_],
            "models": [pd.DataFrame({"score": f.nodes_x, "value": f.nodes_p}) for f in self.fits_],
            "map": pd.DataFrame({"score": self.map_x_, "value": self.map_p_}),
            "points": pd.DataFrame({"score": self.x_, "target": self.z_,
                                    "count": self.w_.astype(np.int64), "fitted": fitted}),
            "fitted": fitted,
            "notes": list(self._notes),
        }
