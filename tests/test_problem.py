"""A data set is a problem with K classes and the binary reductions it declares (calibdash.data.scoreset), and
one evaluation takes either kind (calibdash.evaluation.holdout.evaluate_problem, evaluate for any K)."""
import numpy as np
import pandas as pd
import pytest

from calibdash.data import build_class_set, build_score_set
from calibdash.core.errors import SettingsError
from calibdash.evaluation.holdout import (UNCALIBRATED, Evaluation, Scheme, combine, evaluate, evaluate_classes,
                                  evaluate_problem)
from calibdash.evaluation.scheme import split_plan

P3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4],
               [0.1, 0.8, 0.1]])
Y3 = np.array(["a", "b", "a", "b", "c", "c"])


def _class_set(n_copies: int = 1):
    df = pd.DataFrame({"label": np.tile(Y3, n_copies), **{f"p_{c}": np.tile(P3[:, j], n_copies)
                                                          for j, c in enumerate("abc")}})
    return build_class_set(df)


def test_a_binary_problem_has_two_classes_and_one_reduction_the_score():
    df = pd.DataFrame({"label": [0, 1, 1, 0, 1] * 4, "score": [0.1, 0.8, 0.6, 0.4, 0.3] * 4})
    ss = build_score_set(df, score="score", label="label")
    assert ss.k == 2 and ss.REDUCTIONS == ("score",)
    s, y = ss.reduce("score")
    assert np.array_equal(s, ss.scores) and np.array_equal(y, ss.labels)
    with pytest.raises(SettingsError, match="reductions are \\('score',\\), not 'top_label'"):
        ss.reduce("top_label")


def test_a_k_class_problem_reduces_to_the_top_label_and_each_one_vs_rest_column_by_hand():
    cs = _class_set(4)                                                    # 24 rows: the fewest a table may have
    assert cs.k == 3 and cs.REDUCTIONS == ("top_label", "ovr")
    conf, right = cs.reduce("top_label")
    # argmax per row: a, b, c, a, c, b against a, b, a, b, c, c
    assert np.allclose(conf, [0.7, 0.6, 0.6, 0.5, 0.4, 0.8] * 4) and right.tolist() == [1, 1, 0, 0, 1, 0] * 4
    s, y = cs.reduce("ovr", 2)
    assert np.allclose(s, np.tile(P3[:, 2], 4)) and y.tolist() == [0, 0, 0, 0, 1, 1] * 4
    for bad in (None, 3, -1):
        with pytest.raises(SettingsError, match="class index 0..2"):
            cs.reduce("ovr", bad)
    with pytest.raises(SettingsError):
        cs.reduce("score")


def test_one_evaluate_for_any_k_and_the_problem_path_agree():
    cs = _class_set(40)
    scheme = Scheme("kfold", n_folds=4, seed=2)
    by_arrays = evaluate(cs.scores(), cs.labels, "temperature,ovr:platt", scheme, classes=cs.classes)
    by_problem = evaluate_problem(cs, "temperature,ovr:platt", scheme)
    assert evaluate_classes is evaluate and isinstance(by_problem, Evaluation)
    assert by_problem.classes == ["a", "b", "c"] and by_problem.binning == ""
    pd.testing.assert_frame_equal(by_arrays.metrics, by_problem.metrics)
    assert np.array_equal(by_problem.rows, np.arange(cs.n_rows))          # k-fold judges every row once
    assert list(by_problem.predictions) == [UNCALIBRATED, "temperature", "ovr:platt"]
    assert np.allclose(by_problem.predictions["temperature"].sum(axis=1), 1.0)


def test_combine_merges_k_class_evaluations_as_binary_ones():
    cs = _class_set(30)
    both = evaluate_problem(cs, "temperature,vector")
    parts = [evaluate_problem(cs, m) for m in ("temperature", "vector")]
    joined = combine(parts)
    pd.testing.assert_frame_equal(joined.metrics, both.metrics)
    assert list(joined.predictions) == list(both.predictions) and joined.classes == both.classes
    for key in both.predictions:
        assert np.array_equal(joined.predictions[key], both.predictions[key])


def test_the_dealer_deals_k_class_rows_by_content_and_by_hand():
    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(3), 31)
    y = np.r_[np.zeros(10, int), np.ones(20, int), 2]                    # class 2 has a single row
    pairs, notes = split_plan(y, Scheme("split", test_size=0.3), values=P)
    (tr, te), = pairs
    assert np.bincount(y[te], minlength=3).tolist() == [3, 6, 0]          # ceil(0.3 n_c), never a lone row
    assert notes == ["1 class with a single row: fitted on, not judged"]
    perm = rng.permutation(y.size)
    (tr2, te2), = split_plan(y[perm], Scheme("split", test_size=0.3), values=P[perm])[0]
    assert sorted(map(tuple, P[te])) == sorted(map(tuple, P[perm][te2]))   # the same rows whatever the order
    folds, _ = split_plan(y, Scheme("kfold", n_folds=5), values=P)
    assert np.array_equal(np.sort(np.concatenate([t for _, t in folds])), np.arange(y.size))
    assert [np.bincount(y[t], minlength=3)[:2].tolist() for _, t in folds] == [[2, 4]] * 5
