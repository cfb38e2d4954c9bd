"""The choice of the scaling family's penalty strengths by cross-validation
(calibdash.calibrators.multiclass.penalty_search): the grid, the folds, the row cap, the early stop at K = 100."""
from __future__ import annotations

import numpy as np
import pytest

from calibdash.calibrators.multiclass.linear import LinearForm
from calibdash.calibrators.multiclass.penalty_search import (cv_log_loss, fold_ids, penalty_grid, search_rows,
                                                             select_penalty)
from calibdash.core.errors import DataError
from tests.calibrators.multiclass.conftest import distorted, draw


def test_penalty_grid_orders_strongest_first_and_ties_mu_when_not_given():
    assert penalty_grid("odir", [1.0, 100.0], None) == [(100.0, 100.0), (1.0, 1.0)]
    assert penalty_grid("odir", [1.0], [0.5, 2.0]) == [(1.0, 2.0), (1.0, 0.5)]
    assert penalty_grid("l2", [3.0, 30.0], [1.0]) == [(30.0, 0.0), (3.0, 0.0)]


def test_folds_are_stratified_and_depend_on_row_values_not_positions(small):
    Z, y = small
    f = fold_ids(Z, y, 5, seed=0)
    counts = np.array([[np.sum((f == k) & (y == c)) for k in range(5)] for c in range(4)])
    assert np.all(counts.max(axis=1) - counts.min(axis=1) <= 1)           # dealt in turn within each class
    assert np.all(np.abs(np.bincount(f) - y.size / 5) <= 1)               # the deal runs on across classes
    order = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(fold_ids(Z[order], y[order], 5, seed=0), f[order])
    assert not np.array_equal(fold_ids(Z, y, 5, seed=1), f)               # the seed keys the hash


def test_select_penalty_refuses_fewer_distinct_rows_than_folds():
    X = np.log(np.full((6, 3), 1 / 3))
    y = np.array([0, 1, 2, 0, 1, 2])
    with pytest.raises(DataError, match="at least 5 distinct rows"):
        select_penalty(X, y, None, LinearForm("full", True, "odir"), [(1.0, 1.0)], n_folds=5)


def test_search_rows_are_chosen_by_value_stratified_and_count_a_weighted_row_once(small):
    """The cap counts distinct rows: a row of weight 3 and its three copies are taken or left together;
    another order takes the same rows; each class gets its share of the cap to one row (Hamilton)."""
    from calibdash.calibrators.multiclass.penalty_search import search_rows
    Z, y = small
    w = np.random.default_rng(7).integers(0, 4, y.size)
    keep = search_rows(Z, y, w, 100, seed=0)
    live = w > 0
    assert keep.sum() == 100 and not np.any(keep & ~live)
    share = 100 * np.bincount(y[live], minlength=4) / live.sum()
    assert np.all(np.abs(np.bincount(y[keep], minlength=4) - share) < 1)
    rep = np.repeat(np.arange(y.size), w)
    np.testing.assert_array_equal(search_rows(Z[rep], y[rep], None, 100, seed=0), keep[rep])
    order = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(search_rows(Z[order], y[order], w[order], 100, seed=0), keep[order])
    assert search_rows(Z, y, w, 10_000, seed=0).sum() == live.sum()       # under the cap: every live row


def test_capped_search_is_the_search_on_the_chosen_rows_and_keeps_the_invariants(small):
    """select_penalty with max_rows is the uncapped search on search_rows' rows (the same folds, the same
    fits: equal losses to rounding); weights equal repeated rows under the cap as without it (the
    losses to the solver's tolerance, rtol 1e-6 as in the weighted test above)."""
    from calibdash.calibrators.multiclass.penalty_search import search_rows
    Z, y = small
    form, grid = LinearForm("full", True, "odir"), [(100.0, 100.0), (1.0, 1.0)]
    keep = search_rows(Z, y, None, 120, seed=0)
    capped = select_penalty(Z, y, None, form, grid, n_folds=3, max_rows=120)
    direct = select_penalty(Z[keep], y[keep], None, form, grid, n_folds=3, max_rows=None)
    assert capped[:2] == direct[:2]
    np.testing.assert_allclose(capped[2], direct[2], rtol=1e-12)
    w = np.random.default_rng(7).integers(0, 4, y.size)
    weighted = select_penalty(Z, y, w, form, grid, n_folds=3, max_rows=120)
    repeated = select_penalty(np.repeat(Z, w, axis=0), np.repeat(y, w), None, form, grid, n_folds=3,
                              max_rows=120)
    assert weighted[:2] == repeated[:2]
    np.testing.assert_allclose(weighted[2], repeated[2], rtol=1e-6)


def test_folds_and_search_rows_do_not_depend_on_the_column_order():
    """Exactly: the hashes ignore the column order, and so do the deal and the quotas."""
    Z, y = draw(900, 7, seed=16)
    w = np.random.default_rng(17).integers(0, 3, y.size)
    for seed in range(4):
        perm = np.random.default_rng(seed).permutation(7)
        inv = np.argsort(perm)
        np.testing.assert_array_equal(fold_ids(Z[:, perm], inv[y], 5, seed=seed, sample_weight=w),
                                      fold_ids(Z, y, 5, seed=seed, sample_weight=w))
        np.testing.assert_array_equal(search_rows(Z[:, perm], inv[y], w, 200, seed=seed),
                                      search_rows(Z, y, w, 200, seed=seed))


def test_penalty_search_at_100_classes_stops_early_on_the_point_the_whole_grid_chooses():
    """A 100-class map (10,100 parameters, fitted by Newton-CG) on 1,000 rows whose held-out loss along the
    grid falls to a minimum at an inner point and then rises at every weaker penalty: there the walk that
    stops after two rises must choose what the walk over the whole grid chooses. Its losses are the whole
    walk's first ones exactly (the same fits from the same starts), and it skips the weakest point (the
    slowest fits). Three folds, not five, to keep the test short; the property does not depend on it."""
    X, y = distorted(1000, 100, seed=4, spread=4.0)
    form = LinearForm("full", True, "odir")
    grid = penalty_grid("odir", (1e4, 1e3, 1e2, 1e1, 1e0), None)
    folds = fold_ids(X, y, 3, seed=0)
    whole = cv_log_loss(X, y, None, form, grid, folds, patience=None)
    best = int(np.argmin(whole))
    assert 0 < best < len(grid) - 2                                        # an inner minimum, then
    assert np.all(np.diff(whole[:best + 1]) < 0) and np.all(np.diff(whole[best:]) > 0)    # one valley
    early = cv_log_loss(X, y, None, form, grid, folds, patience=2)
    reached = np.isfinite(early)
    assert not reached[-1]
    np.testing.assert_array_equal(early[reached], whole[reached])
    assert int(np.argmin(early)) == best
