"""The binning that every binned measure and the bootstrap share: bins, bin indices, reliability tables.

ECE, MCE, the reliability table, the Hosmer-Lemeshow groups, Murphy's binned decomposition, the debiased l2 error,
ACE and the bootstrap of score cells all bin here, so a bin means the same everywhere. The module also holds the
shared input check (:func:`check_inputs`) and the one sort of the predictions into runs of ties (:func:`sort_runs`,
:func:`tied_groups`). The equal-count and equal-width bins are computed by :func:`group_bin_sums` over ascending tied
groups and weights that may hold many rows (a measure's one row, or the bootstrap's chunk of resamples).

Binning strategies
------------------
``"uniform"``
    ``n_bins`` equal-width bins on [0, 1], as in the SBB/ABB paper (Naeini & Cooper): bin ``b`` holds
    ``b/n_bins <= p < (b+1)/n_bins``, the last bin also ``p == 1``. Empty bins are skipped.
``"quantile"``
    ``n_bins`` equal-count bins over the predictions sorted ascending. With total weight ``N`` each bin holds
    ``N // n_bins`` and the remainder is spread one each over the first bins, as rows would be; with fractional
    weights the bins hold equal shares ``N / n_bins``, so the value does not change when the weights are scaled. A
    group of tied predictions that straddles a boundary is split proportionally (its weight, positives and
    prediction sum), so the result depends only on the multiset of (prediction, label, weight), never on the row
    order, and a score cell gives the value of its rows. Without ties it equals the rank cut.
``"rank"``
    The BBQ authors' MATLAB code: the rows stably sorted by prediction are cut by rank into the bin sizes of
    ``"quantile"``, so tied predictions may fall in two bins as the row order puts them. Kept only to reproduce
    published figures computed that way; refuses ``sample_weight``; not offered to users (:data:`STRATEGIES`).

The package-wide default, :data:`DEFAULT_N_BINS` = 10 equal-count bins (:data:`DEFAULT_STRATEGY`), named by every
table (:func:`binning_label`), reproduces the BBQ authors' published figures on untied scores and leaves no bin
empty.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import SettingsError
from ..core.validation import check_labels, check_scores, check_weights

__all__ = ["STRATEGIES", "DEFAULT_N_BINS", "DEFAULT_STRATEGY", "SortedRuns", "sort_runs", "uniform_ids",
           "group_bin_sums", "uniform_starts", "reliability_table"]

#: The binnings of ECE, MCE and the reliability table offered to users.
STRATEGIES = ("uniform", "quantile")
#: Every binning accepted: the offered ones and ``"rank"``, the BBQ authors' order-dependent cut.
ALL_STRATEGIES = STRATEGIES + ("rank",)
#: The package-wide default binning of ECE, MCE and the reliability table.
DEFAULT_N_BINS = 10
DEFAULT_STRATEGY = "quantile"
_STRATEGY_WORDS = {"uniform": "equal-width", "quantile": "equal-count", "rank": "rank-cut equal-count"}


def binning_label(n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY) -> str:
    """``"10 equal-count bins"``: how a table's ECE and MCE were binned, for captions."""
    check_strategy(strategy)
    return f"{int(n_bins)} {_STRATEGY_WORDS[strategy]} bins"


def check_inputs(probs, labels, sample_weight=None, pos_label=None):
    """Validated ``(p, y, w)``; ``w`` is None when every row weighs 1; ``y`` is 0/1 with 1 the positive class
    (:func:`calibdash.core.validation.check_labels`: any two label values, ``pos_label`` or the shared rule)."""
    p = check_scores(probs, "probs")
    y = check_labels(labels, p.size, require_both=False, pos_label=pos_label)
    return p, y, check_weights(sample_weight, p.size)


def check_rows(probs, labels, sample_weight):
    """Validated ``(p, y, w, w_or_none)``: ``y`` as floats, ``w`` always an array (ones when unweighted)."""
    p, y, w = check_inputs(probs, labels, sample_weight)
    return p, y.astype(float), (np.ones(p.size) if w is None else w), w


def check_level(level: float) -> float:
    if not 0.0 < float(level) < 1.0:
        raise SettingsError(f"level must lie strictly between 0 and 1, got {level}.")
    return float(level)


def check_strategy(strategy: str) -> None:
    if strategy not in ALL_STRATEGIES:
        raise SettingsError(f"strategy must be one of {ALL_STRATEGIES}, got {strategy!r}.")


def check_binning(n_bins, strategy: str, weighted: bool) -> int:
    """The validated number of bins; refuses weights with the order-dependent ``"rank"`` cut."""
    check_strategy(strategy)
    if int(n_bins) != n_bins or n_bins < 1:
        raise SettingsError(f"n_bins must be a whole number of at least 1, got {n_bins}.")
    if weighted and strategy == "rank":
        raise SettingsError('strategy="rank" cuts rows by their order and cannot take sample_weight; '
                            'use strategy="quantile", which splits tied predictions proportionally.')
    return int(n_bins)


class Groups(NamedTuple):
    """The distinct predictions ascending, their total and positive weight, and whether weights count rows."""
    value: np.ndarray
    weight: np.ndarray
    pos: np.ndarray
    whole: bool


class SortedRuns(NamedTuple):
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


def sort_runs(p: np.ndarray) -> SortedRuns:
    order = np.argsort(p)                     # ties are grouped, so their order does not matter
    ps = p[order]
    start = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
    return SortedRuns(order, start, np.diff(np.r_[start, p.size]), ps[start])


def tied_groups(p: np.ndarray, y: np.ndarray, sample_weight) -> Groups:
    """Group tied predictions (weights of 0 make groups of weight 0)."""
    srt = sort_runs(p)
    w = sample_weight
    return Groups(srt.value, srt.total(w), srt.total(y if w is None else w * y), is_whole(w))


def quantile_edges(total, n_bins: int, whole: bool) -> np.ndarray:
    """Cumulative weight at the ``n_bins + 1`` edges of the equal-count bins.

    Row counts (``whole``): bin ``k`` holds ``total // n_bins`` plus one of the remainder while it lasts,
    ``edges[k] = k * base + min(k, remainder)``. Fractional weights: equal shares ``total / n_bins``. ``total`` may
    be a 1-D array of totals (rows of weights); the edges are then along a new last axis.
    """
    if not np.ndim(total):
        return quantile_edges(np.array([float(total)]), n_bins, whole)[0]
    if whole:
        base, rest = np.divmod(np.rint(total).astype(np.int64), n_bins)
        k = np.arange(n_bins + 1)
        edges = (k * base[..., None] + np.minimum(k, rest[..., None])).astype(float)
    else:
        edges = np.stack([np.linspace(0.0, float(t), n_bins + 1) for t in total])
    edges[..., -1] = total
    return edges


def is_whole(sample_weight) -> bool:
    """True when every weight is a whole number (or there are no weights): the weights count rows."""
    return sample_weight is None or bool(np.all(sample_weight == np.floor(sample_weight)))


class Bins(NamedTuple):
    """Per bin: weight, prediction sum, positive weight, smallest and largest prediction."""
    count: np.ndarray
    sum_p: np.ndarray
    sum_y: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def uniform_ids(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


def rank_ids(p: np.ndarray, n_bins: int) -> np.ndarray:
    """The BBQ authors' rank cut: bin of each row of the stably sorted predictions (the sizes of the equal-count
    bins of rows)."""
    ids = np.empty(p.size, dtype=np.int64)
    sizes = np.diff(quantile_edges(p.size, n_bins, True)).astype(np.int64)
    ids[np.argsort(p, kind="stable")] = np.repeat(np.arange(n_bins), sizes)
    return ids


def row_bins(p, y, sample_weight, ids, n_bins, lower, upper) -> Bins:
    """Bin sums from a bin index per row."""
    count = np.bincount(ids, weights=sample_weight, minlength=n_bins).astype(float)
    sum_p = np.bincount(ids, weights=p if sample_weight is None else sample_weight * p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y if sample_weight is None else sample_weight * y, minlength=n_bins)
    return Bins(count, sum_p, sum_y, lower, upper)


def cumsum_rows(a: np.ndarray) -> np.ndarray:
    """Cumulative sums along each row of a 2-D array, row by row (numpy's 2-D cumsum holds the GIL, which the
    bootstrap's worker threads need)."""
    out = np.empty(a.shape)
    for r in range(a.shape[0]):
        np.cumsum(a[r], out=out[r])
    return out


def uniform_starts(value: np.ndarray, n_bins: int) -> np.ndarray:
    """Where equal-width bins 1 .. n_bins - 1 start among ascending tied groups of these values: the ``at`` of
    :func:`group_bin_sums` for ``"uniform"``."""
    return np.searchsorted(uniform_ids(value, n_bins), np.arange(1, n_bins))


def segment_sums(a: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per row of ``a`` (rows, L), the sums of the runs its positions cut: ``a[r, 0:pos[r, 0]]``,
    ``a[r, pos[r, 0]:pos[r, 1]]``, ... up to the row's end; ``pos`` (rows, k) non-decreasing in ``[0, L)``. One
    ``np.add.reduceat`` pass; each run is summed on its own, so a bin's sum is as precise as the bin."""
    rows, length = a.shape
    idx = np.concatenate([np.zeros((rows, 1), np.int64), pos], axis=1) + length * np.arange(rows)[:, None]
    flat = idx.reshape(-1)
    seg = np.add.reduceat(np.ascontiguousarray(a).reshape(-1), flat)
    seg[flat == np.r_[flat[1:], a.size]] = 0.0           # reduceat gives an empty run its first element
    return seg.reshape(rows, -1)


def group_bin_sums(sample_weight, pos, value, n_bins: int, whole: bool, at=None):
    """Per row and bin: weight, prediction sum, positive weight of ascending tied groups (the one binning).

    ``sample_weight`` and ``pos`` hold each group's total and positive weight, ``(rows, G)`` (or ``(G,)``); ``value``
    each group's prediction. ``at=None`` gives the equal-count bins (``whole``: the weights count rows), ``at`` from
    :func:`uniform_starts` the equal-width bins. Returns three ``(rows, n_bins)`` arrays. An equal-count edge at
    cumulative weight ``e`` falls in the first group whose cumulative weight reaches ``e``; the groups are summed in
    runs cut at those groups (:func:`segment_sums`), and the part of each straddling group before its edge (weight
    ``e`` less the weight before it, the same share of its positives and prediction sum) moves back to the bin
    before. A row is computed alike whatever the other rows, so one row gives the values a chunk of resamples gives
    for it, exactly.
    """
    sample_weight, pos = np.atleast_2d(sample_weight), np.atleast_2d(pos)
    sums = (sample_weight, sample_weight * value, pos)
    if at is not None:                                     # bins starting after the last group are empty
        kept = at[at < sample_weight.shape[1]]
        inside = np.broadcast_to(kept, (sample_weight.shape[0], kept.size))
        return tuple(np.pad(segment_sums(x, inside), ((0, 0), (0, at.size - inside.shape[1]))) for x in sums)
    cw = cumsum_rows(sample_weight)
    inner = quantile_edges(cw[:, -1], n_bins, whole)[:, 1:-1]
    g = np.stack([np.searchsorted(cw[r], inner[r]) for r in range(cw.shape[0])])
    g = np.minimum(g, cw.shape[1] - 1)
    # each straddling group's weight before its edge: the edge less the cumulative weight before the group
    head = inner - np.where(g > 0, np.take_along_axis(cw, np.maximum(g - 1, 0), axis=1), 0.0)
    share = head / np.take_along_axis(sample_weight, g, axis=1)
    out = []
    for x, part in zip(sums, (head, head * value[g], share * np.take_along_axis(pos, g, axis=1))):
        s = segment_sums(x, g)                             # runs [0, g_1), [g_1, g_2), ...: each starts a group
        s[:, :-1] += part
        s[:, 1:] -= part
        out.append(s)
    return tuple(out)


def quantile_bins(g: Groups, n_bins: int) -> Bins:
    """Equal-count bins over tied groups (:func:`group_bin_sums` on one row), with each bin's smallest and largest
    prediction."""
    count, sum_p, sum_y = (s[0] for s in group_bin_sums(g.weight, g.pos, g.value, n_bins, g.whole))
    ends = np.cumsum(g.weight)
    edges = quantile_edges(float(ends[-1]), n_bins, g.whole)
    empty = edges[1:] <= edges[:-1]
    last = ends.size - 1
    lower = np.where(empty, np.nan, g.value[np.minimum(np.searchsorted(ends, edges[:-1], side="right"), last)])
    upper = np.where(empty, np.nan, g.value[np.minimum(np.searchsorted(ends, edges[1:], side="left"), last)])
    return Bins(count, sum_p, sum_y, lower, upper)


def bin_sums(p, y, sample_weight, n_bins: int, strategy: str, groups: Groups | None = None) -> Bins:
    """Bin sums under ``strategy`` (arguments already checked). Equal-width bins of rows not yet grouped are summed
    by bin index (one ``bincount`` pass: a tied group never straddles a fixed edge); given ``groups``, over the
    groups, which gives the same sums up to the order of their additions."""
    if strategy == "rank":
        ids = rank_ids(p, n_bins)
        lower, upper = np.full(n_bins, np.inf), np.full(n_bins, -np.inf)      # each bin's smallest, largest prediction
        np.minimum.at(lower, ids, p)
        np.maximum.at(upper, ids, p)
        empty = np.isinf(lower)
        return row_bins(p, y, sample_weight, ids, n_bins, np.where(empty, np.nan, lower),
                        np.where(empty, np.nan, upper))
    edges = np.arange(n_bins + 1) / n_bins
    if strategy == "uniform" and groups is None:
        return row_bins(p, y, sample_weight, uniform_ids(p, n_bins), n_bins, edges[:-1], edges[1:])
    g = tied_groups(p, y, sample_weight) if groups is None else groups
    if strategy == "quantile":
        return quantile_bins(g, n_bins)
    # equal-width bins over the tied groups (group_bin_sums on one row), with the fixed edges
    count, sum_p, sum_y = (s[0] for s in group_bin_sums(g.weight, g.pos, g.value, n_bins, g.whole,
                                                        uniform_starts(g.value, n_bins)))
    return Bins(count, sum_p, sum_y, edges[:-1], edges[1:])


def bin_assignments(probs, n_bins: int = DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY,
                    sample_weight=None) -> np.ndarray:
    """Bin index (0 .. n_bins-1) of each prediction under ``strategy`` (module docstring).

    Under ``"quantile"`` the metrics split a tied group that straddles a bin edge between the bins; here each row
    is named by the bin that holds the middle of its group's weight. ``sample_weight`` moves the equal-count edges;
    it does not change equal-width bins and is refused by ``"rank"``.
    """
    p = np.asarray(probs, dtype=float).reshape(-1)
    w = check_weights(sample_weight, p.size)
    n_bins = check_binning(n_bins, strategy, w is not None)
    if strategy == "uniform":
        return uniform_ids(p, n_bins)
    if strategy == "rank":
        return rank_ids(p, n_bins)
    srt = sort_runs(p)                        # the bin holding the middle of each row's tied group
    weight = srt.total(w)
    ends = np.cumsum(weight)
    edges = quantile_edges(float(ends[-1]), n_bins, is_whole(w))
    group_bin = np.clip(np.searchsorted(edges, np.r_[0.0, ends[:-1]] + weight / 2, side="right") - 1, 0, n_bins - 1)
    ids = np.empty(p.size, dtype=np.int64)
    ids[srt.order] = np.repeat(group_bin, srt.rows)
    return ids


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
    """One row per bin: the data of a reliability diagram (with ``sample_weight`` counts are weight sums and the
    intervals take the bin's weight as the number of trials).

    Columns
    -------
    bin : bin index
    lower, upper : the bin's edges (uniform: the fixed edges; quantile and rank: the smallest and largest prediction)
    count : rows (weight) in the bin, 0 for an empty bin; int64 unless fractional weights make it fractional
    mean_pred, obs_freq : mean prediction and observed frequency of the positive class (NaN when empty)
    ci_low, ci_high : 95% interval of ``obs_freq`` (Wilson or Clopper-Pearson)
    gap : ``obs_freq - mean_pred`` (positive: under-estimated)
    pud : ``sum(labels) / sum(probs)`` in the bin (MBCT Eq. 6)
    """
    p, y, w = check_inputs(probs, labels, sample_weight, pos_label)
    n_bins = check_binning(n_bins, strategy, w is not None)
    b = bin_sums(p, y, w, n_bins, strategy)
    empty = b.count <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = np.where(empty, np.nan, b.sum_p / b.count)
        obs = np.where(empty, np.nan, b.sum_y / b.count)
        pud_ = np.where(b.sum_p > 0, b.sum_y / b.sum_p, np.nan)
    lo, hi = _interval(b.sum_y, b.count, interval)
    whole = is_whole(w)
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

