"""Command line: the same numbers as the API, defaults from the library, errors as messages with exit code 2; binary
and K-class files through the same commands (evaluate, --boot, fit/apply, report, methods --multiclass, refusals)."""
import ast
import io
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibdash import benchmark, calibrators, cli, load_scores, measures
from calibdash.io import export
from calibdash.data import load_classes
from calibdash.core.errors import EnvironmentProblem, ProgrammingError
from calibdash.evaluation.holdout import Scheme, evaluate
from calibdash.evaluation import bootstrap as mboot
from calibdash.evaluation.holdout import DEFAULT_METHODS as CLASS_DEFAULTS, evaluate_classes
from tests.conftest import REPO
from calibdash.measures import class_measures

CIRCLES = str(REPO / "sample_data" / "circles_svm.csv")
main = cli.main


# -- one command-line module ------------------------------------------------------------------------------
def test_only_the_cli_module_parses_arguments():
    users = []
    for path in sorted((REPO / "calibdash").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "argparse" in names:
                users.append(path.relative_to(REPO).as_posix())
    assert users == ["calibdash/cli/__init__.py"]


def test_python_dash_m_runs_the_cli():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ok = subprocess.run([sys.executable, "-m", "calibdash", "methods"], cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.split("\n")[0].startswith("platt")
    bad = subprocess.run([sys.executable, "-m", "calibdash", "evaluate", CIRCLES, "--methods", "nope"], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown calibrator 'nope'")
    assert "Traceback" not in bad.stderr


def test_defaults_come_from_the_library():
    parser = cli.build_parser()
    e = parser.parse_args(["evaluate", CIRCLES])
    scheme = Scheme()
    assert (e.scheme, e.test_size, e.folds, e.seed) == (scheme.kind, scheme.test_size, scheme.n_folds, scheme.seed)
    assert e.methods == ",".join(cli.EVALUATE_METHODS)
    b = parser.parse_args(["benchmark", CIRCLES])
    assert b.methods == ",".join(benchmark.DEFAULT_METHODS)
    assert (b.folds, b.repeats, b.metric, b.alpha) == (benchmark.DEFAULT_FOLDS, benchmark.DEFAULT_REPEATS,
                                                       benchmark.DEFAULT_METRIC, benchmark.DEFAULT_ALPHA)


# -- evaluate ---------------------------------------------------------------------------------------------
def test_evaluate_json_matches_api(capsys):
    assert main(["evaluate", CIRCLES, "--methods", "platt,isotonic", "--scheme", "column", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ss = load_scores(CIRCLES)
    ev = evaluate(ss.scores, ss.labels, ["platt", "isotonic"], Scheme("column"), split=ss.split)
    assert list(out["metrics"]) == ["uncalibrated", "platt", "isotonic"]
    assert out["metrics"]["isotonic"]["ECE"] == pytest.approx(ev.metrics.loc["isotonic", "ECE"])
    assert out["rows_judged"] == 1000


def test_evaluate_params_reach_the_calibrator(capsys):
    """--param goes through calibdash.evaluation.methods: the CLI's numbers are the API's with the same hyperparameters."""
    ss = load_scores(CIRCLES)
    for n_bins in (2, 30):
        assert main(["evaluate", CIRCLES, "--methods", " histogram, ", "--param", f"histogram.n_bins={n_bins}",
                     "--json"]) == 0
        got = json.loads(capsys.readouterr().out)["metrics"]["histogram"]["ECE"]
        ev = evaluate(ss.scores, ss.labels, {"histogram": {"n_bins": n_bins}}, Scheme())
        assert got == pytest.approx(ev.metrics.loc["histogram", "ECE"])


def test_evaluate_prints_the_table(capsys):
    assert main(["evaluate", CIRCLES, "--methods", "platt", "--scheme", "kfold", "--folds", "3"]) == 0
    text = capsys.readouterr().out
    ss = load_scores(CIRCLES)
    ev = evaluate(ss.scores, ss.labels, ["platt"], Scheme("kfold", n_folds=3))
    assert "3-fold cross-fitting (seed 0)" in text and "2,000 rows judged" in text
    assert f"{ev.metrics.loc['platt', 'ECE']:.4f}" in text


def _dropping_csv(path, n=300, seed=1):
    """yes/no labels, a split column, and three rows dropped for three reasons (a text score, a blank score,
    a blank label)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    df = pd.DataFrame({"score": [f"{v:.5f}" for v in s],
                       "label": np.where(rng.uniform(size=n) < s, "yes", "no").astype(object)})
    df.loc[3, "score"], df.loc[4, "score"], df.loc[5, "label"] = "abc", "", ""
    df.to_csv(path, index=False)
    return path


def test_evaluate_json_carries_the_validation_report(tmp_path, capsys):
    path = _dropping_csv(tmp_path / "drops.csv")
    assert main(["evaluate", str(path), "--methods", "platt", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["validation"]
    rep = load_scores(str(path)).report
    assert (v["rows_read"], v["rows_used"], v["rows_dropped"]) == (300, 297, 3) == (
        rep.n_read, rep.n_used, sum(rep.dropped.values()))
    assert v["dropped"] == {"missing or non-finite score": 1, "score not a number": 1, "missing label": 1}
    assert v["dropped_examples"] == {"score not a number": ["abc"]}
    assert (out["label"], out["positive"], out["classes"]) == ("label", "yes", ["no", "yes"])
    assert sum(v["class_counts"].values()) == 297
    assert v["messages"] == rep.messages and any("Dropped 1 row with a missing label" in m for m in v["messages"])
    assert out["notes"] == [] and out["rows_judged"] == 90


def test_positive_flips_the_class_in_the_cli_as_in_the_api(tmp_path, capsys):
    path = _dropping_csv(tmp_path / "drops.csv")
    assert main(["evaluate", str(path), "--methods", "platt", "--json", "--positive", "no"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["positive"], out["classes"]) == ("no", ["yes", "no"])
    ss = load_scores(str(path), positive="no")
    ev = evaluate(ss.scores, ss.labels, ["platt"], Scheme())
    assert out["metrics"]["uncalibrated"]["AUC"] == pytest.approx(ev.metrics.loc["uncalibrated", "AUC"])
    assert out["metrics"]["uncalibrated"]["AUC"] < 0.5                 # the scores predict "yes"
    assert main(["evaluate", str(path), "--pos-label", "maybe"]) == 2
    assert "positive label 'maybe' is not one of the values of label column 'label': 'no', 'yes'" in \
        capsys.readouterr().err


def test_evaluate_measures_adds_the_named_measures_with_intervals(capsys):
    assert main(["evaluate", CIRCLES, "--methods", "platt,isotonic", "--scheme", "column", "--json",
                 "--measures", "smece,Slope,HL", "--boot", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = out["intervals"]
    assert m["resamples"] == 8 and m["level"] == 0.95 and "Poisson" in m["note"]
    assert list(m["values"]) == ["uncalibrated", "platt", "isotonic"]
    assert all(list(row) == ["smECE", "Slope", "HL"] for row in m["values"].values())
    ss = load_scores(CIRCLES)
    ev = evaluate(ss.scores, ss.labels, ["platt", "isotonic"], Scheme("column"), split=ss.split)
    point = measures.compute(ev.predictions["platt"].to_numpy(), ev.labels, names=["smECE", "Slope"])
    for name in ("smECE", "Slope"):
        cell = m["values"]["platt"][name]
        assert cell["value"] == pytest.approx(point[name])
        assert cell["low"] <= cell["high"]
    assert list(out["metrics"]) == ["uncalibrated", "platt", "isotonic"]    # the metrics are still there


def test_evaluate_measures_all_in_the_table_and_on_cells(capsys):
    assert main(["evaluate", CIRCLES, "--methods", "platt", "--measures", "--boot", "4", "--cells", "always"]) == 0
    text = capsys.readouterr().out
    assert "score cells" in text and "More measures: value [95% paired interval]" in text
    for name in measures.MEASURE_NAMES:
        assert f"\n{name} " in text
    assert "Intervals from 4 paired Poisson resamples" in text
    assert main(["evaluate", CIRCLES, "--measures", "nope"]) == 2
    assert "unknown measure 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("path", [CIRCLES, str(REPO / "sample_data" / "multiclass" / "animals_3class.csv")])
@pytest.mark.parametrize("command", [["evaluate"], ["fit", "--method", "platt", "--out", "unused.json"]])
def test_a_label_column_that_is_not_there_is_named_with_the_columns(path, command, capsys):
    """Before the K-class search checked the name, a missing --label raised a KeyError traceback."""
    assert main([command[0], path, *command[1:], "--label", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: label column 'nope' not found; the columns are: ") and "'label'" in err


@pytest.mark.parametrize("command", [["evaluate"], ["fit", "--method", "platt", "--out", "unused.json"]])
@pytest.mark.parametrize("option", ["--score", "--label", "--split"])
def test_a_column_that_is_not_there_is_named_where_the_rows_live(command, option, capsys):
    """Through DuckDB a missing column was DuckDB's 'Binder Error'; it is now refused before any job starts, in
    calibdash's words, with the file's columns."""
    named = {"--score": "linear_svm", "--label": "label", option: "nope"}
    argv = [command[0], CIRCLES, *command[1:], "--engine", "duckdb", *(x for kv in named.items() for x in kv)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"error: {option} 'nope': {CIRCLES} has no such column; its columns "
                                            "are split, x1, x2, label, linear_svm, quadratic_svm.")
    assert "Binder" not in err and not os.path.exists("unused.json")


def test_one_positive_in_1000_rows_says_so_in_calibdash_words(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "rare.csv"
    pd.DataFrame({"score": rng.uniform(size=1000), "label": ["yes" if i == 17 else "no" for i in range(1000)]}
                 ).to_csv(path, index=False)
    for scheme in (["--scheme", "split"], ["--scheme", "kfold"], ["--scheme", "split", "--cells", "always"]):
        assert main(["evaluate", str(path), "--methods", "platt", *scheme]) == 2
        err = capsys.readouterr().err
        assert "the positive class has 1 row among 1,000" in err and "--scheme insample" in err
        assert "least populated" not in err and "Traceback" not in err
    assert main(["evaluate", str(path), "--methods", "platt", "--scheme", "insample", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["validation"]["class_counts"] == {"no": 999, "yes": 1}


def test_a_split_that_cannot_stratify_is_stated_in_the_output(tmp_path, capsys):
    rng = np.random.default_rng(2)
    path = tmp_path / "few.csv"
    pd.DataFrame({"score": rng.uniform(size=40), "label": [1, 0] * 20}).to_csv(path, index=False)
    assert main(["evaluate", str(path), "--methods", "platt", "--test-size", "0.02", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("the split is not stratified by class") for n in notes)
    assert main(["evaluate", str(path), "--methods", "platt", "--test-size", "0.02"]) == 0
    assert "· The split is not stratified by class" in capsys.readouterr().out
    assert main(["evaluate", str(path), "--methods", "platt", "--scheme", "kfold", "--folds", "25", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows_judged"] == 40                                         # every row judged once
    assert out["notes"] == ["only 20 positive rows for 25 folds: 10 folds judge rows of one class only (every fold "
                            "still fits on both classes, and every row is judged once)"]


def test_errors_are_messages(capsys, tmp_path):
    assert main(["evaluate", CIRCLES, "--methods", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown calibrator 'nope'")
    assert main(["evaluate", CIRCLES, "--param", "platt.c"]) == 2
    assert "METHOD.NAME=VALUE" in capsys.readouterr().err
    assert main(["evaluate", CIRCLES, "--methods", "platt", "--param", "bbq.c=5"]) == 2
    assert "not among the chosen methods" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["evaluate", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err.lower()


def test_a_programming_error_is_shown_as_one(monkeypatch, capsys):
    def broken(family="binary"):
        raise ProgrammingError("registry lookup called wrongly")

    monkeypatch.setattr(calibrators, "classes", broken)
    assert main(["methods"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("internal error (ProgrammingError): registry lookup called wrongly")
    assert "bug" in err


# -- methods ----------------------------------------------------------------------------------------------
def test_methods_lists_every_calibrator_with_its_hyperparameters(capsys):
    assert main(["methods"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[::2]] == list(calibrators.classes())
    assert "n_bins=" in lines[2 * list(calibrators.classes()).index("histogram") + 1]


# -- fit and apply (their numbers are tested in test_export.py) -------------------------------------------
def test_fit_then_apply_round_trip(tmp_path, capsys):
    model, out = tmp_path / "h.json", tmp_path / "out.csv"
    assert main(["fit", CIRCLES, "--method", "histogram", "--param", "histogram.n_bins=4", "--out", str(model)]) == 0
    cal = export.loads(model.read_text())
    assert cal.get_params()["n_bins"] == 4
    assert main(["apply", str(model), CIRCLES, "--out", str(out)]) == 0
    got = pd.read_csv(out)
    assert np.array_equal(got["calibrated"].to_numpy(), cal.predict(got["linear_svm"].to_numpy()))


def test_fit_takes_one_method(capsys):
    assert main(["fit", CIRCLES, "--method", "platt,bbq"]) == 2
    assert "--method takes one calibrator" in capsys.readouterr().err


def test_an_unwritable_out_path_is_an_environment_problem(tmp_path, capsys):
    target = tmp_path / "no such folder" / "model.json"
    assert main(["fit", CIRCLES, "--method", "platt", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {target}")
    with pytest.raises(EnvironmentProblem):
        cli.cmd_fit(cli.build_parser().parse_args(["fit", CIRCLES, "--method", "platt", "--out", str(target)]))


def test_apply_maps_margins_by_the_logistic_function(tmp_path, capsys):
    """A model fitted on margins: new margins go through the logistic function, and the note says so."""
    rng = np.random.default_rng(1)
    m = rng.normal(0, 2, 400)
    train = tmp_path / "train.csv"
    pd.DataFrame({"margin": m, "y": (rng.uniform(size=400) < 1 / (1 + np.exp(-m))).astype(int)}).to_csv(
        train, index=False)
    model = tmp_path / "iso.json"
    assert main(["fit", str(train), "--method", "isotonic", "--out", str(model)]) == 0
    new = tmp_path / "new.csv"
    pd.DataFrame({"margin": [-2.0, 0.0, 3.0]}).to_csv(new, index=False)
    capsys.readouterr()
    assert main(["apply", str(model), str(new)]) == 0
    out = capsys.readouterr()
    cal = export.loads(model.read_text())
    got = pd.read_csv(io.StringIO(out.out))["calibrated"].to_numpy()
    assert np.array_equal(got, cal.predict(1 / (1 + np.exp(-np.array([-2.0, 0.0, 3.0])))))
    assert "mapped by the logistic function" in out.err


# -- benchmark --------------------------------------------------------------------------------------------
@pytest.fixture
def folder(tmp_path):
    """Two CSV files; the second holds two models (two score columns), so three data sets."""
    for i, name in enumerate(("one.csv", "two.csv")):
        rng = np.random.default_rng(i)
        s = rng.uniform(0.01, 0.99, 400)
        df = pd.DataFrame({"score": s, "label": (rng.uniform(size=400) < s ** 2).astype(int)})
        if i:
            df["other_score"] = np.clip(s + rng.normal(0, 0.1, 400), 0.01, 0.99)
        df.to_csv(tmp_path / name, index=False)
    return tmp_path


def test_benchmark_json_matches_the_api(folder, capsys):
    assert main(["benchmark", str(folder), "--methods", "platt,isotonic", "--folds", "3", "--repeats", "1",
                 "--metric", "Brier", "--reference", "isotonic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["datasets"] == ["one.csv", "two.csv · score", "two.csv · other_score"]
    api = benchmark.run_benchmark(benchmark.load_benchmark_datasets([str(folder)])[1], ["platt", "isotonic"],
                                  n_folds=3, repeats=1, metric="Brier", reference="isotonic")
    assert out["average_ranks"] == pytest.approx(api.average_ranks.to_dict())
    assert out["friedman"]["ff"] == pytest.approx(api.friedman.ff)
    assert [h["method"] for h in out["holm"]] == list(api.holm.index)
    assert out["values"]["one.csv"]["platt"] == pytest.approx(api.table.loc["one.csv", "platt"])
    assert out["summary"] == api.describe()


def test_benchmark_prints_the_page_tables(folder, capsys):
    files = [str(folder / "one.csv"), str(folder / "two.csv")]
    assert main(["benchmark", *files, "--methods", "platt,histogram", "--param", "histogram.n_bins=5",
                 "--folds", "2", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    api = benchmark.run_benchmark(benchmark.load_benchmark_datasets(files)[1],
                                  {"platt": {}, "histogram": {"n_bins": 5}}, n_folds=2, repeats=1, metric="ECE")
    tables = benchmark.report_tables(api)
    assert len(tables) == 5
    positions = [text.index(f"\n{t.title}\n") for t in tables]
    assert positions == sorted(positions)                    # every title, in the report's order
    assert api.describe() in text
    assert f"{api.table.loc['one.csv', 'histogram']:.4f}" in text


def test_benchmark_refuses_a_folder_without_tables_and_unknown_params(folder, tmp_path, capsys):
    (tmp_path / "nothing").mkdir()
    assert main(["benchmark", str(tmp_path / "nothing")]) == 2
    assert "holds no .csv" in capsys.readouterr().err
    assert main(["benchmark", str(folder), "--methods", "platt", "--param", "bbq.c=5"]) == 2
    assert "not among the chosen methods" in capsys.readouterr().err


# -- K-class files: the same commands, the multi-class calibrators ------------------------------------------
SAMPLES = REPO / "sample_data" / "multiclass"
ANIMALS = str(SAMPLES / "animals_3class.csv")
LOGITS = str(SAMPLES / "logits_4class.csv")
CIFAR = str(SAMPLES / "cifar10_lenet5.csv")
#: Methods every test can use (the composites over two fast binary methods).
CLASS_METHODS = "ovr:isotonic,top_label:histogram"
main = cli.main


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and err.count("\n") == 1
    return err


# -- evaluate ---------------------------------------------------------------------------------------------
def test_evaluate_json_is_the_library_evaluation(capsys):
    out = _json(capsys, ["evaluate", ANIMALS, "--methods", CLASS_METHODS, "--json"])
    cs = load_classes(ANIMALS)
    ev = evaluate_classes(cs.scores(), cs.labels, CLASS_METHODS, Scheme(), classes=cs.classes)
    assert list(out["metrics"]) == ["uncalibrated", "ovr:isotonic", "top_label:histogram"]
    for key, row in ev.metrics.iterrows():
        assert out["metrics"][key] == pytest.approx(row.to_dict(), rel=0, abs=0)     # the same computation
    assert out["classes"] == ["cat", "dog", "emu"] and out["class_columns"] == ["p_cat", "p_dog", "p_emu"]
    # stratified 30% held out: ceil(0.3 n_c) rows of each class
    held = int(sum(np.ceil(0.3 * np.bincount(cs.labels) - 1e-9)))
    assert out["label"] == "label" and out["logits"] is False and out["rows_judged"] == ev.rows.size == held
    v = out["validation"]
    assert (v["rows_read"], v["rows_used"], v["rows_dropped"]) == (3000, 3000, 0)
    assert sum(v["class_counts"].values()) == 3000 and list(v["class_counts"]) == ["cat", "dog", "emu"]
    assert any("3 classes" in m for m in v["messages"])


def test_evaluate_prints_the_measures_table(capsys):
    assert main(["evaluate", CIFAR, "--methods", CLASS_METHODS, "--scheme", "kfold", "--folds", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("cifar10_lenet5.csv: 10 classes (probabilities in p_airplane, p_automobile, ..., "
                               "p_truck), label 'label'; 3-fold cross-fitting (seed 0); 10,000 rows judged")
    header = next(line for line in lines if line.split()[:2] == ["ECE", "MCE"])
    assert header.split() == list(class_measures.MEASURE_NAMES)
    rows = [line.split()[0] for line in lines[lines.index(header) + 1:lines.index(header) + 4]]
    assert rows == ["uncalibrated", "ovr:isotonic", "top_label:histogram"]
    # the raw probabilities' accuracy on every row (k-fold judges each once): the README's 0.5308 on the
    # 10,000-row sample (its rows are the first 10,000 of the CIFAR-10 LeNet-5 test set)
    cs = load_classes(CIFAR)
    acc = float(np.mean(cs.given.argmax(axis=1) == cs.labels))
    raw = lines[lines.index(header) + 1].split()
    assert float(raw[1 + list(class_measures.MEASURE_NAMES).index("Accuracy")]) == pytest.approx(acc, abs=5e-5)


def test_logit_columns_are_found_or_named(capsys):
    found = _json(capsys, ["evaluate", LOGITS, "--methods", CLASS_METHODS, "--json"])
    named = _json(capsys, ["evaluate", LOGITS, "--methods", CLASS_METHODS, "--logits", "LOGIT_", "--json"])
    assert found["logits"] is True and found["metrics"] == named["metrics"]
    assert found["class_columns"] == [f"logit_{k}" for k in range(4)]


def test_row_order_does_not_change_the_numbers(capsys, tmp_path):
    """The split is keyed by the rows' content (calibdash.evaluation.scheme): the same held-out rows and fits in
    another order. The measures sum the same values in another order, so they agree to rounding (1e-12)."""
    df = pd.read_csv(CIFAR)
    shuffled = tmp_path / "shuffled.csv"
    df.sample(frac=1.0, random_state=3).to_csv(shuffled, index=False)
    args = ["--methods", CLASS_METHODS, "--json"]
    a = _json(capsys, ["evaluate", CIFAR, *args])["metrics"]
    b = _json(capsys, ["evaluate", str(shuffled), *args])["metrics"]
    assert list(a) == list(b)
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-12)


def test_boot_gives_the_paired_intervals_and_the_verdict(capsys):
    out = _json(capsys, ["evaluate", ANIMALS, "--methods", CLASS_METHODS, "--boot", "20", "--seed", "4", "--json"])
    cs = load_classes(ANIMALS)
    ev = evaluate_classes(cs.scores(), cs.labels, CLASS_METHODS, Scheme(seed=4), classes=cs.classes)
    boot = mboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=20, seed=4)
    assert out["intervals"]["resamples"] == 20 and out["intervals"]["level"] == 0.95
    for key in ev.predictions:
        for m in class_measures.MEASURE_NAMES:
            got = out["intervals"]["values"][key][m]
            assert got["value"] == pytest.approx(out["metrics"][key][m], rel=1e-12)   # the point values are the table's
            assert (got["low"], got["high"]) == pytest.approx(boot.interval(key, m), rel=1e-12)
    assert out["verdict"].startswith("One-vs-rest isotonic regression has the lowest ECE") or \
        out["verdict"].startswith("Top-label histogram binning has the lowest ECE")
    assert main(["evaluate", ANIMALS, "--methods", CLASS_METHODS, "--boot", "10"]) == 0
    text = capsys.readouterr().out
    assert "Intervals: value [95% paired interval]" in text and "\nVerdict: " in text


def test_parameters_reach_the_methods(capsys):
    """--param METHOD.NAME=VALUE: histogram binning with one bin per class is each class's base rate, so the
    top-label map's predictions use one bin per predicted class."""
    a = _json(capsys, ["evaluate", ANIMALS, "--methods", "ovr:histogram", "--param", "ovr:histogram.n_bins=1",
                       "--json"])
    cs = load_classes(ANIMALS)
    ev = evaluate_classes(cs.scores(), cs.labels, {"ovr:histogram": {"n_bins": 1}}, Scheme())
    assert a["metrics"]["ovr:histogram"] == pytest.approx(ev.metrics.loc["ovr:histogram"].to_dict(), abs=0)
    # one bin per class: every row gets the fitting part's class frequencies (renormalised), so accuracy is
    # the share of the most frequent class among the judged rows
    freq = np.bincount(ev.labels, minlength=3) / ev.labels.size
    assert a["metrics"]["ovr:histogram"]["Accuracy"] == pytest.approx(freq[np.argmax(
        ev.predictions["ovr:histogram"][0])], abs=1e-12)


def test_the_default_methods_are_the_librarys():
    assert cli.CLASS_METHODS == CLASS_DEFAULTS
    e = cli.build_parser().parse_args(["evaluate", ANIMALS])
    assert not getattr(e, "methods_given", False) and e.boot is None
    assert ",".join(CLASS_DEFAULTS) in cli.build_parser()._subparsers._group_actions[0].choices[
        "evaluate"].format_help().replace("\n", " ").replace("  ", " ")


# -- refusals ---------------------------------------------------------------------------------------------
def test_validation_messages_exit_2_without_a_traceback(capsys, tmp_path):
    df = pd.read_csv(ANIMALS)
    bad = tmp_path / "bad.csv"
    df.assign(p_cat=df.p_cat * 0.5).to_csv(bad, index=False)
    assert "do not sum to 1" in _error(capsys, ["evaluate", str(bad), "--methods", CLASS_METHODS])
    assert "no column starts with 'q_'" in _error(capsys, ["evaluate", ANIMALS, "--probs", "q_"])
    assert "unknown multi-class method 'nope'" in _error(capsys, ["evaluate", ANIMALS, "--methods", "nope"])
    assert "not among the chosen methods" in _error(
        capsys, ["evaluate", ANIMALS, "--methods", CLASS_METHODS, "--param", "temperature.x=1"])
    assert "only the in-memory engine" in _error(capsys, ["fit", ANIMALS, "--probs", "p_", "--method", "temperature", "--engine", "duckdb"])
    # the same when the class columns are found, not named (it read the file as binary and blamed the label)
    assert "only the in-memory engine" in _error(capsys, ["fit", ANIMALS, "--method", "temperature", "--engine", "duckdb"])
    assert "--measures adds the binary measures" in _error(capsys, ["evaluate", ANIMALS, "--measures"])
    assert "negative values" in _error(capsys, ["evaluate", LOGITS, "--probs", "logit_", "--methods", CLASS_METHODS])
    with pytest.raises(SystemExit) as both:                 # argparse: --probs and --logits exclude each other
        main(["evaluate", ANIMALS, "--probs", "p_", "--logits", "p_"])
    assert both.value.code == 2


def test_python_dash_m_reports_a_k_class_error_as_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "calibdash", "evaluate", ANIMALS, "--label", "x1"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr


# -- fit, apply, export-sql -------------------------------------------------------------------------------
@pytest.mark.parametrize("path,method", [(ANIMALS, "ovr:isotonic"), (LOGITS, "top_label:histogram")])
def test_fit_then_apply_gives_the_calibrators_probabilities(path, method, tmp_path, capsys):
    model, out = tmp_path / "model.json", tmp_path / "out.csv"
    assert main(["fit", path, "--method", method, "--out", str(model)]) == 0
    assert main(["apply", str(model), path, "--out", str(out)]) == 0
    capsys.readouterr()
    cs = load_classes(path)
    saved = export.read_model(model.read_text(), "classes")
    assert saved.fitted_on["columns"] == cs.columns and saved.fitted_on["logits"] == cs.logits
    assert saved.fitted_on["classes"] == [c if isinstance(c, str) else int(c) for c in cs.classes]
    assert saved.fitted_on["rows"] == cs.n_rows and saved.fitted_on["label"] == "label"
    cal = calibrators.get(method, "classes").set_params(logits=cs.logits).fit(cs.given, cs.labels)
    df = pd.read_csv(path)
    want = cal.predict_proba(df[cs.columns].to_numpy(dtype=float))
    got = pd.read_csv(out)
    assert list(got.columns) == [*df.columns, *[f"calibrated_{c}" for c in cs.classes]]
    # the file keeps every digit (shortest repr) and the loaded model predicts as the saved one: exact
    np.testing.assert_array_equal(got[[f"calibrated_{c}" for c in cs.classes]].to_numpy(), want)
    np.testing.assert_allclose(want.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_apply_leaves_rows_with_a_missing_class_value_empty_and_refuses_what_it_cannot(tmp_path, capsys):
    model = tmp_path / "model.json"
    assert main(["fit", ANIMALS, "--method", "ovr:histogram", "--out", str(model)]) == 0
    df = pd.read_csv(ANIMALS).head(50)
    df.loc[3, "p_dog"] = np.nan
    holes, out = tmp_path / "holes.csv", tmp_path / "out.csv"
    df.to_csv(holes, index=False)
    assert main(["apply", str(model), str(holes), "--out", str(out)]) == 0
    assert "to 49 of 50 rows" in capsys.readouterr().err
    got = pd.read_csv(out)
    assert got.loc[3, ["calibrated_cat", "calibrated_dog", "calibrated_emu"]].isna().all()
    assert got.drop(index=3)[["calibrated_cat", "calibrated_dog", "calibrated_emu"]].notna().all().all()
    df.drop(columns="p_emu").to_csv(holes, index=False)
    assert "class column 'p_emu' is not in holes.csv" in _error(capsys, ["apply", str(model), str(holes)])
    assert "only the in-memory engine" in _error(
        capsys, ["apply", str(model), ANIMALS, "--engine", "duckdb", "--out", str(tmp_path / "o.parquet")])
    assert "export-sql writes binary calibrators only" in _error(capsys, ["export-sql", str(model)])
    assert "a hyperparameter of 'ovr:isotonic', but --method is 'ovr:histogram'" in _error(
        capsys, ["fit", ANIMALS, "--method", "ovr:histogram", "--param", "ovr:isotonic.y_min=0"])


# -- report, methods --------------------------------------------------------------------------------------
def test_report_writes_the_k_class_sections(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", ANIMALS, "--methods", CLASS_METHODS, "--out", str(out), "--plotlyjs", "cdn"]) == 0
    assert "(3 classes)" in capsys.readouterr().err
    html = out.read_text()
    for section in ("verdict", "measures", "reliability", "classwise", "classes", "methods"):
        assert f'id="{section}"' in html
    for text in ("Confidence reliability diagram", "Class-wise reliability", "cwECE", "Zadrozny &amp; Elkan",
                 "Gupta &amp; Ramdas", "animals_3class.csv", "p_cat", "has the lowest ECE"):
        assert text in html, text
    per_class = html[html.index('id="classes"'):html.index('id="methods"')]
    assert all(f'<th scope="row">{c}</th>' in per_class for c in ("cat", "dog", "emu"))
    assert "cdn.plot.ly" in html and len(html) < 1_000_000


def test_methods_multiclass_lists_the_multiclass_calibrators(capsys):
    assert main(["methods", "--multiclass"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith(" ")]
    assert listed == [f"{n}:<binary>" if n in calibrators.composites() else n for n in calibrators.classes("classes")]
    assert "hyperparameters: min_rows=50" in out
