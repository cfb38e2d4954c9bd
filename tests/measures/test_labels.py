"""One label convention: the loader, the API (fit, metrics, measures, evaluate), the command line and the pages
accept the same two-valued labels and choose the same positive class, by calibdash.core.validation.choose_positive."""
import itertools

import numpy as np
import pandas as pd
import pytest

from calibdash import calibrators, measures
from calibdash.measures import calibration as metrics
from calibdash.data import build_score_set, roles
from calibdash.core.errors import DataError
from calibdash.evaluation.holdout import Scheme, evaluate
from calibdash.core.validation import (NEGATIVE_TOKENS, POSITIVE_TOKENS, check_labels, choose_positive,
                                  label_values)
from pages.parts.labels import positive_class_options

N = 400


@pytest.fixture(scope="module")
def rows():
    """Scores and 0/1 outcomes drawn with P = score**1.5."""
    rng = np.random.default_rng(11)
    s = rng.uniform(0.01, 0.99, N)
    y = (rng.uniform(size=N) < s ** 1.5).astype(int)
    return s, y


def _coded(y01, values, positive):
    """The outcomes written with two label values, ``positive`` for 1 (an object array, as a CSV column)."""
    neg = next(v for v in values if v is not positive and v != positive)
    return np.array([positive if v else neg for v in y01], dtype=object)


#: (the two values, the one the loader takes as positive)
ENCODINGS = [((-1, 1), 1), ((0, 1), 1), ((0.0, 1.0), 1.0), ((True, False), True), (("yes", "no"), "yes"),
             (("Yes", "No"), "Yes"), (("neg", "pos"), "pos"), (("n", "y"), "y"), (("-1", "+1"), "+1"),
             (("benign", "malignant"), "malignant"), (("ham", "spam"), "spam"), ((3, 5), 5)]


@pytest.mark.parametrize("values,positive", ENCODINGS, ids=[str(v) for v, _ in ENCODINGS])
def test_fit_metrics_measures_and_evaluate_take_the_labels_the_loader_takes(rows, values, positive):
    s, y = rows
    raw = _coded(y, values, positive)
    ss = build_score_set(pd.DataFrame({"score": s, "label": raw}), score="score", label="label")
    assert str(ss.positive_label) == str(positive)
    np.testing.assert_array_equal(ss.labels, y)
    np.testing.assert_array_equal(check_labels(raw, N), y)               # the API's reading: the same 0/1

    for name in ("platt", "isotonic", "bbq"):
        got = calibrators.get(name).fit(s, raw).predict(s)
        np.testing.assert_array_equal(got, calibrators.get(name).fit(s, y).predict(s))
    assert metrics.summary(s, raw) == metrics.summary(s, y)
    assert metrics.ece(s, raw) == metrics.ece(s, y) and metrics.auc(s, raw) == metrics.auc(s, y)
    got = measures.compute(s, raw, names=["smECE", "Slope", "HL"])
    assert got == pytest.approx(measures.compute(s, y, names=["smECE", "Slope", "HL"]), nan_ok=True)
    ev = evaluate(s, raw, ["platt", "histogram"], Scheme(seed=4))
    ref = evaluate(s, y, ["platt", "histogram"], Scheme(seed=4))
    pd.testing.assert_frame_equal(ev.metrics, ref.metrics)
    np.testing.assert_array_equal(ev.labels, ref.labels)


def test_pos_label_overrides_the_rule_everywhere_as_positive_does_in_the_loader(rows):
    s, y = rows
    raw = _coded(y, ("spam", "ham"), "spam")
    flipped = 1 - y
    loaded = build_score_set(pd.DataFrame({"score": s, "label": raw}), positive="ham")
    assert loaded.positive_label == "ham"
    np.testing.assert_array_equal(loaded.labels, flipped)
    np.testing.assert_array_equal(check_labels(raw, N, pos_label="HAM "), flipped)   # as text, any case
    cal = calibrators.get("platt").fit(s, raw, pos_label="ham")
    np.testing.assert_allclose(cal.predict(s), calibrators.get("platt").fit(s, flipped).predict(s))
    assert metrics.summary(s, raw, pos_label="ham") == metrics.summary(s, flipped)
    assert metrics.brier(s, raw, pos_label="ham") == metrics.brier(s, flipped)
    assert measures.compute(s, raw, names=["CITL"], pos_label="ham") == measures.compute(s, flipped, names=["CITL"])
    ev = evaluate(s, raw, ["platt"], Scheme(seed=1), pos_label="ham")
    pd.testing.assert_frame_equal(ev.metrics, evaluate(s, flipped, ["platt"], Scheme(seed=1)).metrics)
    # numbers: 0/1 with pos_label=0, and a number given as text
    np.testing.assert_array_equal(check_labels(y, N, pos_label=0), flipped)
    np.testing.assert_array_equal(check_labels(np.where(y == 1, 1, -1), N, pos_label="-1"), flipped)
    with pytest.raises(DataError, match=r"pos_label 'maybe' is not one of the labels' values: 'ham', 'spam'"):
        calibrators.get("platt").fit(s, raw, pos_label="maybe")


@pytest.mark.parametrize("call", [
    lambda s, lab: calibrators.get("platt").fit(s, lab),
    lambda s, lab: metrics.ece(s, lab),
    lambda s, lab: metrics.summary(s, lab),
    lambda s, lab: measures.compute(s, lab),
    lambda s, lab: evaluate(s, lab, ["platt"]),
], ids=["fit", "ece", "summary", "measures", "evaluate"])
def test_three_values_are_refused_echoing_what_was_found(rows, call):
    s, _ = rows
    with pytest.raises(DataError, match=r"found 3 distinct labels: 'a', 'b', 'c'\."):
        call(s, np.array(["a", "b", "c", "a"] * (N // 4)))
    with pytest.raises(DataError, match=r"found 12 distinct labels: 0, 1, 2, 3, 4, \.\.\. \(12 in all\)"):
        call(s, np.arange(N) % 12)


def test_missing_and_one_class_labels_are_refused_saying_how_many(rows):
    s, y = rows
    lab = np.where(y == 1, "yes", "no").astype(object)
    lab[[3, 9]] = [None, "  "]
    with pytest.raises(DataError, match="labels hold 2 missing, blank or infinite values"):
        calibrators.get("platt").fit(s, lab)
    with pytest.raises(DataError, match="labels hold 1 missing or infinite value "):
        metrics.ece(s, np.where(np.arange(N) == 0, np.nan, y))
    with pytest.raises(DataError, match=r"labels hold one class only \('no'\); calibration needs both"):
        calibrators.get("platt").fit(s, np.full(N, "no"))
    # metrics take one class (a subset of rows) when the value says its class, or pos_label does
    assert metrics.brier(s, np.full(N, "no")) == metrics.brier(s, np.zeros(N))
    assert metrics.brier(s, np.full(N, "spam"), pos_label="spam") == metrics.brier(s, np.ones(N))
    with pytest.raises(DataError, match=r"one value only \('spam'\).*pos_label="):
        metrics.brier(s, np.full(N, "spam"))


#: Label values of every kind the rule reads: its tokens, numbers, bools and names.
VALUES = sorted(POSITIVE_TOKENS | NEGATIVE_TOKENS) + ["Yes", "NO", "True", "cat", "dog", "spam", "ham", "2", "10"]


def test_the_loader_the_api_and_the_pages_choose_the_same_positive_class_for_the_same_column():
    rng = np.random.default_rng(5)
    s = rng.uniform(size=40)
    pairs = [p for p in itertools.combinations(VALUES, 2) if p[0].strip().lower() != p[1].strip().lower()]
    pairs += [(-1, 1), (0, 1), (1, 2), (3, 5), (True, False), (0.0, 1.0), (-1.0, 1.0)]
    assert len(pairs) > 300
    for a, b in pairs:
        col = np.array([a, b] * 20, dtype=object)
        loaded = build_score_set(pd.DataFrame({"score": s, "label": col}), score="score", label="label")
        y = check_labels(col, col.size)
        np.testing.assert_array_equal(y, loaded.labels, err_msg=f"{a!r}/{b!r}")
        assert choose_positive([a, b]) == choose_positive([b, a]) == (loaded.positive_label,
                                                                      loaded.negative_label), (a, b)
        options, index = positive_class_options(col)                     # the Data page's menu
        assert options[index] == str(loaded.positive_label)


def test_the_label_tokens_are_the_loaders():
    """The role guesser reads a column as a label by the same words (the very objects of calibdash.core.validation)."""
    assert roles.POSITIVE_TOKENS is POSITIVE_TOKENS and roles.NEGATIVE_TOKENS is NEGATIVE_TOKENS


def test_the_rule():
    assert choose_positive(["no", "yes"]) == ("yes", "no")
    assert choose_positive([1, -1]) == (1, -1)
    assert choose_positive(["0", "2"]) == ("2", "0")                      # opposite a negative-looking value
    assert choose_positive(["b", "a"]) == ("b", "a")                      # else the second value sorted
    assert choose_positive([False, True], pos_label="false") == (False, True)
    assert choose_positive([0.0, 1.0], pos_label="0") == (0.0, 1.0)
    assert label_values(np.array(["b", None, "a", " ", "b"], dtype=object)) == ["a", "b"]
    with pytest.raises(DataError, match="positive label 'x' is not one of the values of label column 'y'"):
        choose_positive(["a", "b"], "x", column="y")
