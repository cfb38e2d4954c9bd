"""Synthetic scenarios with a known truth (calibdash.synthetic) and their teaching figures (calibdash.figures.charts.learn).

Known results used: the closed forms of each scenario's true calibration function, written here independently of
the module; the raw scores' true error ln(2)/2 - 1/4 (over-confident) and 1/6 (f = s²); hand-computed errors of a
constant and of a two-bin step map on uniform scores; the closed form of the circles/linear-SVM truth in the distance
of the SVM's line from the origin; the shipped sample's SVM scores; and the normal approximation of ECE's bias on a
perfectly calibrated sample, sqrt(2/π) · sqrt(E[p(1-p)] / m) for bins of m rows.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibdash import calibrators, synthetic
from calibdash.measures import calibration as metrics
from calibdash.core.errors import DataError
from calibdash.figures.charts import learn as flearn
from calibdash.figures.palette import color_of

CLOSED = {      # the true calibration functions, written differently from the module
    "calibrated": lambda s: s,
    "overconfident": lambda s: np.sqrt(s) / (np.sqrt(s) + np.sqrt(1 - s)),
    "underconfident": lambda s: s ** 2 / (s ** 2 + (1 - s) ** 2),
    "nonmonotone": lambda s: s + 0.15 * np.sin(4 * np.pi * s),
    "imbalance": lambda s: s / (s + 5 * (1 - s)),
    "small_sample": lambda s: s * s,
}
REPO = Path(__file__).resolve().parents[2]
SVM = ("circles_linear", "circles_quadratic", "xor_linear", "xor_quadratic")
GRID = np.linspace(0.001, 0.999, 999)


def test_every_scenario_is_listed_with_its_texts():
    assert set(CLOSED) | set(SVM) == set(synthetic.SCENARIOS)
    for name, sc in synthetic.SCENARIOS.items():
        assert sc.name == name and sc.title and sc.description and sc.note and sc.truth
        assert synthetic.MIN_N <= sc.default_n <= synthetic.MAX_N
    assert synthetic.SCENARIOS["small_sample"].default_n <= 200


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_true_curves_match_their_formulas(name):
    np.testing.assert_allclose(synthetic.true_curve(name, GRID), CLOSED[name](GRID), rtol=1e-12, atol=1e-14)


def test_nonmonotone_truth_falls_where_documented():
    f = synthetic.true_curve("nonmonotone", np.array([0.125, 0.375, 0.625, 0.875]))
    assert f[1] < f[0] and f[3] < f[2]


@pytest.mark.parametrize("name", ["overconfident", "underconfident", "calibrated"])
def test_scores_follow_their_distribution(name):
    """With a uniform true probability q and s a monotone transform of it, P(s <= x) = f(x): the truth is the CDF."""
    d = synthetic.draw(name, 20000, seed=3)
    assert stats.kstest(d.scores, lambda x: CLOSED[name](np.asarray(x))).pvalue > 1e-3


@pytest.mark.parametrize("name", ["overconfident", "nonmonotone", "imbalance"])
def test_labels_are_drawn_with_the_true_probability(name):
    d = synthetic.draw(name, 200_000, seed=11)
    np.testing.assert_allclose(d.true_prob, CLOSED[name](d.scores), rtol=1e-9, atol=1e-12)
    t = metrics.reliability_table(d.true_prob, d.labels, n_bins=20, strategy="quantile")
    se = np.sqrt(np.maximum(t["mean_pred"] * (1 - t["mean_pred"]), 1e-4) / t["count"])
    assert (np.abs(t["obs_freq"] - t["mean_pred"]) < 4.5 * se).all()


@pytest.mark.parametrize("name", ["overconfident", "small_sample", "xor_linear"])
def test_draws_are_reproducible_by_seed(name):
    a, b, c = synthetic.draw(name, 500, 7), synthetic.draw(name, 500, 7), synthetic.draw(name, 500, 8)
    for field in ("scores", "labels", "true_prob"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.scores, c.scores)
    assert a.scores.min() >= 0 and a.scores.max() <= 1 and set(np.unique(a.labels)) <= {0, 1}


# -- the true calibration error ----------------------------------------------------------------------------------------
def test_identity_on_the_calibrated_scenario_has_no_error():
    assert synthetic.true_calibration_error("calibrated") == pytest.approx(0.0, abs=1e-15)
    assert synthetic.true_calibration_error("calibrated", lambda s: s, p=2) == pytest.approx(0.0, abs=1e-15)


def test_raw_scores_error_equals_the_closed_forms():
    assert synthetic.true_calibration_error("overconfident") == pytest.approx(math.log(2) / 2 - 0.25, abs=1e-7)
    assert synthetic.true_calibration_error("small_sample") == pytest.approx(1 / 6, abs=1e-7)


def test_hand_computed_errors_and_the_two_definitions():
    """Uniform scores, f(s) = s. A constant 0.5: E|s - 1/2| = 1/4, (E (s - 1/2)²)^(1/2) = 1/√12, and given the
    prediction the truth is E[s] = 1/2, so 0. Two bins with their means (0.25, 0.75): E|s - g| = 1/8 given the
    score, 0 given the prediction."""
    half = lambda s: np.full_like(s, 0.5)
    assert synthetic.true_calibration_error("calibrated", half) == pytest.approx(0.25, abs=1e-9)
    assert synthetic.true_calibration_error("calibrated", half, p=2) == pytest.approx(1 / math.sqrt(12), abs=1e-9)
    assert synthetic.true_calibration_error("calibrated", half, against="prediction") == pytest.approx(0, abs=1e-12)
    step = lambda s: np.where(s < 0.5, 0.25, 0.75)
    assert synthetic.true_calibration_error("calibrated", step) == pytest.approx(0.125, abs=1e-9)
    assert synthetic.true_calibration_error("calibrated", step, against="prediction") == pytest.approx(0, abs=1e-12)


def test_a_fitted_calibrator_is_accepted_and_platt_recovers_a_logistic_truth():
    d = synthetic.draw("overconfident", 20000, seed=1)
    platt = calibrators.get("platt").fit(d.scores, d.labels)
    err = synthetic.true_calibration_error("overconfident", platt)
    assert err == pytest.approx(synthetic.true_calibration_error("overconfident", platt.predict))
    assert err < 0.01 < synthetic.true_calibration_error("overconfident")


def test_bad_arguments_raise_data_errors():
    with pytest.raises(DataError, match="unknown scenario"):
        synthetic.draw("nope", 100, 0)
    with pytest.raises(DataError, match="sample size"):
        synthetic.draw("calibrated", 5, 0)
    with pytest.raises(DataError, match="against"):
        synthetic.true_calibration_error("calibrated", against="label")
    with pytest.raises(DataError, match="p must"):
        synthetic.true_calibration_error("calibrated", p=0)


# -- the SVM scenarios --------------------------------------------------------------------------------------------------
def test_svm_scores_are_those_of_the_shipped_circles_sample():
    """The circles SVMs are fitted on sample_data/make_samples.py's training draw: same scores (to its 6 decimals)."""
    df = pd.read_csv(REPO / "sample_data" / "circles_svm.csv")
    x = df[["x1", "x2"]].to_numpy()
    for col, name in (("linear_svm", "circles_linear"), ("quadratic_svm", "circles_quadratic")):
        margin = synthetic.scenarios.population(name).margin
        np.testing.assert_allclose(1 / (1 + np.exp(-margin(x))), df[col], atol=3e-6)


def test_circles_linear_truth_matches_its_closed_form():
    """Points at signed distance d from the SVM's line: radius √(d² + t²) along the line, density ∝ 1/r on r < 4, so
    P(r > 2 | d) = 1 - asinh(√(4-d²)/|d|) / asinh(√(16-d²)/|d|) for |d| < 2, and 1 beyond. Tolerances: the module
    docstring's stated accuracy (population mean 3e-4; 99% of the population within 5e-3)."""
    pop = synthetic.scenarios.population("circles_linear")
    u = (np.arange(20000) + 0.5) / 20000
    m = pop.margin_quantile(u)
    d = np.abs((m - pop.margin.c) / np.linalg.norm(pop.margin.v))
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.where(d < 2, 1 - np.arcsinh(np.sqrt(np.clip(4 - d * d, 0, None)) / d)
                         / np.arcsinh(np.sqrt(16 - d * d) / d), 1.0)
    diff = np.abs(pop.truth_at_margin(m) - exact)
    assert diff.mean() < 3e-4
    assert np.quantile(diff, 0.99) < 5e-3
    # the U shape the BBQ paper relies on: high at both ends, low in the middle
    f = synthetic.true_curve("circles_linear", np.quantile(synthetic.draw("circles_linear", 5000, 0).scores,
                                                           [0.01, 0.5, 0.99]))
    assert f[0] > 0.9 and f[2] > 0.9 and f[1] < 0.3


@pytest.mark.parametrize("name", SVM)
def test_svm_truth_agrees_with_an_independent_monte_carlo_check(name):
    """200,000 fresh points, 20 equal-count score bins: the positive rate in each bin is within 4 binomial standard
    errors (plus 0.002 for the truth's own error) of the truth averaged over the bin's rows."""
    d = synthetic.draw(name, 200_000, seed=2024)
    ids = metrics.bin_assignments(d.scores, 20, "quantile")
    rate = np.bincount(ids, d.labels) / np.bincount(ids)
    truth = np.bincount(ids, d.true_prob) / np.bincount(ids)
    se = np.sqrt(np.maximum(truth * (1 - truth), 1e-4) / np.bincount(ids))
    assert (np.abs(rate - truth) < 4 * se + 0.002).all(), np.c_[rate, truth, se]


def test_svm_truth_is_undefined_outside_the_scores():
    lo, hi = synthetic.support("circles_linear")
    assert 0.1 < lo < hi < 0.8
    f = synthetic.true_curve("circles_linear", np.array([0.01, (lo + hi) / 2, 0.99]))
    assert np.isnan(f[0]) and np.isnan(f[2]) and 0 <= f[1] <= 1


# -- the estimator study --------------------------------------------------------------------------------------------------
def test_trial_halves_the_draw_and_judges_on_the_other_half():
    tr = synthetic.trial("nonmonotone", 400, 5, ["platt", "histogram"])
    assert len(tr.fit_rows) == len(tr.judged_rows) == 200
    assert not set(tr.fit_rows) & set(tr.judged_rows)
    assert list(tr.errors["method"]) == ["uncalibrated", "platt", "histogram"]
    s, y = tr.draw.scores[tr.judged_rows], tr.draw.labels[tr.judged_rows]
    row = tr.errors.set_index("method").loc["histogram"]
    p = tr.models["histogram"].predict(s)
    assert row["ece"] == pytest.approx(metrics.ece(p, y, 10, "quantile"))
    assert row["mvce"] == pytest.approx(metrics.mvce(p, y, seed=5))
    assert row["true_error"] == pytest.approx(synthetic.true_calibration_error("nonmonotone", tr.models["histogram"]))
    assert row["true_error_pred"] <= row["true_error"] + 1e-12        # Jensen: grouping can only shrink the error
    assert row["ece_minus_true"] == pytest.approx(row["ece"] - row["true_error"])


def test_estimator_study_shape_and_invariants():
    study = synthetic.estimator_study("overconfident", 300, [1, 2, 3], {"platt": {}, "histogram": {"n_bins": 5}})
    assert len(study) == 9
    assert list(study.columns[:2]) == ["seed", "method"]
    assert {"true_error", "true_error_pred", "ece", "mvce", "ece_minus_true", "mvce_minus_true"} <= set(study.columns)
    assert sorted(study["seed"].unique()) == [1, 2, 3]
    raw = study[study["method"] == "uncalibrated"]
    np.testing.assert_allclose(raw["true_error"], math.log(2) / 2 - 0.25, atol=1e-7)   # the population's, every draw
    assert raw["ece"].nunique() == 3                                                   # the sample's, per draw
    summary = synthetic.study_summary(study)
    assert len(summary) == 3 * 2
    part = study[study["method"] == "platt"]
    row = summary[(summary["method"] == "platt") & (summary["estimator"] == "ECE")].iloc[0]
    diff = part["ece"] - part["true_error"]
    assert row["bias"] == pytest.approx(diff.mean())
    assert row["sd"] == pytest.approx(diff.std(ddof=1))
    assert row["rmse"] == pytest.approx(np.sqrt(np.mean(diff ** 2)))


def test_ece_is_biased_upward_on_small_samples_of_a_calibrated_scenario():
    """True error 0; ECE over 10 equal-count bins of m judged rows is about sqrt(2/π) · sqrt(E[p(1-p)] / m), with
    E[p(1-p)] = 1/6 for uniform p: 0.103 for m = 10 (n = 200), 0.0103 for m = 1,000 (n = 20,000)."""
    expected = lambda n: math.sqrt(2 / math.pi) * math.sqrt((1 / 6) / (n / 2 / 10))
    small = synthetic.estimator_study("calibrated", 200, range(30), [])
    large = synthetic.estimator_study("calibrated", 20000, range(8), [])
    assert (small["true_error"] == 0).all()
    bias_small, bias_large = small["ece_minus_true"].mean(), large["ece_minus_true"].mean()
    assert (small["ece"] > 0).all()
    assert bias_small == pytest.approx(expected(200), rel=0.2)
    assert bias_large == pytest.approx(expected(20000), rel=0.2)
    assert bias_small > 5 * bias_large


def test_a_draw_without_two_rows_of_each_class_is_refused():
    seed = next(s for s in range(500) if synthetic.draw("imbalance", 40, s).labels.sum() < 2)
    with pytest.raises(DataError, match="fewer than 2 rows"):
        synthetic.trial("imbalance", 40, seed)


# -- figures --------------------------------------------------------------------------------------------------------------
def test_scenario_figure_draws_the_truth_in_black_over_the_sample():
    d = synthetic.draw("overconfident", 1000, 0)
    data = flearn.scenario_data("overconfident", d.scores, d.labels)
    np.testing.assert_allclose(data.truth["prob"], CLOSED["overconfident"](data.truth["score"].to_numpy()), atol=1e-12)
    fig = flearn.scenario_figure(data)
    truth = [t for t in fig.data if t.legendgroup == flearn.TRUTH]
    assert len(truth) == 1 and truth[0].line.color == color_of("truth") == "#000000"
    assert int(sum(t.y.sum() for t in fig.data if t.type == "bar")) == 1000


def test_maps_figure_has_one_panel_per_calibrator_with_the_truth_in_each():
    tr = synthetic.trial("circles_quadratic", 600, 1, ["platt", "isotonic", "bbq", "histogram"])
    data = flearn.maps_data("circles_quadratic", tr.models, tr.draw.scores)
    assert set(data["method"]) == {flearn.TRUTH, "platt", "isotonic", "bbq", "histogram"}
    lo, hi = synthetic.support("circles_quadratic")
    assert data["score"].between(lo, hi).all()
    iso = data[data["method"] == "isotonic"]
    np.testing.assert_allclose(iso["prob"], tr.models["isotonic"].predict(iso["score"].to_numpy()))
    fig = flearn.maps_figure(data, errors={"platt": 0.0123}, cols=3)
    truth = [t for t in fig.data if t.legendgroup == flearn.TRUTH]
    assert len(truth) == 4 and {t.line.color for t in truth} == {"#000000"}
    platt = [t for t in fig.data if t.name == "platt"]
    assert len(platt) == 1 and platt[0].line.color == color_of("platt")
    assert {t.xaxis for t in fig.data if t.legendgroup in ("bbq", "histogram")} == {"x3", "x4"}   # two rows of panels
    assert any("true error 0.012" in a.text for a in fig.layout.annotations)


def test_bias_data_and_figure():
    study = synthetic.estimator_study("small_sample", 100, [4, 5, 6], ["platt"])
    data = flearn.bias_data(study)
    assert len(data) == 2 * len(study)
    np.testing.assert_allclose(data["difference"], data["estimate"] - data["true"])
    pred = flearn.bias_data(study, against="prediction")
    np.testing.assert_allclose(pred["true"].iloc[:len(study)], study["true_error_pred"])
    fig = flearn.bias_figure(data, labels={"platt": "Platt scaling"}, seed=5)
    boxes = [t for t in fig.data if t.type == "box"]
    assert len(boxes) == 4                                            # (raw, platt) x (ECE, MVCE)
    assert {b.line.color for b in boxes} == {color_of("uncalibrated"), color_of("platt")}
    marks = [t for t in fig.data if t.type == "scatter"]
    assert sum(len(t.y) for t in marks) == 4                          # the seed-5 draw, once per box
    with pytest.raises(DataError):
        flearn.bias_data(study, against="truth")
