"""Calibration and discrimination metrics for binary probabilities.

All functions take ``probs`` (predicted probability of the positive class, in
[0, 1]) and ``labels`` (0/1) of the same length.

Binning strategies (``ece``, ``mce``, ``reliability_table``)
-------------------------------------------------------------
``strategy="uniform"``
    ``n_bins`` equal-width bins on [0, 1], as in the SBB/ABB paper (Naeini &
    Cooper): bin ``b`` holds ``b/n_bins <= p < (b+1)/n_bins``, the last bin
    also holds ``p == 1``. Empty bins are skipped.
``strategy="quantile"``
    ``n_bins`` equal-count bins over the predictions sorted ascending, as in
    the BBQ authors' MATLAB code: bins are cut by rank (tied predictions may
    fall in two bins), each holds ``N // n_bins`` rows and the ``N mod
    n_bins`` remainder is spread one row each over the first bins. With this
    strategy the metrics of the quadratic-SVM scores reproduce the authors'
    published figures (``tests/test_metrics.py``).

The package-wide default is :data:`DEFAULT_N_BINS` = 10 equal-count bins
(:data:`DEFAULT_STRATEGY` = ``"quantile"``): every function here, the
evaluation tables, the command line and the dashboard use it unless told
otherwise, and every table says which binning it used
(:func:`binning_label`). Equal-count bins are chosen because they reproduce
the BBQ authors' published figures and never leave a bin empty.

ECE is the bin-count weighted mean of ``|mean prediction - observed
frequency|`` over the bins, MCE its maximum.

MVCE (MBCT paper, Eq. 10)
-------------------------
The multi-view calibration error averages, over ``n_views`` random partitions
of the rows, the l_p mean over bins of the partition calibration error
``PCE_b = |mean prediction - mean outcome|`` (Eq. 4). Each partition (a
"view") is a seeded random shuffle of the rows split into equal-count bins of
``bin_size`` rows (the paper's random-shuffle uniform-mass scheme): unlike
ECE's bins, a view does not sort by the prediction, so it also sees
miscalibration that is not a function of the score.

PUD (MBCT paper, Eq. 6)
-----------------------
The partition underestimated degree of a bin is ``sum(labels) / sum(probs)``
over the bin's rows: above 1 the bin is under-estimated, below 1
over-estimated, 1 is calibrated on that bin.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from .validation import check_labels, check_scores
from .errors import DataError, SettingsError

__all__ = [
    "bin_assignments", "ece", "mce", "rmse", "brier", "log_loss", "auc", "accuracy",
    "mvce", "pud", "reliability_table", "summary", "METRIC_NAMES", "LOWER_IS_BETTER",
    "DEFAULT_N_BINS", "DEFAULT_STRATEGY", "STRATEGIES", "binning_label",
]

#: Column names of :func:`summary`, in table order.
METRIC_NAMES = ("AUC", "ACC", "RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE")
#: Metrics where a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = frozenset({"RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE"})

#: The binnings of ECE, MCE and the reliability table.
STRATEGIES = ("uniform", "quantile")
#: The package-wide default binning of ECE, MCE and the reliability table (see the module docstring).
DEFAULT_N_BINS = 10
DEFAULT_STRATEGY = "quantile"
_STRATEGY_WORDS = {"uniform": "equal-width", "quantile": "equal-count"}


def binning_label(n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> str:
    """``"10 equal-count bins"``: how a table's ECE and MCE were binned, for captions."""
    if strategy not in STRATEGIES:
        raise SettingsError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")
    return f"{int(n_bins)} {_STRATEGY_WORDS[strategy]} bins"


def _check(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    p = check_scores(probs, "probs")
    y = check_labels(labels, p.size, require_both=False)
    return p, y


def bin_assignments(probs, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> np.ndarray:
    """Bin index (0 .. n_bins-1) of each prediction under ``strategy``.

    See the module docstring for the two strategies.
    """
    p = np.asarray(probs, dtype=float)
    if n_bins < 1:
        raise SettingsError(f"n_bins must be at least 1, got {n_bins}.")
    if strategy == "uniform":
        return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    if strategy == "quantile":
        n = p.size
        order = np.argsort(p, kind="stable")
        base, extra = divmod(n, n_bins)
        sizes = np.full(n_bins, base, dtype=np.int64)
        sizes[:extra] += 1
        ids = np.empty(n, dtype=np.int64)
        ids[order] = np.repeat(np.arange(n_bins), sizes)
        return ids
    raise SettingsError(f"strategy must be one of {STRATEGIES}, got {strategy!r}.")


def _bin_stats(p, y, n_bins, strategy):
    ids = bin_assignments(p, n_bins, strategy)
    count = np.bincount(ids, minlength=n_bins).astype(float)
    sum_p = np.bincount(ids, weights=p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins)
    return ids, count, sum_p, sum_y


def _gaps(p, y, n_bins, strategy):
    _, count, sum_p, sum_y = _bin_stats(p, y, n_bins, strategy)
    keep = count > 0
    gap = np.abs(sum_p[keep] - sum_y[keep]) / count[keep]
    return gap, count[keep]


def ece(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> float:
    """Expected calibration error: sum_b (n_b / N) |mean p_b - mean y_b|.

    Parameters
    ----------
    probs, labels : array-like
        Predicted probabilities and 0/1 outcomes.
    n_bins : int, default 10
    strategy : {"uniform", "quantile"}, default "quantile"
        Equal-width bins on [0, 1] (SBB/ABB paper) or equal-count bins over
        the sorted predictions (BBQ authors' code); see the module docstring.
    """
    p, y = _check(probs, labels)
    gap, count = _gaps(p, y, n_bins, strategy)
    return float(np.sum(gap * count) / p.size)


def mce(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> float:
    """Maximum calibration error: max_b |mean p_b - mean y_b| over non-empty bins.

    Arguments as for :func:`ece`.
    """
    p, y = _check(probs, labels)
    gap, _ = _gaps(p, y, n_bins, strategy)
    return float(gap.max())


def brier(probs, labels) -> float:
    """Brier score: mean squared difference between probability and outcome."""
    p, y = _check(probs, labels)
    return float(np.mean((p - y) ** 2))


def rmse(probs, labels) -> float:
    """Root of the Brier score (the RMSE of the BBQ, SBB/ABB and ELiTE papers)."""
    return math.sqrt(brier(probs, labels))


def log_loss(probs, labels, eps: float = 1e-15) -> float:
    """Mean negative Bernoulli log-likelihood, probabilities clipped to [eps, 1-eps]."""
    p, y = _check(probs, labels)
    q = np.clip(p, eps, 1 - eps)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log1p(-q)))


def auc(probs, labels) -> float:
    """Area under the ROC curve (ties count one half), by mid-ranks.

    Returns NaN when only one class is present. The BBQ authors' code reports
    ``max(AUC, 1 - AUC)``; this function returns the plain AUC.
    """
    p, y = _check(probs, labels)
    n1 = int(y.sum())
    n0 = p.size - n1
    if n0 == 0 or n1 == 0:
        return float("nan")
    ranks = stats.rankdata(p)
    return float((ranks[y == 1].sum() - n1 * (n1 + 1) / 2) / (n0 * n1))


def accuracy(probs, labels, threshold: float = 0.5) -> float:
    """Share of rows where ``probs >= threshold`` agrees with the label."""
    p, y = _check(probs, labels)
    return float(np.mean((p >= threshold) == (y == 1)))


def pud(probs, labels) -> float:
    """Partition underestimated degree (MBCT Eq. 6): sum(labels) / sum(probs).

    Above 1: the rows are under-estimated; below 1: over-estimated. NaN when
    every prediction is 0.
    """
    p, y = _check(probs, labels)
    total = p.sum()
    return float(y.sum() / total) if total > 0 else float("nan")


def mvce(probs, labels, bin_size: int | None = None, n_views: int = 100,
         p: float = 1.0, seed: int = 0) -> float:
    """Multi-view calibration error (MBCT paper, Eq. 10).

    ``MVCE = 1/r sum_{views} ( 1/B sum_b |mean f_b - mean y_b|^p )^(1/p)``

    Parameters
    ----------
    probs, labels : array-like
    bin_size : int, optional
        Rows per bin (the paper's M). Default ``max(1, N // 10)``: ten bins per
        view, comparable with a 10-bin ECE. The last ``N mod bin_size`` rows of
        each shuffle form no bin of their own: they join the last bin.
    n_views : int, default 100
        Number of random views r (the paper uses 100).
    p : float, default 1
        The l_p norm over bins (the paper's main results use p = 1; p = 2 is
        its alternative).
    seed : int, default 0
        Seed of the views, so the metric is reproducible.
    """
    probs_, y = _check(probs, labels)
    n = probs_.size
    m = max(1, n // 10) if bin_size is None else int(bin_size)
    if m < 1:
        raise SettingsError(f"bin_size must be at least 1, got {bin_size}.")
    n_bins = max(1, n // m)
    ids = np.minimum(np.arange(n) // m, n_bins - 1)
    counts = np.bincount(ids, minlength=n_bins).astype(float)
    d = probs_ - y
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(int(n_views)):
        perm = rng.permutation(n)
        pce = np.abs(np.bincount(ids, weights=d[perm], minlength=n_bins)) / counts
        total += float(np.mean(pce ** p) ** (1.0 / p))
    return total / int(n_views)


def _interval(k: np.ndarray, n: np.ndarray, method: str, level: float = 0.95):
    """Two-sided binomial confidence interval for k successes in n trials."""
    alpha = 1 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "wilson":
            z = stats.norm.ppf(1 - alpha / 2)
            phat = k / n
            denom = 1 + z ** 2 / n
            centre = (phat + z ** 2 / (2 * n)) / denom
            half = z * np.sqrt(phat * (1 - phat) / n + z ** 2 / (4 * n ** 2)) / denom
            return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
        if method == "clopper-pearson":
            lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
            hi = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
            return lo, hi
    raise SettingsError(f"interval must be 'wilson' or 'clopper-pearson', got {method!r}.")


def reliability_table(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
                      interval: str = "wilson") -> pd.DataFrame:
    """One row per bin: the data of a reliability diagram.

    Columns
    -------
    bin : bin index
    lower, upper : the bin's edges (uniform: the fixed edges; quantile: the
        smallest and largest prediction in the bin)
    count : rows in the bin (0 for an empty uniform bin)
    mean_pred : mean prediction (NaN when empty)
    obs_freq : observed frequency of the positive class (NaN when empty)
    ci_low, ci_high : 95% interval of ``obs_freq`` (Wilson or Clopper-Pearson)
    gap : ``obs_freq - mean_pred`` (positive: under-estimated)
    pud : ``sum(labels) / sum(probs)`` in the bin (MBCT Eq. 6)
    """
    p, y = _check(probs, labels)
    ids, count, sum_p, sum_y = _bin_stats(p, y, n_bins, strategy)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = sum_p / count
        obs = sum_y / count
        pud_ = np.where(sum_p > 0, sum_y / sum_p, np.nan)
    lo, hi = _interval(sum_y, count, interval)
    if strategy == "uniform":
        lower = np.arange(n_bins) / n_bins
        upper = (np.arange(n_bins) + 1) / n_bins
    else:
        lower = np.full(n_bins, np.inf)
        upper = np.full(n_bins, -np.inf)
        np.minimum.at(lower, ids, p)
        np.maximum.at(upper, ids, p)
        lower[count == 0] = np.nan
        upper[count == 0] = np.nan
    empty = count == 0
    return pd.DataFrame({
        "bin": np.arange(n_bins),
        "lower": lower, "upper": upper,
        "count": count.astype(np.int64),
        "mean_pred": mean_pred,
        "obs_freq": obs,
        "ci_low": np.where(empty, np.nan, lo),
        "ci_high": np.where(empty, np.nan, hi),
        "gap": obs - mean_pred,
        "pud": pud_,
    })


def summary(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
            mvce_bin_size: int | None = None, mvce_views: int = 100) -> dict[str, float]:
    """All metrics at once, keyed as in :data:`METRIC_NAMES`.

    ECE and MCE use ``n_bins`` and ``strategy`` (default: the BBQ authors'
    equal-count bins); MVCE uses ``mvce_bin_size`` and ``mvce_views``.
    """
    p, y = _check(probs, labels)
    b = brier(p, y)
    return {
        "AUC": auc(p, y),
        "ACC": accuracy(p, y),
        "RMSE": math.sqrt(b),
        "Brier": b,
        "LogLoss": log_loss(p, y),
        "ECE": ece(p, y, n_bins, strategy),
        "MCE": mce(p, y, n_bins, strategy),
        "MVCE": mvce(p, y, bin_size=mvce_bin_size, n_views=mvce_views),
    }
