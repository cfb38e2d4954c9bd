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

Binning strategies (``ece``, ``mce``, ``reliability_table``)
-------------------------------------------------------------
``strategy="uniform"``
    ``n_bins`` equal-width bins on [0, 1], as in the SBB/ABB paper (Naeini &
    Cooper): bin ``b`` holds ``b/n_bins <= p < (b+1)/n_bins``, the last bin
    also holds ``p == 1``. Empty bins are skipped.
``strategy="quantile"``
    ``n_bins`` equal-count bins over the predictions sorted ascending. With
    total weight ``N`` (the number of rows when unweighted) each bin holds
    ``N // n_bins`` and the remainder ``N mod n_bins`` is spread one each
    over the first bins, as rows would be. With fractional weights (any
    weight not a whole number) the bins hold equal shares ``N / n_bins``
    instead, so the value does not change when the weights are scaled (the
    rule for counts would put everything in one bin when the weights sum
    to 1). A group of tied predictions
    that straddles a boundary is split proportionally: each bin receives
    its share of the group's weight and the same share of the group's
    positives and prediction sum. The result depends only on the multiset
    of (prediction, label, weight), never on the row order, and a score
    cell gives the value of its rows. Without ties it equals the rank cut
    below.
``strategy="rank"``
    The BBQ authors' MATLAB code: the rows sorted by prediction (a stable
    sort, so the original row order breaks ties) are cut by rank into the
    same bin sizes as ``"quantile"``. Tied predictions may fall in two bins
    with whichever labels the row order puts there, so the value depends on
    the row order; it is kept only to reproduce published figures computed
    that way (BBQ-calibrated outputs are heavily tied) and refuses
    ``sample_weight``. It is not among the :data:`STRATEGIES` offered to
    users.

The package-wide default is :data:`DEFAULT_N_BINS` = 10 equal-count bins
(:data:`DEFAULT_STRATEGY` = ``"quantile"``): every function here, the
evaluation tables, the command line and the dashboard use it unless told
otherwise, and every table says which binning it used
(:func:`binning_label`). Equal-count bins are chosen because they reproduce
the BBQ authors' published figures on untied scores
(``tests/test_metrics.py``) and never leave a bin empty.

ECE is the bin-weight weighted mean of ``|mean prediction - observed
frequency|`` over the bins, MCE its maximum over the non-empty bins.

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
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from .validation import check_labels, check_scores, check_weights
from .errors import DataError, SettingsError

__all__ = [
    "bin_assignments", "ece", "mce", "rmse", "brier", "log_loss", "auc", "accuracy",
    "mvce", "pud", "reliability_table", "summary", "METRIC_NAMES", "LOWER_IS_BETTER",
    "DEFAULT_N_BINS", "DEFAULT_STRATEGY", "STRATEGIES", "binning_label", "MVCE_MAX_ROWS",
]

#: Column names of :func:`summary`, in table order.
METRIC_NAMES = ("AUC", "ACC", "RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE")
#: Metrics where a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = frozenset({"RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE"})

#: The binnings of ECE, MCE and the reliability table offered to users.
STRATEGIES = ("uniform", "quantile")
#: Every binning accepted: the offered ones and ``"rank"``, the BBQ authors' order-dependent cut.
_ALL_STRATEGIES = STRATEGIES + ("rank",)
#: The package-wide default binning of ECE, MCE and the reliability table (see the module docstring).
DEFAULT_N_BINS = 10
DEFAULT_STRATEGY = "quantile"
_STRATEGY_WORDS = {"uniform": "equal-width", "quantile": "equal-count", "rank": "rank-cut equal-count"}
#: Above this total weight, :func:`mvce` measures a uniform sample of this many rows.
MVCE_MAX_ROWS = 1_000_000
#: Below this many rows ``numpy``'s multivariate hypergeometric sampler is exact ("marginals" method).


def binning_label(n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> str:
    """``"10 equal-count bins"``: how a table's ECE and MCE were binned, for captions."""
    _check_strategy(strategy)
    return f"{int(n_bins)} {_STRATEGY_WORDS[strategy]} bins"


# ----------------------------------------------------------------------------
# input checks
# ----------------------------------------------------------------------------
def _check(probs, labels, sample_weight=None, pos_label=None):
    """Validated ``(p, y, w)``; ``w`` is None when every row weighs 1; ``y`` is 0/1 with 1 the positive class
    (:func:`calibdash.validation.check_labels`: any two label values, ``pos_label`` or the shared rule)."""
    p = check_scores(probs, "probs")
    y = check_labels(labels, p.size, require_both=False, pos_label=pos_label)
    return p, y, check_weights(sample_weight, p.size)


def _check_strategy(strategy: str) -> None:
    if strategy not in _ALL_STRATEGIES:
        raise SettingsError(f"strategy must be one of {_ALL_STRATEGIES}, got {strategy!r}.")


def check_binning(n_bins, strategy: str, weighted: bool) -> int:
    """The validated number of bins; refuses weights with the order-dependent ``"rank"`` cut."""
    _check_strategy(strategy)
    if int(n_bins) != n_bins or n_bins < 1:
        raise SettingsError(f"n_bins must be a whole number of at least 1, got {n_bins}.")
    if weighted and strategy == "rank":
        raise SettingsError('strategy="rank" cuts rows by their order and cannot take sample_weight; '
                            'use strategy="quantile", which splits tied predictions proportionally.')
    return int(n_bins)


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
# tied groups: one sort serves AUC and the equal-count bins
# ----------------------------------------------------------------------------
class _Groups(NamedTuple):
    """The distinct predictions ascending, their total and positive weight, and whether weights count rows."""
    value: np.ndarray
    weight: np.ndarray
    pos: np.ndarray
    whole: bool


class _Sorted(NamedTuple):
    """The ascending sort of the predictions in runs of ties: where each run starts, its rows, its value."""
    order: np.ndarray
    start: np.ndarray
    rows: np.ndarray
    value: np.ndarray

    def total(self, x) -> np.ndarray:
        """Sum of ``x`` (one value per row, in the original order) over each run; None counts rows."""
        if x is None:
            return self.rows.astype(float)
        return np.add.reduceat(np.asarray(x, dtype=float)[self.order], self.start)


def _sort_groups(p: np.ndarray) -> _Sorted:
    order = np.argsort(p)                     # ties are grouped, so their order does not matter
    ps = p[order]
    start = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
    return _Sorted(order, start, np.diff(np.r_[start, p.size]), ps[start])


def _groups(p: np.ndarray, y: np.ndarray, w) -> _Groups:
    """Group tied predictions (weights of 0 make groups of weight 0)."""
    srt = _sort_groups(p)
    return _Groups(srt.value, srt.total(w), srt.total(y if w is None else w * y), _is_whole(w))


def _quantile_edges(total: float, n_bins: int, whole: bool) -> np.ndarray:
    """Cumulative weight at the ``n_bins + 1`` edges of the equal-count bins.

    Row counts (``whole``): bin ``k`` holds ``total // n_bins`` plus one of
    the remainder while it lasts, ``edges[k] = k * base + min(k, remainder)``.
    Fractional weights: equal shares ``total / n_bins``.
    """
    if not whole:
        edges = np.linspace(0.0, total, n_bins + 1)
    else:
        base, rest = divmod(int(round(total)), n_bins)
        k = np.arange(n_bins + 1)
        edges = (k * base + np.minimum(k, rest)).astype(float)
    edges[-1] = total
    return edges


def _is_whole(w) -> bool:
    """True when every weight is a whole number (or there are no weights): the weights count rows."""
    return w is None or bool(np.all(w == np.floor(w)))


# ----------------------------------------------------------------------------
# binning
# ----------------------------------------------------------------------------
class _Bins(NamedTuple):
    """Per bin: weight, prediction sum, positive weight, smallest and largest prediction."""
    count: np.ndarray
    sum_p: np.ndarray
    sum_y: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def _uniform_ids(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


def _rank_ids(p: np.ndarray, n_bins: int) -> np.ndarray:
    """The BBQ authors' rank cut: bin of each row of the stably sorted predictions."""
    n = p.size
    base, extra = divmod(n, n_bins)
    sizes = np.full(n_bins, base, dtype=np.int64)
    sizes[:extra] += 1
    ids = np.empty(n, dtype=np.int64)
    ids[np.argsort(p, kind="stable")] = np.repeat(np.arange(n_bins), sizes)
    return ids


def _quantile_ids(p: np.ndarray, n_bins: int, w) -> np.ndarray:
    """Bin of each row under ``"quantile"``: the bin holding the middle of the row's tied group."""
    srt = _sort_groups(p)
    weight = srt.total(w)
    ends = np.cumsum(weight)
    edges = _quantile_edges(float(ends[-1]), n_bins, _is_whole(w))
    middle = np.r_[0.0, ends[:-1]] + weight / 2
    group_bin = np.clip(np.searchsorted(edges, middle, side="right") - 1, 0, n_bins - 1)
    ids = np.empty(p.size, dtype=np.int64)
    ids[srt.order] = np.repeat(group_bin, srt.rows)
    return ids


def _row_bins(p, y, w, ids, n_bins, lower, upper) -> _Bins:
    """Bin sums from a bin index per row."""
    count = np.bincount(ids, weights=w, minlength=n_bins).astype(float)
    sum_p = np.bincount(ids, weights=p if w is None else w * p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y if w is None else w * y, minlength=n_bins)
    return _Bins(count, sum_p, sum_y, lower, upper)


def _row_extremes(p, ids, n_bins):
    lower = np.full(n_bins, np.inf)
    upper = np.full(n_bins, -np.inf)
    np.minimum.at(lower, ids, p)
    np.maximum.at(upper, ids, p)
    empty = np.isinf(lower)
    lower[empty] = np.nan
    upper[empty] = np.nan
    return lower, upper


def _quantile_bins(g: _Groups, n_bins: int) -> _Bins:
    """Equal-count bins over tied groups, a straddling group split in proportion to weight.

    Each group first goes whole to the bin where it starts; then, at each
    inner edge that falls strictly inside a group, the part of the group
    beyond the edge (its weight, and the same share of its positives and
    prediction sum) moves on to the next bin. A group spanning several
    edges moves on edge by edge, so every bin keeps exactly its overlap.
    """
    ends = np.cumsum(g.weight)
    starts = np.r_[0.0, ends[:-1]]
    edges = _quantile_edges(float(ends[-1]), n_bins, g.whole)
    first = np.clip(np.searchsorted(edges, starts, side="right") - 1, 0, n_bins - 1)
    inner = edges[1:-1]                                  # inner[k]: between bins k and k + 1
    held = np.minimum(np.searchsorted(ends, inner, side="right"), ends.size - 1)
    k = np.flatnonzero(starts[held] < inner)             # edges strictly inside a group
    held = held[k]
    beyond = ends[held] - inner[k]
    sums = []
    for whole, part in ((g.weight, beyond), (g.value * g.weight, beyond * g.value[held]),
                        (g.pos, beyond / g.weight[held] * g.pos[held])):
        s = np.bincount(first, weights=whole, minlength=n_bins)
        s[k] -= part
        s[k + 1] += part
        sums.append(s)
    empty = edges[1:] <= edges[:-1]
    last = ends.size - 1
    lower = np.where(empty, np.nan, g.value[np.minimum(np.searchsorted(ends, edges[:-1], side="right"), last)])
    upper = np.where(empty, np.nan, g.value[np.minimum(np.searchsorted(ends, edges[1:], side="left"), last)])
    return _Bins(*sums, lower, upper)


def _bins(p, y, w, n_bins: int, strategy: str, groups: _Groups | None = None) -> _Bins:
    """Bin sums under ``strategy`` (arguments already checked)."""
    if strategy == "quantile":
        return _quantile_bins(_groups(p, y, w) if groups is None else groups, n_bins)
    if strategy == "uniform":
        edges = np.arange(n_bins + 1) / n_bins
        return _row_bins(p, y, w, _uniform_ids(p, n_bins), n_bins, edges[:-1], edges[1:])
    ids = _rank_ids(p, n_bins)
    return _row_bins(p, y, w, ids, n_bins, *_row_extremes(p, ids, n_bins))


def _gaps(bins: _Bins):
    """``|prediction sum - positive weight|`` and the weight of each non-empty bin."""
    keep = bins.count > 0
    return np.abs(bins.sum_p[keep] - bins.sum_y[keep]), bins.count[keep]


def bin_assignments(probs, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
                    sample_weight=None) -> np.ndarray:
    """Bin index (0 .. n_bins-1) of each prediction under ``strategy``.

    See the module docstring for the strategies. Under ``"quantile"`` the
    metrics split a tied group that straddles a bin edge between the bins;
    here each row is named by the bin that holds the middle of its group's
    weight (without ties: the row's own bin). ``sample_weight`` moves the
    equal-count edges; it does not change equal-width bins and is refused
    by ``"rank"``.
    """
    p = np.asarray(probs, dtype=float).reshape(-1)
    w = check_weights(sample_weight, p.size)
    n_bins = check_binning(n_bins, strategy, w is not None)
    if strategy == "uniform":
        return _uniform_ids(p, n_bins)
    if strategy == "rank":
        return _rank_ids(p, n_bins)
    return _quantile_ids(p, n_bins, w)


# ----------------------------------------------------------------------------
# the metrics
# ----------------------------------------------------------------------------
def _ece(bins: _Bins, total: float) -> float:
    gap, _ = _gaps(bins)
    return float(np.sum(gap) / total)


def _mce(bins: _Bins) -> float:
    gap, count = _gaps(bins)
    return float(np.max(gap / count))


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
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return _ece(_bins(p, y, w, n_bins, strategy), _total(p, w))


def mce(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
        sample_weight=None, *, pos_label=None) -> float:
    """Maximum calibration error: max_b |mean p_b - mean y_b| over non-empty bins.

    Arguments as for :func:`ece`.
    """
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return _mce(_bins(p, y, w, n_bins, strategy))


def _brier(p, y, w) -> float:
    return _mean((p - y) ** 2, w)


def brier(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Brier score: (weighted) mean squared difference between probability and outcome."""
    return _brier(*_check(probs, labels, sample_weight, pos_label))


def rmse(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Root of the Brier score (the RMSE of the BBQ, SBB/ABB and ELiTE papers)."""
    return math.sqrt(brier(probs, labels, sample_weight, pos_label=pos_label))


def _log_loss(p, y, w, eps: float = 1e-15) -> float:
    q = np.clip(p, eps, 1 - eps)
    return -_mean(y * np.log(q) + (1 - y) * np.log1p(-q), w)


def log_loss(probs, labels, eps: float = 1e-15, sample_weight=None, *, pos_label=None) -> float:
    """Mean negative Bernoulli log-likelihood, probabilities clipped to [eps, 1-eps]."""
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    return _log_loss(p, y, w, eps)


def _auc(g: _Groups) -> float:
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
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    return _auc(_groups(p, y, w))


def _accuracy(p, y, w, threshold: float = 0.5) -> float:
    return _mean(((p >= threshold) == (y == 1)).astype(float), w)


def accuracy(probs, labels, threshold: float = 0.5, sample_weight=None, *, pos_label=None) -> float:
    """(Weighted) share of rows where ``probs >= threshold`` agrees with the label."""
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    return _accuracy(p, y, w, threshold)


def pud(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Partition underestimated degree (MBCT Eq. 6): sum(labels) / sum(probs).

    Above 1: the rows are under-estimated; below 1: over-estimated. NaN when
    every prediction (of positive weight) is 0. Sums are weighted.
    """
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    total = _sum(p, w)
    return _sum(y.astype(float), w) / total if total > 0 else float("nan")


# ----------------------------------------------------------------------------
# MVCE
# ----------------------------------------------------------------------------
def _mvce_views(probs, y, bin_size: int, n_views: int, p: float, seed) -> np.ndarray:
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
    whole = _is_whole(w)
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


def _mvce(probs, y, w, bin_size, n_views, p, seed, max_rows) -> float:
    if bin_size is not None and int(bin_size) < 1:
        raise SettingsError(f"bin_size must be at least 1, got {bin_size}.")
    if int(n_views) < 1:
        raise SettingsError(f"n_views must be at least 1, got {n_views}.")
    if int(max_rows) < 1:
        raise SettingsError(f"max_rows must be at least 1, got {max_rows}.")
    if w is None:
        m = max(1, probs.size // 10) if bin_size is None else int(bin_size)
        return float(np.mean(_mvce_views(probs, y, m, int(n_views), p, seed)))
    counts = _whole_counts(w)
    n = int(counts.sum())
    m = max(1, n // 10) if bin_size is None else int(bin_size)
    if n > int(max_rows):
        return float(np.mean(partition_views(probs - y, counts, m, int(n_views), p, seed)))
    return float(np.mean(_mvce_views(np.repeat(probs, counts), np.repeat(y, counts), m, int(n_views), p, seed)))


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
    probs_, y, w = _check(probs, labels, sample_weight, pos_label)
    return _mvce(probs_, y, w, bin_size, n_views, p, seed, max_rows)


# ----------------------------------------------------------------------------
# reliability table and summary
# ----------------------------------------------------------------------------
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
                      interval: str = "wilson", sample_weight=None, *, pos_label=None) -> pd.DataFrame:
    """One row per bin: the data of a reliability diagram.

    With ``sample_weight`` counts are weight sums and the intervals take the
    bin's weight as the number of trials.

    Columns
    -------
    bin : bin index
    lower, upper : the bin's edges (uniform: the fixed edges; quantile and
        rank: the smallest and largest prediction in the bin)
    count : rows (weight) in the bin, 0 for an empty bin; int64 unless
        fractional weights make it fractional
    mean_pred : mean prediction (NaN when empty)
    obs_freq : observed frequency of the positive class (NaN when empty)
    ci_low, ci_high : 95% interval of ``obs_freq`` (Wilson or Clopper-Pearson)
    gap : ``obs_freq - mean_pred`` (positive: under-estimated)
    pud : ``sum(labels) / sum(probs)`` in the bin (MBCT Eq. 6)
    """
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    b = _bins(p, y, w, n_bins, strategy)
    empty = b.count <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = np.where(empty, np.nan, b.sum_p / b.count)
        obs = np.where(empty, np.nan, b.sum_y / b.count)
        pud_ = np.where(b.sum_p > 0, b.sum_y / b.sum_p, np.nan)
    lo, hi = _interval(b.sum_y, b.count, interval)
    whole = _is_whole(w)
    return pd.DataFrame({
        "bin": np.arange(n_bins),
        "lower": b.lower, "upper": b.upper,
        "count": np.round(b.count).astype(np.int64) if whole else b.count,
        "mean_pred": mean_pred,
        "obs_freq": obs,
        "ci_low": np.where(empty, np.nan, lo),
        "ci_high": np.where(empty, np.nan, hi),
        "gap": obs - mean_pred,
        "pud": pud_,
    })


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
    p, y, w = _check(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    groups = _groups(p, y, w)
    bins = _bins(p, y, w, n_bins, strategy, groups)
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
