"""Synthetic scenarios with a known true calibration function, for teaching.

A scenario is a population of (score, label) pairs whose true calibration
function ``f(s) = P(y = 1 | score = s)`` is known, so the true calibration
error of the raw scores or of any fitted calibrator can be computed from the
population instead of being estimated from a sample, and set beside the
sample estimates (ECE, MVCE) a dashboard shows. This is the design of the
MBCT paper's simulation study (Huang et al., KDD 2022, section 5.3): repeated
draws, the theoretical calibration error (TCE) from the known truth, and the
difference of each estimate from it.

Closed-form scenarios
---------------------
The score is ``s = Q(u)`` with ``u ~ U(0, 1)``; the label is
``y ~ Bernoulli(f(s))``.

==================  ======================================  ==========================================
name                score distribution                      true calibration function f(s)
==================  ======================================  ==========================================
``calibrated``      s ~ U(0, 1)                             s
``overconfident``   q ~ U(0, 1), s = σ(2 logit q)           σ(logit(s) / 2)
``underconfident``  q ~ U(0, 1), s = σ(logit(q) / 2)        σ(2 logit s)
``nonmonotone``     s ~ U(0, 1)                             s + 0.15 sin(4πs)
``imbalance``       q ~ Beta(0.5, 9.5), s = q / (q + β(1-q))  βs / (βs + 1 - s), β = 0.2
``small_sample``    s ~ U(0, 1)                             s²
==================  ======================================  ==========================================

(σ is the logistic function.) ``imbalance`` is a model trained on data whose
negatives were kept with probability β = 0.2 (5% prevalence in the
population): its scores are the undersampled-data probabilities, the truth is
the prior-shift correction (Dal Pozzolo et al., 2015). Two values used by the
tests follow in closed form: the raw scores' true error E|f(s) - s| is
``ln(2)/2 - 1/4`` for ``overconfident`` (substitute ``u = q - 1/2``: the
integrand is ``u (1/2 - 2u²) / (2u² + 1/2)``) and ``1/6`` for
``small_sample``.

SVM scenarios (the BBQ / SBB papers' simulated data)
----------------------------------------------------
``circles``: class 0 radius ~ U(0, 2), class 1 radius ~ U(2, 4), angle ~
U(0, 2π); the population has both classes equally likely, i.e. radius ~
U(0, 4). ``xor``: **uniform square quadrants**: x ~ U([-1, 1]²), class 1
where x1·x2 > 0 (no label noise). Each is scored by a linear and a quadratic
SVM (scikit-learn ``SVC``, C = 1; quadratic: polynomial kernel of degree 2,
coef0 = 1, gamma = 1 / (2 Var x), which is ``gamma="scale"``), fitted once on
a training draw of 1,000 points with the fixed seed :data:`SVM_SEED`; the
score is the logistic function of the margin. For ``circles`` the training
draw is the one of ``sample_data/make_samples.py`` (500 points per class),
so these SVMs are exactly the ones that scored the shipped ``circles_svm``
sample.

The truth of an SVM scenario has no closed form, but the input distribution
is known exactly, so it is computed by **numerical integration, not by
simulation**. Both SVMs' margins are quadratic forms in x (the degree-2
kernel expansion is written out from the support vectors), and each
population is a product of two uniform variables: a *slice* (angle, or x1)
and a *ray* (radius, or x2) along which the margin is a quadratic in the ray
variable. So for every threshold t the exact length of ``{ray: margin <= t}``
and of its class-1 part is a closed-form root computation; averaging over
:data:`N_SLICES` midpoint slices gives the CDF ``G(t) = P(margin <= t)`` and
``G1(t) = P(margin <= t, y = 1)``. On about 770 thresholds (256 equal steps
in t, then 512 equal steps in G) the truth is the bin average
``f = ΔG1 / ΔG``, interpolated linearly in the margin; no monotonicity is
imposed (the linear SVMs' truths are far from monotone). It is computed once
per process (``functools.lru_cache``): 0.4 to 1.3 s per scenario on the
2-core development machine.

Accuracy of the SVM truths (measured when this was written; the first and
last are checked by ``tests/test_synthetic.py``): for ``circles_linear`` the
truth also has a closed form, ``f = 1 - asinh(√(4-d²)/|d|) /
asinh(√(16-d²)/|d|)`` for |d| < 2 and 1 beyond, with d the signed distance
of the SVM's line from the origin. The integrated truth differs from it by
1.3e-4 on average over the population and by less than 2.3e-3 for 99% of
it; the largest differences (up to 0.06) sit in the logarithmic cusp where
the line passes through the origin (f -> 0 as |d| -> 0, too narrow for a bin
average to follow). Quadrupling the slices moves the ``circles_linear``
truth by at most 2.4e-3 (in that cusp) and the other three by at most 4e-4.
Fresh Monte-Carlo samples (400,000 points, 40 equal-count score bins) agree
with the truth in every bin within 3.1 binomial standard errors.

True calibration error
----------------------
:func:`true_calibration_error` integrates ``E |f(s) - g(s)|^p`` (then the
p-th root) over the population's score distribution by the midpoint rule in
the quantile domain (:data:`N_NODES` nodes), with ``g`` the identity (raw
scores) or a fitted calibrator. ``against="score"`` (the default) compares
``g(s)`` with the true probability given the *score*; ``against="prediction"``
compares it with the true probability given the *prediction* g(s)
(``E[f(s) | g(s)]``, the calibration error in the strict sense, which is what
a binned ECE estimates). The two agree for one-to-one maps (raw scores,
Platt); for step maps (histogram, isotonic, BBQ) the second is smaller.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logit

from . import calibrators, metrics
from .methods import resolve
from .errors import DataError
from .evaluation import UNCALIBRATED, Scheme, split_indices

__all__ = ["Scenario", "SCENARIOS", "Draw", "Trial", "draw", "true_curve", "support", "true_calibration_error",
           "trial", "estimator_study", "study_summary", "DEFAULT_METHODS", "SVM_SEED", "N_NODES", "N_SLICES",
           "MIN_N", "MAX_N", "TRUE_ERROR_COLUMNS"]

#: Seed of the SVMs' training draw (the date of the BBQ authors' data.mat, as in sample_data/).
SVM_SEED = 20141129
#: Quadrature nodes (quantile midpoints) of :func:`true_calibration_error`.
N_NODES = 2 ** 16
#: Midpoint slices of the SVM truths' numerical integration.
N_SLICES = 8192
#: Calibrators of a study when none are named.
DEFAULT_METHODS = ("platt", "isotonic", "bbq")
#: Smallest and largest sample a draw accepts.
MIN_N, MAX_N = 40, 1_000_000

#: True-error column of a study for each ``against``.
TRUE_ERROR_COLUMNS = {"score": "true_error", "prediction": "true_error_pred"}

IMBALANCE_BETA = 0.2            # rate at which the imbalance model's training kept negatives
IMBALANCE_PRIOR = (0.5, 9.5)    # Beta prior of the true probability: 5% prevalence


# -- populations ---------------------------------------------------------------------------------
class _Population:
    """A score distribution with a known truth (internal interface)."""

    def nodes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores and true probabilities at the quantile midpoints ``(i + 1/2) / n``."""
        raise NotImplementedError

    def truth(self, s: np.ndarray) -> np.ndarray:
        """f(s); NaN outside the support."""
        raise NotImplementedError

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scores, labels, true probabilities) of ``n`` independent rows."""
        raise NotImplementedError

    def support(self) -> tuple[float, float]:
        raise NotImplementedError


class _Closed(_Population):
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


def _logit(s):
    with np.errstate(divide="ignore"):
        return logit(np.asarray(s, dtype=float))


def _imbalance_quantile(u):
    q = stats.beta.ppf(u, *IMBALANCE_PRIOR)
    return q / (q + IMBALANCE_BETA * (1 - q))


def _imbalance_truth(s):
    return IMBALANCE_BETA * s / (IMBALANCE_BETA * s + 1 - s)


_CLOSED_FORMS: dict[str, tuple[Callable, Callable]] = {
    "calibrated": (lambda u: u, lambda s: s),
    "overconfident": (lambda u: expit(2 * _logit(u)), lambda s: expit(_logit(s) / 2)),
    "underconfident": (lambda u: expit(_logit(u) / 2), lambda s: expit(2 * _logit(s))),
    "nonmonotone": (lambda u: u, lambda s: s + 0.15 * np.sin(4 * np.pi * s)),
    "imbalance": (_imbalance_quantile, _imbalance_truth),
    "small_sample": (lambda u: u, lambda s: s ** 2),
}


# -- SVM scenarios: geometry, margins, integrated truth ----------------------------------------------
@dataclass(frozen=True)
class _Geometry:
    """A 2-D population as two independent uniforms: a slice ``a`` and a ray ``b``.

    ``x = origin(a) + b * direction(a)``; class 1 is ``b`` in ``positive(a)``.
    """

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
        if self.name == "circles":
            r = np.concatenate([rng.uniform(0, 2, 500), rng.uniform(2, 4, 500)])
            theta = rng.uniform(0, 2 * np.pi, 1000)
            y = np.repeat([0, 1], 500)
            order = rng.permutation(1000)
            return np.column_stack([r * np.cos(theta), r * np.sin(theta)])[order], y[order]
        return self.sample(1000, rng)


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


class _SVMPopulation(_Population):
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

    def _range(self) -> tuple[float, float]:
        """Smallest and largest margin over the slices (ends of each ray and the parabola's vertex)."""
        alpha, beta, gamma = self._coef
        lo, hi = self._ray
        cands = [lo, hi]
        with np.errstate(divide="ignore", invalid="ignore"):
            cands.append(np.clip(np.where(alpha != 0, -beta / (2 * alpha), lo), lo, hi))
        vals = np.concatenate([alpha * b * b + beta * b + gamma for b in cands])
        span = vals.max() - vals.min()
        return float(vals.min() - 1e-6 * span), float(vals.max() + 1e-6 * span)

    def _integrate(self, n_even: int = 256, n_quantile: int = 512) -> None:
        m_lo, m_hi = self._range()
        t1 = np.linspace(m_lo, m_hi, n_even)
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
        m = _logit(s)
        lo, hi = self._m_support
        out = self.truth_at_margin(np.clip(m, lo, hi))
        return np.where((m >= lo) & (m <= hi), out, np.nan)

    def support(self):
        return float(expit(self._m_support[0])), float(expit(self._m_support[1]))

    def sample(self, n, rng):
        x, y = self.geometry.sample(n, rng)
        m = self.margin(x)
        return expit(m), y, self.truth_at_margin(m)


# -- scenarios ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """One teaching scenario.

    Attributes
    ----------
    name : str
        Key in :data:`SCENARIOS`.
    title : str
        Display title.
    description : str
        What the population is and how its scores come about.
    note : str
        The lesson: what to look at, which calibrators should do well and why.
    truth : str
        The true calibration function, as a formula or how it is computed.
    default_n : int
        Sample size the page starts this scenario with.
    """

    name: str
    title: str
    description: str
    note: str
    truth: str
    default_n: int = 1000
    _build: Callable[[], _Population] = field(default=None, repr=False, compare=False)


def _svm(geometry: str, kernel: str) -> Callable[[], _Population]:
    return lambda: _SVMPopulation(_GEOMETRIES[geometry], kernel)


def _closed(name: str) -> Callable[[], _Population]:
    return lambda: _Closed(*_CLOSED_FORMS[name])


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario(
        "calibrated", "Perfectly calibrated (reference)",
        "Scores uniform on [0, 1] and the outcome drawn with exactly that probability: the true calibration "
        "error of the raw scores is 0.",
        "Any calibration error measured here is estimation noise: ECE comes out positive on every sample "
        "(it cannot be negative), the more so the smaller the sample. A calibrator can only add error.",
        "f(s) = s", _build=_closed("calibrated")),
    Scenario(
        "overconfident", "Over-confident model",
        "Scores twice as extreme as the truth on the log-odds scale (s = σ(2 logit q) for a true probability "
        "q ~ U(0, 1)), as boosted trees or naive Bayes tend to be.",
        "The truth is a logistic curve in logit(s), exactly Platt scaling's family, so Platt should be "
        "best; binning methods get close with enough rows. True error of the raw scores: ln 2 / 2 - 1/4 = 0.097.",
        "f(s) = σ(logit(s) / 2)", _build=_closed("overconfident")),
    Scenario(
        "underconfident", "Under-confident model",
        "Scores pulled towards 0.5: half the true log-odds (s = σ(logit(q) / 2)), as a heavily regularised "
        "model or an average of many models gives.",
        "Again a logistic truth that Platt scaling can represent; the raw scores' reliability curve is "
        "steeper than the diagonal.",
        "f(s) = σ(2 logit s)", _build=_closed("underconfident")),
    Scenario(
        "nonmonotone", "Non-monotone truth",
        "Scores uniform on [0, 1]; the true probability waves around the diagonal, so the model ranks some "
        "cases in the wrong order (f falls on [0.125, 0.375] and [0.625, 0.875]).",
        "Platt scaling and isotonic regression can only produce increasing maps and flatten the waves; "
        "binning methods (histogram, BBQ, ABB) follow them once the bins are narrow enough.",
        "f(s) = s + 0.15 sin(4πs)", _build=_closed("nonmonotone")),
    Scenario(
        "imbalance", "Class imbalance (trained on rebalanced data)",
        "5% positives in the population; the model was trained on data that kept only 20% of the negatives, "
        "so its scores over-state every probability (s = q / (q + 0.2 (1 - q))).",
        "Most scores sit near 0 and few rows are positive: bins at high scores hold a handful of rows, so "
        "binned estimates (and ECE with equal-width bins) are noisy there. The truth is the prior-shift "
        "correction f(s) = 0.2 s / (0.2 s + 1 - s).",
        "f(s) = βs / (βs + 1 - s), β = 0.2", default_n=5000, _build=_closed("imbalance")),
    Scenario(
        "small_sample", "Small samples",
        "Scores uniform on [0, 1] that over-state the probability everywhere (f(s) = s²), looked at with "
        "few rows.",
        "Move the seed: with 100 rows each calibrator's map jumps from draw to draw, and ECE on the 50 held-out "
        "rows is mostly noise. Simple maps (Platt, few bins) are steadier here than flexible ones.",
        "f(s) = s²", default_n=100, _build=_closed("small_sample")),
    Scenario(
        "circles_linear", "Circles, linear SVM (BBQ / SBB papers)",
        "Class 0 inside radius 2, class 1 between radius 2 and 4; a linear SVM cannot separate them, so its "
        "score only says how far a point lies along one direction.",
        "The true probability is high at both ends of the score range and low in the middle: far from "
        "monotone. Platt and isotonic regression fail; binning methods (BBQ, ABB, histogram) recover the "
        "U shape, as in the BBQ paper's Table 1.",
        "integrated numerically over the known input distribution", _build=_svm("circles", "linear")),
    Scenario(
        "circles_quadratic", "Circles, quadratic SVM (BBQ / SBB papers)",
        "The same circles scored by a degree-2 polynomial-kernel SVM: near-perfect ranking, but the scores "
        "are the logistic function of a margin and not probabilities.",
        "The truth is a steep step around the decision boundary: the raw scores are badly calibrated "
        "although the AUC is almost 1. Every method helps; the map should be nearly a step.",
        "integrated numerically over the known input distribution", _build=_svm("circles", "quadratic")),
    Scenario(
        "xor_linear", "XOR, linear SVM (SBB paper)",
        "Uniform points in the square [-1, 1]², class 1 in the quadrants where x1·x2 > 0; a linear SVM "
        "gets an AUC of about 0.5.",
        "The truth swings between 0.25 and 0.75 non-monotonically: no increasing map can follow it, and "
        "even the best calibrator cannot beat an uninformative score by much.",
        "integrated numerically over the known input distribution", _build=_svm("xor", "linear")),
    Scenario(
        "xor_quadratic", "XOR, quadratic SVM (SBB paper)",
        "The XOR square scored by a degree-2 polynomial-kernel SVM, which can represent x1·x2 and so "
        "separates the quadrants almost perfectly.",
        "Most scores are close to 0 or 1 and the truth jumps from 0 to 1 over a narrow range of scores: a "
        "near-step map; calibrators differ mainly in how sharp their step is.",
        "integrated numerically over the known input distribution", _build=_svm("xor", "quadratic")),
)}


@functools.lru_cache(maxsize=None)
def _population(name: str) -> _Population:
    return _scenario(name)._build()


def _scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise DataError(f"unknown scenario {name!r}; available: {', '.join(SCENARIOS)}.")
    return SCENARIOS[name]


# -- public API -------------------------------------------------------------------------------------------
@dataclass
class Draw:
    """A sample from a scenario.

    Attributes
    ----------
    scores : ndarray of float
        Scores in [0, 1].
    labels : ndarray of int8
        0/1 outcomes.
    true_prob : ndarray of float
        f(score) for each row: the probability the label was drawn with (SVM
        scenarios: the integrated truth at the row's score).
    scenario : str
    seed : int
    """

    scores: np.ndarray
    labels: np.ndarray
    true_prob: np.ndarray
    scenario: str = ""
    seed: int = 0


def draw(name: str, n: int, seed: int) -> Draw:
    """``n`` independent rows of scenario ``name``; the same ``seed`` gives the same rows.

    Raises
    ------
    DataError
        Unknown scenario or ``n`` outside [:data:`MIN_N`, :data:`MAX_N`].
    """
    pop = _population(name)
    n = int(n)
    if not MIN_N <= n <= MAX_N:
        raise DataError(f"sample size must lie between {MIN_N} and {MAX_N:,}, got {n:,}.")
    s, y, p = pop.sample(n, np.random.default_rng(int(seed)))
    return Draw(scores=np.clip(s, 0.0, 1.0), labels=y, true_prob=p, scenario=name, seed=int(seed))


def true_curve(name: str, grid) -> np.ndarray:
    """The true calibration function f at the scores ``grid`` (NaN where no score occurs)."""
    return _population(name).truth(np.asarray(grid, dtype=float))


def support(name: str) -> tuple[float, float]:
    """Smallest and largest score of scenario ``name``'s population."""
    return _population(name).support()


def _predictor(calibrated_fn):
    if calibrated_fn is None:
        return lambda s: s
    if hasattr(calibrated_fn, "predict"):
        return calibrated_fn.predict
    if callable(calibrated_fn):
        return calibrated_fn
    raise DataError("calibrated_fn must be a fitted calibrator, a function of the score, or None.")


@functools.lru_cache(maxsize=32)
def _nodes(name: str, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    s, f = _population(name).nodes(int(n_nodes))
    s.setflags(write=False)
    f.setflags(write=False)
    return s, f


def _errors(f: np.ndarray, g: np.ndarray, p: float) -> tuple[float, float]:
    """(error against the score, error against the prediction) of predictions ``g`` at nodes with truth ``f``."""
    _, group = np.unique(g, return_inverse=True)
    f_given_g = (np.bincount(group, weights=f) / np.bincount(group))[group]
    return (float(np.mean(np.abs(f - g) ** p) ** (1.0 / p)),
            float(np.mean(np.abs(f_given_g - g) ** p) ** (1.0 / p)))


def true_calibration_error(name: str, calibrated_fn=None, p: float = 1, *, against: str = "score",
                           n_nodes: int = N_NODES) -> float:
    """The population's true calibration error ``(E |f(s) - g(s)|^p)^(1/p)``.

    Parameters
    ----------
    name : str
        Scenario.
    calibrated_fn : fitted Calibrator, callable or None
        ``g``: a fitted calibrator (its ``predict``), any function of the
        score array, or None for the raw scores (``g(s) = s``).
    p : float, default 1
        The norm (1: mean absolute error, comparable with ECE and MVCE).
    against : {"score", "prediction"}
        ``"score"``: compare ``g(s)`` with the true probability given the
        score, f(s). ``"prediction"``: with the true probability given the
        prediction, ``E[f(s) | g(s)]`` (the strict calibration error; equal
        to the first for one-to-one maps, smaller for step maps).
    n_nodes : int
        Midpoint nodes in the quantile domain of the score distribution.
    """
    if p <= 0:
        raise DataError(f"p must be positive, got {p}.")
    if against not in ("score", "prediction"):
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    s, f = _nodes(name, int(n_nodes))
    g = np.asarray(_predictor(calibrated_fn)(s), dtype=float)
    return _errors(f, g, p)[0 if against == "score" else 1]


@dataclass
class Trial:
    """One draw, halved: calibrators fitted on one half, everything judged on the other.

    Attributes
    ----------
    draw : Draw
    fit_rows, judged_rows : ndarray
        Indices of the two halves (stratified by label).
    models : dict
        Method key -> calibrator fitted on ``fit_rows``.
    errors : DataFrame
        One row per method (``"uncalibrated"`` first): ``true_error`` (against
        the score), ``true_error_pred`` (against the prediction), ``ece`` and
        ``mvce`` on the judged rows, and ``ece_minus_true``,
        ``mvce_minus_true`` (estimate minus ``true_error``).
    """

    draw: Draw
    fit_rows: np.ndarray
    judged_rows: np.ndarray
    models: dict
    errors: pd.DataFrame


def trial(name: str, n: int, seed: int, methods=None, *, n_bins: int = metrics.DEFAULT_N_BINS,
          strategy: str = metrics.DEFAULT_STRATEGY,
          mvce_views: int = 100, p: float = 1) -> Trial:
    """Draw ``n`` rows with ``seed``, fit ``methods`` on a stratified half, judge on the other half.

    Parameters
    ----------
    name, n, seed
        Scenario, sample size, seed (of the draw and of the split).
    methods : method spec (:func:`calibdash.methods.resolve`), default :data:`DEFAULT_METHODS`
    n_bins, strategy
        ECE's bins (default: 10 equal-count bins, as in MBCT's section 5.3 and the metrics table).
    mvce_views, p
        MVCE's number of random views and norm; ``p`` is also the true error's norm.
    """
    d = draw(name, n, seed)
    if min(int(d.labels.sum()), int(d.labels.size - d.labels.sum())) < 2:
        raise DataError(f"this draw of {n:,} rows has fewer than 2 rows of one class; take a larger sample.")
    fit_rows, judged = split_indices(d.labels, Scheme("split", test_size=0.5, seed=int(seed)))[0]
    s_fit, y_fit = d.scores[fit_rows], d.labels[fit_rows]
    s_judge, y_judge = d.scores[judged], d.labels[judged]
    chosen = resolve(DEFAULT_METHODS if methods is None else methods)
    models = {key: cal.fit(s_fit, y_fit) for key, cal in chosen.items()}
    nodes, truth = _nodes(name, N_NODES)
    rows = []
    for key, model in [(UNCALIBRATED, None), *models.items()]:
        pred = s_judge if model is None else model.predict(s_judge)
        true_score, true_pred = _errors(truth, nodes if model is None else model.predict(nodes), p)
        rows.append({
            "method": key,
            "true_error": true_score,
            "true_error_pred": true_pred,
            "ece": metrics.ece(pred, y_judge, n_bins, strategy),
            "mvce": metrics.mvce(pred, y_judge, n_views=mvce_views, p=p, seed=int(seed)),
        })
    errors = pd.DataFrame(rows)
    errors["ece_minus_true"] = errors["ece"] - errors["true_error"]
    errors["mvce_minus_true"] = errors["mvce"] - errors["true_error"]
    return Trial(draw=d, fit_rows=fit_rows, judged_rows=judged, models=models, errors=errors)


def estimator_study(name: str, n: int, seeds: Sequence[int], methods=None, *,
                    progress: Callable[[float, str], None] | None = None, **kwargs) -> pd.DataFrame:
    """Repeated :func:`trial`: true error against estimated ECE and MVCE, one row per (seed, method).

    The MBCT paper's simulation study (section 5.3): on each of ``seeds``
    draws of ``n`` rows the calibrators are fitted on one half and the raw
    scores and every calibrator are judged on the other half; the true error
    comes from the known truth. The spread of ``ece_minus_true`` over seeds
    is the estimator's variance, its mean the bias.

    Returns
    -------
    DataFrame with columns ``seed``, ``method`` and the columns of
    :attr:`Trial.errors`.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise DataError("give at least one seed.")
    parts = []
    for i, seed in enumerate(seeds):
        t = trial(name, n, seed, methods, **kwargs)
        parts.append(t.errors.assign(seed=seed))
        if progress:
            progress((i + 1) / len(seeds), f"draw {i + 1} of {len(seeds)}")
    out = pd.concat(parts, ignore_index=True)
    return out[["seed", "method"] + [c for c in out.columns if c not in ("seed", "method")]]


def study_summary(study: pd.DataFrame, against: str = "score") -> pd.DataFrame:
    """Per method and estimator: mean true error, mean estimate, bias, standard deviation and RMSE.

    Bias is the mean of (estimate - true error) over the draws, SD its
    standard deviation (ddof = 1), RMSE the root mean square of the
    difference. ``against`` picks the true error: given the score
    (``true_error``) or given the prediction (``true_error_pred``).
    """
    column = TRUE_ERROR_COLUMNS.get(against)
    if column is None:
        raise DataError(f"against must be 'score' or 'prediction', got {against!r}.")
    rows = []
    for method, part in study.groupby("method", sort=False):
        truth = part[column].to_numpy(dtype=float)
        for est in ("ece", "mvce"):
            diff = part[est].to_numpy(dtype=float) - truth
            rows.append({"method": method, "estimator": est.upper(),
                         "true_error": float(truth.mean()),
                         "estimate": float(part[est].mean()),
                         "bias": float(diff.mean()),
                         "sd": float(diff.std(ddof=1)) if diff.size > 1 else float("nan"),
                         "rmse": float(math.sqrt(np.mean(diff ** 2)))})
    return pd.DataFrame(rows)
