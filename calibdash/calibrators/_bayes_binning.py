"""Shared machinery of SBB and ABB (Naeini, Cooper & Hauskrecht, arXiv:1401.2955). Both score every binning of the
sorted training scores by Eq. 6,

    Score(M) = prod_b [ Prior(u_b) prod_{k=l_b}^{u_b - 1} (1 - Prior(k)) ]
                      * n_b0! n_b1! / (n_b + 1)!,

the structure prior of Eq. 5 times the Beta(1, 1) marginal likelihood of Eq. 4, on *positions*: the sorted distinct
training scores (tied scores are one position, never split), or above ``max_positions`` equal-count micro-bins of them.

Boundary prior: the paper models ``Prior(k)``, the probability of a boundary between positions ``k`` and ``k + 1``,
"using a Poisson distribution with parameter lambda" after the discretization method it cites (EBD, Lustgarten et al.
2011), without the formula. We use EBD's Poisson-process form (as we read EBD, not among the shared papers, checked
against a public implementation): boundaries fall on the score axis as a Poisson process with ``lambda`` events on
average over the training scores' range, and a gap holds a boundary when an event falls in it: ``Prior(k) = 1 -
exp(-lambda d_k / D)``, ``d_k = s_{k+1} - s_k``, ``D = s_last - s_first``. So ``lambda`` is about the prior expected
number of boundaries, wide gaps are likelier boundaries than narrow ones, and the prior is a proper distribution over
the ``2^(P-1)`` binnings of ``P`` positions (the last bin's end is a boundary with probability one). We follow this
form rather than a constant per-gap probability because it is the cited method's and it gives a score inside a gap an
exact meaning (linear interpolation in ABB). With micro-bins ``d_k`` is the distance between their mean scores, which
matches the ungrouped prior to first order.

Sample weights: a row of weight ``w`` counts as ``w`` rows: a position's ``n0``, ``n1`` are its negative and positive
rows' weights (a score whose rows all weigh 0 is absent), micro-bins hold equal shares of the total weight, and Eq. 4
takes real counts through ``log Gamma``; the structure prior and the dynamic programmes do not change. Integer weights
fit as the rows repeated, exactly. Scaling weights by ``c`` fits ``c`` times as many rows, whose likelihood weighs more
(``c > 1``) or less against the structure prior and the Beta(1, 1) pseudo-counts of the estimates ``(n1 + 1) / (n +
2)``.

Dynamic programmes: ``F[u]`` is the log of the sum (ABB) or maximum (SBB) of the scores of the binnings of the first
``u`` positions, ``G[l]`` the log of the sum over the binnings of positions ``l .. P-1``. Each step is one numpy pass
over the other boundary of the last (first) bin, in log space (max-shifted exp-sum, log factorials from a ``gammaln``
table): O(P^2) time, O(P) memory. ABB needs sums over all binnings where Sec. 2.4 speaks of the highest scoring ones
(:class:`~calibdash.calibrators.abb.ABB`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import gammaln

from ..core.errors import SettingsError
from ..core.step_maps import collapse_ties
from .base import CurveCalibrator, HyperParam

__all__ = ["Positions", "log_gap_priors"]

#: Above this many distinct training scores, scores are grouped into this many equal-count micro-bins before the
#: O(P^2) dynamic programmes run (at this size about 0.6 s of CPU for SBB and 1.2 s for ABB; bench/bench_sbb_abb.py).
MAX_POSITIONS = 10_000

#: Log-factorials come from a precomputed ``gammaln`` table of ``N + 3`` floats up to this many training rows (32 MB);
#: above it ``gammaln`` is called in every pass (about 2x slower, no table), and so it is for fractional sample
#: weights, whose counts are real (about 3x slower at 10,000 positions).
LGAMMA_TABLE_MAX = 4_000_000

#: Default lambda (prior expected number of bin boundaries over the score range), chosen by held-out loss on real and
#: simulated data; see ``bench/bench_sbb_abb.py --lambda`` and the ABB class docstring.
DEFAULT_LAMBDA = 10.0


@dataclass(frozen=True)
class Positions:
    """Training data collapsed to sorted positions (distinct scores or micro-bins): per position its representative
    ``score`` (strictly increasing: the distinct score, or the mean score of a micro-bin's rows), its smallest and
    largest training score ``lo``, ``hi``, and its negative and positive rows ``n0``, ``n1`` (weight sums when fitted
    with weights); ``n_rows`` training rows as given, ``n_distinct`` distinct scores of positive weight, whether they
    were ``grouped`` into micro-bins and whether the rows had weights (``weighted``)."""

    score: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n0: np.ndarray
    n1: np.ndarray
    n_rows: int
    n_distinct: int
    grouped: bool
    weighted: bool = False

    @property
    def size(self) -> int:
        return int(self.score.size)

    @property
    def total(self):
        """Training rows, or their total weight when weighted."""
        return self.n0.sum() + self.n1.sum()

    def frame(self) -> pd.DataFrame:
        """One row per position: ``score``, ``lo``, ``hi``, ``n`` (rows, or weight), ``n1``
        (positives, or their weight)."""
        return pd.DataFrame({"score": self.score, "lo": self.lo, "hi": self.hi,
                             "n": self.n0 + self.n1, "n1": self.n1})


def check_lam(lam) -> float:
    """``lam`` as a float; SettingsError unless it is a positive finite number."""
    value = float(lam)
    if not np.isfinite(value) or value <= 0:
        raise SettingsError(f"lam (λ) must be a positive number, got {lam!r}.")
    return value


def collapse(s: np.ndarray, y: np.ndarray, max_positions: int = MAX_POSITIONS,
             w: np.ndarray | None = None) -> Positions:
    """Sort the rows and collapse them into positions. Tied scores always form one position. Above ``max_positions``
    distinct scores, the distinct scores are grouped into at most ``max_positions`` micro-bins of about ``N /
    max_positions`` rows each: a distinct score whose first row has rank ``r`` (0-based, among all ``N`` sorted rows)
    goes to micro-bin ``floor(r * max_positions / N)``, so a run of ties is never split (a long run makes a larger
    micro-bin). With row weights ``w`` the counts are weight sums, ``N`` the total weight and ``r`` the weight below the
    score; a score whose rows all weigh 0 is absent. SettingsError if ``max_positions < 1``."""
    max_positions = int(max_positions)
    if max_positions < 1:
        raise SettingsError(f"max_positions must be at least 1, got {max_positions}.")
    values, counts, positives = collapse_ties(s, y, w)
    if w is None:
        n1, n = np.rint(positives).astype(np.int64), int(s.size)
    else:
        n1, n = positives, counts.sum()
    n0 = np.maximum(counts - n1, 0)                    # weight sums: rounding never goes below 0
    n_distinct, weighted = int(values.size), w is not None
    if n_distinct <= max_positions:
        return Positions(score=values, lo=values, hi=values, n0=n0, n1=n1,
                         n_rows=int(s.size), n_distinct=n_distinct, grouped=False, weighted=weighted)
    first_rank = np.cumsum(counts) - counts
    group = (first_rank * max_positions) // n
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], n_distinct] - 1
    g_counts = np.add.reduceat(counts, starts)
    lo, hi = values[starts], values[ends]
    score = np.clip(np.add.reduceat(values * counts, starts) / g_counts, lo, hi)
    g_n1 = np.add.reduceat(n1, starts)
    return Positions(score=score, lo=lo, hi=hi, n0=np.add.reduceat(n0, starts), n1=g_n1,
                     n_rows=int(s.size), n_distinct=n_distinct, grouped=True, weighted=weighted)


def log_gap_priors(score: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``log Prior(k)`` and ``log(1 - Prior(k))`` for the ``P - 1`` gaps.

    ``Prior(k) = 1 - exp(-lam * d_k / D)`` (module docstring); computed with
    ``expm1`` so that tiny gaps keep their precision.
    """
    if score.size < 2:
        return np.empty(0), np.empty(0)
    x = lam * np.diff(score) / (score[-1] - score[0])
    with np.errstate(divide="ignore"):      # a gap below float resolution: Prior(k) = 0
        return np.log(-np.expm1(-x)), -x


_sum = np.add.reduce
_max = np.maximum.reduce


class _Segments:
    """The terms of Eq. 6 for every candidate bin ``[l, u]`` of positions.

    ``log score(l, u) = lml(l, u) + A[u] - A[l] + lp[u]`` where ``lml`` is the log of Eq. 4 for the bin's counts,
    ``A[u] - A[l]`` the log of the no-boundary product over the bin's inner gaps and ``lp[u]`` the log prior of the
    boundary closing the bin (0 for the last position).
    """

    def __init__(self, pos: Positions, lam: float):
        p = pos.size
        self.p = p
        # cumulative counts shifted by one so that gathers read log Gamma(k):
        # log n0! = LG[n0 + 1], log n1! = LG[n1 + 1], log (n + 1)! = LG[n + 2].
        c0 = np.concatenate([[0], np.cumsum(pos.n0)])
        c1 = np.concatenate([[0], np.cumsum(pos.n1)])
        whole = bool(np.all(c0 == np.rint(c0)) and np.all(c1 == np.rint(c1)))
        dtype = np.int64 if whole else float       # weights: real counts unless whole numbers
        self.c0, self.c1 = c0.astype(dtype), c1.astype(dtype)
        self.cn = self.c0 + self.c1
        total = self.cn[-1]
        if whole and total + 3 <= LGAMMA_TABLE_MAX:
            self.lgamma = gammaln(np.arange(int(total) + 3, dtype=float))
            self.lgamma[0] = np.inf  # never read; Gamma(0) is a pole
        else:                        # too many rows for a table, or real counts: call gammaln per pass
            self.lgamma = None
        if p > 1:
            self.a = -lam * (pos.score - pos.score[0]) / (pos.score[-1] - pos.score[0])
        else:
            self.a = np.zeros(1)
        log_p, _ = log_gap_priors(pos.score, lam)
        self.lp = np.append(log_p, 0.0)
        # scratch buffers, reused by every pass
        self._i0, self._i1, self._i2 = (np.empty(p, dtype=dtype) for _ in range(3))
        self._f0, self._f1, self._f2 = (np.empty(p) for _ in range(3))

    def lml_ending_at(self, u: int) -> np.ndarray:
        """``lml(l, u)`` for ``l = 0 .. u`` (a view into a scratch buffer)."""
        k = u + 1
        return self._lml(np.subtract(self.c0[k] + 1, self.c0[:k], out=self._i0[:k]),
                         np.subtract(self.c1[k] + 1, self.c1[:k], out=self._i1[:k]),
                         np.subtract(self.cn[k] + 2, self.cn[:k], out=self._i2[:k]))

    def lml_starting_at(self, l: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``lml(l, u)`` for ``u = l .. P-1``, with ``n1 + 1`` and ``n + 2`` of those bins."""
        m = self.p - l
        n1p = np.subtract(self.c1[l + 1:], self.c1[l] - 1, out=self._i1[:m])
        n2p = np.subtract(self.cn[l + 1:], self.cn[l] - 2, out=self._i2[:m])
        lml = self._lml(np.subtract(self.c0[l + 1:], self.c0[l] - 1, out=self._i0[:m]), n1p, n2p)
        return lml, n1p, n2p

    def _lml(self, n0p, n1p, n2p) -> np.ndarray:
        m = n0p.size
        if self.lgamma is None:
            out = gammaln(n0p, out=self._f0[:m])
            out += gammaln(n1p, out=self._f1[:m])
            out -= gammaln(n2p, out=self._f2[:m])
            return out
        table = self.lgamma
        out = table.take(n0p, out=self._f0[:m], mode="clip")
        out += table.take(n1p, out=self._f1[:m], mode="clip")
        out -= table.take(n2p, out=self._f2[:m], mode="clip")
        return out


def _forward(seg: _Segments, want_max: bool):
    """Forward pass: log-sum (and log-max with back-pointers) over prefix binnings. Returns ``(f_sum, f_max, back)``
    where ``f_sum[u]`` (``f_max[u]``) is the log of the sum (maximum) of the scores of the binnings of positions ``0 ..
    u-1`` whose last bin closes at ``u - 1``, and ``back[u]`` the first position of that last bin in the best binning.
    ``f_max``/``back`` are None unless ``want_max``."""
    p, a, lp = seg.p, seg.a, seg.lp
    f_sum = np.zeros(p + 1)
    fs_shift = np.zeros(p)          # f_sum[l] - a[l]
    f_max = np.zeros(p + 1) if want_max else None
    fm_shift = np.zeros(p) if want_max else None
    back = np.zeros(p, dtype=np.int64) if want_max else None
    v = np.empty(p)
    for u in range(p):
        k = u + 1
        lml = seg.lml_ending_at(u)
        tail = a[u] + lp[u]
        if want_max:
            w = np.add(lml, fm_shift[:k], out=v[:k])
            j = int(w.argmax())
            back[u] = j
            f_max[k] = w[j] + tail
            if k < p:
                fm_shift[k] = f_max[k] - a[k]
        t = np.add(lml, fs_shift[:k], out=v[:k])
        m = _max(t)
        t -= m
        np.exp(t, out=t)
        f_sum[k] = m + np.log(_sum(t)) + tail
        if k < p:
            fs_shift[k] = f_sum[k] - a[k]
    return f_sum, f_max, back


def sbb_best(pos: Positions, lam: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """SBB: the single highest scoring binning (Sec. 2.3), by max-product DP: ``(first, last, log_score,
    log_evidence)``, each bin's first and last position, log Score(M_opt) (Eq. 6) and the log of the sum of Eq. 6 over
    all binnings (from the same pass)."""
    seg = _Segments(pos, lam)
    f_sum, f_max, back = _forward(seg, want_max=True)
    first, last = [], []
    u = seg.p - 1
    while u >= 0:
        l = int(back[u])
        first.append(l)
        last.append(u)
        u = l - 1
    return (np.array(first[::-1], dtype=np.int64), np.array(last[::-1], dtype=np.int64), float(f_max[seg.p]),
            float(f_sum[seg.p]))


def abb_average(pos: Positions, lam: float) -> tuple[np.ndarray, np.ndarray, float]:
    """ABB: Bayesian model averaging over all binnings (Eq. 7-8), by sum-product DP.

    The posterior probability of bin ``[l, u]`` being in the binning is ``exp(F[l] + log score(l, u) + G[u + 1] - log
    Z)``; every position ``i`` in ``l .. u`` gets that weight times the bin's smoothed frequency ``(n1 + 1) / (n +
    2)`` (the Beta(1, 1) posterior mean the paper's footnote 1 refers to), added over ``l .. u`` with a difference
    array, so the calibrated value of *every* position costs O(P^2) in total. The backward sums ``G`` and the
    accumulation share one pass.

    Returns ``(value, boundary, log_evidence)``: ABB's calibrated probability at each position (Eq. 7); the posterior
    probability of a boundary in each of the ``P - 1`` gaps, ``exp(F[k+1] + G[k+1] - log Z)``; log Z.
    """
    seg = _Segments(pos, lam)
    p, a, lp = seg.p, seg.a, seg.lp
    f_sum, _, _ = _forward(seg, want_max=False)
    log_z = f_sum[p]
    g = np.zeros(p + 1)
    h = np.zeros(p)              # h[u] = G[u + 1] + a[u] + lp[u]
    h[p - 1] = a[p - 1]
    diff = np.zeros(p + 1)
    fa = f_sum[:p] - a[:p] - log_z
    for l in range(p - 1, -1, -1):
        lml, n1p, n2p = seg.lml_starting_at(l)
        t = np.add(lml, h[l:], out=lml)
        m = _max(t)
        t -= m
        np.exp(t, out=t)
        g[l] = m + np.log(_sum(t)) - a[l]
        if l > 0:
            h[l - 1] = g[l] + a[l - 1] + lp[l - 1]
        scale = np.exp(m + fa[l])
        if scale > 0.0:
            t *= n1p
            t /= n2p
            t *= scale
            diff[l] += _sum(t)
            diff[l + 1:] -= t
    value = np.cumsum(diff[:p])
    boundary = np.exp(f_sum[1:p] + g[1:p] - log_z)
    return value, boundary, float(log_z)


class BayesBinningBase(CurveCalibrator):
    """Common constructor and hyperparameters of SBB and ABB (not registered; their docstrings describe the
    parameters)."""

    paper = ("M. P. Naeini, G. F. Cooper, M. Hauskrecht. Binary Classifier Calibration: "
             "A Bayesian Non-Parametric Approach. arXiv:1401.2955, 2014 (SIAM SDM 2015).")
    hyperparams = (
        HyperParam("lam", "λ", "float", DEFAULT_LAMBDA, low=0.1, high=1000.0, log=True,
                   help="Prior expected number of bin boundaries over the score range "
                        "(Poisson); larger means more, narrower bins."),
    )

    def __init__(self, lam: float = DEFAULT_LAMBDA, max_positions: int = MAX_POSITIONS):
        self._keep(locals())
