"""Score cells: aggregation, the hashed parts, the grid's bounds, and evaluation on cells against the rows."""
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import shared_file

from calibdash import calibrators
from calibdash.measures import calibration as metrics
from calibdash.evaluation import cells
from calibdash.evaluation.cells import CELL_MEASURES, GRID, cell_measures, class_cells, parts_for
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import Scheme, cell_parts, evaluate_cells
from calibdash.measures import class_measures as M

STEP = 1.0 / cells.GRID


def _fmix32_reference(key: int, seed: int) -> int:
    """MurmurHash3's 32-bit finaliser in plain Python integers (the definition row_hash must equal)."""
    h = (key + (seed * 0x9E3779B1 & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def test_row_hash_is_murmur3s_finaliser_with_products_below_2_48():
    keys = np.array([0, 1, 2, 3, 12345, 2 ** 31, 2 ** 32 - 1, 9_999_999_999 % 2 ** 32], dtype=np.uint64)
    for seed in (0, 1, 42):
        got = cells.row_hash(keys, seed)
        assert got.tolist() == [_fmix32_reference(int(k), seed) for k in keys]
    assert cells.row_hash([0], 0).tolist() == [0]            # fmix32(0) = 0, a known value


def test_hashed_parts_are_balanced_and_seeded():
    folds = cells.parts_for(200_000, "kfold", k=5, seed=3)
    counts = np.bincount(folds)
    assert counts.size == 5 and np.abs(counts - 40_000).max() < 4 * np.sqrt(40_000)
    held = cells.parts_for(200_000, "split", test_size=0.3, seed=3)
    assert abs(held.mean() - 0.3) < 0.005
    assert not np.array_equal(held, cells.parts_for(200_000, "split", test_size=0.3, seed=4))
    assert np.array_equal(held, cells.parts_for(200_000, "split", test_size=0.3, seed=3))
    with pytest.raises(SettingsError):
        cells.parts_for(10, "kfold", k=1)


def test_exact_cells_by_hand():
    s = [0.2, 0.7, 0.2, 0.2, 0.7]
    y = [1, 0, 0, 1, 1]
    c = cells.aggregate(s, y, part=[0, 0, 0, 1, 1])
    assert c.exact and c.n_rows == 5
    assert c.part.tolist() == [0, 0, 1, 1] and c.score.tolist() == [0.2, 0.7, 0.2, 0.7]
    assert c.n.tolist() == [2, 1, 1, 1] and c.n_pos.tolist() == [1, 0, 1, 1]
    np.testing.assert_allclose(c.score_sum, [0.4, 0.7, 0.2, 0.7])
    s_, y_, w_ = c.weighted_rows()
    assert sorted(zip(s_.tolist(), y_.tolist(), w_.tolist())) == [
        (0.2, 0, 1.0), (0.2, 1, 1.0), (0.2, 1, 1.0), (0.7, 0, 1.0), (0.7, 1, 1.0)]
    assert "5 rows summarised into 4 score cells (the distinct scores)" == c.describe()


@pytest.mark.parametrize("rounding", [4, None])
def test_chunks_give_the_cells_of_one_pass(rounding):
    """In one chunk or many, exact or on the grid (None: 2e5 distinct scores, so the grid takes over
    part-way through), the same cells: counts equal, sums to 1e-12 relative."""
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, 200_000)
    s = np.round(s, rounding) if rounding else s
    y = (rng.random(s.size) < s).astype(int)
    part = cells.parts_for(s.size, "kfold", k=3)
    one = cells.aggregate(s, y, part, chunk_rows=10 ** 9)
    many = cells.aggregate(s, y, part, chunk_rows=7_777)
    assert one.exact == (rounding is not None) == many.exact
    for name in ("n", "n_pos", "part"):
        np.testing.assert_array_equal(getattr(one, name), getattr(many, name))
    np.testing.assert_allclose(many.score_sum, one.score_sum, rtol=1e-12)
    np.testing.assert_allclose(many.score, one.score, rtol=1e-12)
    assert one.n.sum() == s.size and one.n_pos.sum() == y.sum()


def test_grid_cells_keep_order_and_their_bounds_hold_at_1e5_rows():
    """The documented bounds of the grid at 1e5 rows of continuous scores: each cell's score moves a row by
    less than one step; Brier by at most 2 steps; AUC by at most the pairs tied inside a cell; ECE by at
    most one step plus the rows of the cells that straddle a bin boundary."""
    rng = np.random.default_rng(1)
    s = rng.beta(2, 3, 100_000)
    y = (rng.random(s.size) < s ** 1.3).astype(int)
    c = cells.aggregate(s, y)
    assert not c.exact and np.all(np.diff(c.score) > 0)
    code = np.minimum((s * cells.GRID).astype(int), cells.GRID - 1)
    moved = np.abs(c.score[np.searchsorted(np.unique(code), code)] - s)
    assert moved.max() < STEP
    p, yy, w = c.weighted_predictions(c.score)
    assert abs(metrics.brier(p, yy, sample_weight=w) - metrics.brier(s, y)) <= 2 * STEP
    # AUC moves by at most the share of positive-negative pairs inside one cell
    tie_bound = np.sum(c.n_pos * (c.n - c.n_pos)) / (c.n_pos.sum() * (c.n - c.n_pos).sum())
    assert abs(metrics.auc(p, yy, sample_weight=w) - metrics.auc(s, y)) <= tie_bound + 1e-12
    assert tie_bound < 1e-4
    straddle = 10 * c.n.max() / s.size
    assert abs(metrics.ece(p, yy, sample_weight=w) - metrics.ece(s, y)) <= STEP + straddle
    # a fit on the grid cells stays within the same bounds of the fit on the rows
    on_rows = calibrators.get("platt").fit(s, y).predict(s)
    on_cells = calibrators.get("platt").fit(*c.weighted_rows()[:2], sample_weight=c.weighted_rows()[2]).predict(s)
    assert np.abs(on_rows - on_cells).max() < 1e-4


@pytest.mark.parametrize("kind", ["split", "kfold", "insample"])
def test_evaluation_on_exact_cells_equals_the_rows(kind):
    """Same parts, same fits (weighted = rows), same metrics (weighted = rows) but MVCE's random views."""
    rng = np.random.default_rng(2)
    s = np.round(rng.beta(2, 3, 30_000), 3)
    y = (rng.random(s.size) < s ** 1.4).astype(int)
    scheme = Scheme(kind=kind, n_folds=3, seed=5)
    part = cell_parts(s.size, scheme)
    ev = evaluate_cells(cells.aggregate(s, y, part), "platt,isotonic,bbq", scheme)
    for key in ("platt", "isotonic", "bbq"):
        pred = np.empty(s.size)
        if kind == "kfold":
            for k in range(3):
                fit = calibrators.get(key).fit(s[part != k], y[part != k])
                pred[part == k] = fit.predict(s[part == k])
            judged = np.ones(s.size, bool)
        else:
            fit_rows = part == 0
            judged = part == (0 if kind == "insample" else 1)
            pred[judged] = calibrators.get(key).fit(s[fit_rows], y[fit_rows]).predict(s[judged])
        want = metrics.summary(pred[judged], y[judged])
        got = ev.metrics.loc[key]
        for name in ("AUC", "ACC", "RMSE", "Brier", "LogLoss", "ECE", "MCE"):
            assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-12), (key, name)
        assert got["MVCE"] == pytest.approx(want["MVCE"], abs=0.01)
    assert ev.n_judged == (s.size if kind != "split" else int((part == 1).sum()))
    np.testing.assert_allclose(ev.predictions["uncalibrated"].to_numpy(), np.unique(s, return_inverse=True)[0][
        np.searchsorted(np.unique(s), ev.predictions["uncalibrated"].to_numpy())])     # a cell's raw score
    fs, fy, fw = ev.fit_sample
    assert fw.sum() == (s.size if kind != "split" else int((part == 0).sum())) and set(np.unique(fy)) == {0, 1}


def test_evaluation_on_cells_refuses_an_empty_or_one_class_part():
    c = cells.aggregate([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], part=[0, 0, 0, 0])
    with pytest.raises(DataError, match="held-out part is empty"):
        evaluate_cells(c, "platt", Scheme())
    c = cells.aggregate([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], part=[0, 0, 1, 1])
    with pytest.raises(DataError, match="one class only"):
        evaluate_cells(c, "platt", Scheme())


def test_cli_evaluates_on_cells_and_says_so(tmp_path):
    rng = np.random.default_rng(3)
    s = np.round(rng.uniform(size=3000), 2)
    y = (rng.random(3000) < s).astype(int)
    path = tmp_path / "d.csv"
    path.write_text("score,label\n" + "\n".join(f"{a},{b}" for a, b in zip(s, y)))
    out = subprocess.run([sys.executable, "-m", "calibdash", "evaluate", str(path), "--cells", "always", "--json"],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    assert doc["cells"].startswith("3,000 rows summarised into") and "(the distinct scores)" in doc["cells"]
    assert doc["scheme"].startswith("Random split by row hash")
    assert set(doc["metrics"]) == {"uncalibrated", "platt", "histogram", "isotonic"}


# ----------------------------------------------------------------------------------------------------
# K-class rows as cells: the top-label and class-wise reductions, and every measure from them
# ----------------------------------------------------------------------------------------------------
# Multi-class score cells: the top-label and class-wise reductions as cells, and every measure from them.
# Known results: on the CIFAR reference files every measure of the table computed from exact cells equals
# its value on the rows (up to the order of floating-point summation), and the published confidence ECE and
# accuracy come out. Invariants: row order, parts, grid cells' bounds, a hand-worked case.
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
    from calibdash.evaluation.cells import per_class_ece_cells
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
