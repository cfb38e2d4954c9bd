"""Paired bootstrap intervals and the verdict sentence."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibdash.evaluation import bootstrap, cells
from calibdash.measures import calibration as metrics
from calibdash.evaluation.bootstrap import bootstrap_cells, bootstrap_metrics, resamples_for, verdict
from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import CELLS_MIN_ROWS


@pytest.fixture
def preds():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.05, 0.95, size=3000)
    y = (rng.uniform(size=3000) < truth).astype(int)
    df = pd.DataFrame({
        "uncalibrated": np.clip(truth ** 0.5, 0, 1),         # under-predicts nothing, over-confident upward
        "good": truth,                                        # the true probabilities
        "same": truth.copy(),                                 # identical to "good"
        "bad": np.clip(truth * 0.6 + 0.3, 0, 1),              # squeezed toward 0.5
    })
    return df, y


def test_point_values_are_the_metrics(preds):
    df, y = preds
    b = bootstrap_metrics(df, y, n_boot=30)
    assert b.table.loc["good", ("ECE", "value")] == pytest.approx(metrics.ece(df["good"], y, 10, "quantile"))
    assert b.n_boot == 30
    for m in df.columns:
        lo, hi = b.interval(m, "Brier")
        assert lo <= b.table.loc[m, ("Brier", "value")] <= hi


def test_paired_difference_of_identical_methods_is_exactly_zero(preds):
    df, y = preds
    b = bootstrap_metrics(df, y, n_boot=30)
    assert b.difference("ECE", "good", "same") == (0.0, 0.0, 0.0)
    point, lo, hi = b.difference("Brier", "good", "bad")
    assert point < 0 and hi < 0            # the truth beats the squeezed scores on every resample


def test_verdict_names_a_clear_winner_and_a_tie(preds):
    df, y = preds
    clear = verdict(bootstrap_metrics(df[["uncalibrated", "good", "bad"]], y, n_boot=40))
    assert clear.startswith("good has the lowest ECE") and "larger than the 95% paired interval" in clear
    tie = verdict(bootstrap_metrics(df[["uncalibrated", "good", "same"]], y, n_boot=40))
    assert "cannot be told apart" in tie


def test_verdict_flags_lost_discrimination():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=2000)
    y = (rng.uniform(size=2000) < p).astype(int)
    df = pd.DataFrame({"uncalibrated": p, "flat": np.full(2000, y.mean()), "fine": p})
    text = verdict(bootstrap_metrics(df, y, n_boot=40))
    assert "AUC clearly lowered by flat" in text


def test_resample_budget():
    assert resamples_for(1000, 4) == 200
    assert resamples_for(36_000, 4) == 50
    assert 50 < resamples_for(8_000, 4) < 200


# ---------------------------------------------------------------------------------------------
# Cells: the paired Poisson bootstrap
# ---------------------------------------------------------------------------------------------
def _cell_data(n=300_000, seed=1, decimals=3):
    """Cells of over-confident scores in 5 hashed folds, and 5 prediction columns (ties, a 0/1 column).

    Above ``CELLS_MIN_ROWS`` rows, so MVCE's point value uses the partition views (fast).
    """
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=n), decimals)
    y = (rng.uniform(size=n) < s ** 1.5).astype(np.int8)
    c = cells.aggregate(s, y, cells.parts_for(n, "kfold"))
    pred = pd.DataFrame({
        "uncalibrated": c.score,
        "smooth": np.clip(c.score ** 1.5 + 0.002 * c.part, 0, 1),
        "steps": np.round(c.score ** 1.5 * 8) / 8,             # big tied groups: edges fall inside them
        "same": c.score,
        "hard": np.where(c.score > 0.5, 1.0, 0.0),
    })
    return c, pred


@pytest.fixture(scope="module")
def cell_data():
    return _cell_data()


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_every_resample_is_the_weighted_metrics_of_its_counts(cell_data, strategy):
    """The vectorised engine gives, per resample, metrics.summary with the drawn counts as weights."""
    c, pred = cell_data
    plan = bootstrap.cell_resamples._plan(pred.to_numpy(), c.n_pos, c.n - c.n_pos, 10, strategy, metrics.METRIC_NAMES, 100)
    counts = plan.poisson.draw(np.random.default_rng(3), 3)
    got = bootstrap.cell_resamples._measure(plan, counts)
    m = plan.p.shape[0]
    labels = np.r_[np.ones(m), np.zeros(m)]
    for r in range(counts.shape[0]):
        weights = np.r_[counts[r, :m], counts[r, m + 1:2 * m + 1]]      # the layout: positives, 0, negatives, 0
        assert counts[r, m] == counts[r, -1] == 0
        for j in range(pred.shape[1]):
            # mvce_max_rows=1: summary's partition views, which the resamples use
            want = metrics.summary(np.r_[plan.p[:, j], plan.p[:, j]], labels, strategy=strategy,
                                   sample_weight=weights, mvce_max_rows=1)
            for name in metrics.METRIC_NAMES:
                assert got[name][r, j] == pytest.approx(want[name], rel=1e-9, abs=1e-12), (name, j)


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_sorted_measures_of_one_weight_row_are_the_resamples_exactly(cell_data, strategy):
    """AUC, ECE and MCE of a resample are the measures' own functions on its weights, not a second copy: the
    measures on the resampled cells' weighted rows (one weight row) equal the chunk's values for them exactly."""
    c, pred = cell_data
    plan = bootstrap.cell_resamples._plan(pred.to_numpy(), c.n_pos, c.n - c.n_pos, 10, strategy, ("AUC", "ECE", "MCE"), 100)
    counts = plan.poisson.draw(np.random.default_rng(5), 4)
    got = bootstrap.cell_resamples._measure(plan, counts)
    m = plan.p.shape[0]
    labels = np.r_[np.ones(m), np.zeros(m)]
    for r in range(counts.shape[0]):
        weights = np.r_[counts[r, :m], counts[r, m + 1:2 * m + 1]]
        for j in range(pred.shape[1]):
            p = np.r_[plan.p[:, j], plan.p[:, j]]
            assert got["AUC"][r, j] == metrics.auc(p, labels, sample_weight=weights), j
            for name, measure in (("ECE", metrics.ece), ("MCE", metrics.mce)):
                want = measure(p, labels, strategy=strategy, sample_weight=weights)
                if strategy == "quantile":
                    assert got[name][r, j] == want, (name, j)
                else:
                    # equal-width bins of ungrouped rows are summed by bin index (a bincount, no sort); the
                    # resamples sum the same bins over sorted groups: the same additions in another order, so
                    # equal to a few ulps of the bin sums (1e-12 relative leaves a wide margin at 10^4 cells)
                    assert got[name][r, j] == pytest.approx(want, rel=1e-12, abs=1e-15), (name, j)


def test_cell_point_values_are_summary_of_the_weighted_cells_exactly(cell_data):
    c, pred = cell_data
    b = bootstrap_cells(pred, c.n, c.n_pos, n_boot=20)
    for m in pred.columns:
        p, y, w = c.weighted_predictions(pred[m].to_numpy())
        want = metrics.summary(p, y, sample_weight=w, mvce_max_rows=CELLS_MIN_ROWS)
        assert {k: b.table.loc[m, (k, "value")] for k in metrics.METRIC_NAMES} == want
    assert list(b.table.index) == list(pred.columns) and b.n_boot == 20
    assert all(b.samples[k].shape == (20, pred.shape[1]) for k in metrics.METRIC_NAMES)
    assert "MVCE" in b.note


def test_cells_and_an_evaluations_weighted_rows_give_the_same_bootstrap(cell_data):
    """Weighted rows (p, y, w) are cells of w rows: merged back, they draw the very same resamples."""
    c, pred = cell_data
    p, y, w = c.weighted_predictions(c.score)
    rows = pd.DataFrame({m: np.r_[pred[m], pred[m]][np.r_[c.n_pos, c.n - c.n_pos] > 0] for m in pred.columns})
    a = bootstrap_cells(pred, c.n, c.n_pos, n_boot=30, seed=5)
    b = bootstrap_cells(rows, w, w * y, n_boot=30, seed=5)
    pd.testing.assert_frame_equal(a.table, b.table)


def test_cell_draws_depend_on_the_seed_not_on_the_workers(cell_data):
    c, pred = cell_data
    one = bootstrap_cells(pred, c.n, c.n_pos, n_boot=60, seed=4, workers=1)
    two = bootstrap_cells(pred, c.n, c.n_pos, n_boot=60, seed=4, workers=2)
    other = bootstrap_cells(pred, c.n, c.n_pos, n_boot=60, seed=5, workers=2)
    for name in metrics.METRIC_NAMES:
        np.testing.assert_array_equal(one.samples[name], two.samples[name])
    assert not np.array_equal(one.samples["AUC"], other.samples["AUC"])


def test_cells_are_paired_and_feed_the_verdict(cell_data):
    c, pred = cell_data
    b = bootstrap_cells(pred, c.n, c.n_pos, n_boot=100)
    assert b.difference("ECE", "uncalibrated", "same") == (0.0, 0.0, 0.0)
    point, lo, hi = b.difference("ECE", "smooth", "uncalibrated")
    assert point < 0 and hi < 0                  # the labels follow score**1.5: "smooth" is calibrated
    for m in pred.columns:
        for name in ("AUC", "ECE", "Brier", "MVCE"):
            lo, hi = b.interval(m, name)
            assert lo <= b.table.loc[m, (name, "value")] <= hi, (m, name)
    text = verdict(b)
    # the sentence follows the paired AUC intervals: a method whose AUC difference to the raw scores lies wholly
    # below 0 is "clearly lowered" and cannot win; ties (steps) and a 0/1 column (hard) lose ranking by far, and
    # "smooth" (its 0.002 x fold shift reorders tied scores across folds) by about 2e-5, which at 300,000 rows the
    # interval may or may not resolve, depending on the draws: the test reads which from the intervals
    lost = [m for m in pred.columns if m != "uncalibrated" and b.difference("AUC", m, "uncalibrated")[2] < 0]
    assert {"steps", "hard"} <= set(lost) and "same" not in lost
    best = "smooth" if "smooth" not in lost else "same"
    assert text.startswith(f"{best} has the lowest ECE")
    assert f"AUC clearly lowered by {', '.join(lost)}." in text


def test_poisson_draws_by_inversion_are_poisson():
    """Frequencies of the tabled sampler (and of the fallback above the table budget) against the pmf."""
    means = np.array([0, 1, 3, 40, 1000, 40] + [40] * 20)
    # 200 entries: the largest means fall back; draws=10: tables only where they cost no more than the draws, which
    # here tables 0, 1 and the mean of 40 (22 columns x 10 draws >= its ~175 entries) but not 3 (37 entries > 10):
    # the tables built are then not the smallest means first, and each column must still find its own
    for budget, draws_hint in ((bootstrap.draws._TABLE_BUDGET, None), (200, None), (bootstrap.draws._TABLE_BUDGET, 10)):
        sampler = bootstrap.draws.Poisson(means, budget=budget, draws=draws_hint)
        if draws_hint:
            assert 2 in sampler.big and 3 in sampler.small and 4 in sampler.big
        draws = sampler.draw(np.random.default_rng(0), 40_000)
        assert draws.dtype == float and np.all(draws == np.floor(draws))
        assert np.all(draws[:, 0] == 0)
        for j, mean in enumerate(means[1:6], start=1):
            x = draws[:, j].astype(int)
            lo, hi = int(stats.poisson.ppf(1e-3, mean)), int(stats.poisson.ppf(1 - 1e-3, mean))
            observed = np.bincount(np.clip(x, lo, hi) - lo, minlength=hi - lo + 1)
            expected = np.diff(np.r_[0.0, stats.poisson.cdf(np.arange(lo, hi), mean), 1.0]) * x.size   # tails pooled
            chi2 = np.sum((observed - expected) ** 2 / expected)
            assert stats.chi2.sf(chi2, hi - lo) > 1e-3, (mean, budget)
        assert not np.array_equal(draws[:, 3], draws[:, 5])          # equal means, independent draws


def test_cell_intervals_match_the_row_bootstrap_at_1e5_rows():
    """Each endpoint within 10% of the row interval's width of the row bootstrap's.

    Percentile endpoints of B resamples carry Monte-Carlo noise of about
    0.68 / sqrt(B) widths; 600 row resamples and 4000 cell resamples keep the
    difference's noise near 0.03 widths, a third of the tolerance.
    """
    rng = np.random.default_rng(7)
    s = np.round(rng.uniform(size=100_000), 3)
    y = (rng.uniform(size=s.size) < s ** 1.5).astype(np.int8)
    c = cells.aggregate(s, y)
    rows = bootstrap_metrics(pd.DataFrame({"uncalibrated": s}), y, n_boot=600, seed=1, mvce_views=1)
    ours = bootstrap_cells(pd.DataFrame({"uncalibrated": c.score}), c.n, c.n_pos, n_boot=4000, seed=2)
    for name in ("AUC", "ECE", "Brier", "LogLoss", "ACC", "MCE"):
        lo, hi = rows.interval("uncalibrated", name)
        c_lo, c_hi = ours.interval("uncalibrated", name)
        assert abs(c_lo - lo) <= 0.1 * (hi - lo) and abs(c_hi - hi) <= 0.1 * (hi - lo), (name, lo, hi, c_lo, c_hi)


def test_cell_inputs_are_checked(cell_data):
    c, pred = cell_data
    with pytest.raises(DataError, match="more positives"):
        bootstrap_cells(pred, c.n, c.n + 1, n_boot=5)
    with pytest.raises(DataError, match="n has"):
        bootstrap_cells(pred, c.n[:-1], c.n_pos, n_boot=5)
    with pytest.raises(DataError, match="whole"):
        bootstrap_cells(pred, c.n + 0.5, c.n_pos, n_boot=5)
    with pytest.raises(SettingsError):
        bootstrap_cells(pred, c.n, c.n_pos, n_boot=5, strategy="rank")
    with pytest.raises(SettingsError):
        bootstrap_cells(pred, c.n, c.n_pos, n_boot=5, names=["AUC", "F1"])
    b = bootstrap_cells(pred, c.n, c.n_pos, n_boot=5, names=["Brier", "AUC"])
    assert list(dict.fromkeys(b.table.columns.get_level_values(0))) == ["Brier", "AUC"]
