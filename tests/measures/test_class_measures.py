"""The multi-class measures (calibdash.measures.class_measures) and their paired bootstrap (calibdash.evaluation.bootstrap.row_resamples).

Known results: netcal's CIFAR files with the confidence ECE and accuracy their README publishes; hand-worked
cases. Invariants: weights equal repeated rows, row order, relabelling the classes.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import softmax

from calibdash.core.errors import DataError, SettingsError
from calibdash.evaluation.holdout import UNCALIBRATED
from calibdash.measures import binned, calibration, smooth_ece
from calibdash.evaluation import bootstrap as mboot
from calibdash.measures import class_measures as mm
from calibdash.core.validation import check_probabilities

CIFAR = Path("/work/shared/data/multiclass-cifar")
# (file, top-label ECE with 15 equal-width bins, accuracy), README of /work/shared/data (netcal 1.4, torchmetrics 1.9)
REFERENCES = [("wideresnet-16-4-cifar-10", 0.05372, 0.9109), ("lenet-5-cifar-10", 0.10789, 0.5308),
              ("wideresnet-16-4-cifar-100", 0.05806, 0.7543)]

# Four rows, three classes, worked by hand below.
P4 = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.3, 0.6, 0.1]])
Y4 = np.array([0, 1, 2, 1])


@pytest.mark.skipif(not CIFAR.exists(), reason="reference data not present")
@pytest.mark.parametrize("name, ece, acc", REFERENCES)
def test_cifar_confidence_ece_and_accuracy_match_netcal_and_torchmetrics(name, ece, acc):
    d = np.load(CIFAR / f"{name}.npz")
    P, y = d["predictions"], d["ground_truth"]
    # the README gives 5 decimals (netcal and torchmetrics agree to 1e-5): 2e-5 is its rounding plus their spread
    assert mm.top_label_ece(P, y) == pytest.approx(ece, abs=2e-5)
    # measured as given; rows divided by their sums (off 1 by up to 3e-7 in float32) give the same to 1e-8
    Q = check_probabilities(P)
    assert calibration.ece(Q.max(1), Q.argmax(1) == y, 15, "uniform") == pytest.approx(
        mm.top_label_ece(P, y), abs=1e-8)
    assert mm.accuracy(P, y) == acc                   # a count over 10,000 rows: exact
    if name == "wideresnet-16-4-cifar-10":
        assert int(np.sum(P.max(axis=1) == 1.0)) == 2469   # the saturated rows the README warns of


def test_hand_worked_confidence_ece_mce_and_overconfidence():
    # confidences 0.8, 0.6, 0.6, 0.6; predicted 0, 0, 2, 1; correct 1, 0, 1, 1.
    # 4 bins: [0.75, 1] holds row 0 (gap |0.8 - 1| = 0.2); [0.5, 0.75) rows 1-3 (mean 0.6, accuracy 2/3).
    # ECE = (1 * 0.2 + 3 * (2/3 - 0.6)) / 4 = 0.1; MCE = 0.2.
    assert mm.top_label_ece(P4, Y4, n_bins=4) == pytest.approx(0.1, abs=1e-12)
    assert calibration.mce(*mm.top_label(P4, Y4), 4, "uniform") == pytest.approx(0.2, abs=1e-12)
    assert _measure("Overconfidence", P4, Y4) == pytest.approx(0.65 - 0.75, abs=1e-12)
    assert mm.accuracy(P4, Y4) == 0.75
    c, a = mm.top_label(P4, Y4)
    np.testing.assert_array_equal(c, [0.8, 0.6, 0.6, 0.6])
    np.testing.assert_array_equal(a, [1, 0, 1, 1])


def test_hand_worked_classwise_ece():
    # 2 bins, [0, 0.5) and [0.5, 1]:
    # class 0: p = .8 .6 .2 .3, y = 1 0 0 0 -> 2/4 |0.7 - 0.5| + 2/4 |0.25 - 0| = 0.225
    # class 1: p = .1 .3 .2 .6, y = 0 1 0 1 -> 3/4 |0.2 - 1/3| + 1/4 |0.6 - 1| = 0.2
    # class 2: p = .1 .1 .6 .1, y = 0 0 1 0 -> 3/4 |0.1 - 0| + 1/4 |0.6 - 1| = 0.175
    np.testing.assert_allclose(mm.per_class_ece(P4, Y4, n_bins=2), [0.225, 0.2, 0.175], atol=1e-12)
    assert mm.classwise_ece(P4, Y4, n_bins=2) == pytest.approx(0.2, abs=1e-12)
    assert mm.classwise_ece(P4, Y4, n_bins=2, average="sum") == pytest.approx(0.6, abs=1e-12)


def test_hand_worked_brier_and_log_loss():
    # squared distances to the one-hot rows: 0.06, 0.86, 0.24, 0.26
    assert _measure("Brier", P4, Y4) == pytest.approx(1.42 / 4, abs=1e-12)
    assert mm.log_loss(P4, Y4) == pytest.approx(-(math.log(0.8) + math.log(0.3) + 2 * math.log(0.6)) / 4, abs=1e-12)
    # a true class of probability 0 costs -ln(eps), as the binary log-loss clips
    assert mm.log_loss([[1.0, 0.0]], [1]) == pytest.approx(-math.log(calibration.LOG_LOSS_EPS), rel=1e-12)
    assert _measure("Brier", [[1.0, 0.0]], [1]) == 2.0


def test_a_confidence_of_exactly_one_falls_in_the_last_bin():
    P = np.array([[1.0, 0.0], [1.0, 0.0], [0.95, 0.05]])
    y = np.array([0, 1, 0])
    # all three in [14/15, 1]: |mean conf 0.98333 - accuracy 2/3|; a hidden 16th bin for the two 1.0s
    # (torchmetrics #3510) would give 1/3 * 0.05 + 2/3 * 0.5 = 0.35 instead
    assert mm.top_label_ece(P, y) == pytest.approx((1 + 1 + 0.95) / 3 - 2 / 3, abs=1e-12)
    assert _measure("MCE", P, y) == pytest.approx((1 + 1 + 0.95) / 3 - 2 / 3, abs=1e-12)


def test_argmax_ties_go_to_the_lowest_index():
    assert mm.accuracy([[0.5, 0.5]], [0]) == 1.0
    assert mm.accuracy([[0.5, 0.5]], [1]) == 0.0


def _measure(name, P, y):
    return mm.compute(P, y, names=[name])[name]


def _random(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    P = softmax(rng.normal(scale=2.0, size=(n, k)), axis=1)
    y = np.array([rng.choice(k, p=p) for p in softmax(rng.normal(size=(n, k)) + np.log(P), axis=1)])
    return P, y


def test_weights_equal_repeated_rows():
    P, y = _random()
    w = np.random.default_rng(1).integers(0, 4, y.size)
    rep = np.repeat(np.arange(y.size), w)
    weighted, repeated = mm.compute(P, y, w), mm.compute(P[rep], y[rep])
    for name in mm.MEASURE_NAMES:
        # the same sums in another order: rounding only (smECE's bandwidth search compares sums of them)
        assert weighted[name] == pytest.approx(repeated[name], rel=1e-9, abs=1e-12), name
    for strategy in ("uniform", "quantile"):
        assert mm.classwise_ece(P, y, strategy=strategy, sample_weight=w) == pytest.approx(
            mm.classwise_ece(P[rep], y[rep], strategy=strategy), rel=1e-9)


def test_row_order_is_irrelevant():
    P, y = _random(seed=2)
    perm = np.random.default_rng(3).permutation(y.size)
    a, b = mm.compute(P, y), mm.compute(P[perm], y[perm])
    for name in mm.MEASURE_NAMES:
        assert a[name] == pytest.approx(b[name], rel=1e-9, abs=1e-12), name
    assert mm.top_label_ece(P, y, strategy="quantile") == pytest.approx(
        mm.top_label_ece(P[perm], y[perm], strategy="quantile"), rel=1e-12)


def test_relabelling_the_classes_changes_no_measure():
    P, y = _random(seed=4)
    perm = np.array([2, 0, 3, 1])                  # new column j is old class perm[j]
    Q, z = P[:, perm], np.argsort(perm)[y]         # an old label k becomes the column holding k
    np.testing.assert_allclose(mm.per_class_ece(Q, z), mm.per_class_ece(P, y)[perm], atol=1e-15)
    a, b = mm.compute(P, y), mm.compute(Q, z)      # no argmax ties in continuous softmax rows
    for name in mm.MEASURE_NAMES:
        assert a[name] == pytest.approx(b[name], rel=1e-12, abs=1e-15), name


def test_bad_input_is_refused_with_a_specific_message():
    with pytest.raises(DataError, match="do not sum to 1"):
        mm.top_label_ece([[0.5, 0.2]], [0])
    with pytest.raises(DataError, match="above 1"):
        mm.log_loss([[1.004, 0.0]], [0])                  # sums to 1 within the tolerance, but is no probability
    with pytest.raises(DataError, match="class indices"):
        mm.log_loss(P4, [0, 1, 2, 3])
    with pytest.raises(SettingsError, match="strategy"):
        mm.top_label_ece(P4, Y4, strategy="rank")
    with pytest.raises(SettingsError, match="average"):
        mm.classwise_ece(P4, Y4, average="median")
    with pytest.raises(SettingsError, match="unknown multi-class measure"):
        mm.compute(P4, Y4, names=["AUC"])


def test_measure_table_has_a_row_per_method_and_the_table_order():
    t = mm.measure_table({"a": P4, "b": P4[:, [1, 0, 2]]}, Y4)
    assert list(t.index) == ["a", "b"] and list(t.columns) == list(mm.MEASURE_NAMES)
    assert t.loc["a", "Brier"] == pytest.approx(0.355)
    assert mm.MEASURES["Overconfidence"].oriented(-0.1) == 0.1 and mm.MEASURES["Accuracy"].oriented(0.7) == -0.7


def test_a_table_checks_each_method_once_and_measures_as_the_functions_do(monkeypatch):
    """measure_table checks every method's probabilities once (not once per measure: 9 full passes over a
    300,000 x 10 table), gives what each public measure gives on its own, and leaves no trust behind: after
    it, a measure called on the same array, now broken, still refuses it."""
    P, y = _random(n=200, k=4, seed=3)
    seen = []
    original = mm.check_probabilities
    monkeypatch.setattr(mm, "check_probabilities", lambda a, *args: seen.append(id(a)) or original(a, *args))
    Q = softmax(2 * np.log(P), axis=1)
    table = mm.measure_table({"a": P, "b": Q}, y)
    assert len(seen) == 2
    public = {"ECE": mm.top_label_ece, "MCE": lambda P, y: calibration.mce(*mm.top_label(P, y), 15, "uniform"),
              "cwECE": mm.classwise_ece, "smECE": lambda P, y: smooth_ece.smooth_ece(*mm.top_label(P, y)),
              "dCE": lambda P, y: binned.debiased_l2_ce(*mm.top_label(P, y), n_bins=15), "LogLoss": mm.log_loss,
              "Brier": lambda P, y: float(np.mean(((P - np.eye(P.shape[1])[y]) ** 2).sum(axis=1))),
              "Accuracy": mm.accuracy, "Overconfidence": lambda P, y: float(np.mean(np.subtract(*mm.top_label(P, y))))}
    assert set(public) == set(mm.MEASURES)
    for key, probs in (("a", P), ("b", Q)):
        for name, function in public.items():
            assert table.loc[key, name] == function(probs, y)
    P[0, 0] = np.nan
    with pytest.raises(DataError):
        mm.compute(P, y, names=["Brier"])


# ------------------------------------------------------------------------------------------------------------
# the bootstrap
# ------------------------------------------------------------------------------------------------------------
def _methods(n=80, seed=5):
    P, y = _random(n=n, k=3, seed=seed)
    L = np.log(P)
    return {UNCALIBRATED: P, "hot": softmax(2 * L, axis=1), "cool": softmax(0.5 * L, axis=1)}, y


def test_every_measure_has_a_resampling_rule():
    """Sums of the statistics form, or (no form: equal-mass bins and SmoothECE move with the weights) each
    resample's rows."""
    assert {n for n, m in mm.MEASURES.items() if m.statistics is None} == {"smECE", "dCE"}


@pytest.mark.parametrize("weighted, block", [(False, 16), (True, 16), (True, 5)])
def test_bootstrap_matches_a_direct_loop_over_the_resamples(weighted, block, monkeypatch):
    """Every resample's measures equal the measures of its drawn rows, the resamples drawn in one block or
    several (``_BOOT_BLOCK``: 12 resamples in blocks of 5, 5 and 2)."""
    monkeypatch.setattr(mboot.row_resamples, "_BOOT_BLOCK", block)
    Ps, y = _methods()
    w = np.random.default_rng(6).integers(1, 4, y.size).astype(float) if weighted else None
    boot = mboot.bootstrap_multiclass(Ps, y, w, n_boot=12, seed=7, refit_bandwidth=True, workers=1)
    fixed = mboot.bootstrap_multiclass(Ps, y, w, names=["smECE"], n_boot=12, seed=7)
    counts = [np.bincount(d, minlength=y.size) for d in mboot.draws.row_draws(y.size, 12, 7)]
    for j, (method, P) in enumerate(Ps.items()):
        assert boot.table.loc[method, ("ECE", "value")] == mm.top_label_ece(P, y, sample_weight=w)
        c, a = mm.top_label(P, y)
        sigma = smooth_ece.smooth_ece_bandwidth(c, a, w)
        for r in range(12):
            rows = np.repeat(np.arange(y.size), counts[r])
            direct = mm.compute(P[rows], y[rows], None if w is None else w[rows])
            for name in mm.MEASURE_NAMES:
                # the same sums in another order (gap of sums vs sum of gaps): rounding only
                assert boot.samples[name][r, j] == pytest.approx(direct[name], rel=1e-9, abs=1e-12), (name, r)
            # by default smECE's resamples keep the full data's bandwidth
            assert fixed.samples["smECE"][r, j] == pytest.approx(
                smooth_ece.smooth_ece_at(c[rows], a[rows], sigma, None if w is None else w[rows]), rel=1e-9)


def test_bootstrap_is_paired_seeded_and_its_intervals_cover_the_point():
    Ps, y = _methods(n=2000, seed=8)
    Ps["twin"] = Ps["hot"].copy()
    boot = mboot.bootstrap_multiclass(Ps, y, n_boot=100, seed=1)
    again = mboot.bootstrap_multiclass(Ps, y, n_boot=100, seed=1)
    for name in mm.MEASURE_NAMES:
        np.testing.assert_array_equal(boot.samples[name], again.samples[name])
        assert boot.difference(name, "hot", "twin") == (0.0, 0.0, 0.0)    # the same resamples for every method
    t = boot.table
    # means over rows have no bias the bootstrap could shift, and the binned errors of these strongly
    # miscalibrated methods dwarf their binning bias: the 95% interval holds the point estimate
    for name in ("LogLoss", "Brier", "Accuracy", "Overconfidence", "ECE"):
        for m in ("hot", "cool"):
            assert t.loc[m, (name, "low")] <= t.loc[m, (name, "value")] <= t.loc[m, (name, "high")], (name, m)
    text = mboot.verdict(boot)
    assert "do not lower the raw scores' Accuracy" in text


def test_resample_counts_are_the_seeded_draws_whatever_the_block():
    """Resample b counts ``default_rng(seed).integers(0, n, n)``'s b-th draw; blocks of any size give them."""
    rng = np.random.default_rng(4)
    direct = np.stack([np.bincount(rng.integers(0, 40, 40), minlength=40) for _ in range(9)])
    blocks = list(mboot.draws.resample_blocks(40, 9, 4, size=4))
    assert [lo for lo, _ in blocks] == [0, 4, 8] and [b.shape[1] for _, b in blocks] == [4, 4, 1]
    np.testing.assert_array_equal(np.concatenate([b.T for _, b in blocks]), direct)
