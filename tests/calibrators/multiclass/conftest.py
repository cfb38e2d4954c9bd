"""What the K-class calibrators' test modules share: the data, the scaling family's fits and the odd-input checks.

Tolerances of the scaling family (temperature, vector, matrix/ODIR, Dirichlet). The solver
(calibdash.calibrators.multiclass.linear.fit_linear) stops when the largest entry of the gradient, in variables scaled
by the Hessian diagonal at the start, is below gtol = 1e-9, or when a step reduces the objective by less than 1e-13 of
itself. Near the optimum the objective is quadratic, so two fits of the same objective that stop there differ in
parameters by about gtol times the inverse of the smallest curvature in those units (about 1 to 1e3 on these data),
and their probabilities by less than that: :data:`FIT_TOL` = 1e-6 leaves a margin of 1e3 over 1e-9 * 1e3. That is the
tolerance of every comparison of two fits ("the solver's tolerance"). Two fits of the *same* rows in another order are
not bit-identical: the sums over rows round differently, and the solver's path follows the rounding.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.exceptions import ConvergenceWarning

from calibdash import calibrators
from calibdash.calibrators.multiclass.methods.ovr import ZeroProbabilityWarning

DATA = "/work/shared/data/multiclass-cifar/{}.npz"
FIT_TOL = 1e-6                                     # the solver's tolerance on probabilities (module docstring)
SCALING = ["temperature", "vector", "matrix", "dirichlet"]
FIXED = {"matrix": {"select": False, "lam": 10.0, "mu": 10.0},
         "dirichlet": {"select": False, "lam": 10.0, "mu": 10.0}}
SEARCH = {"select": True, "lambdas": (100.0, 1.0), "n_folds": 3}
#: Newton steps of one scaling fit on degenerate input: far above what the solver takes (2 to 25 there) and far below
#: the old 5,000-iteration cap those inputs used to reach.
ITER_CAP = 60
#: The binary calibrators a composite takes (those that read no features).
BINARY = [b for b in calibrators.available() if not calibrators.get_class(b).uses_features]
#: The binary methods the odd-input cases run through top-label: histogram binning (the paper's), isotonic regression,
#: Platt scaling, BBQ.
TOP_LABEL = ["histogram", "isotonic", "platt", "bbq"]
#: A fit that reports its iterations must stop before this many: the scaling family's Newton steps (a
#: handful on these small problems; its own limit is 5,000) and the binary Newton fits inside a composite
#: (their limit is 100; on separable rows, such as a class with one row of 12, they may use it).
ITERATION_CAP = 500


# -- the scaling family ----------------------------------------------------------------------------------
def make(name, **extra):
    """The scaling method ``name``; matrix and Dirichlet with a fixed penalty (:data:`FIXED`) unless ``extra`` says."""
    return calibrators.get(name, "classes", **{**FIXED.get(name, {}), **extra})


def log_loss(Q, y):
    return float(-np.mean(np.log(np.maximum(Q[np.arange(y.size), y], 1e-300))))


def draw(n, k, seed, spread=2.0):
    """``n`` rows of ``k`` logits and labels drawn from a sharpened softmax of them."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(0, spread, (n, k))
    y = (rng.random(n)[:, None] > np.cumsum(softmax(1.5 * Z, axis=1), axis=1)).sum(axis=1)
    return Z, np.minimum(y, k - 1)


def distorted(n: int, k: int, seed: int, spread: float = 2.0):
    """``n`` rows of ``k`` logits and labels drawn from a distorted softmax of them (a shrunk diagonal, each
    class leaking into another, shifted intercepts), so that every part of a full map moves."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(0, spread, (n, k))
    mix = 0.6 * np.eye(k)
    mix[rng.permutation(k), np.arange(k)] += 0.6
    truth = softmax(Z @ mix.T + rng.normal(0, 0.3, k), axis=1)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1), k - 1)
    return Z, y


def fit_quietly(cal, P, y, **kw):
    """Fit with every ConvergenceWarning an error: these fits must converge."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return cal.fit(P, y, **kw)


def check_ended(cal, P, cap=ITER_CAP):
    """The fit ended within the cap and predicts finite rows summing to 1; returns the predictions."""
    assert cal.n_iter_ <= cap
    if getattr(cal, "cv_n_iter_", None):
        assert len(cal.cv_n_iter_) <= len(cal.cv_grid_) * cal.n_folds
        assert max(cal.cv_n_iter_) <= cap
    Q = cal.predict_proba(P)
    assert np.all(np.isfinite(Q)) and np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    return Q


@pytest.fixture(scope="module")
def lenet():
    """lenet-5-cifar-10 (over-confident, accuracy 0.53), split into interleaved halves."""
    d = np.load(DATA.format("lenet-5-cifar-10"))
    P, y = d["predictions"].astype(float), d["ground_truth"]
    return P[0::2], y[0::2], P[1::2], y[1::2]


@pytest.fixture(scope="module")
def small():
    """300 rows of 4 classes with logits, labels from a distorted softmax (so every map moves)."""
    rng = np.random.default_rng(3)
    Z = rng.normal(0, 2, (300, 4))
    truth = softmax(0.6 * Z + np.array([0.3, -0.2, 0.0, 0.4]) + 0.3 * Z[:, ::-1], axis=1)
    y = (rng.random(300)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return Z, y


# -- odd input, any method -------------------------------------------------------------------------------
def soft(n: int, k: int, seed: int = 0, scale: float = 1.5):
    """(P, y): softmax rows of Gaussian logits, labels from a sharper softmax (miscalibrated scores)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, k)) * scale
    truth = softmax(1.6 * Z, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return softmax(Z, axis=1), np.minimum(y, k - 1)


def with_one_hot(n: int = 90, k: int = 4, seed: int = 1):
    """Soft rows with every third row replaced by a one-hot row (probabilities exactly 0 and 1.0), most of
    them on the right class."""
    P, y = soft(n, k, seed)
    rows = np.arange(0, n, 3)
    hot = np.where(np.arange(rows.size) % 4 == 0, (y[rows] + 1) % k, y[rows])
    P[rows] = np.eye(k)[hot]
    return P, y


def two_classes(n: int = 300, seed: int = 14):
    """Scores p from a Beta(2, 2) (no ties, none on a bin edge, none within 1e-16 of 0 or 1), labels from
    p^1.5 (miscalibrated), and the K = 2 table [1 - p, p]."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p ** 1.5).astype(int)
    return p, y, np.column_stack([1 - p, p])


def rounded_table():
    """(R, y): soft rows of 3 classes rounded to 2 decimals (rows kept where they sum to 0.99-1.01), some of them not
    summing to 1, with ties between rows (0.35 in two rows) that dividing each row by its sum would split."""
    P, y = soft(300, 3, seed=16, scale=0.5)
    R = np.round(P, 2)
    keep = np.abs(R.sum(axis=1) - 1) <= 1e-2
    R, y = R[keep], y[keep]
    assert np.any(R.sum(axis=1) != 1.0)
    return R, y


def probe(k: int) -> np.ndarray:
    """Rows to predict in every odd-input case: soft rows, one-hot rows, a uniform row, a row with zeros."""
    grid = np.vstack([np.random.default_rng(99).dirichlet(np.ones(k), 12), np.eye(k), np.full((1, k), 1.0 / k)])
    zeros = np.zeros((1, k))
    zeros[0, :2] = [0.25, 0.75]
    return np.vstack([grid, zeros])


def fit(name: str, P, y, w=None, **params):
    """The method fitted (its ZeroProbabilityWarnings, which these inputs call for, kept quiet), every
    solver inside it stopped within :data:`ITERATION_CAP` iterations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroProbabilityWarning)
        cal = calibrators.get(name, "classes", **params).fit(P, y, sample_weight=w)
    for it in iterations(cal):
        assert it < ITERATION_CAP, f"the solver used {it} iterations (cap {ITERATION_CAP})"
    return cal


def check_rows(Q: np.ndarray, n: int, k: int) -> None:
    assert Q.shape == (n, k)
    assert np.all(np.isfinite(Q)), f"{int((~np.isfinite(Q)).sum())} non-finite probabilities"
    assert np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def iterations(cal) -> list[int]:
    """The iterations each solver inside ``cal`` reports: its own ``n_iter_``, or its sub-models'."""
    subs = [cal] + [m for m in getattr(cal, "models_", []) if m is not None] + [getattr(cal, "pooled_", None)]
    return [int(m.n_iter_) for m in subs if hasattr(m, "n_iter_")]


def check_fit(cal, P, logits: bool = False) -> np.ndarray:
    """Finite rows summing to 1 on the training rows and on :func:`probe`."""
    k = np.shape(P)[1]
    Q = cal.predict_proba(P)
    check_rows(Q, len(P), k)
    G = probe(k)
    check_rows(cal.predict_proba(np.log(np.maximum(G, 1e-300)) if logits else G), len(G), k)
    return Q
