"""Explaining a fitted temperature scaling: ``T`` fitted again from the rows it was fitted on
(:func:`calibdash.calibrators.temperature.fit_inverse_temperature`, as ``fit``), the log-likelihood at ``T`` and at
``T = 1``, an approximate standard error of ``log T``, the negative log-likelihood on a grid of temperatures, and the
map beside the training rows pooled into equal-weight groups."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from ..calibrators.platt import logit
from ..calibrators.temperature import (TemperatureCalibrator, fit_inverse_temperature, log_likelihood,
                                      negative_log_likelihoods, nll_grad_hess)
from ..core.validation import check_weights
from . import Explanation, explains, not_the_rows, training_rows
from .beta import equal_weight_groups, score_grid

__all__ = ["TemperatureExplanation"]

#: The training rows are pooled into this many equal-weight groups (fewer when scores tie).
N_GROUPS = 20
#: Temperatures at which the negative log-likelihood is tabled.
N_CURVE = 81
#: Largest relative difference between the calibrator's T and the T fitted again from the rows.
T_TOL = 1e-8


@dataclass(kw_only=True)
class TemperatureExplanation(Explanation):
    """What :func:`explain` finds behind a fitted temperature scaling, ``p = sigmoid(logit(s) / T)``.

    Attributes
    ----------
    temperature : float
        ``T``.
    log_likelihood, log_likelihood_at_1 : float
        Log-likelihood of the training labels at ``T`` and at ``T = 1`` (the scores as they are); each row's term
        times its weight when weighted.
    se_log_t : float
        Approximate standard error of ``log T`` from the observed information of ``1/T`` (weights counted as rows; NaN
        at a bound of the range).
    at_bound : str
        ``"t_min"`` or ``"t_max"`` when ``T`` stopped at that end of the calibrator's range, else ``""``.
    total_weight : float
        The number of rows, or their total weight.
    nll_curve : DataFrame
        ``temperature`` (log-spaced, covering ``T``, 1 and a factor of 4 either side), ``nll`` (the negative
        log-likelihood there) and ``mean_nll`` (per row, or per unit weight).
    curve : DataFrame
        ``score`` and ``prob``: the map on a score grid.
    groups : DataFrame
        The training rows in about ``N_GROUPS`` groups (:func:`calibdash.explain.beta.equal_weight_groups`).
    """

    temperature: float
    log_likelihood: float
    log_likelihood_at_1: float
    se_log_t: float
    at_bound: str
    total_weight: float
    nll_curve: pd.DataFrame
    curve: pd.DataFrame
    groups: pd.DataFrame


def _notes(ex: TemperatureExplanation, n_rows: int, weighted: bool) -> list[str]:
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
def explain(calibrator, scores, labels, features=None, *, sample_weight=None,
            n_groups: int = N_GROUPS) -> TemperatureExplanation:
    """Explain a fitted temperature scaling on the rows it was fitted on (the arguments:
    :func:`calibdash.explain.explain`; ``n_groups``: how many equal-weight groups of training rows ``groups`` holds at
    most). Its tables: ``fit`` (one row: ``temperature``, ``inverse_temperature``, ``log_likelihood``,
    ``log_likelihood_at_1``, ``se_log_t``, ``rows`` and, when fitted with weights, ``weight``) and ``nll_curve``.
    """
    cal = calibrator
    s, y = training_rows(cal, scores, labels)
    w = check_weights(sample_weight, s.size, y)
    lo, hi = cal._check_settings()
    z = logit(s)
    beta, _ = fit_inverse_temperature(z, y, w, 1.0 / hi, 1.0 / lo, cal.max_iter, cal.tol)
    t_again = hi if beta <= 1.0 / hi else lo if beta >= 1.0 / lo else 1.0 / beta
    t = cal.temperature_
    if abs(t_again - t) > T_TOL * t:
        raise not_the_rows("temperature scaling", f"fitting them again gives T = {t_again:.8g}, not {t:.8g}")
    ll = log_likelihood(t, s, y, w)
    ll1 = log_likelihood(1.0, s, y, w)
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
    ex.notes = _notes(ex, s.size, w is not None)
    return ex
