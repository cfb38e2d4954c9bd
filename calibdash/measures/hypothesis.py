"""Tests of calibration: Spiegelhalter's (1986) z and the Hosmer-Lemeshow C-hat test, each with its statistic, its
p-value and a plain sentence reading it. A row of weight ``w`` counts as ``w`` rows (:mod:`calibdash.measures`)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import SettingsError
from .binning import check_binning, check_inputs, check_level, check_rows, is_whole, quantile_bins, tied_groups

__all__ = []


def _reading(p_value: float, alpha: float, test: str, detail: str) -> str:
    """One plain sentence on a calibration test's p-value."""
    pct = f"{100 * alpha:g}%"
    if not np.isfinite(p_value):
        return f"{test} cannot be computed on these data ({detail})."
    if p_value < alpha:
        return f"Evidence of miscalibration at the {pct} level ({test}: {detail})."
    return f"No evidence of miscalibration at the {pct} level ({test}: {detail})."


def _fmt_p(p_value: float) -> str:
    return "p < 0.0001" if p_value < 1e-4 else f"p = {p_value:.4f}".rstrip("0").rstrip(".")


def spiegelhalter_z(probs, labels, sample_weight=None, alpha: float = 0.05) -> dict:
    """Spiegelhalter's (1986) z test of calibration, with its two-sided p-value and a ``reading`` at level ``alpha``.

    ``z = sum (y - p)(1 - 2p) / sqrt( sum (1 - 2p)^2 p (1 - p) )`` (weighted sums): the Brier score minus its
    expectation under perfect calibration, divided by its standard deviation under perfect calibration
    (Spiegelhalter, "Probabilistic prediction in patient management and clinical trials", Stat Med 1986),
    approximately standard normal when every ``p`` is the true probability. Returns a dict of ``z`` (NaN when every
    prediction is 0, 0.5 or 1), ``p_value`` and ``reading`` (one sentence).
    """
    alpha = check_level(alpha)
    p, y, w, _ = check_rows(probs, labels, sample_weight)
    a = 1.0 - 2.0 * p
    num = float(np.dot(w, (y - p) * a))
    var = float(np.dot(w, a * a * p * (1.0 - p)))
    if var > 0:
        z = num / math.sqrt(var)
        pv = float(2.0 * stats.norm.sf(abs(z)))
        detail = f"z = {z:.2f}, {_fmt_p(pv)}"
    else:
        z = pv = float("nan")
        detail = "every prediction is 0, 0.5 or 1, so z has no variance"
    return {"z": z, "p_value": pv, "reading": _reading(pv, alpha, "Spiegelhalter's z test", detail)}


def hosmer_lemeshow(probs, labels, sample_weight=None, n_groups: int = 10, alpha: float = 0.05) -> dict:
    """Hosmer-Lemeshow goodness-of-fit test over ``n_groups`` groups of equal size ("deciles of risk").

    The rows sorted by prediction are cut into groups of equal weight (the ``"quantile"`` bins of
    :mod:`calibdash.measures.binning`, as the package's ECE). With ``n_g`` the weight, ``O_g`` the observed positives
    and ``E_g = sum p`` the expected positives of group ``g``, ``C = sum_g (O_g - E_g)^2 / (n_g pbar_g (1 -
    pbar_g))``, referred to a chi-squared distribution with ``G - 2`` degrees of freedom (Hosmer & Lemeshow 1980;
    Lemeshow & Hosmer 1982, the C-hat statistic), ``G`` the number of non-empty groups: the test for the data a model
    was fitted on (on new data ``G`` degrees of freedom are sometimes used; Hosmer & Lemeshow, Applied Logistic
    Regression, 2013, 5.2.2). R's ``ResourceSelection::hoslem.test`` cuts at the values of the sample quantiles
    instead, which keeps ties together and can make groups of unequal size; without ties and with ``N`` a multiple of
    ``n_groups`` the groups are the same.

    Returns a dict of ``statistic``, ``df``, ``p_value``, ``reading`` (at level ``alpha``) and ``table``, one row per
    group: ``group``, ``lower``, ``upper`` (smallest and largest prediction), ``count``, ``observed``, ``expected``,
    ``observed_rate``, ``mean_pred``. A group whose expected count of a class is 0 contributes 0 when the observed
    count is 0 too, infinity otherwise.
    """
    alpha = check_level(alpha)
    p, y, w_or_none = check_inputs(probs, labels, sample_weight)
    n_groups = check_binning(n_groups, "quantile", w_or_none is not None)
    if n_groups < 3:
        raise SettingsError(f"the Hosmer-Lemeshow test needs at least 3 groups (it has G - 2 degrees of "
                            f"freedom), got {n_groups}.")
    b = quantile_bins(tied_groups(p, y, w_or_none), n_groups)
    keep = b.count > 0
    n, obs, exp_ = b.count[keep], b.sum_y[keep], b.sum_p[keep]

    def part(o, e):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(e > 0, (o - e) ** 2 / np.where(e > 0, e, 1.0), np.where(np.isclose(o, 0.0), 0.0, np.inf))

    stat = float(np.sum(part(obs, exp_) + part(n - obs, n - exp_)))
    df = int(keep.sum()) - 2
    pv = float(stats.chi2.sf(stat, df)) if df > 0 else float("nan")
    detail = (f"C = {stat:.2f} on {df} df, {_fmt_p(pv)}" if df > 0
              else f"only {df + 2} non-empty groups, too few for G - 2 degrees of freedom")
    whole = is_whole(w_or_none)
    table = pd.DataFrame({
        "group": np.arange(int(keep.sum())),
        "lower": b.lower[keep], "upper": b.upper[keep],
        "count": np.round(n).astype(np.int64) if whole else n,
        "observed": obs, "expected": exp_,
        "observed_rate": obs / n, "mean_pred": exp_ / n,
    })
    return {"statistic": stat, "df": df, "p_value": pv,
            "reading": _reading(pv, alpha, "Hosmer-Lemeshow test", detail), "table": table}
