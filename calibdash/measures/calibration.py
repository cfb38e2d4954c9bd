"""Calibration and discrimination metrics for binary probabilities.

All functions take ``probs`` (predicted probability of the positive class, in
[0, 1]) and ``labels`` of the same length: 0/1, or any two values (-1/1,
True/False, yes/no, two strings) whose positive class ``pos_label=`` names or
:func:`calibdash.validation.choose_positive` chooses, as the file loader does.

Weights and score cells
-----------------------
Every metric takes ``sample_weight`` (default None: every row weighs 1). A
row of weight ``w`` counts as ``w`` rows: with whole-number weights each
metric equals, to rounding, its value on the rows repeated
(``np.repeat(probs, w)``), so a table of score cells (per distinct score a
count ``n``, ``n_pos`` positives) is measured as the rows ``(score, 1)`` of
weight ``n_pos`` and ``(score, 0)`` of weight ``n - n_pos``. Weights must be
finite and non-negative with a positive sum; one class alone is allowed
(AUC is then NaN). MVCE alone needs whole-number weights (it shuffles rows;
see below).

Binning (``ece``, ``mce``, ``reliability_table``)
-------------------------------------------------
The bins are those of :mod:`calibdash.measures.binning` (equal-width
``"uniform"``, equal-count ``"quantile"`` with tied predictions split
proportionally, the BBQ authors' ``"rank"`` cut), shared with the clinical
measures and the bootstrap; the package-wide default is
:data:`~calibdash.measures.binning.DEFAULT_N_BINS` = 10 equal-count bins.
ECE is the bin-weight weighted mean of ``|mean prediction - observed
frequency|`` over the bins, MCE its maximum over the non-empty bins
(:func:`binned_errors`, which the bootstrap applies to its resampled bin sums).

AUC
---
The Mann-Whitney statistic: the weighted share of (positive, negative) pairs
ranked correctly, a tie counting one half. Computed from one sort, with tied
predictions grouped.

MVCE (MBCT paper, Eq. 10)
-------------------------
The multi-view calibration error averages, over ``n_views`` random partitions
of the rows, the l_p mean over bins of the partition calibration error
``PCE_b = |mean prediction - mean outcome|`` (Eq. 4). Each partition (a
"view") is a seeded random shuffle of the rows split into equal-count bins of
``bin_size`` rows (the paper's random-shuffle uniform-mass scheme): unlike
ECE's bins, a view does not sort by the prediction, so it also sees
miscalibration that is not a function of the score. Its value is a random
function of the rows (their order included); see :func:`mvce` for weights.

PUD (MBCT paper, Eq. 6)
-----------------------
The partition underestimated degree of a bin is ``sum(labels) / sum(probs)``
over the bin's rows: above 1 the bin is under-estimated, below 1
over-estimated, 1 is calibrated on that bin.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DataError, SettingsError
from .binning import (DEFAULT_N_BINS, DEFAULT_STRATEGY, STRATEGIES, Bins, Groups, bin_assignments, bin_sums,
                      binning_label, check_binning, check_inputs, is_whole, reliability_table, tied_groups)

__all__ = [
    "bin_assignments", "ece", "mce", "rmse", "brier", "log_loss", "auc", "accuracy",
    "mvce", "pud", "reliability_table", "summary", "METRIC_NAMES", "LOWER_IS_BETTER",
    "DEFAULT_N_BINS", "DEFAULT_STRATEGY", "STRATEGIES", "binning_label", "MVCE_MAX_ROWS",
    "check_binning", "partition_views", "binned_errors", "mvce_of_moments", "row_views",
]

#: Column names of :func:`summary`, in table order.
METRIC_NAMES = ("AUC", "ACC", "RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE")
#: Metrics where a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = frozenset({"RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE"})
#: Above this total weight, :func:`mvce` measures a uniform sample of this many rows.
MVCE_MAX_ROWS = 1_000_000


def _total(p: np.ndarray, w) -> float:
    """Total weight: the number of rows when unweighted."""
    return float(p.size) if w is None else float(w.sum())


def _sum(x: np.ndarray, w) -> float:
    """Weighted sum of ``x``."""
    return float(np.sum(x)) if w is None else float(np.dot(x, w))


def _mean(x: np.ndarray, w) -> float:
    """Weighted mean of ``x``."""
    return float(np.mean(x)) if w is None else _sum(x, w) / float(w.sum())


# ----------------------------------------------------------------------------
# the metrics
# ----------------------------------------------------------------------------
def binned_errors(count, sum_p, sum_y, total):
    """ECE and MCE from bin sums: weight, prediction sum and positive weight per bin (last axis).

    ``ECE = sum_b |sum_p_b - sum_y_b| / total`` and ``MCE = max_b |sum_p_b - sum_y_b| / count_b``, both
    over the non-empty bins. One set of bins (1-D arrays, ``total`` a number) gives two floats; rows
    of bins (2-D, ``total`` one per row, as the bootstrap's resamples) give two arrays.
    """
    count, sum_p, sum_y = np.asarray(count), np.asarray(sum_p), np.asarray(sum_y)
    gap = np.abs(sum_p - sum_y)
    full = count > 0
    ece_ = np.where(full, gap, 0.0).sum(axis=-1) / total
    mce_ = np.max(np.where(full, gap / np.where(full, count, 1.0), -np.inf), axis=-1)
    if gap.ndim == 1:
        return float(ece_), float(mce_)
    return ece_, mce_


def _ece(bins: Bins, total: float) -> float:
    return binned_errors(bins.count, bins.sum_p, bins.sum_y, total)[0]


def _mce(bins: Bins) -> float:
    return binned_errors(bins.count, bins.sum_p, bins.sum_y, 1.0)[1]


def ece(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
        sample_weight=None, *, pos_label=None) -> float:
    """Expected calibration error: sum_b (n_b / N) |mean p_b - mean y_b|.

    Parameters
    ----------
    probs, labels : array-like
        Predicted probabilities and 0/1 outcomes.
    n_bins : int, default 10
    strategy : {"uniform", "quantile", "rank"}, default "quantile"
        Equal-width bins on [0, 1] (SBB/ABB paper), equal-count bins with
        tied predictions split proportionally, or the BBQ authors'
        order-dependent rank cut; see the module docstring.
    sample_weight : array-like, optional
        Row weights (a row of weight w counts as w rows); ``n_b`` and ``N``
        become weight sums. Refused by ``"rank"``.
    pos_label : optional
        The label value of the positive class (every function here takes
        it); default :func:`calibdash.validation.choose_positive`'s rule, as
        the file loader (1, True, yes, ...; see the module docstring there).
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return _ece(bin_sums(p, y, w, n_bins, strategy), _total(p, w))


def mce(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
        sample_weight=None, *, pos_label=None) -> float:
    """Maximum calibration error: max_b |mean p_b - mean y_b| over non-empty bins.

    Arguments as for :func:`ece`.
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return _mce(bin_sums(p, y, w, n_bins, strategy))


def _brier(p, y, w) -> float:
    return _mean((p - y) ** 2, w)


def brier(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Brier score: (weighted) mean squared difference between probability and outcome."""
    return _brier(*check_inputs(probs, labels, sample_weight, pos_label))


def rmse(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Root of the Brier score (the RMSE of the BBQ, SBB/ABB and ELiTE papers)."""
    return math.sqrt(brier(probs, labels, sample_weight, pos_label=pos_label))


def _log_loss(p, y, w, eps: float = 1e-15) -> float:
    q = np.clip(p, eps, 1 - eps)
    return -_mean(y * np.log(q) + (1 - y) * np.log1p(-q), w)


def log_loss(probs, labels, eps: float = 1e-15, sample_weight=None, *, pos_label=None) -> float:
    """Mean negative Bernoulli log-likelihood, probabilities clipped to [eps, 1-eps]."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _log_loss(p, y, w, eps)


def _auc(g: Groups) -> float:
    """Mann-Whitney AUC of tied groups: each positive earns the negatives below it, half the tied ones."""
    neg = g.weight - g.pos
    n1, n0 = float(g.pos.sum()), float(neg.sum())
    if n0 <= 0 or n1 <= 0:
        return float("nan")
    below = np.cumsum(neg) - neg
    return float(np.dot(g.pos, below + 0.5 * neg) / (n0 * n1))


def auc(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Area under the ROC curve: the Mann-Whitney statistic, ties counted one half.

    Returns NaN when only one class has weight. The BBQ authors' code reports
    ``max(AUC, 1 - AUC)``; this function returns the plain AUC.
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _auc(tied_groups(p, y, w))


def _accuracy(p, y, w, threshold: float = 0.5) -> float:
    return _mean(((p >= threshold) == (y == 1)).astype(float), w)


def accuracy(probs, labels, threshold: float = 0.5, sample_weight=None, *, pos_label=None) -> float:
    """(Weighted) share of rows where ``probs >= threshold`` agrees with the label."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _accuracy(p, y, w, threshold)


def pud(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Partition underestimated degree (MBCT Eq. 6): sum(labels) / sum(probs).

    Above 1: the rows are under-estimated; below 1: over-estimated. NaN when
    every prediction (of positive weight) is 0. Sums are weighted.
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    total = _sum(p, w)
    return _sum(y.astype(float), w) / total if total > 0 else float("nan")


# ----------------------------------------------------------------------------
# MVCE
# ----------------------------------------------------------------------------
def row_views(probs, y, bin_size: int, n_views: int, p: float, seed) -> np.ndarray:
    """The per-view values of MVCE on rows (the definition; see :func:`mvce`)."""
    n = probs.size
    n_bins = max(1, n // bin_size)
    ids = np.minimum(np.arange(n) // bin_size, n_bins - 1)
    counts = np.bincount(ids, minlength=n_bins).astype(float)
    d = probs - y
    rng = np.random.default_rng(seed)
    out = np.empty(n_views)
    for v in range(n_views):
        pce = np.abs(np.bincount(ids, weights=d[rng.permutation(n)], minlength=n_bins)) / counts
        out[v] = np.mean(pce ** p) ** (1.0 / p)
    return out


def _whole_counts(w: np.ndarray) -> np.ndarray:
    """Weights as int64 row counts; MVCE shuffles rows, so fractional weights are refused."""
    whole = is_whole(w)
    if not whole or w.max() >= 2.0 ** 53:
        bad = int(np.argmax(w != np.floor(w))) if not whole else int(np.argmax(w))
        raise DataError(f"MVCE shuffles rows, so sample_weight must be whole row counts; row {bad} weighs "
                        f"{w[bad]!r}. Round the weights to counts, or leave MVCE out.")
    return w.astype(np.int64)


def partition_views(d: np.ndarray, counts: np.ndarray, bin_size: int, n_views: int, p: float, seed) -> np.ndarray:
    """Per-view MVCE of the rows ``np.repeat(d, counts)`` (residuals ``f - y``) without making the rows.

    A view cuts a uniform random permutation of the N rows into bins of
    ``bin_size`` rows (the remainder joining the last bin), so bin ``b``'s
    residual sum ``S_b`` is the sum of a uniform draw without replacement of
    ``M_b`` rows, jointly over the bins a random partition. Its first two
    moments are exact and known: ``E S_b = M_b rbar``,
    ``Var S_b = sigma^2 M_b (N - M_b) / (N - 1)`` and
    ``Cov(S_b, S_c) = -sigma^2 M_b M_c / (N - 1)`` (``rbar``, ``sigma^2``: the
    mean and population variance of the N residuals). Each view draws the
    ``S_b`` from the normal distribution with exactly these moments:
    ``S_b = M_b rbar + a (sqrt(M_b) z_b - (M_b / N) sum_c sqrt(M_c) z_c)`` with
    ``z`` standard normal and ``a^2 = sigma^2 N / (N - 1)``. A bin sum of at
    least ``bin_size`` rows is close to normal (central limit theorem for
    sampling without replacement); ``tests/test_metrics.py`` checks the values
    against the row-level views.
    """
    w = counts.astype(float)
    n = float(w.sum())
    mean = float(np.dot(w, d) / n)
    var = float(np.dot(w, (d - mean) ** 2) / n)
    n_bins = max(1, int(n) // int(bin_size))
    sizes = np.full(n_bins, float(bin_size))
    sizes[-1] += n - sizes.sum()
    root = np.sqrt(sizes)
    a = np.sqrt(var * n / (n - 1.0)) if n > 1 else 0.0
    z = np.random.default_rng([int(seed), 2]).standard_normal((int(n_views), n_bins))
    dev = a * (z * root - np.outer(z @ root, sizes / n))
    pce = np.abs(mean * sizes + dev) / sizes
    return np.mean(pce ** p, axis=1) ** (1.0 / p)


def mvce_of_moments(mean: float, var: float, n: float, n_views: int, bin_size: int | None = None,
                    p: float = 1.0, seed=0) -> float:
    """MVCE (:func:`partition_views`) of ``n`` rows known only by the mean and variance of their residuals.

    The partition views depend on the rows only through these two moments and their number, so two
    values carrying them (half the rows each) give the value of the rows themselves: the bootstrap of
    score cells measures each resample this way from sums it already has. ``bin_size`` defaults to
    :func:`mvce`'s ``max(1, n // 10)``.
    """
    a = n // 2
    gap = n * np.sqrt(max(var, 0.0) / (a * (n - a)))
    d = np.array([mean + (n - a) * gap / n, mean - a * gap / n])
    counts = np.array([a, n - a], dtype=np.int64)
    m = max(1, int(n) // 10) if bin_size is None else int(bin_size)
    return float(np.mean(partition_views(d, counts, m, n_views, p, seed)))


def _mvce(probs, y, w, bin_size, n_views, p, seed, max_rows) -> float:
    if bin_size is not None and int(bin_size) < 1:
        raise SettingsError(f"bin_size must be at least 1, got {bin_size}.")
    if int(n_views) < 1:
        raise SettingsError(f"n_views must be at least 1, got {n_views}.")
    if int(max_rows) < 1:
        raise SettingsError(f"max_rows must be at least 1, got {max_rows}.")
    if w is None:
        m = max(1, probs.size // 10) if bin_size is None else int(bin_size)
        return float(np.mean(row_views(probs, y, m, int(n_views), p, seed)))
    counts = _whole_counts(w)
    n = int(counts.sum())
    m = max(1, n // 10) if bin_size is None else int(bin_size)
    if n > int(max_rows):
        return float(np.mean(partition_views(probs - y, counts, m, int(n_views), p, seed)))
    return float(np.mean(row_views(np.repeat(probs, counts), np.repeat(y, counts), m, int(n_views), p, seed)))


def mvce(probs, labels, bin_size: int | None = None, n_views: int = 100,
         p: float = 1.0, seed: int = 0, sample_weight=None, max_rows: int = MVCE_MAX_ROWS, *,
         pos_label=None) -> float:
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
    sample_weight : array-like of whole numbers, optional
        Row counts. MVCE shuffles rows, so its value is a random function of
        the rows and their order; weights are therefore turned into rows.
        With a total ``N <= max_rows`` each row is repeated ``w`` times in
        place (``np.repeat``) and MVCE is computed on those rows, so it
        equals MVCE of the repeated rows exactly (same seed). Score cells
        give a value distributed as that of their rows, not the same value:
        the rows come in another order, so the seeded views differ. Fractional weights are
        refused (:class:`DataError`): they define no rows to shuffle.
    max_rows : int, default 1,000,000
        Above this total weight the rows are not made: each view draws its
        bins' residual sums from the normal distribution with the exact mean
        and covariance of a random partition of all N rows
        (:func:`partition_views`). The cost is then O(cells + views x bins)
        whatever N, the bin size stays ``M`` (no subsample, so no extra
        noise), and the value is distributed as the row-level one up to the
        normal approximation of a sum of at least ``M`` rows drawn without
        replacement; ``tests/test_metrics.py`` compares it with the views of
        the rows themselves.
    """
    probs_, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _mvce(probs_, y, w, bin_size, n_views, p, seed, max_rows)




def summary(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
            mvce_bin_size: int | None = None, mvce_views: int = 100, sample_weight=None,
            mvce_max_rows: int = MVCE_MAX_ROWS, *, pos_label=None) -> dict[str, float]:
    """All metrics at once, keyed as in :data:`METRIC_NAMES`.

    ECE and MCE use ``n_bins`` and ``strategy`` (default: 10 equal-count
    bins); MVCE uses ``mvce_bin_size``, ``mvce_views`` and ``mvce_max_rows``
    (and needs whole weights, see :func:`mvce`). The inputs are checked, and the predictions
    sorted, once. ``pos_label``: the label value of the positive class (default: the shared rule,
    :func:`calibdash.validation.choose_positive`).
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    groups = tied_groups(p, y, w)
    bins = bin_sums(p, y, w, n_bins, strategy, groups)
    b = _brier(p, y, w)
    return {
        "AUC": _auc(groups),
        "ACC": _accuracy(p, y, w),
        "RMSE": math.sqrt(b),
        "Brier": b,
        "LogLoss": _log_loss(p, y, w),
        "ECE": _ece(bins, _total(p, w)),
        "MCE": _mce(bins),
        "MVCE": _mvce(p, y, w, mvce_bin_size, mvce_views, 1.0, 0, mvce_max_rows),
    }
