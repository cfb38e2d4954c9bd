"""The choice of the scaling family's penalty strengths (lambda, mu) by cross-validation (Kull et al. 2019).

Results never depend on the order of the rows or of the class columns: a row's hash (:func:`_row_hashes`) is a
sum over its values plus a mix of its true class's value, and the classes are dealt in the order of their rows'
hashes, not of their indices.
"""
from __future__ import annotations

import time
import warnings
from typing import Sequence

import numpy as np
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ...core.errors import DataError, SettingsError
from .linear import fit_linear
from .linear_map import LinearForm, linear_scores

__all__ = []

#: The penalty search (:func:`select_penalty`) runs on at most this many distinct rows (:func:`search_rows`).
SEARCH_ROWS = 20_000

#: The walk along the grid starts no new point after this many seconds (a safety net: CIFAR-100 takes 15 s).
SEARCH_SECONDS = 900.0

_MIX = (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)


class TooFewRowsError(DataError):
    """Fewer distinct rows than folds: the cross-validated choice cannot be made."""


def _mix(h: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (multiply-xorshift, as MurmurHash3's), in place on a uint64 array."""
    with np.errstate(over="ignore"):
        for shift, mult in ((33, _MIX[0]), (29, _MIX[1])):
            h ^= h >> np.uint64(shift)
            h *= np.uint64(mult)
        h ^= h >> np.uint64(32)
    return h


def _row_hashes(X: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """A 64-bit hash of each row's values and label, whatever the row's place and the columns' order: each value's
    bits mixed under one key and summed, plus the true class's value mixed under a second (keys from ``seed``).
    Values are rounded to float32 first, so rows given as probabilities or as logits (log-probabilities equal
    but for the last float64 bits) fall in the same folds."""
    key = np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64) | np.uint64(1)
    rounded = np.asarray(X, dtype=np.float32) + np.float32(0.0)                  # + 0.0: -0.0 as 0.0
    bits = np.ascontiguousarray(rounded, dtype=np.float64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = _mix(bits * key[0]).sum(axis=1, dtype=np.uint64)
        h += _mix(bits[np.arange(y.size), y] * key[1])
    return _mix(h)


def _class_order(h: np.ndarray, y: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, list]:
    """The classes with live rows and their distinct hashes, ordered by smallest hash, then number of distinct
    rows, then index (only for classes whose rows are identical, which the deal cannot tell apart)."""
    classes = np.unique(y[live])
    groups = [np.unique(h[live & (y == c)]) for c in classes]
    order = np.lexsort((classes, [g.size for g in groups], [g[0] for g in groups]))
    return classes[order], [groups[i] for i in order]


def fold_ids(X: np.ndarray, y: np.ndarray, n_folds: int, seed: int = 0,
             sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Each row's fold, 0..n_folds-1, from its values only: stratified by class, never by position. Within each class
    the distinct rows are sorted by :func:`_row_hashes` and dealt to the folds in turn, the deal continuing from class
    to class (:func:`_class_order`): every fold gets its share of every class. Identical rows share a fold (a row of
    weight 3 and three copies of it alike). Rows of weight 0 are left out of the deal (they change no other row's fold)
    and go to the fold their hash names."""
    h = _row_hashes(X, y, seed)
    out = (h % np.uint64(n_folds)).astype(np.int64)
    live = np.ones(y.size, dtype=bool) if sample_weight is None else sample_weight > 0
    dealt = 0
    for c, distinct in zip(*_class_order(h, y, live)):
        rows = np.flatnonzero(live & (y == c))
        out[rows] = (dealt + np.searchsorted(distinct, h[rows])) % n_folds
        dealt += distinct.size
    return out


def search_rows(X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None, max_rows: int,
                seed: int = 0) -> np.ndarray:
    """Which rows the penalty search uses (a mask): all when at most ``max_rows`` distinct rows have positive
    weight; else, per class, the distinct rows of smallest :func:`_row_hashes`, each class getting its share of
    ``max_rows`` by Hamilton's largest-remainder rule (ties to the class first in :func:`_class_order`), every
    copy of a row with it. Chosen by value, so row and column order do not matter and a row of weight ``w`` is
    taken exactly when its ``w`` copies would be; rows of weight 0 never are."""
    live = np.ones(y.size, dtype=bool) if sample_weight is None else sample_weight > 0
    h = _row_hashes(X, y, seed)
    classes, groups = _class_order(h, y, live)
    counts = np.array([g.size for g in groups])
    total = int(counts.sum())
    if total <= max_rows:
        return live
    share = max_rows * counts / total
    quota = np.floor(share).astype(np.int64)
    quota[np.lexsort((np.arange(counts.size), -(share - quota)))[:max_rows - int(quota.sum())]] += 1
    keep = np.zeros(y.size, dtype=bool)
    for c, g, q in zip(classes, groups, quota):
        rows = live & (y == c)
        keep[rows] = np.isin(h[rows], g[:q])
    return keep


def cv_log_loss(X, y, sample_weight, form: LinearForm, grid: Sequence[tuple[float, float]], folds: np.ndarray,
                gtol: float = 1e-6, ftol: float = 1e-10, patience: int | None = 2,
                n_iter: list | None = None, max_seconds: float = SEARCH_SECONDS) -> np.ndarray:
    """Held-out weighted mean log-loss of each ``(lam, mu)`` of ``grid``, pooled over every held-out row. The grid is
    walked in order (strongest penalty first); at each point each fold's fit is warm-started from that fold's fit at the
    previous point (at the first, from the previous fold's). With ``patience`` the walk stops once the loss has risen at
    that many consecutive points (the held-out loss of a penalty path is in practice unimodal, and the weak end is
    slowest); points not reached get ``inf``. The fits stop at the looser ``gtol``/``ftol`` given: the loss changes by
    about the square of the parameter error. ``n_iter`` receives each fit's iterations. After ``max_seconds`` no new
    point starts (a ConvergenceWarning says so)."""
    n_folds = int(folds.max()) + 1
    parts = []
    for f in range(n_folds):
        test = folds == f
        wv = np.ones(int(test.sum())) if sample_weight is None else sample_weight[test]
        train_weight = None if sample_weight is None else sample_weight[~test]
        parts.append((X[~test], y[~test], train_weight, X[test], y[test], wv))
    total = sum(float(p[5].sum()) for p in parts)
    loss = np.full(len(grid), np.inf)
    starts: list = [None] * n_folds
    rises = 0
    deadline = time.monotonic() + max_seconds
    with threadpool_limits(1):          # as fit_linear: the held-out products too, on one BLAS thread
        for j, (lam, mu) in enumerate(grid):
            if j and time.monotonic() > deadline:
                warnings.warn(f"the penalty search stopped after {max_seconds:g} s: the grid points from "
                              f"lambda={lam:g}, mu={mu:g} on were not tried.", ConvergenceWarning, stacklevel=3)
                break
            here = 0.0
            for f, (Xt, yt, wt, Xv, yv, wv) in enumerate(parts):
                start = starts[f] if j or not f else starts[f - 1]      # the first point: the previous fold's
                fit = fit_linear(Xt, yt, wt, form, lam, mu, start=start, gtol=gtol, ftol=ftol,
                                 what=f"the fit at lambda={lam:g}, mu={mu:g} on cross-validation fold {f + 1}")
                starts[f] = fit.theta
                if n_iter is not None:
                    n_iter.append(fit.n_iter)
                logq = log_softmax(linear_scores(Xv, fit.theta, form), axis=1)[np.arange(yv.size), yv]
                here -= float(wv @ logq)
            loss[j] = here / total
            rises = rises + 1 if j and loss[j] > loss[j - 1] else 0
            if patience is not None and rises >= patience:
                break
    return loss


def select_penalty(X, y, sample_weight, form: LinearForm, grid: Sequence[tuple[float, float]], n_folds: int = 5,
                   seed: int = 0, max_rows: int | None = SEARCH_ROWS,
                   n_iter: list | None = None) -> tuple[float, float, np.ndarray]:
    """``(lam, mu, losses)``: the grid point of lowest held-out log-loss (:func:`cv_log_loss`) over ``n_folds``
    folds of :func:`fold_ids`, and every point's loss; ties to the point listed first (the strongest penalty).

    With more than ``max_rows`` distinct rows (default :data:`SEARCH_ROWS`; None: no cap) the search runs on
    ``max_rows`` of them (:func:`search_rows`); the caller fits the chosen map on every row. 20,000 rows give at
    least 180 rows per parameter for K <= 10 and about 2 for K = 100 (as the CIFAR-100 calibration set).

    This is Kull et al.'s procedure (dirichletcal/experiments_dnn ``tune_cal_odir.py``: 5-fold cross-validation
    on the calibration set over a grid of lambda and mu, the lowest mean held-out log-loss chosen), with these
    differences: folds dealt from the rows' values (not ``KFold(shuffle=True, random_state=15)`` on positions);
    held-out losses pooled over the rows, not averaged over folds (the same for folds of equal weight); a smaller
    grid, whose walk stops early when the loss keeps rising; the normalised penalty (their Keras code adds
    ``lambda * sum``, so their grid values are ours divided by ``K (K - 1)`` for lambda, by ``K`` for mu); and the
    chosen map refitted on the whole calibration set, where they averaged the five fold models' scores.

    Raises
    ------
    TooFewRowsError
        (a DataError) Fewer distinct rows than folds.
    """
    if max_rows is not None:
        keep = search_rows(X, y, sample_weight, int(max_rows), seed)
        if not keep.all():
            X, y, sample_weight = X[keep], y[keep], None if sample_weight is None else sample_weight[keep]
    folds = fold_ids(X, y, n_folds, seed, sample_weight)
    if np.unique(folds if sample_weight is None else folds[sample_weight > 0]).size < n_folds:
        raise TooFewRowsError(f"choosing the regularisation by {n_folds}-fold cross-validation needs at least "
                              f"{n_folds} distinct rows; fix lambda and mu instead (select=False).")
    losses = cv_log_loss(X, y, sample_weight, form, grid, folds, n_iter=n_iter)
    best = int(np.argmin(losses))
    lam, mu = grid[best]
    return float(lam), float(mu), losses


def penalty_grid(penalty: str | None, lambdas: Sequence[float], mus: Sequence[float] | None) -> list:
    """The ``(lam, mu)`` pairs a search tries, strongest first: every lambda with every mu for ODIR (``mus=None``:
    mu = lambda, the authors' ``--no_mus``), with mu = 0 for L2; :class:`SettingsError` for an empty grid or a
    negative or non-finite value."""
    lams = [float(v) for v in lambdas]
    mus_ = None if mus is None or penalty != "odir" else [float(v) for v in mus]
    values = lams + (mus_ or [])
    if not lams or (mus_ is not None and not mus_):
        raise SettingsError("the regularisation grid is empty; give at least one lambda (and one mu).")
    if not all(np.isfinite(v) and v >= 0 for v in values):
        raise SettingsError(f"the regularisation grid must hold finite values >= 0, got {values}.")
    if penalty == "odir":
        pairs = [(lam, lam) for lam in lams] if mus_ is None else [(lam, m) for lam in lams for m in mus_]
    else:
        pairs = [(lam, 0.0) for lam in lams]
    return sorted(set(pairs), key=lambda p: (-p[0], -p[1]))
