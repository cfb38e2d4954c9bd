"""Two binned errors of the machine-learning literature: the debiased l2 error and adaptive ECE, both with the
equal-count bins of :mod:`calibdash.measures.binning` (tied predictions split proportionally), as the package's ECE.
A row of weight ``w`` counts as ``w`` rows (:mod:`calibdash.measures`)."""
from __future__ import annotations

import math

import numpy as np

from ..core.errors import SettingsError
from .binning import Groups, check_binning, check_inputs, quantile_bins, tied_groups

__all__ = ["debiased_l2_ce"]


def debiased_l2_ce(probs, labels, sample_weight=None, n_bins: int | None = 15, squared: bool = False) -> float:
    """Debiased estimator of the l2 calibration error (Kumar, Liang & Ma 2019).

    With equal-mass bins ``b`` of weight ``n_b`` (``N`` in all), mean prediction ``pbar_b`` and observed frequency
    ``ybar_b``, the plug-in estimate ``sum_b (n_b/N) (pbar_b - ybar_b)^2`` of the squared l2 calibration error is
    biased upwards by the sampling variance of ``ybar_b``; the debiased estimate subtracts it, ``CE^2 = sum_b (n_b /
    N) [ (pbar_b - ybar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1) ]``, a bin of fewer than 2 rows contributing 0
    ("Verified uncertainty calibration", NeurIPS 2019, section 5). This is their ``calibration`` package's
    ``get_calibration_error(probs, labels, p=2, debias=True)`` on continuous predictions (15 equal-mass bins), which
    returns ``sqrt(max(CE^2, 0))``, as this function does; ``tests/measures/test_clinical.py`` reproduces it.

    Two differences from the authors' code, both only where predictions are tied: (1) their bins are cut at midpoints
    between the sorted predictions, so a group of tied predictions falls whole in the lower bin; here it is split
    proportionally (as the package's ECE), so the value depends only on the multiset of rows. (2) Their code switches
    to one bin per distinct prediction when there are fewer than ``N / 4`` distinct values; here that is asked for
    with ``n_bins=None`` (their ``get_binning_ce``).

    Weights count rows, also in the ``n_b - 1`` of the variance term. ``n_bins``: equal-mass bins (the authors'
    default 15; None bins by distinct prediction). ``squared=True`` returns the debiased estimate of the squared
    error, ``CE^2``, unclipped (unbiased, so it can be negative when the calibration error is small).
    """
    p, y, w_or_none = check_inputs(probs, labels, sample_weight)
    g = tied_groups(p, y, w_or_none)
    if n_bins is None:
        count, sum_p, sum_y = g.weight, g.value * g.weight, g.pos
    else:
        n_bins = check_binning(n_bins, "quantile", w_or_none is not None)
        b = quantile_bins(g, n_bins)
        count, sum_p, sum_y = b.count, b.sum_p, b.sum_y
    total = float(g.weight.sum())
    keep = count >= 2
    n_b = count[keep]
    pbar = sum_p[keep] / n_b
    ybar = sum_y[keep] / n_b
    ce2 = float(np.sum(n_b / total * ((pbar - ybar) ** 2 - ybar * (1.0 - ybar) / (n_b - 1.0))))
    return ce2 if squared else math.sqrt(max(ce2, 0.0))


def adaptive_ece(probs, labels, sample_weight=None, n_bins: int = 15, classes: str = "both") -> float:
    """Adaptive calibration error, ACE (Nixon et al., "Measuring calibration in deep learning", CVPR-W 2019).

    ``ACE = 1/(K R) sum_k sum_r |acc(r, k) - conf(r, k)|``: for each class ``k`` its probabilities are cut into
    ``n_bins`` = ``R`` equal-mass ranges; ``conf`` is the range's mean predicted probability of ``k`` and ``acc`` the
    share of its rows labelled ``k``. Unlike ECE, every range counts equally; empty ranges (``N < R``) are skipped.

    The paper's definition runs over all ``K`` classes, and a binary classifier is a ``K = 2`` softmax, so by default
    (``classes="both"``) ``p`` and ``1 - p`` both enter. Per range the two classes have the same gap; the value
    differs from the positive class alone only through the ranges (the negative class's are cut from the other end),
    and unlike it does not change when the classes are swapped. ``classes="positive"`` gives the positive class's
    value (an unweighted-mean equal-mass ECE), which some libraries report.
    """
    if classes not in ("both", "positive"):
        raise SettingsError(f"classes must be 'both' or 'positive', got {classes!r}.")
    p, y, w_or_none = check_inputs(probs, labels, sample_weight)
    n_bins = check_binning(n_bins, "quantile", w_or_none is not None)
    g = tied_groups(p, y, w_or_none)

    def per_class(groups: Groups) -> float:
        b = quantile_bins(groups, n_bins)
        keep = b.count > 0
        return float(np.mean(np.abs(b.sum_p[keep] - b.sum_y[keep]) / b.count[keep]))

    pos = per_class(g)
    if classes == "positive":
        return pos
    # the negative class: probability 1 - p ascending is the groups of p reversed; its "positives" are the zeros
    neg = per_class(Groups(1.0 - g.value[::-1], g.weight[::-1], (g.weight - g.pos)[::-1], g.whole))
    return 0.5 * (pos + neg)
