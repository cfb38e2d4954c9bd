"""Closed-form populations of the synthetic scenarios: the score is ``s = Q(u)`` with ``u ~ U(0, 1)``, the label
``y ~ Bernoulli(f(s))``.

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
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats
from scipy.special import expit, logit

__all__ = []

IMBALANCE_BETA = 0.2            # rate at which the imbalance model's training kept negatives
IMBALANCE_PRIOR = (0.5, 9.5)    # Beta prior of the true probability: 5% prevalence


class Population:
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


def _imbalance_truth(s):
    return IMBALANCE_BETA * s / (IMBALANCE_BETA * s + 1 - s)


_CLOSED_FORMS: dict[str, tuple[Callable, Callable]] = {
    "calibrated": (lambda u: u, lambda s: s),
    "overconfident": (lambda u: expit(2 * logit_of(u)), lambda s: expit(logit_of(s) / 2)),
    "underconfident": (lambda u: expit(logit_of(u) / 2), lambda s: expit(2 * logit_of(s))),
    "nonmonotone": (lambda u: u, lambda s: s + 0.15 * np.sin(4 * np.pi * s)),
    "imbalance": (_imbalance_quantile, _imbalance_truth),
    "small_sample": (lambda u: u, lambda s: s ** 2),
}


def closed_population(name: str) -> Callable[[], Population]:
    return lambda: _Closed(*_CLOSED_FORMS[name])

