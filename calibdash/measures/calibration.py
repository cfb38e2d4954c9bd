"""Calibration and discrimination metrics of binary probabilities: ECE, MCE, MVCE, RMSE, Brier, log-loss, AUC,
accuracy, PUD, and :func:`summary` of them all.

``labels`` are 0/1 or any two values (-1/1, True/False, yes/no, two strings) whose positive class ``pos_label=``
names or :func:`calibdash.core.validation.choose_positive` chooses, as the file loader does. A row of weight ``w``
counts as ``w`` rows (:mod:`calibdash.measures`), so a table of score cells (per distinct score a count ``n``,
``n_pos`` positives) is measured as the rows ``(score, 1)`` of weight ``n_pos`` and ``(score, 0)`` of weight
``n - n_pos``. One class alone is allowed (AUC is then NaN); MVCE alone needs whole-number weights.

ECE and MCE bin as :mod:`calibdash.measures.binning` does (default: 10 equal-count bins; :func:`binned_errors`, which
the bootstrap applies to its resampled bin sums). AUC is the Mann-Whitney statistic (:func:`group_auc`, from one sort
with tied predictions grouped). PUD, the partition underestimated degree of the MBCT paper (Eq. 6), is ``sum(labels)
/ sum(probs)``: above 1 under-estimated, below 1 over-estimated.
"""
from __future__ import annotations

import math

import numpy as np

from .binning import (DEFAULT_N_BINS, DEFAULT_STRATEGY, STRATEGIES, bin_assignments, bin_sums,
                      binning_label, check_binning, check_inputs, cumsum_rows, reliability_table, tied_groups)
from .mvce import MVCE_MAX_ROWS, mvce, mvce_checked, mvce_of_moments

__all__ = ["bin_assignments", "ece", "mce", "brier", "log_loss", "auc", "mvce", "reliability_table", "summary",
           "METRIC_NAMES", "DEFAULT_N_BINS", "DEFAULT_STRATEGY", "STRATEGIES", "binning_label", "check_binning",
           "binned_errors", "mvce_of_moments", "LOG_LOSS_EPS", "squared_errors", "log_losses", "group_auc"]

#: Column names of :func:`summary`, in table order.
METRIC_NAMES = ("AUC", "ACC", "RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE")
#: Metrics where a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = frozenset({"RMSE", "Brier", "LogLoss", "ECE", "MCE", "MVCE"})


def _total(p: np.ndarray, w) -> float:
    return float(p.size) if w is None else float(w.sum())


def _sum(x: np.ndarray, w) -> float:
    return float(np.sum(x)) if w is None else float(np.dot(x, w))


def _mean(x: np.ndarray, w) -> float:
    return float(np.mean(x)) if w is None else _sum(x, w) / float(w.sum())


def binned_errors(count, sum_p, sum_y, total):
    """ECE and MCE from bin sums: weight, prediction sum and positive weight per bin (last axis).

    ``ECE = sum_b |sum_p_b - sum_y_b| / total`` and ``MCE = max_b |sum_p_b - sum_y_b| / count_b``, both over the
    non-empty bins. One set of bins (1-D arrays, ``total`` a number) gives two floats; rows of bins (2-D, ``total``
    one per row, as the bootstrap's resamples) give two arrays, each row's values those of its bins alone.
    """
    count, sum_p, sum_y = np.asarray(count), np.asarray(sum_p), np.asarray(sum_y)
    one = count.ndim == 1
    count, sum_p, sum_y = np.atleast_2d(count), np.atleast_2d(sum_p), np.atleast_2d(sum_y)
    gap = np.abs(sum_p - sum_y)
    full = count > 0
    ece_ = np.where(full, gap, 0.0).sum(axis=-1) / total
    mce_ = np.max(np.where(full, gap / np.where(full, count, 1.0), -np.inf), axis=-1)
    return (float(ece_[0]), float(mce_[0])) if one else (ece_, mce_)


def ece(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
        sample_weight=None, *, pos_label=None) -> float:
    """Expected calibration error: sum_b (n_b / N) |mean p_b - mean y_b|.

    ``strategy``: equal-width bins on [0, 1] (``"uniform"``, SBB/ABB paper), equal-count bins with tied predictions
    split proportionally (``"quantile"``), or the BBQ authors' order-dependent ``"rank"`` cut
    (:mod:`calibdash.measures.binning`). ``sample_weight``: a row of weight w counts as w rows (``n_b`` and ``N``
    become weight sums; refused by ``"rank"``). ``pos_label``: the label value of the positive class (every function
    here takes it); default :func:`calibdash.core.validation.choose_positive`'s rule.
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return binned_errors(*bin_sums(p, y, w, n_bins, strategy)[:3], _total(p, w))[0]


def mce(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
        sample_weight=None, *, pos_label=None) -> float:
    """Maximum calibration error: max_b |mean p_b - mean y_b| over non-empty bins.

    Arguments as for :func:`ece`.
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    return binned_errors(*bin_sums(p, y, w, n_bins, strategy)[:3], 1.0)[1]


#: Log-loss clips the probabilities to [LOG_LOSS_EPS, 1 - LOG_LOSS_EPS].
LOG_LOSS_EPS = 1e-15


# Each row's term of the Brier score, the log-loss and the accuracy: the bootstrap of score cells sums them too.
def squared_errors(p, y):
    """``(p - y)^2`` per row: the Brier score's terms."""
    return (p - y) ** 2


def log_losses(p, y, eps: float = LOG_LOSS_EPS):
    """``-[y ln q + (1 - y) ln(1 - q)]`` per row, ``q`` the probability clipped to ``[eps, 1 - eps]``."""
    q = np.clip(p, eps, 1 - eps)
    return -(y * np.log(q) + (1 - y) * np.log1p(-q))


def hits(p, y, threshold: float = 0.5):
    """1.0 where ``p >= threshold`` agrees with the label, else 0.0: the accuracy's terms."""
    return ((p >= threshold) == (y == 1)).astype(float)


def brier(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Brier score: (weighted) mean squared difference between probability and outcome."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _mean(squared_errors(p, y), w)


def rmse(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Root of the Brier score (the RMSE of the BBQ, SBB/ABB and ELiTE papers)."""
    return math.sqrt(brier(probs, labels, sample_weight, pos_label=pos_label))


def log_loss(probs, labels, eps: float = LOG_LOSS_EPS, sample_weight=None, *, pos_label=None) -> float:
    """Mean negative Bernoulli log-likelihood, probabilities clipped to [eps, 1-eps]."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _mean(log_losses(p, y, eps), w)


def group_auc(sample_weight, pos):
    """Mann-Whitney AUC of ascending tied groups, from each group's total and positive weight: each positive earns
    the negatives below it and half the tied ones (NaN without both classes). ``sample_weight`` and ``pos`` are
    ``(G,)`` (one set of weights: a float) or ``(rows, G)`` (the bootstrap's resamples of the same groups: one value
    per row, each that of its row alone).
    """
    one = np.ndim(sample_weight) == 1
    sample_weight, pos = np.atleast_2d(sample_weight), np.atleast_2d(pos)
    neg = sample_weight - pos
    upto = cumsum_rows(neg)                                # negatives below each group and in it
    n1, n0 = pos.sum(axis=1), upto[:, -1]
    num = np.einsum("ij,ij->i", pos, upto) - 0.5 * np.einsum("ij,ij->i", pos, neg)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((n0 > 0) & (n1 > 0), num / (n0 * n1), np.nan)
    return float(out[0]) if one else out


def auc(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Area under the ROC curve: the Mann-Whitney statistic, ties counted one half; NaN when only one class has
    weight. The BBQ authors' code reports ``max(AUC, 1 - AUC)``; this function returns the plain AUC."""
    g = tied_groups(*check_inputs(probs, labels, sample_weight, pos_label))
    return group_auc(g.weight, g.pos)


def accuracy(probs, labels, threshold: float = 0.5, sample_weight=None, *, pos_label=None) -> float:
    """(Weighted) share of rows where ``probs >= threshold`` agrees with the label."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    return _mean(hits(p, y, threshold), w)


def pud(probs, labels, sample_weight=None, *, pos_label=None) -> float:
    """Partition underestimated degree (MBCT Eq. 6): sum(labels) / sum(probs), weighted; above 1 the rows are
    under-estimated, below 1 over-estimated; NaN when every prediction (of positive weight) is 0."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    total = _sum(p, w)
    return _sum(y.astype(float), w) / total if total > 0 else float("nan")


def summary(probs, labels, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
            mvce_bin_size: int | None = None, mvce_views: int = 100, sample_weight=None,
            mvce_max_rows: int = MVCE_MAX_ROWS, *, pos_label=None) -> dict[str, float]:
    """All metrics at once, keyed as in :data:`METRIC_NAMES`; the inputs are checked, and the predictions sorted,
    once. ECE and MCE use ``n_bins`` and ``strategy`` (as :func:`ece`); MVCE uses ``mvce_bin_size``,
    ``mvce_views`` and ``mvce_max_rows`` (and needs whole weights, see :func:`mvce`)."""
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    groups = tied_groups(p, y, w)
    ece_, mce_ = binned_errors(*bin_sums(p, y, w, n_bins, strategy, groups)[:3], _total(p, w))
    b = _mean(squared_errors(p, y), w)
    return {
        "AUC": group_auc(groups.weight, groups.pos),
        "ACC": _mean(hits(p, y), w),
        "RMSE": math.sqrt(b),
        "Brier": b,
        "LogLoss": _mean(log_losses(p, y), w),
        "ECE": ece_,
        "MCE": mce_,
        "MVCE": mvce_checked(p, y, w, mvce_bin_size, mvce_views, 1.0, 0, mvce_max_rows),
    }
