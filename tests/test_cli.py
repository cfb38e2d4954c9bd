"""Command line: the same numbers as the API, errors as messages with exit code 2."""
import json

import pytest

from calibdash import load_scores
from calibdash.__main__ import main
from calibdash.evaluation import Scheme, evaluate
from conftest import REPO

CIRCLES = str(REPO / "sample_data" / "circles_svm.csv")


def test_evaluate_json_matches_api(capsys):
    assert main(["evaluate", CIRCLES, "--methods", "platt,isotonic", "--scheme", "column", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ss = load_scores(CIRCLES)
    ev = evaluate(ss.scores, ss.labels, ["platt", "isotonic"], Scheme("column"), split=ss.split)
    assert list(out["metrics"]) == ["uncalibrated", "platt", "isotonic"]
    assert out["metrics"]["isotonic"]["ECE"] == pytest.approx(ev.metrics.loc["isotonic", "ECE"])
    assert out["rows_judged"] == 1000


def test_evaluate_params_reach_the_calibrator(capsys):
    main(["evaluate", CIRCLES, "--methods", "histogram", "--param", "histogram.n_bins=2", "--json"])
    two = json.loads(capsys.readouterr().out)["metrics"]["histogram"]["AUC"]
    main(["evaluate", CIRCLES, "--methods", "histogram", "--param", "histogram.n_bins=30", "--json"])
    thirty = json.loads(capsys.readouterr().out)["metrics"]["histogram"]["AUC"]
    assert two != thirty


def test_errors_are_messages(capsys, tmp_path):
    assert main(["evaluate", CIRCLES, "--methods", "nope"]) == 2
    assert "unknown calibrator" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["evaluate", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err.lower()
