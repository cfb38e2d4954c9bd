"""Calibration statistics of the clinical-prediction literature, and the UI's bin-count rule.

The statistics live in :mod:`calibdash.measures` (one module per concern) and
are re-exported here under their old names:

===================================  ==============================================================
:func:`calibration_intercept_slope`  :mod:`calibdash.measures.recalibration`
:func:`ici`,                         :mod:`calibdash.measures.smoother`
:func:`smoothed_calibration_curve`
:func:`spiegelhalter_z`,             :mod:`calibdash.measures.hypothesis`
:func:`hosmer_lemeshow`
:func:`brier_decomposition`          :mod:`calibdash.measures.decomposition`
:func:`debiased_l2_ce`,              :mod:`calibdash.measures.binned`
:func:`adaptive_ece`
===================================  ==============================================================

What stays here is :func:`auto_bin_count`, a stated rule for the number of
bins of a reliability diagram, and :func:`describe_rule`, the caption that
says which rule gave it.
"""
from __future__ import annotations

import math

from .errors import DataError, SettingsError
from .measures.binned import adaptive_ece, debiased_l2_ce
from .measures.decomposition import brier_decomposition
from .measures.hypothesis import hosmer_lemeshow, spiegelhalter_z
from .measures.recalibration import calibration_intercept_slope
from .measures.smoother import LOESS_DEGREE, LOESS_MAX_POINTS, LOESS_SPAN, ici, smoothed_calibration_curve

__all__ = [
    "calibration_intercept_slope", "ici", "smoothed_calibration_curve", "spiegelhalter_z", "hosmer_lemeshow",
    "brier_decomposition", "debiased_l2_ce", "adaptive_ece", "auto_bin_count", "describe_rule", "BIN_RULES",
    "LOESS_SPAN", "LOESS_DEGREE", "LOESS_MAX_POINTS",
]

#: The rules of :func:`auto_bin_count`.
BIN_RULES = ("cuberoot", "sqrt", "min_count")
_MIN_BINS, _MAX_BINS = 2, 100


# ----------------------------------------------------------------------------
# 8. the number of bins of a reliability diagram
# ----------------------------------------------------------------------------
def _icbrt_ceil(n: int) -> int:
    """Smallest integer k with k^3 >= n (exact, no floating-point cube root)."""
    k = max(0, round(n ** (1.0 / 3.0)))
    while k ** 3 < n:
        k += 1
    while k > 0 and (k - 1) ** 3 >= n:
        k -= 1
    return k


def _check_rule(n, rule, min_count) -> tuple[int, int]:
    if rule not in BIN_RULES:
        raise SettingsError(f"rule must be one of {BIN_RULES}, got {rule!r}.")
    if int(min_count) != min_count or min_count < 1:
        raise SettingsError(f"min_count must be a whole number of at least 1, got {min_count}.")
    try:
        n_rows = int(math.floor(float(n)))
    except (TypeError, ValueError):
        raise DataError(f"n must be a number of rows, got {n!r}.") from None
    if n_rows < 1:
        raise DataError(f"n must be at least 1 row, got {n}.")
    return n_rows, int(min_count)


def _raw_bin_count(n: int, rule: str, min_count: int) -> int:
    if rule == "cuberoot":
        return _icbrt_ceil(n)
    if rule == "sqrt":
        r = math.isqrt(n)
        return r if r * r == n else r + 1
    return n // min_count


def auto_bin_count(n, rule: str = "cuberoot", min_count: int = 100) -> int:
    """A stated number of bins for a binned reliability diagram, clipped to [2, 100].

    Rules (``n`` the number of rows, the total weight for weighted data):

    ``"cuberoot"`` (default)
        ``ceil(n^(1/3))``: 1,000 rows give 10 bins, 1,728 give 12. The number
        of bins of order ``n^(1/3)`` is what BBQ (Naeini, Cooper & Hauskrecht
        2015) centres its range of binnings on, after the minimax rate of
        fixed-width histogram classifiers (Scott & Nowak 2003; Klemelä 2009);
        it also balances a bin's squared bias (its width, ``~1/B``, squared)
        against its variance (``~B/n``) for a smooth calibration curve.
    ``"sqrt"``
        ``ceil(sqrt(n))``, the common histogram default; more and noisier bins.
    ``"min_count"``
        ``floor(n / min_count)``: as many equal-count bins as keep at least
        ``min_count`` rows in each (so each bin's observed frequency has a
        standard error of at most ``0.5 / sqrt(min_count)``).

    Rules made for densities of unbounded data (Freedman-Diaconis, Scott)
    are not offered: they size bins by the spread of the scores, which for
    probabilities piled up near 0 or 1 gives bins with almost no rows.

    The result is clipped to [2, 100]: one bin shows nothing, and more than
    100 cannot be told apart in a chart. :func:`describe_rule` says which
    rule gave the number, for the chart's caption.
    """
    n_rows, min_count = _check_rule(n, rule, min_count)
    return int(min(_MAX_BINS, max(_MIN_BINS, _raw_bin_count(n_rows, rule, min_count))))


def describe_rule(n, rule: str = "cuberoot", min_count: int = 100) -> str:
    """One line for a chart: ``"12 bins (cube root of n = 1,728 rows)"``."""
    n_rows, min_count = _check_rule(n, rule, min_count)
    raw = _raw_bin_count(n_rows, rule, min_count)
    bins = auto_bin_count(n_rows, rule, min_count)
    what = {"cuberoot": f"cube root of n = {n_rows:,} rows",
            "sqrt": f"square root of n = {n_rows:,} rows",
            "min_count": f"at least {min_count:,} rows per bin, n = {n_rows:,} rows"}[rule]
    if raw > bins:
        what += f", capped at {_MAX_BINS}"
    elif raw < bins:
        what += f", raised to the minimum of {_MIN_BINS}"
    return f"{bins} bin{'s' if bins != 1 else ''} ({what})"
