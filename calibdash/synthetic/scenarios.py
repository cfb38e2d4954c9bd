"""The Learn page's teaching scenarios (:data:`SCENARIOS`), their populations, and draws from them."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..core.errors import DataError
from .populations import Population, closed_population, svm_population

__all__ = []

#: Smallest and largest sample a draw accepts.
MIN_N, MAX_N = 40, 1_000_000


@dataclass(frozen=True)
class Scenario:
    """One teaching scenario: its key in :data:`SCENARIOS`, display ``title``, ``description`` (the population and
    how its scores come about), ``note`` (the lesson: what to look at, which calibrators should do well and why),
    ``truth`` (the true calibration function, as a formula or how it is computed) and ``default_n`` (the page's
    starting sample size)."""

    name: str
    title: str
    description: str
    note: str
    truth: str
    default_n: int = 1000
    _build: Callable[[], Population] = field(default=None, repr=False, compare=False)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario(
        "calibrated", "Perfectly calibrated (reference)",
        "Scores uniform on [0, 1] and the outcome drawn with exactly that probability: the true calibration "
        "error of the raw scores is 0.",
        "Any calibration error measured here is estimation noise: ECE comes out positive on every sample "
        "(it cannot be negative), the more so the smaller the sample. A calibrator can only add error.",
        "f(s) = s", _build=closed_population("calibrated")),
    Scenario(
        "overconfident", "Over-confident model",
        "Scores twice as extreme as the truth on the log-odds scale (s = σ(2 logit q) for a true probability "
        "q ~ U(0, 1)), as boosted trees or naive Bayes tend to be.",
        "The truth is a logistic curve in logit(s), exactly Platt scaling's family, so Platt should be "
        "best; binning methods get close with enough rows. True error of the raw scores: ln 2 / 2 - 1/4 = 0.097.",
        "f(s) = σ(logit(s) / 2)", _build=closed_population("overconfident")),
    Scenario(
        "underconfident", "Under-confident model",
        "Scores pulled towards 0.5: half the true log-odds (s = σ(logit(q) / 2)), as a heavily regularised "
        "model or an average of many models gives.",
        "Again a logistic truth that Platt scaling can represent; the raw scores' reliability curve is "
        "steeper than the diagonal.",
        "f(s) = σ(2 logit s)", _build=closed_population("underconfident")),
    Scenario(
        "nonmonotone", "Non-monotone truth",
        "Scores uniform on [0, 1]; the true probability waves around the diagonal, so the model ranks some "
        "cases in the wrong order (f falls on [0.125, 0.375] and [0.625, 0.875]).",
        "Platt scaling and isotonic regression can only produce increasing maps and flatten the waves; "
        "binning methods (histogram, BBQ, ABB) follow them once the bins are narrow enough.",
        "f(s) = s + 0.15 sin(4πs)", _build=closed_population("nonmonotone")),
    Scenario(
        "imbalance", "Class imbalance (trained on rebalanced data)",
        "5% positives in the population; the model was trained on data that kept only 20% of the negatives, "
        "so its scores over-state every probability (s = q / (q + 0.2 (1 - q))).",
        "Most scores sit near 0 and few rows are positive: bins at high scores hold a handful of rows, so "
        "binned estimates (and ECE with equal-width bins) are noisy there. The truth is the prior-shift "
        "correction f(s) = 0.2 s / (0.2 s + 1 - s).",
        "f(s) = βs / (βs + 1 - s), β = 0.2", default_n=5000, _build=closed_population("imbalance")),
    Scenario(
        "small_sample", "Small samples",
        "Scores uniform on [0, 1] that over-state the probability everywhere (f(s) = s²), looked at with "
        "few rows.",
        "Move the seed: with 100 rows each calibrator's map jumps from draw to draw, and ECE on the 50 held-out "
        "rows is mostly noise. Simple maps (Platt, few bins) are steadier here than flexible ones.",
        "f(s) = s²", default_n=100, _build=closed_population("small_sample")),
    Scenario(
        "circles_linear", "Circles, linear SVM (BBQ / SBB papers)",
        "Class 0 inside radius 2, class 1 between radius 2 and 4; a linear SVM cannot separate them, so its "
        "score only says how far a point lies along one direction.",
        "The true probability is high at both ends of the score range and low in the middle: far from "
        "monotone. Platt and isotonic regression fail; binning methods (BBQ, ABB, histogram) recover the "
        "U shape, as in the BBQ paper's Table 1.",
        "integrated numerically over the known input distribution", _build=svm_population("circles", "linear")),
    Scenario(
        "circles_quadratic", "Circles, quadratic SVM (BBQ / SBB papers)",
        "The same circles scored by a degree-2 polynomial-kernel SVM: near-perfect ranking, but the scores "
        "are the logistic function of a margin and not probabilities.",
        "The truth is a steep step around the decision boundary: the raw scores are badly calibrated "
        "although the AUC is almost 1. Every method helps; the map should be nearly a step.",
        "integrated numerically over the known input distribution", _build=svm_population("circles", "quadratic")),
    Scenario(
        "xor_linear", "XOR, linear SVM (SBB paper)",
        "Uniform points in the square [-1, 1]², class 1 in the quadrants where x1·x2 > 0; a linear SVM "
        "gets an AUC of about 0.5.",
        "The truth swings between 0.25 and 0.75 non-monotonically: no increasing map can follow it, and "
        "even the best calibrator cannot beat an uninformative score by much.",
        "integrated numerically over the known input distribution", _build=svm_population("xor", "linear")),
    Scenario(
        "xor_quadratic", "XOR, quadratic SVM (SBB paper)",
        "The XOR square scored by a degree-2 polynomial-kernel SVM, which can represent x1·x2 and so "
        "separates the quadrants almost perfectly.",
        "Most scores are close to 0 or 1 and the truth jumps from 0 to 1 over a narrow range of scores: a "
        "near-step map; calibrators differ mainly in how sharp their step is.",
        "integrated numerically over the known input distribution", _build=svm_population("xor", "quadratic")),
)}


@functools.lru_cache(maxsize=None)
def population(name: str) -> Population:
    if name not in SCENARIOS:
        raise DataError(f"unknown scenario {name!r}; available: {', '.join(SCENARIOS)}.")
    return SCENARIOS[name]._build()


@dataclass
class Draw:
    """A sample from a scenario: ``scores`` in [0, 1], 0/1 ``labels`` (int8), and ``true_prob``, f(score) for each
    row: the probability the label was drawn with (SVM scenarios: the integrated truth at the row's score)."""

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
    pop = population(name)
    n = sample_size(n)
    s, y, p = pop.sample(n, np.random.default_rng(int(seed)))
    return Draw(scores=np.clip(s, 0.0, 1.0), labels=y, true_prob=p, scenario=name, seed=int(seed))


def sample_size(n) -> int:
    """``n`` as a whole number; DataError outside [:data:`MIN_N`, :data:`MAX_N`]."""
    n = int(n)
    if not MIN_N <= n <= MAX_N:
        raise DataError(f"sample size must lie between {MIN_N} and {MAX_N:,}, got {n:,}.")
    return n


def true_curve(name: str, grid) -> np.ndarray:
    """The true calibration function f at the scores ``grid`` (NaN where no score occurs)."""
    return population(name).truth(np.asarray(grid, dtype=float))


def support(name: str) -> tuple[float, float]:
    """Smallest and largest score of scenario ``name``'s population."""
    return population(name).support()
