"""Explaining a fitted beta calibration: the map fitted again from the rows it was fitted on
(:func:`calibdash.calibrators.beta.fit_beta`, as ``fit``), its a, b, c and m, the log-likelihood, each logistic
regression the fit ran (the ``"abm"`` fit refits without a feature whose coefficient came out negative), and for
comparison the logistic family the paper improves on, Platt scaling (unsmoothed targets), fitted here on the same rows
and weights."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibrators.beta import BetaCalibrator, beta_features, beta_map, fit_beta, log_likelihood
from ..calibrators.platt import PlattCalibrator
from ..calibrators.platt import log_likelihood as platt_log_likelihood
from ..measures.binning import reliability_table
from ..core.validation import check_weights
from . import Explanation, explains, not_the_rows, training_rows

__all__ = ["BetaExplanation"]

#: The training rows are pooled into this many equal-weight groups (fewer when scores tie).
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
    """What :func:`explain` finds behind a fitted beta calibration, ``mu(s) = 1 / (1 + 1 / (e^c s^a / (1 - s)^b))``.

    Attributes
    ----------
    parameters : str
        The parametrisation (``"abm"``, ``"am"`` or ``"ab"``).
    a, b, c : float
        The map's parameters.
    m : float
        The midpoint, ``mu(m) = 1/2`` (``c = b ln(1 - m) - a ln m``); NaN when the map never crosses 1/2.
    log_likelihood : float
        Log-likelihood of the training labels under the map (each row's term times its weight when weighted).
    dropped : str
        ``"a"`` or ``"b"`` when the ``"abm"`` fit dropped that coefficient (set it to 0 and refitted), else ``""``.
    platt_a, platt_b, platt_log_likelihood : float
        Platt scaling ``sigmoid(A logit(s) + B)`` fitted on the same rows and weights, and its log-likelihood.
    curve : DataFrame
        ``score`` (:func:`score_grid`), ``beta`` (the map) and ``platt`` (the Platt map), and on the log-odds scale
        ``logit`` (of the score, clipped as the calibrators clip it), ``beta_logodds`` (``a ln s - b ln(1 - s) + c``)
        and ``platt_logodds`` (``A logit(s) + B``).
    groups : DataFrame
        The training rows in about ``N_GROUPS`` groups (:func:`equal_weight_groups`).
    score_range : tuple of float
        The smallest and largest training score with positive weight.
    """

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


def _same(x: float, y: float) -> bool:
    return x == y or abs(x - y) <= MAP_TOL * max(1.0, abs(x), abs(y))


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
    """Explain a fitted beta calibration on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`; ``n_groups``: how many equal-weight groups of training rows ``groups`` holds at
    most).

    Its tables: ``fit`` (one row: ``parameters``, ``a``, ``b``, ``c``, ``m``, ``log_likelihood``, ``rows`` and, when
    fitted with weights, ``weight``), ``steps`` (each logistic regression fitted: ``features``, ``a``, ``b``, ``c``
    (NaN for a coefficient it has not), ``log_likelihood``, ``n_iter``, ``kept``) and ``comparison`` (beta and Platt:
    ``method``, ``parameters``, ``log_likelihood``).
    """
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    again = fit_beta(s, y, w, cal.parameters, cal.max_iter, cal.tol)
    if not all(_same(u, v) for u, v in ((again.a, cal.a_), (again.b, cal.b_), (again.c, cal.c_))):
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
