"""Murphy's (1973) decomposition of the Brier score, by distinct forecast or binned (a row of weight ``w`` counts
as ``w`` rows, :mod:`calibdash.measures`)."""
from __future__ import annotations

import numpy as np

from ..core.errors import SettingsError
from .binning import (STRATEGIES, Groups, bin_sums, check_binning, check_rows, quantile_bins, row_bins, tied_groups,
                      uniform_ids)

__all__ = []


def brier_decomposition(probs, labels, sample_weight=None, n_bins: int | None = None,
                        strategy: str = "quantile") -> dict:
    """Murphy's (1973) decomposition of the Brier score: reliability - resolution + uncertainty.

    With the forecasts grouped into ``K`` groups of weight ``n_k``, mean forecast ``f_k`` and observed frequency
    ``o_k`` (``N`` rows in all, overall frequency ``o``): reliability ``REL = 1/N sum_k n_k (f_k - o_k)^2`` (0 is
    perfect), resolution ``RES = 1/N sum_k n_k (o_k - o)^2`` (larger is better), uncertainty ``UNC = o (1 - o)``
    (Murphy, "A new vector partition of the probability score", J. Appl. Meteor. 1973). With the default
    ``n_bins=None`` each group is one distinct forecast value and ``Brier = REL - RES + UNC`` exactly. With
    ``n_bins`` the forecasts are binned (``strategy`` ``"quantile"`` or ``"uniform"``) and two within-bin terms
    complete the identity (Stephenson, Coelho & Jolliffe, "Two extra components in the Brier score decomposition",
    Weather and Forecasting 2008): ``Brier = REL - RES + UNC + WBV - WBC`` with the within-bin variance ``WBV = 1/N
    sum_k sum_{i in k} (f_i - f_k)^2`` and covariance ``WBC = 2/N sum_k sum_{i in k} (f_i - f_k)(y_i - o_k)`` (both 0
    without binning).

    Returns a dict of ``reliability``, ``resolution``, ``uncertainty``, ``brier`` (computed directly from the rows),
    ``within_bin_variance``, ``within_bin_covariance`` and ``groups`` (number of non-empty groups).
    """
    p, y, w, w_or_none = check_rows(probs, labels, sample_weight)
    total = float(w.sum())
    if n_bins is None:
        g = tied_groups(p, y, w_or_none)
        count, sum_p, sum_y = g.weight, g.value * g.weight, g.pos
        sum_pp, sum_py = g.value * g.value * g.weight, g.value * g.pos
    else:
        if strategy not in STRATEGIES:
            raise SettingsError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
        n_bins = check_binning(n_bins, strategy, w_or_none is not None)
        if strategy == "quantile":
            g = tied_groups(p, y, w_or_none)
            first = quantile_bins(g, n_bins)
            # the bins depend on the weights only, so the same cut carries f^2 and f*y (tied rows share f)
            second = quantile_bins(Groups(g.value * g.value, g.weight, g.value * g.pos, g.whole), n_bins)
        else:
            ids = uniform_ids(p, n_bins)
            first = bin_sums(p, y, w_or_none, n_bins, strategy)
            second = row_bins(p * p, p * y, w_or_none, ids, n_bins, first.lower, first.upper)
        count, sum_p, sum_y, sum_pp, sum_py = first.count, first.sum_p, first.sum_y, second.sum_p, second.sum_y
    keep = count > 0
    count, sum_p, sum_y, sum_pp, sum_py = count[keep], sum_p[keep], sum_y[keep], sum_pp[keep], sum_py[keep]
    f = sum_p / count
    o = sum_y / count
    obar = float(sum_y.sum() / total)
    rel = float(np.dot(count, (f - o) ** 2) / total)
    res = float(np.dot(count, (o - obar) ** 2) / total)
    if n_bins is None:
        wbv = wbc = 0.0
    else:
        wbv = float(np.sum(sum_pp - count * f * f) / total)
        wbc = float(2.0 * np.sum(sum_py - count * f * o) / total)
    return {
        "reliability": rel, "resolution": res, "uncertainty": obar * (1.0 - obar),
        "brier": float(np.dot(w, (p - y) ** 2) / total),
        "within_bin_variance": wbv, "within_bin_covariance": wbc, "groups": int(keep.sum()),
    }
