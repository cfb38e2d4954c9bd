"""The command line on K-class files: evaluate (table, --json, --boot), fit/apply, report, methods --multiclass,
and the refusals (exit status 2, one line, no traceback); the numbers are the library's."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibdash import cli, multiclass
from calibdash.data import load_classes
from calibdash.multiclass import bootstrap as mboot
from calibdash.evaluation import DEFAULT_METHODS, evaluate_classes
from calibdash.scheme import Scheme
from conftest import REPO

SAMPLES = REPO / "sample_data" / "multiclass"
ANIMALS = str(SAMPLES / "animals_3class.csv")
LOGITS = str(SAMPLES / "logits_4class.csv")
CIFAR = str(SAMPLES / "cifar10_lenet5.csv")
#: Methods every test can use (the composites over two fast binary methods).
METHODS = "ovr:isotonic,top_label:histogram"
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
    out = _json(capsys, ["evaluate", ANIMALS, "--methods", METHODS, "--json"])
    cs = load_classes(ANIMALS)
    ev = evaluate_classes(cs.scores(), cs.labels, METHODS, Scheme(), classes=cs.classes)
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
    assert main(["evaluate", CIFAR, "--methods", METHODS, "--scheme", "kfold", "--folds", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("cifar10_lenet5.csv: 10 classes (probabilities in p_airplane, p_automobile, ..., "
                               "p_truck), label 'label'; 3-fold cross-fitting (seed 0); 10,000 rows judged")
    header = next(line for line in lines if line.split()[:2] == ["ECE", "MCE"])
    assert header.split() == list(multiclass.metrics.MEASURE_NAMES)
    rows = [line.split()[0] for line in lines[lines.index(header) + 1:lines.index(header) + 4]]
    assert rows == ["uncalibrated", "ovr:isotonic", "top_label:histogram"]
    # the raw probabilities' accuracy on every row (k-fold judges each once): the README's 0.5308 on the
    # 10,000-row sample (its rows are the first 10,000 of the CIFAR-10 LeNet-5 test set)
    cs = load_classes(CIFAR)
    acc = float(np.mean(cs.given.argmax(axis=1) == cs.labels))
    raw = lines[lines.index(header) + 1].split()
    assert float(raw[1 + list(multiclass.metrics.MEASURE_NAMES).index("Accuracy")]) == pytest.approx(acc, abs=5e-5)


def test_logit_columns_are_found_or_named(capsys):
    found = _json(capsys, ["evaluate", LOGITS, "--methods", METHODS, "--json"])
    named = _json(capsys, ["evaluate", LOGITS, "--methods", METHODS, "--logits", "LOGIT_", "--json"])
    assert found["logits"] is True and found["metrics"] == named["metrics"]
    assert found["class_columns"] == [f"logit_{k}" for k in range(4)]


def test_row_order_does_not_change_the_numbers(capsys, tmp_path):
    """The split is keyed by the rows' content (calibdash.scheme): the same held-out rows and fits in
    another order. The measures sum the same values in another order, so they agree to rounding (1e-12)."""
    df = pd.read_csv(CIFAR)
    shuffled = tmp_path / "shuffled.csv"
    df.sample(frac=1.0, random_state=3).to_csv(shuffled, index=False)
    args = ["--methods", METHODS, "--json"]
    a = _json(capsys, ["evaluate", CIFAR, *args])["metrics"]
    b = _json(capsys, ["evaluate", str(shuffled), *args])["metrics"]
    assert list(a) == list(b)
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-12)


def test_boot_gives_the_paired_intervals_and_the_verdict(capsys):
    out = _json(capsys, ["evaluate", ANIMALS, "--methods", METHODS, "--boot", "20", "--seed", "4", "--json"])
    cs = load_classes(ANIMALS)
    ev = evaluate_classes(cs.scores(), cs.labels, METHODS, Scheme(seed=4), classes=cs.classes)
    boot = mboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=20, seed=4)
    assert out["intervals"]["resamples"] == 20 and out["intervals"]["level"] == 0.95
    for key in ev.predictions:
        for m in multiclass.metrics.MEASURE_NAMES:
            got = out["intervals"]["values"][key][m]
            assert got["value"] == pytest.approx(out["metrics"][key][m], rel=1e-12)   # the point values are the table's
            assert (got["low"], got["high"]) == pytest.approx(boot.interval(key, m), rel=1e-12)
    assert out["verdict"].startswith("One-vs-rest isotonic regression has the lowest ECE") or \
        out["verdict"].startswith("Top-label histogram binning has the lowest ECE")
    assert main(["evaluate", ANIMALS, "--methods", METHODS, "--boot", "10"]) == 0
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
    assert cli.CLASS_METHODS == DEFAULT_METHODS
    e = cli.build_parser().parse_args(["evaluate", ANIMALS])
    assert not getattr(e, "methods_given", False) and e.boot is None
    assert ",".join(DEFAULT_METHODS) in cli.build_parser()._subparsers._group_actions[0].choices[
        "evaluate"].format_help().replace("\n", " ").replace("  ", " ")


# -- refusals ---------------------------------------------------------------------------------------------
def test_validation_messages_exit_2_without_a_traceback(capsys, tmp_path):
    df = pd.read_csv(ANIMALS)
    bad = tmp_path / "bad.csv"
    df.assign(p_cat=df.p_cat * 0.5).to_csv(bad, index=False)
    assert "do not sum to 1" in _error(capsys, ["evaluate", str(bad), "--methods", METHODS])
    assert "no column starts with 'q_'" in _error(capsys, ["evaluate", ANIMALS, "--probs", "q_"])
    assert "unknown multi-class method 'nope'" in _error(capsys, ["evaluate", ANIMALS, "--methods", "nope"])
    assert "not among the chosen methods" in _error(
        capsys, ["evaluate", ANIMALS, "--methods", METHODS, "--param", "temperature.x=1"])
    assert "only the in-memory engine" in _error(capsys, ["fit", ANIMALS, "--probs", "p_", "--method", "temperature", "--engine", "duckdb"])
    assert "--measures adds the binary measures" in _error(capsys, ["evaluate", ANIMALS, "--measures"])
    assert "negative values" in _error(capsys, ["evaluate", LOGITS, "--probs", "logit_", "--methods", METHODS])
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
    saved = multiclass.export.read_model(model.read_text())
    assert saved.fitted_on["columns"] == cs.columns and saved.fitted_on["logits"] == cs.logits
    assert saved.fitted_on["classes"] == [c if isinstance(c, str) else int(c) for c in cs.classes]
    assert saved.fitted_on["rows"] == cs.n_rows and saved.fitted_on["label"] == "label"
    cal = multiclass.get(method).set_params(logits=cs.logits).fit(cs.given, cs.labels)
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
    assert "not among the chosen methods" in _error(
        capsys, ["fit", ANIMALS, "--method", "ovr:histogram", "--param", "ovr:isotonic.y_min=0"])


# -- report, methods --------------------------------------------------------------------------------------
def test_report_writes_the_k_class_sections(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", ANIMALS, "--methods", METHODS, "--out", str(out), "--plotlyjs", "cdn"]) == 0
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
    assert listed == [f"{n}:<binary>" if n in multiclass.COMPOSITES else n for n in multiclass.classes()]
    assert "hyperparameters: min_rows=50" in out
