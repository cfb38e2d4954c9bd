"""The populations of the synthetic scenarios: a score distribution and its known truth.

Closed forms: the score is ``s = Q(u)`` with ``u ~ U(0, 1)``, the label ``y ~ Bernoulli(f(s))``.

==================  ========================================  ==========================================
name                score distribution                        true calibration function f(s)
==================  ========================================  ==========================================
``calibrated``      s ~ U(0, 1)                               s
``overconfident``   q ~ U(0, 1), s = σ(2 logit q)             σ(logit(s) / 2)
``underconfident``  q ~ U(0, 1), s = σ(logit(q) / 2)          σ(2 logit s)
``nonmonotone``     s ~ U(0, 1)                               s + 0.15 sin(4πs)
``imbalance``       q ~ Beta(0.5, 9.5), s = q / (q + β(1-q))  βs / (βs + 1 - s), β = 0.2
``small_sample``    s ~ U(0, 1)                               s²
==================  ========================================  ==========================================

(σ is the logistic function.) ``imbalance`` is a model trained on data whose negatives were kept with probability
β = 0.2 (5% prevalence in the population): its scores are the undersampled-data probabilities, the truth is the
prior-shift correction (Dal Pozzolo et al., 2015). The raw scores' true error E|f(s) - s| is ``ln(2)/2 - 1/4``
for ``overconfident`` (substitute ``u = q - 1/2``: the integrand is ``u (1/2 - 2u²) / (2u² + 1/2)``) and ``1/6``
for ``small_sample``; the tests check both.

SVM populations (the BBQ / SBB papers' simulated data), their truth by numerical integration.

``circles``: class 0 radius ~ U(0, 2), class 1 radius ~ U(2, 4), angle ~ U(0, 2π); both classes equally likely,
i.e. radius ~ U(0, 4). ``xor``: x ~ U([-1, 1]²), class 1 where x1·x2 > 0 (no label noise). Each is scored by a
linear and a quadratic SVM (scikit-learn ``SVC``, C = 1; quadratic: polynomial kernel of degree 2, coef0 = 1,
gamma = 1 / (2 Var x), which is ``gamma="scale"``), fitted once on a training draw of 1,000 points with the fixed
seed :data:`SVM_SEED`; the score is the logistic function of the margin. For ``circles`` the training draw is
the one of ``sample_data/make_samples.py`` (500 points per class), so these SVMs are exactly the ones that scored
the shipped ``circles_svm`` sample.

The input distribution is known exactly, so the truth is computed by **numerical integration, not simulation**.
Both SVMs' margins are quadratic forms in x (the degree-2 kernel expansion written out), and each population is a
product of two uniforms: a *slice* (angle, or x1) and a *ray* (radius, or x2) along which the margin is a quadratic.
So for every threshold t the length of ``{ray: margin <= t}`` and of its class-1 part are closed-form roots;
averaging over :data:`N_SLICES` midpoint slices gives ``G(t) = P(margin <= t)`` and ``G1(t) = P(margin <= t,
y = 1)``. On about 770 thresholds (256 equal steps in t, then 512 in G) the truth is the bin average ``ΔG1 / ΔG``,
interpolated linearly in the margin, not made monotone; computed once per process (0.4 to 1.3 s a scenario).

Accuracy (measured when this was written; the first and last are checked by ``tests/synthetic/test_synthetic.py``):
for ``circles_linear`` the truth also has a closed form, ``f = 1 - asinh(√(4-d²)/|d|) / asinh(√(16-d²)/|d|)`` for
|d| < 2 and 1 beyond, with d the signed distance of the SVM's line from the origin. The integrated truth differs
from it by 1.3e-4 on average over the population and by less than 2.3e-3 for 99% of it; the largest differences
(up to 0.06) sit in the logarithmic cusp where the line passes through the origin (f -> 0 as |d| -> 0, too narrow
for a bin average to follow). Quadrupling the slices moves the ``circles_linear`` truth by at most 2.4e-3 (in that
cusp) and the other three by at most 4e-4. Fresh Monte-Carlo samples (400,000 points, 40 equal-count score bins)
agree with the truth in every bin within 3.1 binomial standard errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from ..samples.make import circles_points

__all__ = []

IMBALANCE_BETA = 0.2            # rate at which the imbalance model's training kept negatives
IMBALANCE_PRIOR = (0.5, 9.5)    # Beta prior of the true probability: 5% prevalence


class Population:
    """A score distribution with a known truth: ``nodes(n)``, the scores and truths at the quantile midpoints
    ``(i + 1/2) / n``; ``truth(s)``, f(s) (NaN outside the support); ``sample(n, rng)``, (scores, labels, truths) of
    ``n`` independent rows; ``support()``, the smallest and largest score."""


class _Closed(Population):
    """Score ``s = Q(u)``, ``u ~ U(0, 1)``; truth ``f`` in closed form."""

    def __init__(self, quantile: Callable, truth: Callable):
        self._q, self._f = quantile, truth

    def support(self):
        return float(self._q(np.array(0.0))), float(self._q(np.array(1.0)))

    def nodes(self, n):
        s = self._q((np.arange(n) + 0.5) / n)
        return s, self._f(s)

    def truth(self, s):
        return np.clip(self._f(np.asarray(s, dtype=float)), 0.0, 1.0)

    def sample(self, n, rng):
        s = self._q(rng.uniform(size=n))
        p = self.truth(s)
        return s, (rng.uniform(size=n) < p).astype(np.int8), p


def logit_of(s):
    with np.errstate(divide="ignore"):
        return logit(np.asarray(s, dtype=float))


def _imbalance_quantile(u):
    q = stats.beta.ppf(u, *IMBALANCE_PRIOR)
    return q / (q + IMBALANCE_BETA * (1 - q))


_CLOSED_FORMS: dict[str, tuple[Callable, Callable]] = {
    "calibrated": (lambda u: u, lambda s: s),
    "overconfident": (lambda u: expit(2 * logit_of(u)), lambda s: expit(logit_of(s) / 2)),
    "underconfident": (lambda u: expit(logit_of(u) / 2), lambda s: expit(2 * logit_of(s))),
    "nonmonotone": (lambda u: u, lambda s: s + 0.15 * np.sin(4 * np.pi * s)),
    "imbalance": (_imbalance_quantile, lambda s: IMBALANCE_BETA * s / (IMBALANCE_BETA * s + 1 - s)),
    "small_sample": (lambda u: u, lambda s: s ** 2),
}


def closed_population(name: str) -> Callable[[], Population]:
    return lambda: _Closed(*_CLOSED_FORMS[name])


#: Seed of the SVMs' training draw (the date of the BBQ authors' data.mat, as in sample_data/).
SVM_SEED = 20141129
#: Midpoint slices of the SVM truths' numerical integration.
N_SLICES = 8192


@dataclass(frozen=True)
class _Geometry:
    """A 2-D population as two independent uniforms, a slice ``a`` and a ray ``b``: ``x = origin(a) + b *
    direction(a)``; class 1 is ``b`` in ``positive(a)``."""

    name: str
    slice_range: tuple[float, float]
    ray_range: tuple[float, float]

    def frame(self, a):
        """(origin, direction) of each slice's ray, arrays of shape (len(a), 2)."""
        if self.name == "circles":
            return np.zeros((a.size, 2)), np.column_stack([np.cos(a), np.sin(a)])
        return np.column_stack([a, np.zeros_like(a)]), np.tile([0.0, 1.0], (a.size, 1))

    def positive(self, a):
        """(low, high) of the ray interval holding class 1, per slice."""
        if self.name == "circles":
            return np.full(a.size, 2.0), np.full(a.size, 4.0)
        return np.where(a > 0, 0.0, -1.0), np.where(a > 0, 1.0, 0.0)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        a = rng.uniform(*self.slice_range, size=n)
        b = rng.uniform(*self.ray_range, size=n)
        o, d = self.frame(a)
        lo, hi = self.positive(a)
        return o + b[:, None] * d, ((b >= lo) & (b <= hi)).astype(np.int8)

    def training(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The SVM's training draw: 1,000 points (circles: 500 per class, as sample_data/make_samples.py)."""
        return circles_points(500, rng) if self.name == "circles" else self.sample(1000, rng)


_GEOMETRIES = {"circles": _Geometry("circles", (0.0, 2 * np.pi), (0.0, 4.0)),
               "xor": _Geometry("xor", (-1.0, 1.0), (-1.0, 1.0))}


@dataclass(frozen=True)
class _Margin:
    """``m(x) = x'Ax + v'x + c``: an SVM's decision function written out."""

    A: np.ndarray
    v: np.ndarray
    c: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.einsum("ni,ij,nj->n", x, self.A, x) + x @ self.v + self.c

    def along(self, origin, direction):
        """Coefficients (alpha, beta, gamma) of ``m(origin + b direction)`` as a quadratic in ``b``."""
        Ad = direction @ self.A
        alpha = np.einsum("ni,ni->n", direction, Ad)
        beta = 2 * np.einsum("ni,ni->n", origin, Ad) + direction @ self.v
        gamma = np.einsum("ni,ij,nj->n", origin, self.A, origin) + origin @ self.v + self.c
        return alpha, beta, gamma


def _fit_svm(geometry: _Geometry, kernel: str) -> _Margin:
    """Fit the scenario's SVM on the fixed training draw; return its margin as a quadratic form."""
    from sklearn.svm import SVC

    x, y = geometry.training(np.random.default_rng(SVM_SEED))
    if kernel == "linear":
        svm = SVC(kernel="linear", C=1.0).fit(x, y)
        return _Margin(np.zeros((2, 2)), svm.coef_[0].copy(), float(svm.intercept_[0]))
    gamma = 1.0 / (x.shape[1] * x.var())            # = gamma="scale"
    svm = SVC(kernel="poly", degree=2, C=1.0, gamma=gamma, coef0=1.0).fit(x, y)
    a, sv = svm.dual_coef_[0], svm.support_vectors_
    # sum_i a_i (gamma x_i'x + 1)^2 + b, expanded
    return _Margin(gamma ** 2 * (sv.T * a) @ sv, 2 * gamma * (a @ sv), float(a.sum() + svm.intercept_[0]))


def _measure(alpha, beta, gamma, t, low, high):
    """Length of ``{b in [low, high]: alpha b² + beta b + gamma <= t}``; slices on axis 0, thresholds on axis 1."""
    al, be, lo, hi = alpha[:, None], beta[:, None], low[:, None], high[:, None]
    c = gamma[:, None] - t[None, :]
    width = hi - lo
    linear = alpha == 0
    out = np.empty(c.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        if linear.any():                # beta b + c <= 0
            i = linear
            root = np.clip(-c[i] / be[i], lo[i], hi[i])
            out[i] = np.where(be[i] > 0, root - lo[i],
                              np.where(be[i] < 0, hi[i] - root, np.where(c[i] <= 0, width[i], 0.0)))
        if not linear.all():            # numerically stable roots of the quadratic
            i = ~linear
            a_, b_, c_ = al[i], be[i], c[i]
            disc = b_ * b_ - 4 * a_ * c_
            sq = np.sqrt(np.maximum(disc, 0.0))
            q = -0.5 * (b_ + np.where(b_ >= 0, sq, -sq))
            r1 = q / a_
            r2 = np.where(q != 0, c_ / q, r1)
            inside = np.clip(np.minimum(np.maximum(r1, r2), hi[i]) - np.maximum(np.minimum(r1, r2), lo[i]), 0.0, None)
            inside = np.where(disc > 0, inside, 0.0)
            out[i] = np.where(a_ > 0, inside, np.where(disc > 0, width[i] - inside, width[i]))
    return out


class _SVMPopulation(Population):
    """The circles / XOR population scored by an SVM; truth by numerical integration (module docstring)."""

    def __init__(self, geometry: _Geometry, kernel: str, n_slices: int = N_SLICES):
        self.geometry, self.kernel = geometry, kernel
        self.margin = _fit_svm(geometry, kernel)
        lo, hi = geometry.slice_range
        a = lo + (np.arange(n_slices) + 0.5) * (hi - lo) / n_slices
        o, d = geometry.frame(a)
        self._coef = self.margin.along(o, d)
        self._ray = (np.full(a.size, geometry.ray_range[0]), np.full(a.size, geometry.ray_range[1]))
        self._pos = geometry.positive(a)
        self._integrate()

    def _cdfs(self, t: np.ndarray, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """G(t) = P(margin <= t) and G1(t) = P(margin <= t, y = 1)."""
        width = self.geometry.ray_range[1] - self.geometry.ray_range[0]
        g, g1 = np.empty(t.size), np.empty(t.size)
        for i in range(0, t.size, chunk):
            tt = t[i:i + chunk]
            g[i:i + chunk] = _measure(*self._coef, tt, *self._ray).mean(axis=0) / width
            g1[i:i + chunk] = _measure(*self._coef, tt, *self._pos).mean(axis=0) / width
        return g, g1

    def _integrate(self, n_even: int = 256, n_quantile: int = 512) -> None:
        # the margins' range over the slices: at the ends of each ray and the parabola's vertex
        alpha, beta, gamma = self._coef
        lo, hi = self._ray
        cands = [lo, hi]
        with np.errstate(divide="ignore", invalid="ignore"):
            cands.append(np.clip(np.where(alpha != 0, -beta / (2 * alpha), lo), lo, hi))
        vals = np.concatenate([alpha * b * b + beta * b + gamma for b in cands])
        span = vals.max() - vals.min()
        t1 = np.linspace(float(vals.min() - 1e-6 * span), float(vals.max() + 1e-6 * span), n_even)
        g_even = np.maximum.accumulate(self._cdfs(t1)[0])
        t2 = np.interp(np.linspace(0, 1, n_quantile + 1), g_even, t1)
        t = np.unique(np.concatenate([t1, t2]))
        g, g1 = self._cdfs(t)
        g, g1 = np.maximum.accumulate(g), np.maximum.accumulate(g1)
        dg, dg1 = np.diff(g), np.diff(g1)
        keep = dg > 1e-9
        self._t, self._g = t, g
        self._mid = ((t[:-1] + t[1:]) / 2)[keep]
        self._f = np.clip(dg1[keep] / dg[keep], 0.0, 1.0)
        inside = (g > 0) & (g < 1)
        first = max(int(np.argmax(inside)) - 1, 0)
        last = min(len(g) - int(np.argmax(inside[::-1])), len(g) - 1)
        self._m_support = (float(t[first]), float(t[last]))

    def truth_at_margin(self, m: np.ndarray) -> np.ndarray:
        return np.interp(m, self._mid, self._f)

    def margin_quantile(self, u: np.ndarray) -> np.ndarray:
        return np.interp(u, self._g, self._t)

    def nodes(self, n):
        m = self.margin_quantile((np.arange(n) + 0.5) / n)
        return expit(m), self.truth_at_margin(m)

    def truth(self, s):
        m = logit_of(s)
        lo, hi = self._m_support
        out = self.truth_at_margin(np.clip(m, lo, hi))
        return np.where((m >= lo) & (m <= hi), out, np.nan)

    def support(self):
        return float(expit(self._m_support[0])), float(expit(self._m_support[1]))

    def sample(self, n, rng):
        x, y = self.geometry.sample(n, rng)
        m = self.margin(x)
        return expit(m), y, self.truth_at_margin(m)


def svm_population(geometry: str, kernel: str) -> Callable[[], Population]:
    return lambda: _SVMPopulation(_GEOMETRIES[geometry], kernel)
