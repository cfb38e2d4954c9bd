"""Multi-class score cells: the top-label and class-wise reductions as cells, and every measure from them.

Known results: on the CIFAR reference files every measure of the table computed from exact cells equals
its value on the rows (up to the order of floating-point summation), and the published confidence ECE and
accuracy come out. Invariants: row order, parts, grid cells' bounds, a hand-worked case.
"""
import numpy as np
import pytest

from conftest import shared_file

from calibdash.cells import GRID, parts_for
from calibdash.multiclass import metrics as M
from calibdash.cells import CELL_MEASURES, cell_measures, class_cells

# Exact cells hold the very scores, so the bins are the same; what differs is only the order of the
# summations (a bin's sum over rows, or over cells of weight n): a few ulps on sums of 1e4 to 1e6 terms.
RTOL = 1e-12
PUBLISHED = {"wideresnet-16-4-cifar-10": (0.05372, 0.9109), "lenet-5-cifar-10": (0.10789, 0.5308),
             "wideresnet-16-4-cifar-100": (0.05806, 0.7543)}


def _cifar(name):
    d = np.load(shared_file("multiclass-cifar", f"{name}.npz"))
    return d["predictions"], d["ground_truth"]


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_cifar_cell_measures_equal_row_measures(name):
    P, y = _cifar(name)
    c = class_cells(P, y)
    assert c.exact and c.n_rows == 10_000 and c.k == P.shape[1]
    got, rows = cell_measures(c), M.compute(P, y)
    assert list(got) == list(rows)
    for key in rows:
        assert got[key] == pytest.approx(rows[key], rel=RTOL, abs=1e-15), key
    ece, acc = PUBLISHED[name]
    assert round(got["ECE"], 5) == ece and got["Accuracy"] == acc        # the README's figures
    per_class = M.per_class_ece(P, y)
    from calibdash.cells import per_class_ece_cells
    np.testing.assert_allclose(per_class_ece_cells(c), per_class, rtol=RTOL, atol=1e-15)


def test_every_table_measure_has_a_cell_form():
    assert set(CELL_MEASURES) == set(M.MEASURE_NAMES)


def test_hand_worked_case_with_saturated_rows():
    # 4 rows, K = 3; row 3 puts all mass on a wrong class (its true class has probability exactly 0)
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    y = np.array([0, 2, 1, 2])
    c = class_cells(P, y)
    # predicted: 0, 1, 0 (tie: lowest index), 0 -> correct 1, 0, 0, 0
    assert cell_measures(c, ["Accuracy"])["Accuracy"] == 0.25
    assert cell_measures(c, ["Overconfidence"])["Overconfidence"] == pytest.approx((0.7 + 0.6 + 0.5 + 1.0) / 4 - 0.25)
    brier = ((0.3 ** 2 + 0.2 ** 2 + 0.1 ** 2) + (0.1 ** 2 + 0.6 ** 2 + 0.7 ** 2) + (0.5 ** 2 + 0.5 ** 2)
             + (1.0 + 0 + 1.0)) / 4
    assert cell_measures(c, ["Brier"])["Brier"] == pytest.approx(brier, rel=1e-15)
    eps = 1e-15                                    # calibration.LOG_LOSS_EPS: P = 0 costs -ln(eps), finite
    ll = -(np.log(0.7) + np.log(0.3) + np.log(0.5) + np.log(eps)) / 4
    assert cell_measures(c, ["LogLoss"])["LogLoss"] == pytest.approx(ll, rel=1e-14)
    assert np.isfinite(list(cell_measures(c).values())).all()


def _random_rows(n=20_000, k=5, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(k, 0.7), size=n)
    y = np.array([rng.choice(k, p=p) for p in P[:2000]] + list(rng.integers(0, k, n - 2000)))
    return P, y


def test_row_order_is_irrelevant_and_parts_select_their_rows():
    P, y = _random_rows()
    part = parts_for(len(y), "split", seed=3, test_size=0.3)
    c = class_cells(P, y, part)
    perm = np.random.default_rng(1).permutation(len(y))
    d = class_cells(P[perm], y[perm], part[perm])
    for a, b in zip(c.reductions, d.reductions):
        np.testing.assert_array_equal(a.score, b.score)
        np.testing.assert_array_equal(a.n, b.n)
        np.testing.assert_array_equal(a.n_pos, b.n_pos)
        np.testing.assert_array_equal(a.part, b.part)
    held = c.select_parts([1])
    rows = M.compute(P[part == 1], y[part == 1])
    got = cell_measures(held)
    assert held.n_rows == int((part == 1).sum())
    for key in rows:
        assert got[key] == pytest.approx(rows[key], rel=RTOL, abs=1e-15), key


def test_grid_cells_keep_counts_and_sums_and_bound_brier():
    P, y = _random_rows(n=30_000, k=4, seed=2)
    c = class_cells(P, y, max_exact=100)              # 30,000 distinct scores per reduction: all on the grid
    assert not c.top.exact and not any(x.exact for x in c.classes) and not c.exact
    rows = M.compute(P, y)
    got = cell_measures(c)
    assert got["Accuracy"] == rows["Accuracy"]                                    # counts: exact
    assert got["Overconfidence"] == pytest.approx(rows["Overconfidence"], rel=RTOL)  # score sums kept
    # a row's score p and its cell's mean s lie within one grid step, and |(p - y)^2 - (s - y)^2| =
    # |p - s| |p + s - 2y| <= 2 |p - s|: the Brier score moves by at most 2 steps per class
    assert abs(rows["Brier"] - got["Brier"]) <= P.shape[1] * 2 / GRID
    # ECE: each row moves by less than a step (a bin edge inside a cell could add more; 15 bins hold 15 cells
    # across an edge at most, a share far below 1e-3 of 30,000 rows' weight here)
    assert abs(got["ECE"] - rows["ECE"]) < 1e-3
