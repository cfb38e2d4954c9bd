"""Ranks of methods over data sets and the tests on them: Friedman (Iman-Davenport) and Holm.

The procedure Demšar (2006), "Statistical comparisons of classifiers over multiple data sets" (JMLR 7:1-30,
section 3.2.2) recommends and the BBQ and ELiTE papers use ("Friedman test with Holm's post-hoc procedure"):

1. On each of the N data sets the k methods are ranked, 1 for the best, ties getting mid-ranks
   (:func:`rank_table`); ``R_j`` is the mean rank of method j over the data sets (:func:`average_ranks`).
2. Under the null hypothesis that all methods are equivalent, Friedman's statistic is
   ``chi2_F = 12N / (k(k+1)) * [sum_j R_j^2 - k(k+1)^2 / 4]`` with k - 1 degrees of freedom; Iman and
   Davenport's (1980) less conservative version is ``F_F = (N-1) chi2_F / (N(k-1) - chi2_F)`` with
   (k - 1, (k - 1)(N - 1)) degrees of freedom (:func:`friedman`). Like the papers, ``chi2_F`` is computed from
   the average ranks without :func:`scipy.stats.friedmanchisquare`'s correction for ties.
3. Each method i is compared with a reference by ``z = (R_i - R_ref) / sqrt(k(k+1) / (6N))`` and a two-sided
   normal p value; Holm's (1979) step-down procedure compares the i-th smallest p value with ``alpha / (k - i)``
   and rejects until the first p value above its threshold (:func:`holm`).

Demšar's worked example (his Table 6) is reproduced in ``tests/benchmark/test_stats.py``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..core.errors import DataError, SettingsError

__all__ = []


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman's test and its Iman-Davenport correction.

    Attributes
    ----------
    k, n : int
        Number of methods and of data sets (the blocks).
    chi2, chi2_df, chi2_p : float, int, float
        Friedman's ``chi2_F``, its degrees of freedom ``k - 1`` and its p value (chi-squared upper tail).
    ff, ff_df1, ff_df2, ff_p : float, int, int, float
        Iman and Davenport's ``F_F`` (``inf`` when every data set ranks the methods alike, no ties), its degrees
        of freedom ``k - 1`` and ``(k - 1)(N - 1)``, its p value (F upper tail).
    alpha, critical, reject : float, float, bool
        The level, the critical value of ``F(ff_df1, ff_df2)`` at it, and ``ff_p < alpha`` (the papers' test).
    """

    k: int
    n: int
    chi2: float
    chi2_df: int
    chi2_p: float
    ff: float
    ff_df1: int
    ff_df2: int
    ff_p: float
    alpha: float
    critical: float
    reject: bool

    def as_dict(self) -> dict:
        """Plain JSON-ready values."""
        return {k: (bool(v) if isinstance(v, (bool, np.bool_)) else v) for k, v in asdict(self).items()}


def _numeric_table(table) -> pd.DataFrame:
    t = pd.DataFrame(table)
    if t.shape[0] < 1 or t.shape[1] < 1:
        raise DataError("the table is empty: it needs one row per data set and one column per method.")
    try:
        t = t.astype(float)
    except (TypeError, ValueError):
        raise DataError("the table must hold numbers (one row per data set, one column per method).") from None
    if not np.all(np.isfinite(t.to_numpy())):
        bad = t.index[~np.isfinite(t.to_numpy()).all(axis=1)]
        raise DataError(f"the table has missing or infinite values for {', '.join(map(str, bad[:5]))}; "
                        "every method needs a value on every data set.")
    return t


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise SettingsError(f"alpha must lie strictly between 0 and 1, got {alpha}.")


def rank_table(table, lower_is_better: bool = True, decimals: int | None = 12) -> pd.DataFrame:
    """Rank the methods (columns) on each data set (row): 1 is the best, ties get mid-ranks.

    ``table`` (DataFrame or array of shape (N, k)) holds metric values, or ranks already (ranked again with
    ``lower_is_better=True`` they are unchanged); ``lower_is_better``: True for losses (ECE, Brier, ...), False
    for AUC and accuracy. Values are rounded to ``decimals`` (None: not) before ranking, so that two methods
    differing only by floating-point noise (Platt's AUC and the raw scores') tie. Returns a DataFrame of
    ``table``'s shape, index and columns; each row sums to k(k+1)/2.

    Raises
    ------
    DataError
        An empty table, or a missing or non-numeric value.
    """
    t = _numeric_table(table)
    vals = t.to_numpy() if decimals is None else np.round(t.to_numpy(), decimals)
    ranks = sps.rankdata(vals if lower_is_better else -vals, method="average", axis=1)
    return pd.DataFrame(ranks, index=t.index, columns=t.columns)


def average_ranks(table, lower_is_better: bool = True, decimals: int | None = 12) -> pd.Series:
    """Mean rank of each method over the data sets (Demšar's ``R_j``); arguments as :func:`rank_table`."""
    return rank_table(table, lower_is_better, decimals).mean(axis=0).rename("average rank")


def rank_standard_error(k: int, n: int) -> float:
    """``sqrt(k(k+1) / (6N))``: the standard error of a difference of two average ranks."""
    return math.sqrt(k * (k + 1) / (6.0 * n))


def friedman_from_ranks(avg_ranks, n_datasets: int, alpha: float = 0.05) -> FriedmanResult:
    """Friedman's ``chi2_F`` and Iman-Davenport's ``F_F`` from the average ranks.

    ``avg_ranks``: each method's average rank over the ``n_datasets`` (N) data sets; ``alpha``: the level of the
    critical value and verdict.

    Raises
    ------
    DataError
        Fewer than two methods or two data sets, or ranks outside [1, k].
    SettingsError
        ``alpha`` outside (0, 1).
    """
    r = np.asarray(avg_ranks, dtype=float).reshape(-1)
    k, n = r.size, int(n_datasets)
    if k < 2:
        raise DataError(f"the Friedman test compares at least two methods, got {k}.")
    if n < 2:
        raise DataError(f"the Friedman test needs at least two data sets, got {n}.")
    _check_alpha(alpha)
    if not np.all(np.isfinite(r)) or r.min() < 1 - 1e-9 or r.max() > k + 1e-9:
        raise DataError(f"average ranks of {k} methods must lie in [1, {k}], got {r.tolist()}.")
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(float(chi2), 0.0)            # rounding of the input can push a null result below 0
    df1, df2 = k - 1, (k - 1) * (n - 1)
    denom = n * (k - 1) - chi2
    ff = (n - 1) * chi2 / denom if denom > 1e-12 else math.inf
    ff_p = float(sps.f.sf(ff, df1, df2)) if math.isfinite(ff) else 0.0
    return FriedmanResult(k=k, n=n, chi2=chi2, chi2_df=df1, chi2_p=float(sps.chi2.sf(chi2, df1)), ff=float(ff),
                          ff_df1=df1, ff_df2=df2, ff_p=ff_p, alpha=float(alpha),
                          critical=float(sps.f.ppf(1 - alpha, df1, df2)), reject=bool(ff_p < alpha))


def friedman(table, lower_is_better: bool = True, alpha: float = 0.05,
             decimals: int | None = 12) -> FriedmanResult:
    """:func:`friedman_from_ranks` of a data sets x methods table ranked by :func:`rank_table` (same arguments)."""
    ranks = rank_table(table, lower_is_better, decimals)
    return friedman_from_ranks(ranks.mean(axis=0).to_numpy(), ranks.shape[0], alpha)


def holm(avg_ranks: Mapping[str, float] | pd.Series, n_datasets: int, reference: str,
         alpha: float = 0.05) -> pd.DataFrame:
    """Holm's step-down comparison of every method with a reference method.

    ``avg_ranks`` (method -> average rank over the N = ``n_datasets`` data sets, all k methods) as for
    :func:`friedman_from_ranks`; ``reference``: the method the others are compared with (the papers' BBQ or ELiTE);
    ``alpha``: the family-wise level.

    Returns
    -------
    DataFrame
        One row per method other than the reference, in Holm's order (most significant first), indexed by
        method: ``avg_rank``; ``diff`` = ``R_i - R_ref`` (positive: ranks worse); ``z`` = ``diff / sqrt(k(k+1)/
        (6N))``; ``p``, its two-sided normal p value; ``step`` i = 1 .. k-1; ``threshold`` = ``alpha / (k - i)``;
        ``reject``: True until the first p value above its threshold, False from there on.

    Raises
    ------
    DataError
        Fewer than two methods, or N < 1.
    SettingsError
        Unknown reference, or ``alpha`` outside (0, 1).
    """
    r = pd.Series(avg_ranks, dtype=float)
    if reference not in r.index:
        raise SettingsError(f"reference method {reference!r} is not among the methods: "
                            f"{', '.join(map(str, r.index))}.")
    k, n = r.size, int(n_datasets)
    if k < 2:
        raise DataError("Holm's procedure needs the reference and at least one other method.")
    if n < 1:
        raise DataError(f"n_datasets must be at least 1, got {n_datasets}.")
    _check_alpha(alpha)
    others = r.drop(reference)
    diff = (others - r[reference]).to_numpy()
    z = diff / rank_standard_error(k, n)
    p = 2.0 * sps.norm.sf(np.abs(z))
    order = np.argsort(p, kind="stable")
    steps = np.arange(1, k)
    out = pd.DataFrame({"avg_rank": others.to_numpy()[order], "diff": diff[order], "z": z[order], "p": p[order],
                        "step": steps, "threshold": alpha / (k - steps)},
                       index=pd.Index(others.index[order], name="method"))
    below = out["p"].to_numpy() < out["threshold"].to_numpy()
    out["reject"] = np.logical_and.accumulate(below)     # stop at the first non-rejection
    return out
