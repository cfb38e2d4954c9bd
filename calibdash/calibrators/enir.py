"""ENIR: an ensemble of near-isotonic regressions. Naeini & Cooper, *Binary Classifier Calibration using an Ensemble
of Near Isotonic Regression Models*, IEEE ICDM 2016 (arXiv:1511.05191). Authors' code: github.com/pakdaman/calibration,
``ENIR/`` (the R package ``enir``, ``enir.build`` / ``enir.predict``, and the ``neariso`` package it calls; the
MATLAB+R interface ``build.m`` / ``predict.m`` does the same but for the rounding noted below).

Nearly-isotonic regression (Tibshirani, Hoefling & Tibshirani 2011) relaxes isotonic regression: for a penalty
``lambda`` the fit to the 0/1 labels of the sorted scores minimises ``1/2 sum (z_i - b_i)^2 + lambda sum (b_i -
b_(i+1))_+`` (``lambda = 0``: the labels; large ``lambda``: the isotonic fit). The modified PAV algorithm gives the
whole path as merges of adjacent groups (:mod:`._nearly_isotonic`); the models are the fits at its breakpoints, each
scored by BIC, and ENIR averages their maps weighted by ``exp((BIC_min - BIC_i) / 2)`` (Bayesian model averaging with
BIC scores, as BBQ averages binnings).

The paper's text is not in ``shared/papers``; we follow the authors' R package ``enir`` (their final release; the
MATLAB interface differs only where noted):

* points: rows sorted by score; tied scores become one point, target their mean label, weight their number
  (``neariso2``'s merge of equal ``x``);
* path: breakpoints 0 and every distinct ``lambda`` where groups merge (within a relative 1e-9:
  :func:`~._nearly_isotonic.breakpoints`); above ``max_models`` of them, ``max_models`` evenly by index,
  ``round((0 .. T-1) / (T-1) * (L-1))``, as the package's ``nearisoGetBreakpoints(maxBreaks = 100)``; the model at
  ``lambda = 0`` (the data) is then dropped as the code's "dummy model";
* fitted values are rounded to 6 decimals and clipped to [0, 1] (the R package's ``round(beta * 10^6) / 10^6``;
  ``build.m`` only clips);
* degrees of freedom: the number of distinct fitted values, changes between neighbouring points plus one (``getDF``;
  the number of fused groups, an unbiased estimate of nearly-isotonic regression's degrees of freedom by Tibshirani et
  al. 2011), replacing ``neariso``'s own ``df``, a breakpoint counter (``n - k`` at the ``k``-th breakpoint): "my df
  which seems to be more reasonable" (``build.m``);
* score: ``BIC = -2 log L + df (log N + log 2 pi)``, the Bernoulli log-likelihood of all ``N`` training rows under the
  rounded fitted values (``getScoreLocal``; ``build.m`` keeps the textbook ``-2 log L + df log N`` commented out: the
  extra ``log 2 pi`` per parameter moves the weights towards smaller models); AIC and AICc are the package's other
  options (``criterion``). Models with an infinite score (a rounded 0 or 1 under a row of the other class) are dropped;
* weights: ``exp((S_min - S_i) / 2)``, normalised; the code also computes an "elbow" pruning but ``enir.predict``
  averages all models, as here;
* smoothing: each run of equal fitted values is shrunk towards its rows' mean score, ``(p cnt + e (1 - |o - e|)) / (cnt
  + 1 - |o - e|)`` (``p`` the fitted value, ``cnt`` the rows, ``o`` their positive rate, ``e`` their mean score;
  ``smoothBeta``: "similar to what we did in BBQ");
* prediction: each model interpolates linearly between its smoothed values at consecutive distinct training scores,
  constant beyond the ends (``getMA`` / ``findIdx``); ENIR is their weighted average.

Two numerical departures change nothing beyond rounding: the fit at breakpoint ``lambda_k`` has the groups merging
there already merged (the code evaluates them unmerged; their values are equal there), and the averaged map is
computed once on the distinct training scores (the code averages the models' interpolations per new score; equal, as
all models interpolate between the same scores). Where the code would stop with an error we carry on: if every model's
score is infinite, the isotonic end of the path (largest ``lambda``) is used alone.

Sample weights: a row of weight ``w`` counts as ``w`` rows: a point's target is its rows' weighted mean label, its
weight their total (rows of weight 0 are absent); the log-likelihood, the criteria's ``N`` and the smoothing's counts
and means are weight sums, so whole weights fit as the rows repeated. Scaling weights by ``c`` scales the breakpoints
by ``c`` and leaves each near-isotonic fit unchanged, but not the ensemble: log-likelihood and ``N`` grow with ``c``
against the fixed penalty per parameter (like ``c`` times more data), and the smoothing pulls less.

Speed: the path is one heap-driven pass, ``O(n log n)``, its merges in a Python loop (about 10 microseconds each); each
of the (at most ``max_models``) models is a few vectorised passes over the groups left after equal neighbours fuse at
``lambda = 0``. On the project's 2-core machine (``bench/bench_enir.py``, CPU time): about 0.02 s at 10^4 rows, 0.3 s
at 10^5 (netcal's ENIR: 222 s) and 4.5 s at 10^6.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._nearly_isotonic import NearIsoPath, breakpoints, group_slopes, near_isotonic_path
from ..core.step_maps import collapse_ties
from .base import CurveCalibrator, HyperParam, check_setting

__all__ = ["ENIR", "ENIRPath", "enir_path", "map_knots", "CRITERION_LABEL"]

CRITERIA = ("bic", "aic", "aicc")
CRITERION_LABEL = {"bic": "BIC", "aic": "AIC", "aicc": "AICc"}
#: The R package rounds the fitted values to this many decimals before scoring.
DECIMALS = 6
_LOG_2PI = math.log(2.0 * math.pi)


def select_breakpoints(lams: np.ndarray, max_models: int) -> np.ndarray:
    """Indices of the breakpoints kept: all, or ``max_models`` evenly by index as the neariso
    package's ``nearisoGetBreakpoints`` (R's ``round`` halves to even, as numpy's)."""
    n = lams.size
    if n <= max_models:
        return np.arange(n)
    if max_models == 1:
        return np.array([0])
    idx = np.arange(max_models) / (max_models - 1) * (n - 1)
    return np.round(idx).astype(np.int64)


def information_criterion(loglik: np.ndarray, df: np.ndarray, n: float, criterion: str) -> np.ndarray:
    """The authors' ``getScoreLocal``: BIC ``-2 logL + df (log N + log 2 pi)``, AIC ``-2 logL + 2 df``,
    AICc ``AIC + 2 df (df + 1) / (N - df - 1)`` (infinite when ``N - df - 1 <= 0``)."""
    loglik = np.asarray(loglik, dtype=float)
    df = np.asarray(df, dtype=float)
    if criterion == "bic":
        return -2.0 * loglik + df * (math.log(n) + _LOG_2PI)
    aic = -2.0 * loglik + 2.0 * df
    if criterion == "aic":
        return aic
    gap = n - df - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, aic + 2.0 * df * (df + 1.0) / np.where(gap > 0, gap, 1.0), np.inf)


@dataclass
class ENIRPath:
    """Everything :func:`enir_path` computes: the merged training points ``x, pos, wt`` (distinct scores, positives,
    rows; weight sums with sample weights), ``n_rows`` (the ``N`` of the criterion), the solved nearly-isotonic
    ``path`` over the points, ``n_breakpoints`` (of the whole path, 0 included, before thinning); per model on the
    thinned path, by increasing lambda, its ``lam``, ``df`` (distinct fitted values), ``loglik`` and criterion
    ``score``, whether it is ``kept`` in the average (not lambda = 0, finite score), its normalised ``weight`` (0 for
    the others) and ``values``, its smoothed value at every point (None where its weight is 0); and ``map_p``, the
    averaged map at every point."""

    x: np.ndarray
    pos: np.ndarray
    wt: np.ndarray
    n_rows: float
    path: NearIsoPath
    n_breakpoints: int
    lam: np.ndarray
    df: np.ndarray
    loglik: np.ndarray
    score: np.ndarray
    kept: np.ndarray
    weight: np.ndarray
    values: list
    map_p: np.ndarray


def enir_path(scores, labels, *, sample_weight=None, max_models: int = 100, criterion: str = "bic") -> ENIRPath:
    """Build ENIR's models on checked ``scores``, 0/1 ``labels`` and weights (None: unit weights), deterministically:
    :func:`calibdash.explain.enir.explain` calls it again on the same rows to show the path and the models' maps."""
    check_setting(lambda v: v in CRITERIA, criterion, f"criterion must be one of {CRITERIA}")
    check_setting(lambda v: not isinstance(v, bool) and float(v).is_integer() and v >= 1, max_models,
                  "max_models must be an integer of at least 1")
    x, wt, pos = collapse_ties(np.asarray(scores, dtype=float), np.asarray(labels, dtype=float), sample_weight)
    wt = wt.astype(float)
    n_rows = float(wt.sum())
    path = near_isotonic_path(pos, wt)
    n = x.size
    # units: the groups at lambda = 0 (equal neighbours fused); every model is coarser
    base = np.r_[0, np.flatnonzero(path.death > 0.0) + 1].astype(np.int64)
    us = np.add.reduceat(pos, base)
    uw = np.add.reduceat(wt, base)
    usx = np.add.reduceat(wt * x, base)
    n_units = base.size
    all_lams = breakpoints(path)
    lams = all_lams[select_breakpoints(all_lams, int(max_models))]
    k = lams.size
    df = np.zeros(k, dtype=np.int64)
    loglik = np.zeros(k)
    fits = []
    for i, lam in enumerate(lams):
        # the groups at lam over the units: their starts (unit indices), positives, weights and rounded, clipped values
        gstart = np.r_[0, np.flatnonzero(path.death[base[1:] - 1] > lam) + 1]
        gs = np.add.reduceat(us, gstart)
        gw = np.add.reduceat(uw, gstart)
        v = (gs + lam * group_slopes(path.viol, base[gstart])) / gw
        v = np.clip(np.round(v * 10.0 ** DECIMALS) / 10.0 ** DECIMALS, 0.0, 1.0)
        df[i] = 1 + int(np.count_nonzero(np.diff(v)))
        neg = gw - gs                                      # log-likelihood: -inf at 0 or 1 under the other class
        with np.errstate(divide="ignore"):
            a = np.where(gs > 0, gs * np.log(np.where(gs > 0, v, 1.0)), 0.0)
            b = np.where(neg > 0, neg * np.log1p(-np.where(neg > 0, v, 0.0)), 0.0)
        loglik[i] = float(a.sum() + b.sum())
        fits.append((gstart, gs, gw, v))
    score = information_criterion(loglik, df, n_rows, criterion)
    kept = np.isfinite(score)
    if k > 1:
        kept[0] = False                                    # the code's "dummy model" at lambda = 0
    weight = np.zeros(k)
    if kept.any():
        rel = np.exp((score[kept].min() - score[kept]) / 2.0)
        weight[kept] = rel / rel.sum()
    else:                                                  # the code would fail: use the isotonic end
        kept[-1] = True
        weight[-1] = 1.0
    values: list = [None] * k
    acc = np.zeros(n_units)
    total = 0.0
    for i in range(k):
        if weight[i] <= 0:
            continue
        gstart, gs, gw, v = fits[i]
        run = np.r_[0, np.flatnonzero(np.diff(v) != 0) + 1]          # smoothBeta on runs of equal values
        rw = np.add.reduceat(gw, run)
        o = np.add.reduceat(gs, run) / rw
        e = np.add.reduceat(np.add.reduceat(usx, gstart), run) / rw
        ce = np.abs(o - e)
        b2 = np.repeat((v[run] * rw + e * (1.0 - ce)) / (rw + (1.0 - ce)), np.diff(np.r_[gstart[run], n_units]))
        values[i] = np.repeat(b2, np.diff(np.r_[base, n]))
        acc += weight[i] * b2
        total += weight[i]
    map_p = np.repeat(acc / total, np.diff(np.r_[base, n]))
    return ENIRPath(x=x, pos=pos, wt=wt, n_rows=n_rows, path=path, n_breakpoints=int(all_lams.size), lam=lams,
                    df=df, loglik=loglik, score=score, kept=kept, weight=weight, values=values, map_p=map_p)


def map_knots(x: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The knots of the piecewise-linear map through ``(x, p)``: the first and last score of each run of equal values
    (inner points of a run lie on its constant piece, so dropping them changes no prediction)."""
    if x.size == 0:
        return x, p
    change = np.flatnonzero(np.diff(p) != 0)
    idx = np.unique(np.r_[0, change + 1, change, x.size - 1])    # each run's first and last point
    return x[idx], p[idx]


class ENIR(CurveCalibrator):
    """Ensemble of near-isotonic regressions (ENIR), as the module docstring says.

    Parameters
    ----------
    max_models : int, default 100
        At most this many breakpoints of the lambda path are used, evenly by index (the neariso package's
        ``maxBreaks``, 100 in the authors' code); the one at lambda = 0 is then dropped, so at most ``max_models - 1``
        models are averaged.
    criterion : {"bic", "aic", "aicc"}, default "bic"
        Score behind the weights ``exp((S_min - S) / 2)``: the paper's BIC (with the code's ``log 2 pi`` per
        parameter), or the R package's AIC and AICc options.

    Attributes
    ----------
    knots_, values_ : ndarray
        The averaged map: linear between consecutive knots (distinct training scores), constant beyond the first and
        last.
    n_models_ : int
        Number of models averaged (positive weight).
    lambda_, weight_ : ndarray
        Their penalties and weights (sum to 1), by increasing lambda.
    """

    name = "enir"
    order = 90
    color = "#CC6677"   # rose (Tol)
    label = "ENIR"
    summary = "ensemble of near-isotonic regressions"
    paper = ("M. Pakdaman Naeini, G. F. Cooper. Binary Classifier Calibration using an Ensemble of Near "
             "Isotonic Regression Models. IEEE ICDM 2016.")
    hyperparams = (
        HyperParam("max_models", "T", "int", 100, low=2, high=400, log=True,
                   help="Most breakpoints of the λ path used (evenly by index); the authors use 100."),
        HyperParam("criterion", "IC", "choice", "bic", choices=CRITERIA,
                   help="Model score behind the weights exp(-score/2); the paper uses BIC."),
    )
    curve, steps = ("knots_", "values_", "knots", "values"), False

    def __init__(self, max_models: int = 100, criterion: str = "bic"):
        self._keep(locals())

    def _fit(self, s, y, features, w):
        res = enir_path(s, y, sample_weight=w, max_models=self.max_models, criterion=self.criterion)
        self.knots_, self.values_ = map_knots(res.x, res.map_p)
        used = res.weight > 0
        self.n_models_ = int(used.sum())
        self.lambda_ = res.lam[used]
        self.weight_ = res.weight[used]

    def _import_state(self, state) -> None:
        super()._import_state(state)
        if self.knots_.size == 0:
            raise state.error("'knots' is empty")
