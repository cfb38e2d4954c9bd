"""The top-label reduction of a K-class table (calibdash.data.top_label), the class-wise ECE per group
(calibdash.monitoring.class_groups) and the class-wise panels' bin count (calibdash.diagrams.classwise).

Known results: on the CIFAR-10 LeNet-5 sample the reduction's accuracy is the README's 0.5308 and its binary
ECE at 15 equal-width bins the README's confidence ECE 0.10789. Invariants: the reduction keeps every usable
row in order with its other columns (a dropped row shifts nothing), reads logits through the softmax, and its
binary ECE equals the multi-class confidence ECE at any bins; the per-group class-wise ECE is the class-wise
ECE of the group's rows, unchanged by row order, and weights equal repeated rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

from calibdash import samples
from calibdash.measures import calibration as metrics
from calibdash.data import build_class_set
from calibdash.data.top_label import CONFIDENCE, CORRECT, PREDICTED
from calibdash.diagrams import AUTO, MAX_BINS, MIN_BINS
from calibdash.core.errors import DataError, SettingsError
from calibdash.monitoring.groups import column_for_rows
from calibdash import diagrams as mdiagrams
from calibdash.measures import class_measures as mmetrics
from calibdash.monitoring.class_groups import classwise_ece_by_group


def _table(n: int = 300, seed: int = 0, k: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(k, 0.7), size=n)
    y = np.array([rng.choice(k, p=p) for p in P])
    frame = pd.DataFrame({"label": np.array(list("abcd"[:k]))[y]})
    for j in range(k):
        frame[f"p_{'abcd'[j]}"] = P[:, j]
    frame["site"] = rng.choice(["x", "y", "z"], size=n)
    frame["x1"] = rng.standard_normal(n)
    frame["part"] = np.where(np.arange(n) % 3 == 0, "test", "train")
    return frame


# -- the reduction -----------------------------------------------------------------------------------
def test_cifar10_reduction_gives_the_readme_accuracy_and_confidence_ece():
    cs = samples.load_class_sample("cifar10_lenet5")
    ss = cs.top_label()
    assert (ss.score, ss.label_column, ss.positive_label) == (CONFIDENCE, CORRECT, 1)
    assert ss.n_rows == cs.n_rows == 10_000
    assert ss.labels.mean() == pytest.approx(0.5308, abs=0)                      # 5,308 of 10,000: exact
    # README: 0.10789 (15 equal-width bins), given to 5 decimals: within half a unit of the 5th
    assert abs(metrics.ece(ss.scores, ss.labels, 15, "uniform") - 0.10789) <= 5e-6
    assert ss.score_columns == [CONFIDENCE]


def test_rows_columns_and_roles_are_kept_and_aligned_when_rows_are_dropped():
    frame = _table()
    frame.loc[5, "p_a"] = np.nan                        # dropped: a missing class value
    frame.loc[17, "label"] = None                       # dropped: a missing label
    cs = build_class_set(frame, label="label", probs="p_", features=["x1"], split="part")
    assert cs.n_rows == 298 and list(cs.rows[:6]) == [0, 1, 2, 3, 4, 6]
    ss = cs.top_label()
    kept = frame.drop(index=[5, 17]).reset_index(drop=True)
    P = kept[[f"p_{c}" for c in "abcd"]].to_numpy()
    P = P / P.sum(axis=1, keepdims=True)                # build_class_set divides rows by their sums
    np.testing.assert_array_equal(ss.scores, P.max(axis=1))
    np.testing.assert_array_equal(ss.labels, (np.array(list("abcd"))[P.argmax(axis=1)] == kept["label"]))
    np.testing.assert_array_equal(ss.raw[PREDICTED], np.array(list("abcd"))[P.argmax(axis=1)])
    # the other columns travel with their rows: the site of each usable row, through column_for_rows too
    np.testing.assert_array_equal(column_for_rows(ss, "site"), kept["site"])
    assert not {"p_a", "p_b", "p_c", "p_d"} & set(ss.raw.columns)                 # class columns left out
    assert ss.feature_columns == ["x1"] and ss.split_column == "part"
    np.testing.assert_array_equal(ss.features["x1"], kept["x1"])
    np.testing.assert_array_equal(ss.split, cs.split)
    # its cache key is its own (not the ClassSet's) and stable
    assert ss.content_key() != cs.content_key()
    assert ss.content_key() == cs.top_label().content_key()


def test_logits_are_read_through_the_softmax_and_saturated_rows_stay_finite():
    rng = np.random.default_rng(1)
    Z = rng.normal(scale=4.0, size=(200, 3))
    Z[0] = [800.0, 0.0, -800.0]                         # confidence exactly 1 in float64
    y = rng.integers(0, 3, size=200)
    y[:3] = [0, 1, 2]
    frame = pd.DataFrame({"label": y, **{f"logit_{j}": Z[:, j] for j in range(3)}})
    cs = build_class_set(frame)
    assert cs.logits
    ss = cs.top_label()
    np.testing.assert_allclose(ss.scores, softmax(Z, axis=1).max(axis=1), rtol=1e-12)
    assert ss.scores[0] == 1.0 and np.all(np.isfinite(ss.scores))
    # any bins: the binary ECE of the pair is the multi-class confidence ECE
    for bins, strategy in ((15, "uniform"), (7, "quantile")):
        assert metrics.ece(ss.scores, ss.labels, bins, strategy) == pytest.approx(
            mmetrics.top_label_ece(softmax(Z, axis=1), y, bins, strategy), abs=1e-12)


def test_a_column_named_like_the_reduction_is_kept_and_the_new_one_renamed():
    frame = _table().assign(confidence=0.5)
    ss = build_class_set(frame, label="label", probs="p_", features=[]).top_label()
    assert ss.score == "confidence (top label)"
    assert (ss.raw["confidence"] == 0.5).all()


def test_one_outcome_only_is_refused_with_its_reason():
    frame = _table()
    P = frame[[f"p_{c}" for c in "abcd"]].to_numpy()
    frame["label"] = np.array(list("abcd"))[P.argmax(axis=1)]          # the top class is always right
    with pytest.raises(DataError, match="the top class is right on all 300 usable rows"):
        build_class_set(frame, label="label", probs="p_").top_label()


# -- class-wise ECE per group ---------------------------------------------------------------------------
def test_classwise_ece_by_group_is_each_groups_classwise_ece():
    frame = _table(600, seed=3)
    cs = build_class_set(frame, label="label", probs="p_", features=[])
    P, y = cs.scores().probabilities, cs.labels
    site = frame["site"].to_numpy()
    out = classwise_ece_by_group(P, y, site, ["z", "x", "w"], n_bins=10, strategy="quantile")
    assert list(out.index) == ["z", "x", "w"]
    for g in ("z", "x"):
        assert out[g] == mmetrics.classwise_ece(P[site == g], y[site == g], 10, "quantile")
    assert np.isnan(out["w"])                                            # a group with no row
    # row order is irrelevant
    perm = np.random.default_rng(0).permutation(len(y))
    again = classwise_ece_by_group(P[perm], y[perm], site[perm], ["z", "x"], n_bins=10, strategy="quantile")
    np.testing.assert_allclose(again, out[["z", "x"]], rtol=0, atol=1e-12)
    # a weight of 2 is the row twice (equal-width bins: the bins do not move with the repeats)
    w = np.where(np.arange(len(y)) % 4 == 0, 2.0, 1.0)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    weighted = classwise_ece_by_group(P, y, site, n_bins=15, strategy="uniform", sample_weight=w)
    repeated = classwise_ece_by_group(P[rep], y[rep], site[rep], n_bins=15, strategy="uniform")
    np.testing.assert_allclose(weighted, repeated.reindex(weighted.index), rtol=0, atol=1e-12)
    with pytest.raises(DataError, match="group column has 5 values"):
        classwise_ece_by_group(P, y, site[:5])


# -- the class-wise panels' bin count ------------------------------------------------------------------------
def test_classwise_auto_bins_apply_the_cube_root_rule_to_the_rows_per_class():
    y = np.zeros(3000, dtype=int)
    assert mdiagrams.classwise_bin_count(AUTO, y, 100)[0] == 4                  # ceil(30^(1/3)) = 4
    assert mdiagrams.classwise_bin_count(AUTO, y, 10)[0] == 7                   # ceil(300^(1/3)) = 7
    assert mdiagrams.classwise_bin_count(AUTO, np.zeros(100, int), 100)[0] == MIN_BINS   # 1 row per class
    # 2 million rows per class: ceil(cube root) = 126, capped at 100 (weights count as rows)
    assert mdiagrams.classwise_bin_count(AUTO, np.zeros(3, int), 3, np.full(3, 2e6))[0] == MAX_BINS
    _, text = mdiagrams.classwise_bin_count(AUTO, y, 100)
    assert text == "auto: 4 bins (cube root of n = 30 rows) per class, 3,000 rows over K = 100 classes"
    assert mdiagrams.classwise_bin_count(12, y, 100) == (12, "12 bins")          # a count overrides the rule
    w = np.full(3000, 2.0)                                                       # weights count as rows
    assert mdiagrams.classwise_bin_count(AUTO, y, 100, w)[0] == 4                # ceil(60^(1/3)) = 4
    assert mdiagrams.classwise_bin_count(AUTO, y, 100, np.full(3000, 9.0))[0] == 7   # 270 per class
    with pytest.raises(SettingsError, match="whole number of classes"):
        mdiagrams.classwise_bin_count(AUTO, y, 0)


def test_classwise_diagram_on_many_classes_uses_the_per_class_count_and_says_it():
    k, n = 100, 3000
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.full(k, 0.3), size=n)
    y = np.array([rng.choice(k, p=p) for p in P])
    data = mdiagrams.prepare_classwise({"raw": P}, y, n_bins=AUTO, order="index", max_panels=3)
    assert data.n_bins == 4 and "4 bins" in data.caption() and "per class" in data.caption()
    # every panel's table has at most 4 bins and its counts cover every row
    for c in data.classes:
        table = data.tables[c]["raw"]
        assert len(table) <= 4 and table["count"].sum() == n
    # the panels' ECEs are the per-class ECEs at that count
    np.testing.assert_allclose(data.ece["raw"], mmetrics.per_class_ece(P, y, 4, "uniform"), rtol=1e-12)
    assert mdiagrams.prepare_classwise({"raw": P}, y, n_bins=15, max_panels=1).n_bins == 15
