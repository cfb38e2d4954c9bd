"""Bayesian Binning into Quantiles (BBQ): Naeini, Cooper & Hauskrecht (2015), *Obtaining Well Calibrated
Probabilities Using Bayesian Binning*, AAAI (``shared/papers/bbq-bayesian-binning-into-quantiles.txt``); the authors'
MATLAB code: github.com/pakdaman/calibration (``BBQ/build.m``, ``predict.m``, ``elbow.m``).

One equal-frequency histogram model per number of bins ``B`` in a range around ``N^(1/3)``, each scored by the BDeu
marginal likelihood (the unnumbered equation below Eq. 1, ``Score(M) = P(M) P(D|M)``, uniform model prior; we call it
"Eq. 2" and the averaging formula after it "Eq. 3"); the prediction is the posterior-weighted average of the models'
smoothed bin frequencies::

    P(D | M) = prod_b  Gamma(a) / Gamma(N_b + a)
                       * Gamma(m_b + a p_b) / Gamma(a p_b)
                       * Gamma(n_b + a (1 - p_b)) / Gamma(a (1 - p_b))

    P(z = 1 | y) = sum_i  P(D | M_i) / sum_j P(D | M_j) * P(z = 1 | y, M_i)

with ``N_b`` rows in bin ``b`` (``m_b`` positive, ``n_b`` negative), ``p_b`` the midpoint of its interval, ``a`` a
bin's prior strength. Bin edges are midpoints between neighbouring bins' extreme training scores; outer edges 0 and 1.

``variant="paper"`` (default) follows the text:

* models: every integer ``B`` in ``[N^(1/3) / C, C N^(1/3)]`` (``np.cbrt``: perfect cubes exact), at most ``N``;
* bins: ``k N / B`` rows below the ``k``-th boundary, moved to the nearest change of score so ties are never split
  (coinciding cuts merge). A ``B`` whose binning equals a smaller ``B``'s is one model, counted once (``same_as`` in
  :class:`BinningModels`), else the uniform prior would favour whatever binning ties force;
* score: BDeu with total equivalent sample size ``N'``, ``a = N' / B`` (``alpha_b = N'/B p_b``, ``beta_b = N'/B (1 -
  p_b)``);
* bin value: the posterior mean ``(m_b + alpha_b) / (N_b + N'/B)`` (footnote 3, "smoothing of the counts ...
  consistent with the Bayesian priors in the scoring function");
* weights: the posterior ``P(D|M_i) / sum_j P(D|M_j)``;
* pruning (``prune=True``, the paper's experiments, rho = 0.001): with posterior weights sorted ``S_1 >= S_2 >= ...``
  and ``sigma^2`` their population variance, average the first ``k = min{k : (S_k - S_(k+1)) / sigma^2 <= rho}``
  (``T`` if none), renormalised. The rule is not scale-free and the paper does not say how its "Bayesian scores" are
  scaled; we use the posterior probabilities, the numbers Eq. 3 averages with.

``variant="authors"`` follows the MATLAB code where it differs (``shared/data/README.md`` lists the differences):

* models: ``B`` from ``max(1, floor(N^(1/3) / C))`` to ``min(ceil(N / 5), ceil(C N^(1/3)))``, the root as ``N **
  (1/3)`` like MATLAB (1000 ** (1/3) is 9.999..., so N = 1000 gives B = 1 .. 100);
* bins: blocks of ``floor(N / B)`` rows by rank (stable sort, as MATLAB's ``sort``), the rest in the last; a block
  joins the previous bin only when its last score equals the previous block's first (ties may be split otherwise);
* score: BDeu with strength ``a = N'`` *per bin* (the code's ``'BDeu2'``: ``alpha_b = 2 p_b``, ``beta_b = 2 (1 -
  p_b)``), ``p_b`` clipped to ``[0.005, 0.995]``; the code ignores its ``N0`` option there, here ``ess`` sets it
  (default 2, the code's);
* bin value: ``(m_b + p0) / (N_b + 1)``, ``p0 = (sum of the positives' scores in the bin + midpoint) / (m_b + 1)``;
* weights: ``exp((min S - S) / 2)``, ``S = -2 log P(D|M)``; ``prune=True`` (what ``predict.m`` always uses) applies
  ``elbow.m``: relative likelihoods sorted descending, ``sigma^2`` their population variance, skip ties at the top,
  advance ``k`` while ``(R_k - R_(k+1)) / sigma^2 > 0.001``, keep the top ``k - 1`` (at least one);
* lookup: a score on a cut goes to the upper bin; at a model's zero-width bin (a run of ties ending a block) a score
  equal to that cut gets the bin the code's binary search lands in, averaged over neighbouring bins with the same
  edges, as ``predict.m`` does.

Where the code stops with an error we carry on: identical scores (the code indexes a second bin that does not exist)
give the one-bin model with edges 0 and 1, as the code builds for ``B = 1``; when every model ties (``elbow.m`` reads
past its array) we stop at the last model; a ``C`` leaving an empty range of ``B`` uses the lower end alone.

Sample weights: a row of weight ``w`` counts as ``w`` rows. ``"paper"``: equal-weight bins (the ``k``-th boundary at
cumulative weight ``k W / B``, moved as above; scores whose rows all weigh 0 are absent), BDeu and smoothing counts are
weight sums (``Gamma`` takes reals, so Eq. 2 holds as written), and the ``N`` of the range of ``B`` is the total weight
rounded (halves up, at least 1): integer weights fit as the rows repeated, exactly. Scaling weights by ``c`` fits ``c``
times as many rows: the range of ``B`` moves with ``cbrt(c W)`` and the counts grow against the fixed ``N'``, so the
posterior sharpens (``c > 1``) or flattens and the bins are smoothed less or more. ``"authors"``: blocks are ranks of
rows, where a fractional row has no place; whole weights fit as the rows repeated (``np.repeat``), others raise
:class:`~calibdash.core.errors.SettingsError`. As blocks split runs of ties by row order, score cells can fit
differently from the original rows, as the code itself does on reordered rows. On ``shared/data/svm-quadratic-scores``
this variant reproduces the published BBQ figures (``tests/calibrators/test_bbq.py``).

``fit`` computes the averaged step map once on the union of the kept models' cuts, so ``predict`` is one
``searchsorted``; the models' bins are not kept (:mod:`calibdash.explain.bbq` rebuilds them with
:func:`binning_models`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from ..core.errors import SettingsError
from ..core.sql_forms import StepMap
from ..core.step_maps import collapse_ties, step_lookup
from .base import CurveCalibrator, HyperParam, check_setting

__all__ = ["BBQCalibrator", "BinningModels", "binning_models", "averaged_map", "model_size"]

VARIANTS = ("paper", "authors")
#: The pruning threshold rho of the paper and of ``elbow.m``.
RHO = 0.001
#: The authors' clip of the bin midpoint in the BDeu prior.
_P_CLIP = 5e-3
#: The floor of the BDeu prior's Beta parameters (:func:`bdeu_log_marginal`): the smallest normal double.
PRIOR_FLOOR = float(np.finfo(float).tiny)


def model_range(n: int, c: float, variant: str = "paper") -> np.ndarray:
    """The numbers of bins ``B`` of the models BBQ averages over ``n`` training rows. ``"paper"``: integers in
    ``[cbrt(n) / c, c cbrt(n)]``, at most ``n``. ``"authors"``: ``max(1, floor(n**(1/3) / c))`` to ``min(ceil(n / 5),
    ceil(c n**(1/3)))`` as in ``build.m``. Either way at least one model (the lower end) when the range is empty."""
    n = int(n)
    if variant == "paper":
        root = float(np.cbrt(n))
        lo = max(1, math.ceil(root / c - 1e-9))
        hi = min(n, math.floor(root * c + 1e-9))
    else:
        root = n ** (1.0 / 3.0)
        lo = max(1, math.floor(root / c))
        hi = min(math.ceil(n / 5), math.ceil(c * root))
    lo = min(lo, n)
    return np.arange(lo, max(lo, hi) + 1, dtype=np.int64)


def _boundaries(bs: np.ndarray):
    """Per inner boundary of every model (``B - 1`` each): its model, that model's ``B`` and its number ``1 .. B-1``."""
    per = bs - 1
    within = np.arange(int(per.sum()), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    return np.repeat(np.arange(bs.size), per), np.repeat(bs, per), within + 1


# The binnings return (model index of every cut, cut position) sorted by model then position; a cut at position a
# means a bin ends before atom a (a row of the sorted scores, or a distinct score).
def _cuts_paper(cum: np.ndarray, bs: np.ndarray):
    """Equal-count cuts for every B in ``bs`` over distinct scores, ties never split: the ``k``-th boundary goes to
    the distinct-score boundary ``a`` whose ``cum[a]`` (rows, or weight, below ``a``) is nearest to ``k N / B`` (the
    lower on a tie)."""
    m = cum.size - 1
    if m < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    n = cum[-1]
    model, b, k = _boundaries(bs)
    inner = cum[1:m]                                   # rows below boundaries a = 1 .. m-1
    j = np.clip(np.searchsorted(inner, k * n / b), 0, m - 2)
    j_lo = np.maximum(j - 1, 0)
    d_lo = np.abs(inner[j_lo] * b - k * n)             # exact for integer counts (scaled by B)
    d_hi = np.abs(inner[j] * b - k * n)
    a = np.where(d_lo <= d_hi, j_lo, j) + 1
    keep = np.ones(a.size, bool)
    keep[1:] = (a[1:] != a[:-1]) | (model[1:] != model[:-1])
    return model[keep], a[keep]


def _cuts_authors(s: np.ndarray, bs: np.ndarray):
    """The cuts of ``build.m``'s ``HistCalibrationFreq_local`` for every B in ``bs``. ``s`` is sorted. Blocks hold ``c =
    N // B`` rows (the last block the rest); block ``q`` (0-based) joins the previous bin when its last score equals
    block ``q - 1``'s first score. (The code's loop extends a bin while the next block ends on the bin's first score;
    inside a run of merged blocks that first score is also the previous block's first, so the test is per block.)"""
    n = s.size
    model, b, q = _boundaries(bs)                      # q: blocks 1 .. B-1 (0-based)
    c = n // b
    start = q * c
    end = np.where(q == b - 1, n - 1, (q + 1) * c - 1)
    merge = s[end] == s[start - c]
    return model[~merge], start[~merge]


def bdeu_log_marginal(n1, n0, p, strength) -> np.ndarray:
    """Log BDeu marginal likelihood of each bin (one factor of "Eq. 2"), ``a = strength``, ``n1`` positives, ``n0``
    negatives. The prior's parameters ``a p_b`` and ``a (1 - p_b)`` (the latter as written: ``a - a p_b`` loses its
    digits for ``p_b`` near 1) are floored at :data:`PRIOR_FLOOR`: a bin of no width at an end (``[1, 1]`` above a cut
    at ``(1 - 2^-53 + 1) / 2 = 1.0``; ``[0, 5e-324 / 2 = 0]``) has ``p_b`` 0 or 1, and ``log Gamma(0) - log Gamma(0)``
    made every prediction NaN. With the floor, a bin whose rows agree with its prior scores the limit, ``log 1 = 0``,
    and one against it about -708 (the limit is ``-inf``): finite, even when every model has such a bin. Ordinary bins
    are unchanged."""
    n1, n0, a, p = (np.asarray(v, dtype=float) for v in (n1, n0, strength, p))
    al = np.maximum(a * p, PRIOR_FLOOR)
    be = np.maximum(a * (1.0 - p), PRIOR_FLOOR)
    return (gammaln(a) - gammaln(n1 + n0 + a) + gammaln(n1 + al) - gammaln(al)
            + gammaln(n0 + be) - gammaln(be))


def prune_paper(posterior: np.ndarray, rho: float = RHO) -> np.ndarray:
    """Keep-mask of the paper's rule on the posterior weights (see the module docstring)."""
    w = np.asarray(posterior, dtype=float)
    order = np.argsort(-w, kind="stable")
    r = w[order]
    var = r.var()
    keep = np.zeros(w.size, bool)
    k = r.size
    if var > 0 and r.size > 1:
        small = np.flatnonzero((r[:-1] - r[1:]) / var <= rho)
        if small.size:
            k = int(small[0]) + 1
    keep[order[:k]] = True
    return keep


def elbow_authors(posterior: np.ndarray, alpha: float = RHO) -> np.ndarray:
    """Keep-mask of ``elbow.m`` (the authors' pruning), read past its end guarded."""
    w = np.asarray(posterior, dtype=float)
    order = np.argsort(-w, kind="stable")               # MATLAB's sort 'descend' is stable
    r = w[order]
    b = r.size
    sigma2 = r.var()
    k = 0                                               # 0-based k; MATLAB's is k + 1
    while k < b - 1 and r[k] == r[k + 1]:
        k += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        while k < b - 1 and (r[k] - r[k + 1]) / sigma2 > alpha:
            k += 1
    keep = np.zeros(b, bool)
    keep[order[:max(k, 1)]] = True                      # MATLAB: idxs(1:k-1), or idxs(1)
    return keep


def _authors_lookup(edges: np.ndarray, est: np.ndarray, x: float) -> float:
    """``predict.m``'s ``getHistPr_local`` for one score: its binary search over ``[0, cuts, 1]`` (a score equal to a
    probed cut stops there) and its average over neighbouring bins with the same edges."""
    nb = est.size
    lo, hi = 0, nb
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if x > edges[mid]:
            lo = mid
        elif x < edges[mid]:
            hi = mid
        else:
            lo = mid
            break
    same = [lo]
    k = lo - 1
    while k >= 0 and edges[k] == edges[lo] and edges[k + 1] == edges[lo + 1]:
        same.append(k)
        k -= 1
    k = lo + 1
    while k < nb and edges[k] == edges[lo] and edges[k + 1] == edges[lo + 1]:
        same.append(k)
        k += 1
    return float(np.mean(est[same]))


@dataclass
class Bins:
    """The bins of all models, model after model: model ``m``'s first bin ``first[m]``, its number ``nb[m]``; per bin
    its ``model``, interval ``lower``/``upper``, rows ``count``, positives ``pos``, prior mean ``p`` and strength
    ``a`` and calibrated value ``est``, whether its lower edge is a cut (``inner_lo``); ``cut_at`` the cut positions of
    all models."""

    nb: np.ndarray
    first: np.ndarray
    model: np.ndarray
    cut_at: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    count: np.ndarray
    pos: np.ndarray
    mid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    p: np.ndarray | None = None
    a: np.ndarray | None = None
    inner_lo: np.ndarray | None = None
    est: np.ndarray | None = None


def _flat_bins(model_of_cut, cut_at, cut_val, n_models, n_atoms, cum, cum_pos) -> Bins:
    nb = np.bincount(model_of_cut, minlength=n_models) + 1
    first = np.cumsum(nb) - nb
    total = int(nb.sum())
    inner_lo = np.ones(total, bool)
    inner_lo[first] = False
    inner_hi = np.ones(total, bool)
    inner_hi[first + nb - 1] = False                   # bins whose upper edge is a cut
    start = np.zeros(total, np.int64)
    start[inner_lo] = cut_at
    end = np.full(total, n_atoms, np.int64)
    end[inner_hi] = cut_at
    lower = np.zeros(total)
    lower[inner_lo] = cut_val
    upper = np.ones(total)
    upper[inner_hi] = cut_val
    return Bins(nb=nb, first=first, model=np.repeat(np.arange(n_models), nb), cut_at=cut_at,
                lower=lower, upper=upper, count=(cum[end] - cum[start]).astype(float),
                pos=cum_pos[end] - cum_pos[start], mid=(lower + upper) / 2.0, start=start, end=end,
                inner_lo=inner_lo)


def _paper_bins(s, y, w, bs, ess) -> Bins:
    """Tie-respecting equal-count (equal-weight) bins; prior ``a = N'/B`` around the midpoint; posterior means."""
    values, counts, positives = collapse_ties(s, y, w)
    cum = np.concatenate([[0], np.cumsum(counts)])
    model_of_cut, cut_at = _cuts_paper(cum, bs)
    lo_v, hi_v = values[cut_at - 1], values[cut_at]
    mid = (lo_v + hi_v) / 2.0
    cut_val = np.where(mid > lo_v, mid, hi_v)          # adjacent floats: keep the lower score below
    bins = _flat_bins(model_of_cut, cut_at, cut_val, bs.size, values.size, cum,
                      np.concatenate([[0.0], np.cumsum(positives)]))
    bins.a = ess / bins.nb[bins.model]
    bins.p = bins.mid
    bins.est = (bins.pos + bins.a * bins.p) / (bins.count + bins.a)
    return bins


def _authors_bins(s, y, bs, ess) -> Bins:
    """``build.m``'s blocks; per-bin prior strength ``N'`` around the clipped midpoint; its smoothing
    (on unweighted rows: :func:`expand_whole_weights` first)."""
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order].astype(float)
    model_of_cut, cut_at = _cuts_authors(ss, bs)
    cum_pos = np.concatenate([[0.0], np.cumsum(yy)])
    bins = _flat_bins(model_of_cut, cut_at, (ss[cut_at - 1] + ss[cut_at]) / 2.0, bs.size, ss.size,
                      np.arange(ss.size + 1), cum_pos)
    cum_spos = np.concatenate([[0.0], np.cumsum(ss * yy)])
    bins.a = np.full(bins.model.size, float(ess))
    bins.p = np.clip(bins.mid, _P_CLIP, 1 - _P_CLIP)
    p0 = (cum_spos[bins.end] - cum_spos[bins.start] + bins.mid) / (bins.pos + 1.0)
    bins.est = (bins.pos + p0) / (bins.count + 1.0)
    return bins


def _average_map(bins: Bins, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weighted average of the models' step maps on the union of their cuts: ``levels[0]`` is the weighted sum of
    the first bins' estimates and each inner bin adds ``w (est_b - est_(b-1))`` at its lower edge (a difference
    array)."""
    w_bin = weight[bins.model]
    sel = w_bin > 0
    jump = sel & bins.inner_lo
    cuts = np.unique(bins.lower[jump])
    idx = np.flatnonzero(jump)
    slot = np.searchsorted(cuts, bins.lower[idx]) + 1
    diff = np.bincount(slot, weights=w_bin[idx] * (bins.est[idx] - bins.est[idx - 1]),
                       minlength=cuts.size + 1).astype(float)        # (int64 when there is no cut)
    diff[0] += float(np.sum(w_bin[bins.first] * bins.est[bins.first]))
    return cuts, np.cumsum(diff)


def _authors_corrections(bins: Bins, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where a kept model has a zero-width bin ``[v, v]``, ``predict.m``'s binary search may
    stop elsewhere than the upper-bin rule the map uses: the correction to add at ``v``."""
    corr: dict[float, float] = {}
    for i in np.flatnonzero((weight[bins.model] > 0) & (bins.lower == bins.upper)):
        m = int(bins.model[i])
        f, n = bins.first[m], bins.nb[m]
        edges = np.append(bins.lower[f:f + n], 1.0)
        v = float(bins.lower[i])
        code = _authors_lookup(edges, bins.est[f:f + n], v)
        upper_rule = bins.est[f + int(np.searchsorted(edges[1:-1], v, side="right"))]
        if code != upper_rule:
            corr[v] = corr.get(v, 0.0) + weight[m] * (code - upper_rule)
    px = np.array(sorted(corr), dtype=float)
    return px, np.array([corr[v] for v in px], dtype=float)


@dataclass
class BinningModels:
    """BBQ's binning models fitted on a set of rows, and their weights (what ``fit`` averages and
    :mod:`calibdash.explain.bbq` shows): the ``variant``; per model the number of bins ``b`` it was built for, the log
    marginal likelihood ``log_ml`` ("Eq. 2"), ``same_as`` (paper variant: the first model with the same binning,
    counted once, or -1), its ``posterior`` weight among all models before pruning (0 for a duplicate), whether
    pruning ``kept`` it, and its ``weight`` in the average (the posterior renormalised over the kept models, 0 for the
    others); and ``bins``, every bin of every model."""

    variant: str
    b: np.ndarray
    bins: Bins
    log_ml: np.ndarray
    same_as: np.ndarray
    posterior: np.ndarray
    kept: np.ndarray
    weight: np.ndarray


def expand_whole_weights(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows repeated ``sample_weight`` times each (the authors' variant); SettingsError for a fractional weight."""
    k = np.rint(sample_weight)
    if not np.array_equal(k, sample_weight):
        bad = int(np.count_nonzero(k != sample_weight))
        raise SettingsError(
            f"variant='authors' takes whole-number sample weights only ({bad:,} are fractional): it follows "
            "the MATLAB code, whose bins are blocks of floor(N / B) rows by rank, and a fractional row has no "
            "rank; whole-number weights are fitted as repeated rows. Use variant='paper' for fractional weights.")
    k = k.astype(np.int64)
    return np.repeat(s, k), np.repeat(y, k)


def model_size(n_rows: int, sample_weight: np.ndarray | None) -> int:
    """The ``N`` of the model range: ``n_rows``, or the total weight rounded (halves up, at least 1)."""
    return int(n_rows) if sample_weight is None else max(1, math.floor(float(sample_weight.sum()) + 0.5))


def binning_models(s: np.ndarray, y: np.ndarray, ess: float = 2.0, c: float = 10, prune: bool = True,
                   variant: str = "paper", sample_weight: np.ndarray | None = None) -> BinningModels:
    """Build, score and weigh BBQ's models on checked scores ``s``, 0/1 labels ``y`` and weights (None: unit weights),
    with :class:`BBQCalibrator`'s hyperparameters. Raises SettingsError for an unknown variant, ``ess <= 0``,
    ``c < 1``, and as :func:`expand_whole_weights` does."""
    check_setting(lambda v: v in VARIANTS, variant, f"variant must be one of {VARIANTS}")
    check_setting(lambda v: math.isfinite(float(v)) and float(v) > 0, ess, "ess (N') must be a positive number")
    check_setting(lambda v: math.isfinite(float(v)) and float(v) >= 1, c, "c (C) must be at least 1")
    ess, c = float(ess), float(c)
    if variant == "authors" and sample_weight is not None:
        s, y = expand_whole_weights(s, y, sample_weight)
        sample_weight = None
    bs = model_range(model_size(s.size, sample_weight), c, variant)
    bins = _paper_bins(s, y, sample_weight, bs, ess) if variant == "paper" else _authors_bins(s, y, bs, ess)
    logml = np.add.reduceat(bdeu_log_marginal(bins.pos, bins.count - bins.pos, bins.p, bins.a), bins.first)
    n_models = bs.size
    same_as = np.full(n_models, -1, np.int64)
    if variant == "paper":
        seen: dict[bytes, int] = {}                    # per model the first with the same cuts, or -1: the first
        bounds = np.concatenate([[0], np.cumsum(bins.nb - 1)])
        first = np.array([seen.setdefault(bins.cut_at[bounds[i]:bounds[i + 1]].tobytes(), i) for i in range(n_models)])
        same_as = np.where(first == np.arange(n_models), -1, first).astype(np.int64)
        unique = same_as < 0
        base = np.where(unique, np.exp(logml - logml[unique].max()), 0.0)
        posterior = base / base.sum()
        keep = np.zeros(n_models, bool)
        keep[np.flatnonzero(unique)[prune_paper(posterior[unique]) if prune else slice(None)]] = True
    else:
        score = -2.0 * logml                           # build.m's score and relative likelihood
        base = np.exp((score.min() - score) / 2.0)
        posterior = base / base.sum()
        keep = elbow_authors(base) if prune else np.ones(n_models, bool)
    weight = np.where(keep, base, 0.0)
    weight = weight / weight.sum()
    return BinningModels(variant=variant, b=bs, bins=bins, log_ml=logml, same_as=same_as,
                         posterior=posterior, kept=keep, weight=weight)


def averaged_map(models: BinningModels) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The weighted average of the models' maps as ``predict`` reads it: ``(cuts, levels, point_x, point_delta)``, the
    attributes ``cuts_`` ... ``point_delta_`` of :class:`BBQCalibrator`."""
    bins, weight = models.bins, models.weight
    points = (np.empty(0), np.empty(0)) if models.variant == "paper" else _authors_corrections(bins, weight)
    return (*_average_map(bins, weight), *points)


class BBQCalibrator(CurveCalibrator):
    """Bayesian Binning into Quantiles: a posterior-weighted average of histogram models (equations, variants and
    weights in the module docstring).

    Parameters
    ----------
    ess : float, default 2
        The paper's equivalent sample size N' of the BDeu prior: in total over the bins (``"paper"``), per bin
        (``"authors"``); 2 in the authors' experiments.
    c : float, default 10
        The paper's C: models have from ``N^(1/3)/C`` to ``C N^(1/3)`` bins.
    prune : bool, default True
        Average only the models the rho = 0.001 rule keeps (the paper's optional refinement, used in its experiments and
        always by the authors' code); ``False`` averages every model.
    variant : {"paper", "authors"}, default "paper"
        Follow the paper's text or the authors' MATLAB code.

    Attributes
    ----------
    cuts_, levels_ : ndarray
        The averaged map: ``levels_[k]`` on ``cuts_[k-1] <= s < cuts_[k]``.
    point_x_, point_delta_ : ndarray
        Scores where the authors' lookup differs from the upper-bin rule (zero-width bins) and the correction added
        there; empty for the paper variant.
    n_models_ : int
        Number of binning models (values of B).
    kept_b_, kept_weight_ : ndarray
        The B of each model in the average (kept by pruning), ascending, and its weight (the posterior renormalised
        over the kept models).
    """

    name = "bbq"
    order = 40
    color = "#0072B2"   # blue (Okabe-Ito)
    label = "BBQ"
    summary = "Bayesian binning into quantiles"
    paper = ("Naeini, Cooper & Hauskrecht (2015), Obtaining Well Calibrated Probabilities Using "
             "Bayesian Binning, AAAI")
    hyperparams = (
        HyperParam("ess", "N'", "float", 2.0, low=0.1, high=100.0, log=True,
                   help="Equivalent sample size of the BDeu prior: larger pulls each bin towards its midpoint."),
        HyperParam("c", "C", "int", 10, low=1, high=20,
                   help="Range of models: from N^(1/3)/C to C·N^(1/3) bins."),
        HyperParam("prune", "ρ", "bool", True,
                   help="Drop the models after the first small drop in sorted posterior weight (ρ = 0.001)."),
        HyperParam("variant", "", "choice", "paper", choices=VARIANTS,
                   help="Follow the paper's text, or the authors' MATLAB code (reproduces their published numbers)."),
    )

    def __init__(self, ess: float = 2.0, c: float = 10, prune: bool = True, variant: str = "paper"):
        self._keep(locals())

    def _fit(self, s, y, features, w):
        models = binning_models(s, y, self.ess, self.c, self.prune, self.variant, w)
        self.cuts_, self.levels_, self.point_x_, self.point_delta_ = averaged_map(models)
        self.n_models_ = int(models.b.size)
        self.kept_b_ = models.b[models.kept]
        self.kept_weight_ = models.weight[models.kept]

    def _curve_map(self) -> StepMap:
        """The averaged step map; the authors' variant's corrected points take the step's level plus their
        correction."""
        at = step_lookup(self.cuts_, self.levels_, self.point_x_) + self.point_delta_
        return StepMap(self.cuts_, self.levels_, self.point_x_, at)

    def _export_state(self) -> dict:
        return {"cuts": self.cuts_.tolist(), "levels": self.levels_.tolist(),
                "point_x": self.point_x_.tolist(), "point_delta": self.point_delta_.tolist()}

    def _import_state(self, state) -> None:
        self.cuts_, self.levels_ = state.curve("cuts", "levels", steps=True)
        self.point_x_, self.point_delta_ = state.curve("point_x", "point_delta")
