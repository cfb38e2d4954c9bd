"""Explaining the logistic family: a fitted Platt scaling (its slope, intercept and log-likelihood on its training
rows against the targets and weights ``fit`` used); a fitted beta calibration by fitting it again
(:func:`calibdash.calibrators.beta.fit_beta`, as ``fit``), beside Platt scaling (unsmoothed targets) on the same rows;
a fitted temperature scaling by fitting ``T`` again
(:func:`calibdash.calibrators.temperature.fit_inverse_temperature`), with its likelihood around ``T``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit

from ..calibrators.beta import BetaCalibrator, beta_features, beta_map, fit_beta, log_likelihood
from ..calibrators.platt import PlattCalibrator, logit, targets
from ..calibrators.platt import log_likelihood as platt_log_likelihood
from ..calibrators.temperature import (TemperatureCalibrator, fit_inverse_temperature, negative_log_likelihoods,
                                      nll_grad_hess)
from ..calibrators.temperature import log_likelihood as temperature_log_likelihood
from ..measures.binning import reliability_table
from . import Explanation, explains, not_the_rows, training_rows

__all__ = ["BetaExplanation", "TemperatureExplanation"]

#: The training rows are pooled into this many equal-weight groups (fewer when scores tie), for beta and temperature.
N_GROUPS = 20
#: Largest relative difference between the calibrator's a, b, c and those fitted again from the rows.
MAP_TOL = 1e-7


def score_grid() -> np.ndarray:
    """Scores the maps are tabled at: 0.001 steps, refined log-evenly towards 0 and 1 (down to 1e-12 and 1 - 1e-12,
    where the calibrators clip) where beta maps bend sharply; 0 and 1 included."""
    tail = np.geomspace(1e-12, 1e-3, 91)
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, 1001), tail, 1.0 - tail]))


def equal_weight_groups(s, y, sample_weight, n_groups: int) -> pd.DataFrame:
    """The rows in about ``n_groups`` equal-weight groups (fewer when scores tie): ``score`` (mean score), ``rate``
    (positive rate), ``weight`` (rows, or weight sum)."""
    table = reliability_table(s, y, n_bins=max(1, int(n_groups)), strategy="quantile", sample_weight=sample_weight)
    table = table[table["count"] > 0]
    return pd.DataFrame({"score": table["mean_pred"].to_numpy(), "rate": table["obs_freq"].to_numpy(),
                         "weight": table["count"].to_numpy()})


@dataclass(kw_only=True)
class BetaExplanation(Explanation):
    """What :func:`explain` finds behind a fitted beta calibration, ``mu(s) = 1 / (1 + 1 / (e^c s^a / (1 - s)^b))``:
    ``parameters`` (``"abm"``, ``"am"`` or ``"ab"``), ``a``, ``b``, ``c``, the midpoint ``m`` (``mu(m) = 1/2``,
    ``c = b ln(1 - m) - a ln m``; NaN when the map never crosses 1/2), ``log_likelihood`` of the training labels
    (each row's term times its weight when weighted), ``dropped`` (``"a"`` or ``"b"`` when the ``"abm"`` fit set that
    coefficient to 0 and refitted, else ``""``), ``platt_a``, ``platt_b``, ``platt_log_likelihood`` (Platt scaling
    ``sigmoid(A logit(s) + B)`` on the same rows and weights), ``curve`` (``score`` on :func:`score_grid`, ``beta``,
    ``platt``, and on the log-odds scale ``logit`` of the score clipped as the calibrators clip it, ``beta_logodds``
    ``a ln s - b ln(1 - s) + c`` and ``platt_logodds`` ``A logit(s) + B``), ``groups`` (the training rows in about
    ``N_GROUPS`` groups, :func:`equal_weight_groups`) and ``score_range`` (smallest and largest training score of
    positive weight)."""

    parameters: str
    a: float
    b: float
    c: float
    m: float
    log_likelihood: float
    dropped: str
    platt_a: float
    platt_b: float
    platt_log_likelihood: float
    curve: pd.DataFrame
    groups: pd.DataFrame
    score_range: tuple


def _notes(ex: BetaExplanation, n_rows: int, weighted: bool) -> list[str]:
    rows = f"{n_rows:,} rows" + (" (weighted)" if weighted else "")
    notes = [f"Beta calibration ({ex.parameters}) on {rows}: mu(s) = 1 / (1 + 1 / (e^c s^a / (1 − s)^b)) with "
             f"a = {ex.a:.4g}, b = {ex.b:.4g}, c = {ex.c:.4g}; fitted as a logistic regression (maximum likelihood, "
             "no penalty) on ln s and −ln(1 − s)."]
    if ex.parameters == "abm":
        if ex.dropped:
            feature = "ln s" if ex.dropped == "a" else "−ln(1 − s)"
            notes.append(f"The first fit gave {ex.dropped} < 0, so {feature} was dropped ({ex.dropped} = 0) and the "
                         "regression refitted without it, as the authors' procedure does.")
        else:
            notes.append("Both coefficients came out non-negative, so the first fit is the map (no refit).")
    elif ex.parameters == "am":
        notes.append("With a = b the map is sigmoid(a logit(s) + c): Platt scaling on the log-odds, so it equals "
                     "the Platt fit below up to the solvers' tolerance.")
    else:
        notes.append("With m = 1/2 fixed, c = (a − b) ln 2 and a score of 1/2 stays 1/2.")
    if math.isnan(ex.m):
        notes.append("The map never crosses 1/2 on (0, 1), so it has no midpoint m.")
    else:
        notes.append(f"Midpoint m = {ex.m:.4g}: the score the map sends to 1/2 (c = b ln(1 − m) − a ln m).")
    diff = ex.log_likelihood - ex.platt_log_likelihood
    notes.append(f"Log-likelihood {ex.log_likelihood:,.2f} against {ex.platt_log_likelihood:,.2f} for Platt scaling "
                 f"on the same rows ({diff:+,.2f}).")
    return notes


@explains(BetaCalibrator)
def explain(calibrator, scores, labels, features=None, *, sample_weight=None,
            n_groups: int = N_GROUPS) -> BetaExplanation:
    """Explain a fitted beta calibration on the rows it was fitted on (the arguments: :func:`calibdash.explain.explain`;
    ``n_groups``: the most equal-weight groups of training rows in ``groups``). Its tables: ``fit`` (``parameters``,
    ``a``, ``b``, ``c``, ``m``, ``log_likelihood``, ``rows``, and ``weight`` when weighted), ``steps`` (each logistic
    regression fitted: ``features``, ``a``, ``b``, ``c`` (NaN for a coefficient it has not), ``log_likelihood``,
    ``n_iter``, ``kept``) and ``comparison`` (beta and Platt: ``method``, ``parameters``, ``log_likelihood``).
    """
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    again = fit_beta(s, y, w, cal.parameters, cal.max_iter, cal.tol)
    if not all(math.isclose(u, v, rel_tol=MAP_TOL, abs_tol=MAP_TOL)
               for u, v in ((again.a, cal.a_), (again.b, cal.b_), (again.c, cal.c_))):
        raise not_the_rows("beta calibration", f"fitting them again gives a, b, c = {again.a:.6g}, {again.b:.6g}, "
                           f"{again.c:.6g}, not {cal.a_:.6g}, {cal.b_:.6g}, {cal.c_:.6g}")
    ll = log_likelihood(cal.a_, cal.b_, cal.c_, s, y, w)
    platt = PlattCalibrator().fit(s, y, sample_weight=w)
    platt_ll = platt_log_likelihood(platt.a_, platt.b_, s, y.astype(float), w)
    dropped = ""
    if cal.parameters == "abm" and len(again.steps) > 1:
        dropped = "a" if again.steps[0]["a"] < 0 else "b"

    grid = score_grid()
    x1, x2 = beta_features(grid)
    curve = pd.DataFrame({"score": grid, "beta": beta_map(cal.a_, cal.b_, cal.c_, grid), "platt": platt.predict(grid),
                          "logit": x1 + x2, "beta_logodds": cal.a_ * x1 + cal.b_ * x2 + cal.c_,
                          "platt_logodds": platt.a_ * (x1 + x2) + platt.b_})
    groups = equal_weight_groups(s, y, w, n_groups)
    used = s if w is None else s[w > 0]

    fit = pd.DataFrame({"parameters": [cal.parameters], "a": [cal.a_], "b": [cal.b_], "c": [cal.c_], "m": [cal.m_],
                        "log_likelihood": [ll], "rows": [s.size]})
    if w is not None:
        fit["weight"] = float(w.sum())
    steps = pd.DataFrame(list(again.steps))
    comparison = pd.DataFrame({"method": ["beta", "platt"],
                               "parameters": [f"a={cal.a_:.6g}, b={cal.b_:.6g}, c={cal.c_:.6g}",
                                              f"A={platt.a_:.6g}, B={platt.b_:.6g}"],
                               "log_likelihood": [ll, platt_ll]})
    ex = BetaExplanation(
        method=cal.name, tables={"fit": fit, "steps": steps, "comparison": comparison},
        parameters=cal.parameters, a=cal.a_, b=cal.b_, c=cal.c_, m=cal.m_, log_likelihood=ll, dropped=dropped,
        platt_a=platt.a_, platt_b=platt.b_, platt_log_likelihood=platt_ll, curve=curve, groups=groups,
        score_range=(float(used.min()), float(used.max())))
    ex.notes = _notes(ex, s.size, w is not None)
    return ex


@dataclass(kw_only=True)
class PlattExplanation(Explanation):
    """What :func:`explain` finds behind a fitted Platt scaling, ``p = sigmoid(A logit(s) + B)``: ``A``, ``B``, and
    ``log_likelihood``, of the training targets (the labels, or Platt's smoothed targets) at ``A``, ``B``, each row's
    term times its weight when fitted with weights."""

    drawn: ClassVar[bool] = False               # its notes and tables; its map is the calibration map
    A: float
    B: float
    log_likelihood: float


@explains(PlattCalibrator)
def explain_platt(calibrator, scores, labels, features=None, sample_weight=None) -> PlattExplanation:
    """Explain a fitted Platt scaling on the rows it was fitted on: its ``fit`` table has ``A``, ``B``,
    ``log_likelihood``, ``rows`` and, when fitted with weights, ``weight`` (their total) (the arguments:
    :func:`calibdash.explain.explain`)."""
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    ll = platt_log_likelihood(cal.a_, cal.b_, s, targets(y, cal.smooth_targets, w), w)
    fit = pd.DataFrame({"A": [cal.a_], "B": [cal.b_], "log_likelihood": [ll], "rows": [s.size]})
    if w is not None:
        fit["weight"] = float(w.sum())
    return PlattExplanation(method=cal.name, tables={"fit": fit}, A=cal.a_, B=cal.b_, log_likelihood=ll)


#: Temperatures at which the negative log-likelihood is tabled.
N_CURVE = 81
#: Largest relative difference between the calibrator's T and the T fitted again from the rows.
T_TOL = 1e-8


@dataclass(kw_only=True)
class TemperatureExplanation(Explanation):
    """What :func:`explain` finds behind a fitted temperature scaling, ``p = sigmoid(logit(s) / T)``: ``temperature``
    ``T``; ``log_likelihood`` and ``log_likelihood_at_1`` of the training labels at ``T`` and at ``T = 1`` (each
    row's term times its weight when weighted); ``se_log_t``, the approximate standard error of ``log T`` from the
    observed information of ``1/T`` (weights counted as rows; NaN at a bound); ``at_bound``, ``"t_min"`` or
    ``"t_max"`` when ``T`` stopped at that end of the calibrator's range, else ``""``; ``total_weight`` (rows, or
    their weight); ``nll_curve``: ``temperature`` (log-spaced, covering ``T``, 1 and a factor of 4 either side),
    ``nll`` and ``mean_nll`` (per row, or unit weight); ``curve`` (``score``, ``prob``: the map on a score grid);
    ``groups``, the training rows in about ``N_GROUPS`` groups (:func:`equal_weight_groups`)."""

    temperature: float
    log_likelihood: float
    log_likelihood_at_1: float
    se_log_t: float
    at_bound: str
    total_weight: float
    nll_curve: pd.DataFrame
    curve: pd.DataFrame
    groups: pd.DataFrame


def _temperature_notes(ex: TemperatureExplanation, n_rows: int, weighted: bool) -> list[str]:
    t = ex.temperature
    rows = f"{n_rows:,} rows" + (" (weighted)" if weighted else "")
    kind = ("softens over-confident scores" if t > 1 else "sharpens under-confident scores" if t < 1
            else "leaves the scores as they are")
    notes = [f"Temperature scaling on {rows}: p = sigmoid(logit(s) / T) with T = {t:.4g}, which {kind} "
             "(the order of the scores never changes)."]
    if ex.at_bound:
        why = ("the scores rank the labels no better than chance, or the wrong way round, so the flattest map, "
               "1/2 everywhere, fits best"
               if ex.at_bound == "t_max" else "the scores separate the classes at 1/2, so the steepest map fits best")
        notes.append(f"T stopped at {ex.at_bound} = {t:.4g}: the likelihood still grows beyond it ({why}).")
    elif math.isfinite(ex.se_log_t):
        lo, hi = t * math.exp(-1.96 * ex.se_log_t), t * math.exp(1.96 * ex.se_log_t)
        notes.append(f"Approximate 95% interval for T: {lo:.4g} to {hi:.4g} (from the curvature of the likelihood, "
                     "weights counted as rows).")
    gain = ex.log_likelihood - ex.log_likelihood_at_1
    notes.append(f"Log-likelihood {ex.log_likelihood:,.2f} against {ex.log_likelihood_at_1:,.2f} for the scores as "
                 f"they are (T = 1): {gain:+,.2f}, a mean log-loss of {-ex.log_likelihood / ex.total_weight:.4f} "
                 f"instead of {-ex.log_likelihood_at_1 / ex.total_weight:.4f}.")
    return notes


@explains(TemperatureCalibrator)
def explain_temperature(calibrator, scores, labels, features=None, *, sample_weight=None,
                        n_groups: int = N_GROUPS) -> TemperatureExplanation:
    """Explain a fitted temperature scaling on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`; ``n_groups``: how many equal-weight groups of training rows ``groups`` holds at
    most). Its tables: ``fit`` (one row: ``temperature``, ``inverse_temperature``, ``log_likelihood``,
    ``log_likelihood_at_1``, ``se_log_t``, ``rows`` and, when fitted with weights, ``weight``) and ``nll_curve``.
    """
    cal = calibrator
    s, y, w = training_rows(cal, scores, labels, sample_weight)
    lo, hi = cal._check_settings()
    z = logit(s)
    beta, _ = fit_inverse_temperature(z, y, w, 1.0 / hi, 1.0 / lo, cal.max_iter, cal.tol)
    t_again = hi if beta <= 1.0 / hi else lo if beta >= 1.0 / lo else 1.0 / beta
    t = cal.temperature_
    if abs(t_again - t) > T_TOL * t:
        raise not_the_rows("temperature scaling", f"fitting them again gives T = {t_again:.8g}, not {t:.8g}")
    ll = temperature_log_likelihood(t, s, y, w)
    ll1 = temperature_log_likelihood(1.0, s, y, w)
    total = float(s.size if w is None else w.sum())
    at_bound = "t_max" if t >= hi else "t_min" if t <= lo else ""
    h = nll_grad_hess(1.0 / t, z, y.astype(float), w)[2]
    # var(1/T) ~ 1/h; log T = -log(1/T), so se(log T) = se(1/T) * T
    se = math.sqrt(1.0 / h) * t if (h > 0 and not at_bound) else math.nan

    span = np.geomspace(min(t, 1.0) / 4, max(t, 1.0) * 4, N_CURVE)
    temps = np.unique(np.concatenate([span[(span >= lo) & (span <= hi)], [t, 1.0]]))
    nll = negative_log_likelihoods(temps, s, y, w)
    nll_curve = pd.DataFrame({"temperature": temps, "nll": nll, "mean_nll": nll / total})

    grid = score_grid()
    curve = pd.DataFrame({"score": grid, "prob": expit(logit(grid) / t)})
    groups = equal_weight_groups(s, y, w, n_groups)

    fit = pd.DataFrame({"temperature": [t], "inverse_temperature": [1.0 / t], "log_likelihood": [ll],
                        "log_likelihood_at_1": [ll1], "se_log_t": [se], "rows": [s.size]})
    if w is not None:
        fit["weight"] = total
    ex = TemperatureExplanation(
        method=cal.name, tables={"fit": fit, "nll_curve": nll_curve}, temperature=t, log_likelihood=ll,
        log_likelihood_at_1=ll1, se_log_t=se, at_bound=at_bound, total_weight=total, nll_curve=nll_curve,
        curve=curve, groups=groups)
    ex.notes = _temperature_notes(ex, s.size, w is not None)
    return ex
