"""The registry of further measures (calibdash.measures) and their paired intervals from cells."""
import numpy as np
import pandas as pd
import pytest

from calibdash.evaluation import bootstrap, cells
from calibdash import measures
from calibdash.measures import corp, decomposition, hypothesis, recalibration, smooth_ece
from calibdash.core.errors import SettingsError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    s = rng.beta(2, 5, 40_000)
    y = (rng.random(s.size) < np.clip(1.3 * s, 0, 1)).astype(int)
    return s, y


def test_compute_gives_each_module_s_value(data):
    s, y = data
    got = measures.compute(s, y)
    assert list(got) == list(measures.MEASURE_NAMES)
    assert got["smECE"] == smooth_ece.smooth_ece(s, y)
    cox = recalibration.calibration_intercept_slope(s, y)
    assert (got["CITL"], got["Slope"]) == (cox["intercept"], cox["slope"])
    dec = corp.corp_decomposition(s, y)
    assert (got["MCB"], got["DSC"], got["UNC"]) == (dec["MCB"], dec["DSC"], dec["UNC"])
    murphy = decomposition.brier_decomposition(s, y, n_bins=10, strategy="quantile")
    assert got["REL"] == murphy["reliability"] and got["RES"] == murphy["resolution"]
    assert got["HL"] == hypothesis.hosmer_lemeshow(s, y)["statistic"]


def test_only_the_asked_measures_in_table_order(data):
    s, y = data
    assert list(measures.compute(s, y, names=["Slope", "smECE"])) == ["smECE", "Slope"]
    with pytest.raises(SettingsError, match="unknown measure 'ECE'"):
        measures.compute(s, y, names=["ECE"])


def test_oriented_turns_every_name_lower_is_better():
    x = np.array([0.8, 1.1])
    assert measures.oriented("smECE", x).tolist() == [0.8, 1.1]
    assert measures.oriented("DSC", x).tolist() == [-0.8, -1.1]
    assert measures.oriented("AUC", x).tolist() == [-0.8, -1.1]
    assert measures.oriented("ECE", x).tolist() == [0.8, 1.1]
    assert measures.oriented("Slope", x).tolist() == pytest.approx([0.2, 0.1])
    assert measures.oriented("CITL", -x).tolist() == pytest.approx([0.8, 1.1])
    with pytest.raises(SettingsError, match="ranks nothing"):
        measures.oriented("UNC", x)
    assert [measures.direction(n) for n in ("ECE", "AUC", "DSC", "Slope", "UNC")] == [True, False, False, None, None]
    assert "1 is ideal" in measures.describe("Slope")


def test_weighted_cells_give_the_rows_values(data):
    s, y = data
    c = cells.aggregate(np.round(s, 3), y)
    p, yy, w = c.weighted_predictions(c.score)
    rows = measures.compute(np.round(s, 3), y)
    from_cells = measures.compute(p, yy, w)
    for name in measures.MEASURE_NAMES:
        assert from_cells[name] == pytest.approx(rows[name], rel=1e-7, abs=1e-10), name


def _cells_and_predictions(s, y):
    c = cells.aggregate(np.round(s, 3), y)
    preds = pd.DataFrame({"uncalibrated": c.score,
                          "steps": np.round(c.score * 8) / 8,             # 9 distinct predictions
                          "shifted": np.clip(c.score * 1.3, 0, 1)})
    return c, preds


def test_bootstrap_points_are_the_cells_values_and_grouping_is_exact_for_few_values(data):
    s, y = data
    c, preds = _cells_and_predictions(s, y)
    boot = bootstrap.bootstrap_measures(preds, c.n, c.n_pos, n_boot=6, seed=4, max_groups=64)
    p, yy, w = c.weighted_predictions(preds["steps"].to_numpy())
    point = measures.compute(p, yy, w)
    for name in measures.MEASURE_NAMES:
        assert boot.table.loc["steps", (name, "value")] == pytest.approx(point[name], rel=1e-12, abs=1e-15)
    # "steps" has 9 distinct predictions (<= max_groups): its resamples are the measures of the resampled cells
    draws = bootstrap.draws.Poisson(np.concatenate([c.n_pos, c.n - c.n_pos])).draw(np.random.default_rng(4), 6)
    k = len(c)
    for r in range(6):
        rp, ry, rw = bootstrap.draws.weighted_rows(preds[["steps"]].to_numpy(), draws[r, :k], draws[r, k:])
        keep = rw > 0
        direct = measures.compute(rp[keep, 0], ry[keep], rw[keep], loess_points=bootstrap.cell_resamples._RESAMPLE_LOESS_POINTS)
        for i, name in enumerate(measures.MEASURE_NAMES):
            assert boot.samples[name][r, 1] == pytest.approx(direct[name], rel=1e-9, abs=1e-12), (name, r)


def test_bootstrap_intervals_cover_the_truth_and_grouping_keeps_their_width(data):
    s, y = data
    rng = np.random.default_rng(8)
    yc = (rng.random(s.size) < s).astype(int)                    # the scores are calibrated for these labels
    c, preds = _cells_and_predictions(s, yc)
    boot = bootstrap.bootstrap_measures(preds, c.n, c.n_pos, names=["CITL", "Slope", "ICI"], n_boot=60, seed=1)
    lo, hi = boot.interval("uncalibrated", "CITL")
    assert lo < 0 < hi
    lo, hi = boot.interval("uncalibrated", "Slope")
    assert lo < 1 < hi
    lo, hi = boot.interval("shifted", "Slope")
    assert not lo < 1 < hi                                       # 1.3 s is too extreme: slope below 1
    fine = bootstrap.bootstrap_measures(preds, c.n, c.n_pos, names=["ICI"], n_boot=60, seed=1, max_groups=10 ** 6)
    width = lambda b: np.subtract(*b.interval("uncalibrated", "ICI")[::-1])  # noqa: E731
    assert width(boot) == pytest.approx(width(fine), rel=0.25)


def test_bootstrap_refuses_bad_settings(data):
    s, y = data
    c, preds = _cells_and_predictions(s, y)
    with pytest.raises(SettingsError):
        bootstrap.bootstrap_measures(preds, c.n, c.n_pos, n_boot=0)
    with pytest.raises(SettingsError):
        bootstrap.bootstrap_measures(preds, c.n, c.n_pos, max_groups=1)
    with pytest.raises(SettingsError, match="unknown measure"):
        bootstrap.bootstrap_measures(preds, c.n, c.n_pos, names=["AUC"])


def test_benchmark_ranks_a_target_measure_by_its_distance_to_the_ideal(data):
    """Ranked on the slope, the method whose slope is nearest 1 ranks first, whatever the sign of the gap."""
    from calibdash import benchmark
    units = pd.DataFrame({"dataset": ["a"] * 3 + ["b"] * 3, "repeat": 0, "seed": 0,
                          "method": ["m1", "m2", "m3"] * 2,
                          "Slope": [0.7, 1.05, 1.5, 1.2, 0.98, 0.9], "ECE": [0.1, 0.2, 0.3, 0.1, 0.2, 0.3]})
    res = benchmark.summarise(units, metric="Slope", methods=["m1", "m2", "m3"], reference="m1")
    assert res.ranks.loc["a"].tolist() == [2.0, 1.0, 3.0] and res.ranks.loc["b"].tolist() == [3.0, 1.0, 2.0]
    assert res.lower_is_better is None
    with pytest.raises(SettingsError, match="rank"):
        benchmark.summarise(units.assign(UNC=0.2), metric="UNC", methods=["m1", "m2", "m3"], reference="m1")
