"""Tests of multi-class tables (calibdash.data.class_set), the Gaussian K-class scenario
(calibdash.synthetic.gaussian_classes) and the multi-class sample files (sample_data/multiclass/)."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax

from calibdash import DataError, SettingsError
from calibdash.data import (MIN_ROWS, ClassSet, build_class_set, guess_class_columns, is_multiclass, load_classes,
                            read_table)
from calibdash.calibrators.multiclass.base import Scores
from calibdash.core.validation import SUM_TOLERANCE
from calibdash.samples import SAMPLES, sample_path
from calibdash.synthetic.gaussian_classes import gaussian_classes, true_canonical_error

from tests.conftest import shared_file

REPO = Path(__file__).resolve().parents[2]
MULTI = REPO / "sample_data" / "multiclass"
ANIMALS = ("cat", "dog", "emu")


def _probs(n: int = 60, seed: int = 0, k: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=n)


def _table(prefix: str = "p_", classes=ANIMALS, n: int = 60, seed: int = 0, values=None) -> pd.DataFrame:
    """label, one column per class named prefix + class, and a feature; every class occurs."""
    rng = np.random.default_rng(seed)
    k = len(classes)
    P = _probs(n, seed, k) if values is None else values
    y = np.arange(n) % k
    rng.shuffle(y)
    df = pd.DataFrame({"label": np.asarray(classes, dtype=object)[y]})
    if all(isinstance(c, int) for c in classes):
        df["label"] = df["label"].astype(np.int64)
    for j, c in enumerate(classes):
        df[f"{prefix}{c}"] = P[:, j]
    df["age"] = rng.integers(20, 60, n)
    return df


# ---------------------------------------------------------------------------
# detection
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("prefix,logits", [("p_", False), ("prob_", False), ("proba_", False), ("logit_", True),
                                           ("PROB_", False), ("Logit_", True)])
def test_each_prefix_is_found_case_insensitively_and_logit_means_logits(prefix, logits):
    df = _table(prefix)
    roles = guess_class_columns(df)
    assert roles.label == "label" and roles.columns == [f"{prefix}{c}" for c in ANIMALS]
    assert roles.classes == list(ANIMALS) and roles.prefix == prefix and roles.logits is logits
    assert roles.features == ["age"] and roles.split is None
    assert is_multiclass(df)
    cs = build_class_set(df)
    assert cs.logits is logits and cs.k == 3 and cs.n_rows == 60


def test_columns_named_exactly_after_the_classes():
    df = _table(prefix="")
    roles = guess_class_columns(df)
    assert roles.columns == list(ANIMALS) and roles.prefix is None and not roles.logits
    assert roles.features == ["age"]                  # the class columns are not features, the feature is one
    cs = build_class_set(df)
    np.testing.assert_allclose(cs.given, df[list(ANIMALS)].to_numpy() / df[list(ANIMALS)].sum(axis=1).to_numpy()[:, None])


def test_integer_column_names_match_integer_labels():
    P = _probs(40, 2)
    df = pd.DataFrame(P)                              # columns 0, 1, 2 (ints), as pandas names them
    df["y"] = np.arange(40) % 3
    cs = build_class_set(df)
    assert cs.columns == [0, 1, 2] and cs.classes == [0, 1, 2] and cs.label_column == "y"
    np.testing.assert_array_equal(cs.labels, df["y"].to_numpy())


def test_numeric_labels_match_their_text_and_codes_follow_column_order():
    df = _table(classes=[7, 3, 5])                    # columns p_7, p_3, p_5: column order, not sorted order
    cs = build_class_set(df)
    assert cs.classes == [7, 3, 5] and cs.columns == ["p_7", "p_3", "p_5"]
    np.testing.assert_array_equal(np.asarray(cs.classes)[cs.labels], df["label"].to_numpy())
    df.loc[0, "label"] = np.nan                       # the label column becomes float: 3.0 still matches p_3
    assert df["label"].dtype == float
    cs = build_class_set(df)
    assert cs.classes == [7, 3, 5] and cs.n_rows == 59 and cs.report.dropped == {"missing label": 1}


def test_labels_match_case_insensitively_when_no_exact_match():
    df = _table()
    df["label"] = df["label"].str.upper()             # CAT, DOG, EMU against p_cat, p_dog, p_emu
    cs = build_class_set(df)
    assert cs.classes == ["CAT", "DOG", "EMU"]
    np.testing.assert_array_equal(np.asarray(cs.classes, dtype=object)[cs.labels], df["label"].to_numpy())


def test_the_true_label_wins_over_a_predicted_class_column_and_split_and_ids_are_guessed():
    df = _table(n=80)
    P = df[["p_cat", "p_dog", "p_emu"]].to_numpy()
    df.insert(0, "predicted", np.asarray(ANIMALS, dtype=object)[P.argmax(1)])
    df.insert(0, "id", np.arange(1000, 1080))
    df["split"] = np.where(np.arange(80) < 40, "train", "test")
    roles = guess_class_columns(df)
    assert roles.label == "label" and roles.split == "split"
    assert roles.features == ["predicted", "age"]     # the id is not a feature (as for binary files)
    cs = build_class_set(df)
    assert list(cs.split[:2]) == ["train", "train"] and cs.features.columns.tolist() == ["predicted", "age"]
    assert build_class_set(df, label="predicted").label_column == "predicted"
    assert build_class_set(df, split=False, features=[]).split is None


def test_user_named_columns_as_prefix_or_list():
    df = _table("score_")                             # not a known prefix: only found when named
    assert guess_class_columns(df) is None and not is_multiclass(df)
    cs = build_class_set(df, probs="score_")
    assert cs.columns == ["score_cat", "score_dog", "score_emu"] and cs.classes == list(ANIMALS)
    cs2 = build_class_set(df, probs=["score_cat", "score_dog", "score_emu"])
    np.testing.assert_array_equal(cs2.given, cs.given)
    np.testing.assert_array_equal(cs2.labels, cs.labels)
    Z = build_class_set(_table("z_", values=np.log(_probs())), logits="z_")
    assert Z.logits and Z.classes == list(ANIMALS)
    np.testing.assert_allclose(Z.scores().probabilities, _probs(), rtol=1e-12)   # softmax(log p) = p
    named = build_class_set(_table(""), probs=list(ANIMALS))   # whole names are the classes
    assert named.classes == list(ANIMALS) and named.prefix is None


def test_a_class_set_gives_scores_and_a_stable_key():
    df = _table()
    cs = build_class_set(df)
    x = cs.scores()
    assert isinstance(x, Scores) and x.k == 3 and not x.logits
    np.testing.assert_allclose(x.probabilities.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert cs.content_key() == build_class_set(df.copy()).content_key()
    assert cs.content_key() != build_class_set(df, features=[]).content_key()
    assert "K=3" in repr(cs)


# ---------------------------------------------------------------------------
# refusals and what is dropped
# ---------------------------------------------------------------------------
def test_label_values_without_a_column_are_named():
    df = _table(classes=("cat", "dog", "emu", "fox"))
    df = df.drop(columns=["p_dog", "p_emu"]).assign(p_gnu=0.0, p_yak=0.0)
    with pytest.raises(DataError, match="labels hold classes with no probability column: 'dog', 'emu'"):
        build_class_set(df, probs="p_")
    # the guess finds the table too (half of the label's values have a column), and refuses it the same way
    with pytest.raises(DataError, match="labels hold classes with no probability column: 'dog', 'emu'"):
        build_class_set(df)
    # a named label whose values mostly lack a column: not guessed as multi-class, refused saying why
    few = _table(classes=("cat", "dog", "emu", "fox", "gnu")).drop(columns=["p_emu", "p_fox", "p_gnu"])
    few["p_yak"] = 0.0
    assert guess_class_columns(few) is None
    with pytest.raises(DataError, match="labels hold classes with no probability column: 'emu', 'fox', 'gnu'"):
        build_class_set(few, label="label")
    # a class column missing whose class is not in the labels either: its share leaves the rows short of 1
    short = _table(classes=("cat", "dog", "emu", "fox"), n=60)
    short = short[short["label"] != "fox"].drop(columns=["p_fox"])
    with pytest.raises(DataError, match="do not sum to 1 .* A probability column is needed for every class"):
        build_class_set(short)
    lg = _table("logit_").drop(columns=["logit_emu"]).assign(logit_fox=0.0)
    with pytest.raises(DataError, match="labels hold classes with no logit column: 'emu'"):
        build_class_set(lg)


def test_a_message_shows_a_few_values_never_the_data():
    n = 400
    df = pd.DataFrame({"label": [f"class{i}" for i in range(n)]})
    for c in ("class0", "class1", "class2"):
        df[f"p_{c}"] = 1 / 3
    with pytest.raises(DataError) as err:
        build_class_set(df, probs="p_")
    msg = str(err.value)
    # sorted as text; five shown, then the count
    assert "'class10', 'class100', 'class101', 'class102', 'class103', ... (397 in all)" in msg and len(msg) < 400


def test_a_class_absent_from_the_labels_is_a_note_but_one_class_is_refused():
    df = _table()
    df["label"] = np.where(df["label"] == "emu", "cat", df["label"])
    cs = build_class_set(df)
    assert cs.k == 3 and cs.report.class_counts["emu"] == 0
    assert any("No usable row has the class of p_emu" in m for m in cs.report.messages)
    df["label"] = "cat"
    with pytest.raises(DataError, match="holds one class only \\('cat'\\)"):
        build_class_set(df, probs="p_")


def test_rows_that_do_not_sum_to_one_are_refused_with_the_logits_hint():
    df = _table()
    df.loc[4, ["p_cat", "p_dog", "p_emu"]] = [0.5, 0.3, 0.5]
    with pytest.raises(DataError, match=r"1 of 60 rows of data's class columns \(p_cat, p_dog, p_emu\) do not sum to "
                                        r"1 within 0.01; data row 5 sums to 1\.3\..*--logits p_"):
        build_class_set(df)
    ok = _table()
    ok.loc[4, ["p_cat", "p_dog", "p_emu"]] = [0.5, 0.3, 0.2 + 0.9 * SUM_TOLERANCE]   # within the tolerance
    cs = build_class_set(ok)
    np.testing.assert_allclose(cs.given[4], np.array([0.5, 0.3, 0.2 + 0.9 * SUM_TOLERANCE]) / (1 + 0.9 * SUM_TOLERANCE))


def test_negative_values_and_values_above_one_are_refused_pointing_to_logits():
    logits = np.random.default_rng(1).normal(0, 3, (60, 3))
    with pytest.raises(DataError, match=r"hold negative values \(.* rows, the lowest .*\); probabilities are never "
                                        r"negative\. If the columns hold logits, read them as logits \(--logits p_"):
        build_class_set(_table(values=logits))
    with pytest.raises(DataError, match=r"hold values above 1 \(1 rows, the highest 4, the first in data row 3\)"):
        build_class_set(_table(values=np.where(np.arange(60)[:, None] == 2, [4.0, 0, 0], _probs())))
    assert build_class_set(_table(values=logits), logits="p_").logits   # read as logits, they are fine


def test_missing_and_text_entries_drop_rows_as_binary_files_do():
    df = _table(n=60).astype({"p_dog": object})
    df.loc[[1, 2], "p_cat"] = np.nan
    df.loc[[5], "p_emu"] = np.inf
    df.loc[[7, 8], "p_dog"] = ["#N/A", "abc"]
    df.loc[[9, 1], "label"] = [None, None]            # row 1 counts under its missing value only
    cs = build_class_set(df)
    assert cs.report.dropped == {"missing or non-finite class value": 3, "class value not a number": 2,
                                 "missing label": 1}
    assert cs.report.dropped_examples == {"class value not a number": ["#N/A", "abc"]}
    assert cs.n_rows == cs.report.n_used == 54 and cs.report.n_read == 60
    assert any('Dropped 2 rows with a class value not a number, such as "#N/A", "abc".' == m
               for m in cs.report.messages)
    df["p_dog"] = "x"
    with pytest.raises(DataError, match="class column 'p_dog' is mostly text: 60 of its 60 entries"):
        build_class_set(df)
    with pytest.raises(DataError, match="holds True/False values"):
        build_class_set(_table().assign(p_dog=True))


def test_binary_tables_point_to_the_binary_path():
    df = _table(classes=(0, 1))
    assert guess_class_columns(df) is None and not is_multiclass(df)
    with pytest.raises(DataError, match="label column 'label' holds two classes \\(0, 1\\): this is a binary file; "
                                        "open it as one"):
        build_class_set(df)
    with pytest.raises(DataError, match="data has 2 class columns \\(p_0, p_1\\), and a multi-class table has at "
                                        "least three: this is a binary file"):
        build_class_set(df, probs="p_")


@pytest.mark.parametrize("name", list(SAMPLES))
def test_binary_samples_stay_binary(name):
    df, _ = read_table(sample_path(name))
    assert not is_multiclass(df) and guess_class_columns(df) is None
    with pytest.raises(DataError, match="this is a binary file"):
        build_class_set(df)


def test_other_refusals():
    df = _table()
    with pytest.raises(SettingsError, match="not both"):
        build_class_set(df, probs="p_", logits="p_")
    with pytest.raises(SettingsError, match="an empty prefix names no class columns"):
        build_class_set(df, probs="")
    with pytest.raises(DataError, match="no column starts with 'q_'"):
        build_class_set(df, probs="q_")
    with pytest.raises(DataError, match="class columns 'p_x', 'p_y' not found"):
        build_class_set(df, probs=["p_cat", "p_x", "p_y"])
    with pytest.raises(DataError, match="label column 'target' not found"):
        build_class_set(df, label="target")
    with pytest.raises(DataError, match="cannot be both the label and a class column"):
        build_class_set(df, label="p_cat", probs=["p_cat", "p_dog", "p_emu"])
    with pytest.raises(DataError, match="no multi-class columns found in data"):
        build_class_set(df.rename(columns=lambda c: c.replace("p_", "q_")))
    with pytest.raises(DataError, match=f"only {MIN_ROWS - 1} usable rows in data \\(of {MIN_ROWS - 1} read\\)"):
        build_class_set(_table(n=MIN_ROWS - 1))
    with pytest.raises(DataError, match="header but no rows"):
        build_class_set(df.iloc[:0])


# ---------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------
def test_shuffled_rows_give_the_same_set_up_to_the_same_permutation():
    df = _table(n=90, seed=3)
    df.loc[10, "p_cat"] = np.nan                      # a dropped row moves with the others
    order = np.random.default_rng(4).permutation(len(df))
    a, b = build_class_set(df), build_class_set(df.iloc[order].reset_index(drop=True))
    assert a.classes == b.classes and a.columns == b.columns and a.report.dropped == b.report.dropped
    kept = np.flatnonzero(df["p_cat"].notna().to_numpy())
    perm = np.searchsorted(kept, order[np.isin(order, kept)])   # b's rows as indices into a's
    np.testing.assert_array_equal(b.given, a.given[perm])
    np.testing.assert_array_equal(b.labels, a.labels[perm])
    pd.testing.assert_frame_equal(b.features, a.features.iloc[perm].reset_index(drop=True))


# ---------------------------------------------------------------------------
# the sample files
# ---------------------------------------------------------------------------
def test_the_samples_load_with_their_classes():
    a = load_classes(MULTI / "animals_3class.csv")
    assert (a.n_rows, a.k, a.classes, a.logits, a.feature_columns) == (3000, 3, list(ANIMALS), False, ["x1", "x2"])
    g = load_classes(MULTI / "logits_4class.csv")
    assert (g.n_rows, g.k, g.classes, g.logits) == (400, 4, [0, 1, 2, 3], True)
    c = load_classes(MULTI / "cifar10_lenet5.csv")
    assert c.k == 10 and c.n_rows == 10_000 and c.classes[0] == "airplane" and c.classes[-1] == "truck"
    assert c.report.class_counts == dict.fromkeys(c.classes, 1000)
    for cs in (a, g, c):
        assert cs.report.dropped == {} and cs.info.sha256
        raw = cs.raw[cs.columns].to_numpy()
        if not cs.logits:     # 6 significant digits: each entry within 5e-7 of its value, a row within K * 5e-7
            assert np.abs(raw.sum(axis=1) - 1).max() < cs.k * 5e-7


def _top_label_ece(P: np.ndarray, y: np.ndarray, bins: int = 15) -> float:
    conf, hit = P.max(axis=1), P.argmax(axis=1) == y
    b = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)    # right-closed bins (a, b], as netcal
    return float(sum(abs(hit[b == i].mean() - conf[b == i].mean()) * np.mean(b == i)
                     for i in range(bins) if np.any(b == i)))


def test_the_cifar_sample_has_the_published_accuracy_and_ece():
    """../shared/data/README.md: LeNet-5 on CIFAR-10, accuracy 0.5308, top-label ECE (15 equal-width bins)
    0.10789 from netcal and torchmetrics. Rounding to 6 significant digits moves a confidence by at most
    5e-7, far from any bin edge here, so the file gives the same figures to the 5 digits published."""
    c = load_classes(MULTI / "cifar10_lenet5.csv")
    P = c.scores().probabilities
    assert np.mean(P.argmax(axis=1) == c.labels) == 0.5308
    assert _top_label_ece(P, c.labels) == pytest.approx(0.10789, abs=5e-6)


def test_the_cifar_sample_is_the_record():
    record = shared_file("multiclass-cifar", "lenet-5-cifar-10.npz")
    script = runpy.run_path(str(MULTI / "make_multiclass_samples.py"))
    c = load_classes(MULTI / "cifar10_lenet5.csv")
    with np.load(record) as data:
        P, y = data["predictions"].astype(float), data["ground_truth"]
    np.testing.assert_array_equal(c.labels, y)
    np.testing.assert_allclose(c.raw[c.columns].to_numpy(), P, rtol=5e-6, atol=0)   # 6 significant digits
    assert c.classes == list(script["CIFAR10_CLASSES"])


def test_the_synthetic_samples_are_regenerated_by_their_script(tmp_path):
    script = runpy.run_path(str(MULTI / "make_multiclass_samples.py"))
    for fname in ("animals_3class.csv", "logits_4class.csv"):
        path = script["write"](script["FILES"][fname](), tmp_path / fname)
        new, old = pd.read_csv(path), pd.read_csv(MULTI / fname)
        assert new.columns.tolist() == old.columns.tolist()
        np.testing.assert_array_equal(new["label"].to_numpy(), old["label"].to_numpy())
        # 6 significant digits: a last-bit difference of a platform's floating point can move the 6th digit
        np.testing.assert_allclose(new.iloc[:, 1:].to_numpy(), old.iloc[:, 1:].to_numpy(), rtol=2e-6, atol=1e-12)


# ---------------------------------------------------------------------------
# the synthetic scenario's truth
# ---------------------------------------------------------------------------
def test_the_true_posterior_is_calibrated_and_the_reported_one_is_not():
    """On 200,000 rows, for each class k and each decile bin of P(y=k|x), the share of rows with y = k
    matches the mean true probability within 4 standard errors: given the rows' probabilities p_i, the
    count of y = k is a sum of independent Bernoulli(p_i), of variance sum p_i (1 - p_i). The reported
    (over-confident) probabilities miss by far more in their extreme bins."""
    sc = gaussian_classes(ANIMALS, radius=1.5, temperature=2.5)
    d = sc.draw(200_000, seed=11)
    for k in range(3):
        hit = d.labels == k
        for probs, calibrated in ((d.true[:, k], True), (d.reported[:, k], False)):
            b = np.clip(np.searchsorted(np.quantile(probs, np.linspace(0, 1, 11)), probs, side="right") - 1, 0, 9)
            rows = np.bincount(b, minlength=10)
            gap = (np.bincount(b, hit, 10) - np.bincount(b, probs, 10)) / rows
            se = np.sqrt(np.bincount(b, d.true[:, k] * (1 - d.true[:, k]), 10)) / rows
            z = np.abs(gap) / se
            assert bool(max(z) < 4) == calibrated, (k, calibrated, max(z))


def test_recalibration_recovers_the_truth_and_the_canonical_error_is_known():
    sc = gaussian_classes(5, radius=2.0, temperature=3.0, bias=[0.4, -0.2, 0.0, 0.1, -0.3])
    d = sc.draw(2000, seed=2)
    for log_scores in (np.log(d.reported), d.reported_logits):    # softmax((s - b) / T): vector scaling's map
        np.testing.assert_allclose(softmax((log_scores - sc.bias) / sc.temperature, axis=1), d.true, rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_allclose(d.true, sc.true_posterior(d.x))
    assert true_canonical_error(d.true, d.true) == 0.0
    assert true_canonical_error(d.reported, d.true) > 0.1
    # the L1 error per row lies in [0, 2]; the L2 norm is at most the L1 norm
    assert true_canonical_error(d.reported, d.true, p=2) <= true_canonical_error(d.reported, d.true)
    with pytest.raises(DataError, match="same shape"):
        true_canonical_error(d.reported[:, :2], d.true)


def test_temperature_scaling_finds_the_scenarios_temperature():
    """With no bias, the log-loss-optimal temperature on the reported logits is T = 2.5 in the limit (the
    truth is softmax(z / T)); on 50,000 rows the maximum-likelihood estimate lies within 4 standard errors,
    the standard error taken from the observed information (the log-loss's second derivative, by central
    differences); the solver's tolerance (1e-7) is far below it."""
    sc = gaussian_classes(4, radius=1.5, temperature=2.5)
    d = sc.draw(50_000, seed=5)
    idx = np.arange(d.labels.size)
    nll = lambda t: -np.sum(log_softmax(d.reported_logits / t, axis=1)[idx, d.labels])
    t = minimize_scalar(nll, bounds=(0.5, 10), method="bounded", options={"xatol": 1e-7}).x
    h = 1e-3
    info = (nll(t + h) - 2 * nll(t) + nll(t - h)) / h ** 2
    assert abs(t - 2.5) < 4 / np.sqrt(info), (t, 1 / np.sqrt(info))


def test_the_draw_frame_its_columns_and_its_seed():
    sc = gaussian_classes(ANIMALS, temperature=2.0)
    d = sc.draw(100, seed=1)
    assert d.frame.columns.tolist() == ["label", "p_cat", "p_dog", "p_emu", "true_cat", "true_dog", "true_emu",
                                        "x1", "x2"]
    np.testing.assert_array_equal(d.frame["label"].to_numpy(), np.asarray(ANIMALS, dtype=object)[d.labels])
    pd.testing.assert_frame_equal(d.frame, sc.draw(100, seed=1).frame)
    assert not d.frame.equals(sc.draw(100, seed=2).frame)
    d4 = gaussian_classes(4).draw(100, seed=1, logits=True)
    lg = d4.frame
    assert lg["label"].dtype == np.int64 and lg.columns[1:5].tolist() == [f"logit_{k}" for k in range(4)]
    np.testing.assert_allclose(softmax(lg.iloc[:, 1:5].to_numpy(), axis=1), d4.reported, rtol=1e-12)
    np.testing.assert_allclose(lg.iloc[:, 5:9].to_numpy(), d4.true)
    cs = build_class_set(d.frame.drop(columns=["true_cat", "true_dog", "true_emu"]))
    np.testing.assert_allclose(cs.given, d.reported / d.reported.sum(axis=1, keepdims=True))
    assert isinstance(cs, ClassSet)


def test_the_scenario_refuses_bad_parameters():
    with pytest.raises(DataError, match="at least three distinct classes"):
        gaussian_classes(2)
    with pytest.raises(DataError, match="at least three distinct classes"):
        gaussian_classes(("a", "a", "b"))
    with pytest.raises(DataError, match="must be positive"):
        gaussian_classes(3, temperature=0)
    with pytest.raises(DataError, match="bias must be 3 finite numbers"):
        gaussian_classes(3, bias=[1, 2])
    with pytest.raises(DataError, match="priors must be positive"):
        gaussian_classes(3, priors=[1, 0, 1])
    with pytest.raises(DataError, match="sample size"):
        gaussian_classes(3).draw(5, seed=0)
