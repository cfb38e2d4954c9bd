"""Which column the command line (and the pages, through the same role code) reads as a binary file's score.

A two-class probability file (``label`` 0/1 beside ``p_0`` and ``p_1``) once read ``p_0`` as the score of
class 1: every number inverted. A score column named after a class must be the positive class's, or the file
is refused with a message naming the columns; the numbers must equal those of a file holding only that column.
Also: multi-class methods asked of a one-class or binary file say what the file holds, and ``apply`` of a
100-class model prints no library warning.
"""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibdash import cli
from calibdash.data import build_score_set, guess_roles
from calibdash.core.errors import DataError
from tests.conftest import REPO

N = 1500


def _two_class(seed: int = 3):
    """Labels 0/1 and a well-separated P(class 1) (a stratified split needs both classes)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, N)
    p1 = np.round(1 / (1 + np.exp(-(2 * y - 1) * 1.4 + rng.normal(0, 1, N))), 6)
    return y, np.clip(p1, 1e-6, 1 - 1e-6)


def _evaluate(capsys, path, *more) -> dict:
    assert cli.main(["evaluate", str(path), "--methods", "platt,isotonic", "--json", *more]) == 0
    return json.loads(capsys.readouterr().out)


def _error(capsys, *argv) -> str:
    assert cli.main([str(a) for a in argv]) == 2
    return capsys.readouterr().err


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The reference: a file holding only the positive class's probability as ``score``."""
    d = tmp_path_factory.mktemp("roles")
    y, p1 = _two_class()
    pd.DataFrame({"label": y, "score": p1}).to_csv(d / "score.csv", index=False)
    pd.DataFrame({"label": y, "score": 1 - p1}).to_csv(d / "score0.csv", index=False)
    return d, y, p1


@pytest.mark.parametrize("neg, pos", [("p_0", "p_1"), ("prob_0", "prob_1"), ("proba_0", "proba_1"),
                                      ("p_neg", "p_pos"), ("P_0", "P_1"), ("p_no", "p_yes")])
@pytest.mark.parametrize("positive_first", [False, True])
def test_two_class_columns_are_read_through_the_positive_class(base, capsys, neg, pos, positive_first):
    d, y, p1 = base
    cols = {"label": y, pos: p1, neg: 1 - p1} if positive_first else {"label": y, neg: 1 - p1, pos: p1}
    path = d / f"two_{neg}_{positive_first}.csv"
    pd.DataFrame(cols).to_csv(path, index=False)
    got, ref = _evaluate(capsys, path), _evaluate(capsys, d / "score.csv")
    assert got["score"] == pos and got["positive"] == 1
    assert got["metrics"] == ref["metrics"]                           # the same numbers, exactly
    assert got["metrics"]["uncalibrated"]["AUC"] > 0.8                # not inverted
    assert any(f"named after the positive class 1; {neg!r}, the negative class's, left aside" in m
               for m in got["validation"]["messages"])


def test_the_positive_class_chooses_the_column(base, capsys):
    """--positive 0 makes p_0 the score: the numbers of a file holding P(class 0) with --positive 0."""
    d, y, p1 = base
    path = d / "two.csv"
    pd.DataFrame({"label": y, "p_0": 1 - p1, "p_1": p1}).to_csv(path, index=False)
    got = _evaluate(capsys, path, "--positive", "0")
    assert got["score"] == "p_0" and got["positive"] == 0
    assert got["metrics"] == _evaluate(capsys, d / "score0.csv", "--positive", "0")["metrics"]


def test_label_words_pair_with_class_numbers(base, capsys):
    """A yes/no label beside p_0/p_1: 1 is written like the positive class, yes is the positive label."""
    d, y, p1 = base
    path = d / "words.csv"
    pd.DataFrame({"label": np.where(y == 1, "yes", "no"), "p_1": p1, "p_0": 1 - p1}).to_csv(path, index=False)
    assert build_score_set(pd.read_csv(path)).score == "p_1"
    ref = d / "words_ref.csv"
    pd.DataFrame({"label": np.where(y == 1, "yes", "no"), "score": p1}).to_csv(ref, index=False)
    assert _evaluate(capsys, path)["metrics"] == _evaluate(capsys, ref)["metrics"]


def test_two_class_logits_read_the_positive_class_and_say_what_that_means(base, capsys, tmp_path):
    d, y, p1 = base
    l1 = np.log(p1 / (1 - p1))
    path, ref = tmp_path / "logits.csv", tmp_path / "logit_ref.csv"
    pd.DataFrame({"label": y, "logit_0": -l1 / 2, "logit_1": l1 / 2}).to_csv(path, index=False)
    pd.DataFrame({"label": y, "score": l1 / 2}).to_csv(ref, index=False)
    got = _evaluate(capsys, path)
    assert got["score"] == "logit_1" and got["metrics"] == _evaluate(capsys, ref)["metrics"]
    assert any("only when 'logit_0' is 0" in m for m in got["validation"]["messages"])
    zero = tmp_path / "zero.csv"                      # a binary model's one logit beside a zero reference: no note
    pd.DataFrame({"label": y, "logit_0": 0.0, "logit_1": l1}).to_csv(zero, index=False)
    assert not any("only when" in m for m in _evaluate(capsys, zero)["validation"]["messages"])


def test_the_engines_read_the_positive_class_too(base, capsys):
    d, y, p1 = base
    path = d / "two_engine.csv"
    pd.DataFrame({"label": y, "p_0": 1 - p1, "p_1": p1}).to_csv(path, index=False)
    got = _evaluate(capsys, path, "--engine", "duckdb")
    ref = _evaluate(capsys, d / "score.csv", "--engine", "duckdb")
    assert got["score"] == "p_1" and got["metrics"] == ref["metrics"]
    assert _evaluate(capsys, path, "--engine", "duckdb", "--positive", "0")["score"] == "p_0"


def test_the_pages_role_code_picks_the_positive_class(base):
    """The Data page builds its ScoreSet with build_score_set (pages/parts/source.py): the same choice."""
    _, y, p1 = base
    df = pd.DataFrame({"label": y, "p_0": 1 - p1, "p_1": p1})
    assert guess_roles(df).scores == ["p_1", "p_0"]
    assert guess_roles(df, positive=0).scores == ["p_0", "p_1"]
    ss = build_score_set(df)
    assert ss.score == "p_1" and ss.score_columns == ["p_1", "p_0"]
    np.testing.assert_array_equal(ss.scores, p1)
    assert build_score_set(df, positive=0).score == "p_0"


def test_which_names_say_a_class():
    """By the label's values (text, any case, as numbers), and by label words only for a 0/1-like label."""
    from calibdash.data.roles import named_classes

    assert named_classes(["p_1", "PROB_0", "p_pos", "p_y", "p_svm", "score", "logit_1.0"], [0, 1]) == {
        "p_1": 1, "PROB_0": 0, "p_pos": 1, "logit_1.0": 1}
    assert named_classes(["p_cat", "p_DOG", "p_pos"], ["cat", "dog"]) == {"p_cat": "cat", "p_DOG": "dog"}
    assert named_classes(["p_no", "p_yes"], ["no", "yes"]) == {"p_no": "no", "p_yes": "yes"}
    assert named_classes(["p_0", "p_1", "p_n"], ["no", "yes"]) == {"p_0": "no", "p_1": "yes"}
    assert named_classes(["p_0", "p_1"], [0, 1, 2]) == {}                       # not a two-class label


def test_columns_whose_names_do_not_say_the_class_are_refused(base, capsys, tmp_path):
    """Two columns adding up to 1 whose names say no class: which is P(class 1) cannot be told."""
    _, y, p1 = base
    path = tmp_path / "unclear.csv"
    pd.DataFrame({"label": y, "p_a": p1, "p_b": 1 - p1}).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"'p_a' and 'p_b' .* add up to 1 on every row"):
        build_score_set(pd.read_csv(path))
    err = _error(capsys, "evaluate", path)
    assert "do not say which is the positive class's" in err and "--score" in err
    assert _evaluate(capsys, path, "--score", "p_a")["score"] == "p_a"       # named: read as asked
    models = tmp_path / "models.csv"                 # two models' scores (not adding up to 1): no question
    pd.DataFrame({"label": y, "p_svm": p1, "p_nb": np.sqrt(p1)}).to_csv(models, index=False)
    assert build_score_set(pd.read_csv(models)).score == "p_svm"


def test_only_the_negative_class_column_is_refused_unless_named(base, capsys, tmp_path):
    _, y, p1 = base
    path = tmp_path / "neg.csv"
    pd.DataFrame({"label": y, "p_0": 1 - p1}).to_csv(path, index=False)
    err = _error(capsys, "evaluate", path)
    assert "named after the negative class 0, not the positive class 1" in err and "inverted" in err
    got = _evaluate(capsys, path, "--score", "p_0")                 # the user's choice, said in the report
    assert got["score"] == "p_0" and got["metrics"]["uncalibrated"]["AUC"] < 0.2
    assert any("named after the negative class 0, yet it is read as the positive class 1's score" in m
               for m in got["validation"]["messages"])


def test_benchmark_of_a_two_class_file_is_one_data_set(base, capsys):
    d, y, p1 = base
    path = d / "two_bench.csv"
    pd.DataFrame({"label": y, "p_0": 1 - p1, "p_1": p1}).to_csv(path, index=False)
    assert cli.main(["benchmark", str(path), "--methods", "platt", "--repeats", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"] == ["two_bench.csv"]


# -- multi-class methods on a file that is not K-class -----------------------------------------------
def test_multiclass_method_on_a_one_class_file_says_so(base, capsys, tmp_path):
    _, _, p1 = base
    path = tmp_path / "one.csv"
    pd.DataFrame({"label": 1, "p_0": 1 - p1, "p_1": p1}).to_csv(path, index=False)
    for argv in (("evaluate", path, "--methods", "ovr:isotonic"), ("fit", path, "--method", "ovr:isotonic"),
                 ("evaluate", path, "--methods", "dirichlet", "--engine", "duckdb"),
                 ("report", path, "--methods", "top_label:histogram", "--out", tmp_path / "r.html")):
        err = _error(capsys, *argv)
        assert "holds one class only (1)" in err and "multi-class calibrator" in err, argv
        assert "unknown calibrator" not in err


def test_multiclass_method_on_a_binary_file_says_it_is_binary(base, capsys):
    d, *_ = base
    err = _error(capsys, "evaluate", d / "score.csv", "--methods", "isotonic,vector")
    assert "vector is a multi-class calibrator" in err and "holds two classes (0, 1): a binary file" in err


# -- no library warning reaches the user -----------------------------------------------------------------
def test_apply_of_a_100_class_model_prints_no_warning(tmp_path):
    rng = np.random.default_rng(0)
    n, k = 400, 100
    logits = rng.normal(size=(n, k))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    df = pd.DataFrame({"label": np.arange(n) % k, **{f"p_{j}": p[:, j] for j in range(k)}})
    data, model, out = tmp_path / "k100.csv", tmp_path / "m.json", tmp_path / "out.csv"
    df.to_csv(data, index=False)
    assert cli.main(["fit", str(data), "--method", "temperature", "--out", str(model)]) == 0
    proc = subprocess.run([sys.executable, "-m", "calibdash", "apply", str(model), str(data), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "Applied" in proc.stderr
    got = pd.read_csv(out)
    assert list(got.columns) == [*df.columns, *(f"calibrated_{j}" for j in range(k))]
    np.testing.assert_allclose(got[[f"calibrated_{j}" for j in range(k)]].sum(axis=1), 1.0, rtol=0, atol=1e-9)
