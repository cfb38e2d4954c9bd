"""Bayesian Binning into Quantiles (BBQ).

Naeini, Cooper & Hauskrecht (2015), *Obtaining Well Calibrated Probabilities
Using Bayesian Binning*, AAAI; the paper's text is
``shared/papers/bbq-bayesian-binning-into-quantiles.txt`` and the authors'
MATLAB code is github.com/pakdaman/calibration (``BBQ/build.m``,
``predict.m``, ``elbow.m``).

The method
----------
BBQ builds one equal-frequency histogram model per number of bins ``B`` in a
range around ``N^(1/3)``, scores each by the BDeu marginal likelihood
(the equation below the paper's Eq. 1, ``Score(M) = P(M) P(D|M)`` with a
uniform model prior; only Eq. 1 is numbered in the paper, so we call the
marginal likelihood "Eq. 2" and the averaging formula after it "Eq. 3") and
predicts the posterior-weighted average of the models' smoothed bin
frequencies::

    P(D | M) = prod_b  Gamma(a) / Gamma(N_b + a)
                       * Gamma(m_b + a p_b) / Gamma(a p_b)
                       * Gamma(n_b + a (1 - p_b)) / Gamma(a (1 - p_b))

    P(z = 1 | y) = sum_i  P(D | M_i) / sum_j P(D | M_j) * P(z = 1 | y, M_i)

with ``N_b`` rows in bin ``b``, ``m_b`` of them positive and ``n_b``
negative, ``p_b`` the midpoint of the bin's interval, and ``a`` the prior
strength of a bin. Bin edges are the midpoints between neighbouring bins'
extreme training scores; the outer edges are 0 and 1.

Two variants
------------
``variant="paper"`` (default) follows the paper's text:

* models: every integer ``B`` in ``[N^(1/3) / C, C N^(1/3)]`` (the cube root
  by ``np.cbrt``, so perfect cubes are exact), at most ``N``;
* bins: equal count, ``k N / B`` rows below the ``k``-th boundary, each
  boundary moved to the nearest change of score so that identical scores are
  never split (cuts that coincide merge, so heavy ties give fewer bins). A
  ``B`` whose binning equals that of a smaller ``B`` is the same model and is
  counted once (``same_as`` in :meth:`BBQCalibrator.diagnostics`); otherwise
  the uniform prior would favour whatever binning ties force;
* score: BDeu with equivalent sample size ``N'`` in total, ``a = N' / B``
  (``alpha_b = N'/B p_b``, ``beta_b = N'/B (1 - p_b)``), ``B`` the number of
  bins of the model;
* prediction in a bin: the posterior mean ``(m_b + alpha_b) / (N_b + N'/B)``,
  the paper's footnote 3 ("smoothing of the counts ... consistent with the
  Bayesian priors in the scoring function");
* weights: the posterior ``P(D|M_i) / sum_j P(D|M_j)``;
* pruning (``prune=True``, as in the paper's experiments, rho = 0.001): sort
  the posterior weights ``S_1 >= S_2 >= ...``, take
  ``k = min{k : (S_k - S_(k+1)) / sigma^2 <= rho}`` (``sigma^2`` the
  population variance of the weights; ``k = T`` if no drop is that small)
  and average the first ``k`` models, renormalised. The rule is not
  scale-free; the paper does not say how its "Bayesian scores" are scaled,
  and we use the posterior probabilities (they sum to one) because those are
  the numbers Eq. 3 averages with.

``variant="authors"`` follows the authors' MATLAB code where it differs from
the text (``shared/data/README.md`` lists the differences):

* models: every integer ``B`` from ``max(1, floor(N^(1/3) / C))`` to
  ``min(ceil(N / 5), ceil(C N^(1/3)))``, the cube root as ``N ** (1/3)``
  like MATLAB's ``N^(1/3)`` (1000 ** (1/3) is 9.999..., so N = 1000 gives
  B = 1 .. 100);
* bins: ``floor(N / B)`` rows per block by rank (after a stable sort, as
  MATLAB's ``sort``), the remainder in the last block; a block is merged
  into the previous bin only when its last score equals the previous
  block's first score (so a run of ties is kept whole only when the entire
  next block equals it; otherwise ties may be split);
* score: BDeu with prior strength ``a = N'`` *per bin* (the code's
  ``'BDeu2'``: ``alpha_b = 2 p_b``, ``beta_b = 2 (1 - p_b)``), ``p_b`` the
  bin midpoint clipped to ``[0.005, 0.995]``; the code ignores its ``N0``
  option there, and here ``ess`` sets this per-bin strength (the default 2 is
  the code's);
* prediction in a bin: ``(m_b + p0) / (N_b + 1)`` with
  ``p0 = (sum of the positives' scores in the bin + midpoint) / (m_b + 1)``;
* weights: relative likelihood ``exp((min S - S) / 2)`` with
  ``S = -2 log P(D|M)``; with ``prune=True`` (what ``predict.m`` always
  uses) the "elbow" rule of ``elbow.m``: sort the relative likelihoods
  descending, ``sigma^2`` their population variance, skip ties at the top,
  advance ``k`` while ``(R_k - R_(k+1)) / sigma^2 > 0.001``, keep the top
  ``k - 1`` models (at least one);
* lookup: a score exactly on a cut point goes to the upper bin; where a model
  has a zero-width bin (a run of ties ending exactly a block), a score equal
  to that cut gets the bin the code's binary search lands in, averaged over
  neighbouring bins with the same edges, as ``predict.m`` does.

Where the code would stop with an error we carry on and say so here: a
column of identical scores (all blocks merge into one bin; the code indexes
a second bin that does not exist) becomes the one-bin model with edges 0
and 1, which is what the code builds for ``B = 1``; ``elbow.m`` reads past
its array when every model ties, we stop at the last model; and ``C`` values
that leave an empty range of ``B`` use the lower end alone.

Fitted on ``shared/data/svm-quadratic-scores/train_data_*.csv`` and applied to
``test_data_*.csv``, the authors' variant reproduces their published BBQ
figures (``tests/test_bbq.py``).

Prediction
----------
The averaged map is piecewise constant. ``fit`` computes it once on the
union of the kept models' cut points (each model adds the jumps of its bin
estimates, times its weight, to a difference array whose cumulative sum is
the map), so ``predict`` is a single ``searchsorted``, whatever the number
of models.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import gammaln

from ..errors import DataError
from ._steps import collapse_ties, step_lookup
from .base import Calibrator, HyperParam

__all__ = ["BBQCalibrator", "model_range", "bdeu_log_marginal", "elbow_authors", "prune_paper"]

VARIANTS = ("paper", "authors")
#: The pruning threshold rho of the paper and of ``elbow.m``.
RHO = 0.001
#: The authors' clip of the bin midpoint in the BDeu prior.
_P_CLIP = 5e-3


# -- model range -----------------------------------------------------------------------------------
def model_range(n: int, c: float, variant: str = "paper") -> np.ndarray:
    """The numbers of bins ``B`` of the models BBQ averages over ``n`` training rows.

    ``"paper"``: integers in ``[cbrt(n) / c, c cbrt(n)]``, at most ``n``.
    ``"authors"``: ``max(1, floor(n**(1/3) / c))`` to
    ``min(ceil(n / 5), ceil(c n**(1/3)))`` as in ``build.m``.
    Either way at least one model (the lower end) when the range is empty.
    """
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


def _within_group(sizes: np.ndarray) -> np.ndarray:
    """0, 1, .., sizes[0]-1, 0, 1, .., sizes[1]-1, ... (position inside each group)."""
    total = int(sizes.sum())
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.arange(total, dtype=np.int64) - starts


# -- binnings: each returns (model index of every cut, cut position) sorted by model then position.
# A cut at position a means a bin ends before atom a (a row of the sorted scores, or a distinct score).
def _cuts_paper(cum: np.ndarray, bs: np.ndarray):
    """Equal-count cuts for every B in ``bs`` over distinct scores, ties never split.

    ``cum[a]`` is the number of rows on distinct scores below ``a`` (``cum[0] = 0``,
    ``cum[-1] = N``). The ``k``-th boundary of model ``B`` goes to the distinct-score
    boundary ``a`` whose ``cum[a]`` is nearest to ``k N / B`` (the lower on a tie).
    """
    m = cum.size - 1
    if m < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    n = int(cum[-1])
    per = bs - 1
    model = np.repeat(np.arange(bs.size), per)
    b = np.repeat(bs, per)
    k = _within_group(per) + 1
    inner = cum[1:m]                                   # rows below boundaries a = 1 .. m-1
    j = np.clip(np.searchsorted(inner, k * n / b), 0, m - 2)
    j_lo = np.maximum(j - 1, 0)
    d_lo = np.abs(inner[j_lo] * b - k * n)             # exact integer distances (scaled by B)
    d_hi = np.abs(inner[j] * b - k * n)
    a = np.where(d_lo <= d_hi, j_lo, j) + 1
    keep = np.ones(a.size, bool)
    keep[1:] = (a[1:] != a[:-1]) | (model[1:] != model[:-1])
    return model[keep], a[keep]


def _cuts_authors(s: np.ndarray, bs: np.ndarray):
    """The cuts of ``build.m``'s ``HistCalibrationFreq_local`` for every B in ``bs``.

    ``s`` is sorted. Blocks hold ``c = N // B`` rows (the last block the rest);
    block ``q`` (0-based) joins the previous bin when its last score equals block
    ``q - 1``'s first score. (The code's loop extends a bin while the next block
    ends on the bin's first score; inside a run of merged blocks that first score
    is also the previous block's first, so the test is per block.)
    """
    n = s.size
    per = bs - 1
    model = np.repeat(np.arange(bs.size), per)
    b = np.repeat(bs, per)
    q = _within_group(per) + 1                         # blocks 1 .. B-1 (0-based)
    c = n // b
    start = q * c
    end = np.where(q == b - 1, n - 1, (q + 1) * c - 1)
    merge = s[end] == s[start - c]
    return model[~merge], start[~merge]


# -- scores -------------------------------------------------------------------------------------
def bdeu_log_marginal(n1, n0, p, strength) -> np.ndarray:
    """Log BDeu marginal likelihood of each bin (one factor of the product in "Eq. 2").

    ``log Gamma(a) - log Gamma(N_b + a) + log Gamma(m_b + a p_b) - log Gamma(a p_b)
    + log Gamma(n_b + a (1 - p_b)) - log Gamma(a (1 - p_b))`` with ``a = strength``,
    ``m_b = n1`` positives and ``n_b = n0`` negatives.
    """
    n1 = np.asarray(n1, dtype=float)
    n0 = np.asarray(n0, dtype=float)
    a = np.asarray(strength, dtype=float)
    al = a * np.asarray(p, dtype=float)
    be = a - al
    return (gammaln(a) - gammaln(n1 + n0 + a) + gammaln(n1 + al) - gammaln(al)
            + gammaln(n0 + be) - gammaln(be))


# -- pruning ------------------------------------------------------------------------------------
def prune_paper(weights: np.ndarray, rho: float = RHO) -> np.ndarray:
    """Keep-mask of the paper's rule on the posterior weights (see the module docstring)."""
    w = np.asarray(weights, dtype=float)
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


def elbow_authors(weights: np.ndarray, alpha: float = RHO) -> np.ndarray:
    """Keep-mask of ``elbow.m`` (the authors' pruning), read past its end guarded."""
    w = np.asarray(weights, dtype=float)
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
    """``predict.m``'s ``getHistPr_local`` for one score: its binary search over
    ``[0, cuts, 1]`` (a score equal to a probed cut stops there) and its average over
    neighbouring bins with the same edges."""
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


# -- every model's bins, flattened model by model ------------------------------------------------------
@dataclass
class _Bins:
    """The bins of all models, model after model. ``first[m]`` is model m's first bin; ``nb[m]``
    its number of bins; ``cut_at`` the cut positions (all models, in order); ``p`` and ``a`` the
    prior mean and strength of each bin's Beta prior; ``est`` its calibrated value."""

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
    est: np.ndarray | None = None

    @property
    def inner_lo(self) -> np.ndarray:
        """Bins whose lower edge is a cut (every bin but each model's first)."""
        mask = np.ones(self.model.size, bool)
        mask[self.first] = False
        return mask


def _flat_bins(model_of_cut, cut_at, cut_val, n_models, n_atoms, cum, cum_pos) -> _Bins:
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
    return _Bins(nb=nb, first=first, model=np.repeat(np.arange(n_models), nb), cut_at=cut_at,
                 lower=lower, upper=upper, count=(cum[end] - cum[start]).astype(float),
                 pos=cum_pos[end] - cum_pos[start], mid=(lower + upper) / 2.0, start=start, end=end)


def _paper_bins(s, y, bs, ess) -> _Bins:
    """Tie-respecting equal-count bins; prior ``a = N'/B`` around the midpoint; posterior means."""
    values, counts, positives = collapse_ties(s, y)
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


def _authors_bins(s, y, bs, ess) -> _Bins:
    """``build.m``'s blocks; per-bin prior strength ``N'`` around the clipped midpoint; its smoothing."""
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


def _same_binning(cut_at: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """For each model the index of the first model with the same cuts, or -1 if it is the first."""
    seen: dict[bytes, int] = {}
    bounds = np.concatenate([[0], np.cumsum(nb - 1)])
    out = np.full(nb.size, -1, np.int64)
    for i in range(nb.size):
        j = seen.setdefault(cut_at[bounds[i]:bounds[i + 1]].tobytes(), i)
        if j != i:
            out[i] = j
    return out


def _average_map(bins: _Bins, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weighted average of the models' step maps, on the union of their cuts.

    ``levels[0]`` is the weighted sum of the first bins' estimates; each inner bin adds
    ``w (est_b - est_(b-1))`` at its lower edge (a difference array), and the cumulative sum
    gives the map on every piece.
    """
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


def _authors_corrections(bins: _Bins, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


# -- the calibrator -----------------------------------------------------------------------------
class BBQCalibrator(Calibrator):
    """Bayesian Binning into Quantiles: a posterior-weighted average of histogram models.

    See the module docstring for the equations, the two variants and where the
    paper's text and the authors' code differ.

    Parameters
    ----------
    ess : float, default 2
        The paper's equivalent sample size N' of the BDeu prior: in total over
        the bins with ``variant="paper"``, per bin with ``variant="authors"``
        (both 2 in the authors' experiments).
    c : float, default 10
        The paper's C: models have from ``N^(1/3)/C`` to ``C N^(1/3)`` bins.
    prune : bool, default True
        Average only the models kept by the rho = 0.001 rule (the paper's
        optional refinement, used in its experiments and always by the
        authors' code); ``False`` averages every model.
    variant : {"paper", "authors"}, default "paper"
        Follow the paper's text or the authors' MATLAB code.

    Attributes
    ----------
    n_models_ : int
        Number of binning models (values of B).
    cuts_, levels_ : ndarray
        The averaged map: ``levels_[k]`` on ``cuts_[k-1] <= s < cuts_[k]``.
    point_x_, point_delta_ : ndarray
        Scores where the authors' lookup differs from the upper-bin rule (zero-width
        bins) and the correction added there; empty for the paper variant.
    """

    name = "bbq"
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
        self.ess = ess
        self.c = c
        self.prune = prune
        self.variant = variant

    # -- fitting ------------------------------------------------------------------------------------
    def _check_params(self) -> tuple[float, float, str]:
        if self.variant not in VARIANTS:
            raise DataError(f"variant must be one of {VARIANTS}, got {self.variant!r}.")
        ess, c = float(self.ess), float(self.c)
        if not (math.isfinite(ess) and ess > 0):
            raise DataError(f"ess (N') must be a positive number, got {self.ess!r}.")
        if not (math.isfinite(c) and c >= 1):
            raise DataError(f"c (C) must be at least 1, got {self.c!r}.")
        return ess, c, self.variant

    def _fit(self, s, y, features):
        ess, c, variant = self._check_params()
        bs = model_range(s.size, c, variant)
        bins = _paper_bins(s, y, bs, ess) if variant == "paper" else _authors_bins(s, y, bs, ess)
        logml = np.add.reduceat(bdeu_log_marginal(bins.pos, bins.count - bins.pos, bins.p, bins.a), bins.first)
        n_models = bs.size
        same_as = np.full(n_models, -1, np.int64)
        if variant == "paper":
            same_as = _same_binning(bins.cut_at, bins.nb)
            unique = same_as < 0
            base = np.where(unique, np.exp(logml - logml[unique].max()), 0.0)
            posterior = base / base.sum()
            keep = np.zeros(n_models, bool)
            keep[np.flatnonzero(unique)[prune_paper(posterior[unique]) if self.prune else slice(None)]] = True
        else:
            score = -2.0 * logml                           # build.m's score and relative likelihood
            base = np.exp((score.min() - score) / 2.0)
            posterior = base / base.sum()
            keep = elbow_authors(base) if self.prune else np.ones(n_models, bool)
        weight = np.where(keep, base, 0.0)
        weight = weight / weight.sum()

        self.cuts_, self.levels_ = _average_map(bins, weight)
        self.point_x_, self.point_delta_ = (_authors_corrections(bins, weight) if variant == "authors"
                                            else (np.empty(0), np.empty(0)))
        self.n_models_ = int(n_models)
        self.model_b_ = bs
        self.model_n_bins_ = bins.nb
        self.model_log_ml_ = logml
        self.model_posterior_ = posterior
        self.model_kept_ = keep
        self.model_weight_ = weight
        self.model_same_as_ = np.where(same_as >= 0, bs[np.maximum(same_as, 0)], -1)
        self.bin_model_ = bins.model
        self.bin_lower_ = bins.lower
        self.bin_upper_ = bins.upper
        self.bin_count_ = bins.count.astype(np.int64)
        self.bin_positives_ = bins.pos.astype(np.int64)
        self.bin_estimate_ = bins.est

    def _predict(self, s, features):
        p = step_lookup(self.cuts_, self.levels_, s)
        if self.point_x_.size:
            i = np.minimum(np.searchsorted(self.point_x_, s), self.point_x_.size - 1)
            hit = self.point_x_[i] == s
            p[hit] += self.point_delta_[i[hit]]
        return p

    def _export_state(self) -> dict:
        """What ``predict`` needs (for :mod:`calibdash.export`): the averaged step map and the
        authors' variant's point corrections (not the models and bins behind them)."""
        return {"cuts": self.cuts_.tolist(), "levels": self.levels_.tolist(),
                "point_x": self.point_x_.tolist(), "point_delta": self.point_delta_.tolist()}

    def _import_state(self, state) -> None:
        """Restore the state of :meth:`_export_state` (``state``: a :class:`calibdash.export.State`)."""
        self.cuts_ = state.array("cuts", sorted=True)
        self.levels_ = state.array("levels", size=self.cuts_.size + 1)
        self.point_x_ = state.array("point_x", sorted=True)
        self.point_delta_ = state.array("point_delta", size=self.point_x_.size)

    # -- what the dashboard draws ----------------------------------------------------------------------
    def diagnostics(self) -> dict:
        """The models, their bins and the averaged map.

        Returns
        -------
        dict with
        ``models`` : DataFrame, one row per B: ``B``, ``n_bins`` (fewer than B when
            ties merge cuts), ``log_marginal_likelihood`` (log P(D|M), Eq. 2),
            ``posterior`` (weight among all models, before pruning), ``kept``,
            ``weight`` (used in the average: renormalised over the kept models),
            ``same_as`` (paper variant: the smaller B with the same binning, else -1);
        ``bins`` : DataFrame, one row per bin of every model: ``B``, ``bin``,
            ``lower``, ``upper``, ``count``, ``positives``, ``estimate``;
        ``map`` : DataFrame of the averaged map's pieces: ``lower``, ``upper``, ``prob``;
        ``log_evidence`` : log of the mean marginal likelihood over the distinct models
            (uniform prior);
        ``variant``, ``notes``.
        """
        self._check_fitted()
        models = pd.DataFrame({
            "B": self.model_b_, "n_bins": self.model_n_bins_,
            "log_marginal_likelihood": self.model_log_ml_, "posterior": self.model_posterior_,
            "kept": self.model_kept_, "weight": self.model_weight_, "same_as": self.model_same_as_,
        })
        first = np.cumsum(self.model_n_bins_) - self.model_n_bins_
        bins = pd.DataFrame({
            "B": self.model_b_[self.bin_model_],
            "bin": np.arange(self.bin_model_.size) - first[self.bin_model_],
            "lower": self.bin_lower_, "upper": self.bin_upper_, "count": self.bin_count_,
            "positives": self.bin_positives_, "estimate": self.bin_estimate_,
        })
        edges = np.concatenate([[0.0], self.cuts_, [1.0]])
        pieces = pd.DataFrame({"lower": edges[:-1], "upper": edges[1:], "prob": np.clip(self.levels_, 0, 1)})
        distinct = self.model_same_as_ < 0
        lml = self.model_log_ml_[distinct]
        top = lml.max()
        log_evidence = float(top + np.log(np.mean(np.exp(lml - top))))
        return {"models": models, "bins": bins, "map": pieces, "log_evidence": log_evidence,
                "variant": self.variant, "notes": self._notes()}

    def _notes(self) -> list[str]:
        b, kept = self.model_b_, self.model_kept_
        notes = [f"Averaging {int(kept.sum()):,} of {b.size:,} binning models (B = {b[0]:,} to {b[-1]:,})"
                 + (" kept by the ρ = 0.001 pruning rule." if self.prune else ", no pruning.")]
        dup = int((self.model_same_as_ >= 0).sum())
        if dup:
            notes.append(f"{dup:,} values of B give the same bins as a smaller B because of tied scores; "
                         "each binning is counted once.")
        if self.variant == "authors":
            notes.append("Authors' variant: the BDeu prior has strength N' in each bin, estimates use the "
                         "authors' score-based smoothing, and tied scores may be split as in their MATLAB code.")
        return notes
