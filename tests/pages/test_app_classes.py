"""AppTest of the Data and Compare pages on K-class tables (one page script each over the problem: pages/parts/problem.py).

The numbers the pages show are checked against the library computed here on the same rows: the per-class
summary against the file's own counts and means, the measures table against
:func:`calibdash.evaluation.holdout.evaluate_classes` under the same scheme (the pages show 4 decimals,
so a displayed value is within 5e-5 of the library's).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from calibdash import calibrators
from calibdash import samples
from calibdash.data import load_classes
from calibdash.measures import class_measures as mmetrics
from calibdash.evaluation.holdout import evaluate_classes
from calibdash.evaluation.scheme import Scheme
from calibdash.synthetic.gaussian_classes import gaussian_classes
from pages.parts.problem import CLASSES
from pages.parts.url_state import CLASS_METHODS
from tests.pages.test_app import (COMPARE, DATA, _run_entry_point_every_time, assert_clean, charts, go, shown,  # noqa: F401
                      plotly_array, sidebar_text, start, upload)

#: A displayed value has 4 decimals: it is within half a unit of the 4th decimal of the library's.
SHOWN = 5e-5


def _metric(at, label: str) -> str:
    return next(shown(m.value) for m in at.main.metric if m.label == label)


def _frame(at, column: str) -> pd.DataFrame:
    """The main area's dataframe that has ``column``."""
    for df in at.main.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no table with a column {column!r}")


def _number(cell) -> float:
    """A cell shown as "value [low, high]" read as its value."""
    return float(str(cell).split(" [", 1)[0])


def _k_class_csv(n: int = 400, seed: int = 3) -> tuple[bytes, pd.DataFrame]:
    """An over-confident 4-class model's probabilities (K = 4: no simplex map), as a CSV and a frame."""
    frame = gaussian_classes(("ant", "bee", "cow", "doe"), temperature=2.0).draw(n, seed).frame
    frame = frame[["label", "p_ant", "p_bee", "p_cow", "p_doe"]]
    return frame.to_csv(index=False, float_format="%.8g").encode(), frame


def test_data_page_on_the_k3_and_k10_samples_shows_k_and_the_classes():
    at = start(DATA)
    for name, k in (("animals_3class", 3), ("cifar10_lenet5", 10)):
        at.selectbox(key="sample").set_value(name).run()
        assert_clean(at)
        cs = samples.load_class_sample(name)
        assert _metric(at, "Classes (K)") == str(k) and _metric(at, "Rows used") == f"{cs.n_rows:,}"
        summary = _frame(at, "mean predicted probability")
        assert list(summary.index) == [str(c) for c in cs.classes]
        assert list(summary["column"]) == cs.columns
        # the rows per class are the file's counts; the mean predicted probability is the column's mean
        np.testing.assert_array_equal(summary["rows"], np.bincount(cs.labels, minlength=k))
        np.testing.assert_allclose(summary["frequency"], np.bincount(cs.labels, minlength=k) / cs.n_rows)
        np.testing.assert_allclose(summary["mean predicted probability"], cs.given.mean(axis=0), rtol=1e-12)
        text = "\n".join(shown(m.value) for m in at.main.markdown)
        assert ", ".join(str(c) for c in cs.classes) in text       # every class named (K <= 12)
        assert f"{k} classes" in sidebar_text(at)
        assert "data.classes.confidence" in charts(at)
    # CIFAR-10 LeNet-5: its published accuracy (shared/data/README.md), from the page's own summary
    assert _metric(at, "Accuracy (top class)") == "53.1%"


def test_logits_sample_says_it_softmaxed_and_a_wrong_reading_shows_the_message():
    at = start(DATA)
    at.selectbox(key="sample").set_value("logits_4class").run()
    assert_clean(at)
    assert _metric(at, "Class columns hold") == "logits"
    assert any("softmax" in shown(i.value) for i in at.main.info)
    cs = samples.load_class_sample("logits_4class")
    # the summary's mean probability is that of the softmaxed rows, not of the logits
    summary = _frame(at, "mean predicted probability")
    np.testing.assert_allclose(summary["mean predicted probability"], cs.scores().probabilities.mean(axis=0),
                               rtol=1e-12)
    key = f"role.mc.kind.{cs.info.sha256[:12]}"
    at.segmented_control(key=key).set_value("probabilities").run()
    assert not at.exception
    assert any("cannot be read as K classes" in shown(e.value) and "negative values" in shown(e.value)
               for e in at.main.error)
    at.segmented_control(key=key).set_value("logits").run()     # the override widgets stay: back again
    assert_clean(at)


def test_upload_then_compare_shows_every_method_the_intervals_and_the_figures():
    data, _ = _k_class_csv()
    at = start(DATA)
    upload(at, "four_animals.csv", data)
    assert_clean(at)
    assert _metric(at, "Classes (K)") == "4"
    go(at, COMPARE)
    assert_clean(at)
    methods = CLASSES.compare_defaults(calibrators.available("classes"), 4)
    table = _frame(at, "cwECE")
    labels = {m: calibrators.get(m, "classes").label for m in methods}
    assert list(table.index) == ["Uncalibrated"] + [labels[m] for m in methods]
    # the shown values are the library's on the same held-out rows (the default scheme: Scheme()); the rows
    # are divided by their content, so the library reads the same file (the CSV's rounded values)
    cs = load_classes(data, filename="four_animals.csv")
    assert cs.classes == ["ant", "bee", "cow", "doe"]
    ev = evaluate_classes(cs.scores(), cs.labels, methods, Scheme(), split=cs.split)
    for key, row in zip(["uncalibrated"] + methods, table.index):
        for name in ("ECE", "cwECE", "Brier", "Accuracy"):
            assert abs(_number(table.loc[row, name]) - ev.metrics.loc[key, name]) <= SHOWN, (key, name)
        low, high = (float(x) for x in str(table.loc[row, "ECE"]).split("[", 1)[1].rstrip("]").split(","))
        assert low <= high
    assert any("lowest ECE" in shown(i.value) for i in at.main.info)                       # the verdict
    figs = charts(at)
    assert {"compare.classes.confidence", "compare.classes.classwise"} <= set(figs)
    # the confidence diagram's legend carries each method's confidence ECE at the measures' 15 bins
    legend = [t["name"] for t in figs["compare.classes.confidence"]["data"] if t.get("name")]
    for key in ["uncalibrated"] + methods:
        assert any(f"ECE {ev.metrics.loc[key, 'ECE']:.4f}" in n for n in legend), (key, legend)
    assert "compare.classes.simplex_map" not in figs                                  # K = 4
    per_class = _frame(at, "frequency")
    assert list(per_class.index) == ["ant", "bee", "cow", "doe"]
    np.testing.assert_array_equal(per_class["rows"], np.bincount(ev.labels, minlength=4))
    for key, row in zip(["uncalibrated"] + methods, table.index):        # each class's ECE, 15 equal-width bins
        np.testing.assert_allclose(per_class[row], mmetrics.per_class_ece(ev.predictions[key], ev.labels),
                                   rtol=1e-12)
    assert "4 classes" in sidebar_text(at)


def test_k3_sample_draws_the_simplex_map_of_a_fitted_method():
    at = start(DATA)
    at.selectbox(key="sample").set_value("animals_3class").run()
    go(at, COMPARE)
    assert_clean(at)
    fig = charts(at)["compare.classes.simplex_map"]
    # the interior grid of spacing 1/10: 36 points, each mapped to a row of probabilities on the triangle
    images = next(t for t in fig["data"] if t.get("name") == "calibrated")
    outs = np.column_stack([plotly_array(images[axis]) for axis in "abc"])
    assert outs.shape == (36, 3)
    np.testing.assert_allclose(outs.sum(axis=1), 1.0, atol=1e-12)


def test_broken_k_class_upload_shows_the_message_on_data_and_compare():
    _, frame = _k_class_csv(200)
    broken = frame.copy()
    broken.loc[5:40, ["p_ant", "p_bee", "p_cow", "p_doe"]] *= 0.8      # 36 rows sum to 0.8: not rounding
    at = start(DATA)
    upload(at, "broken.csv", broken.to_csv(index=False).encode())
    assert not at.exception
    message = "\n".join(shown(e.value) for e in at.main.error)
    assert "cannot be read as K classes" in message and "36 of 200 rows" in message
    assert "do not sum to 1 within 0.01" in message
    go(at, COMPARE)
    assert not at.exception
    assert any("cannot be read as K classes" in shown(e.value) for e in at.main.error)
    assert not charts(at)


def test_a_binary_sample_still_shows_the_binary_compare():
    at = start()
    assert_clean(at)
    assert {"compare.reliability", "compare.map"} <= set(charts(at))
    assert "AUC" in _frame(at, "ECE").columns and "cwECE" not in _frame(at, "ECE").columns
    mmetrics.check_names(None)          # the multi-class names exist, and the binary page did not use them


def test_read_as_binary_and_back():
    """MODE: a K-class sample read as binary gets the binary reading's refusal (three label values), with the
    choice still on the page; read as K classes again, the K-class page returns."""
    at = start(DATA)
    at.selectbox(key="sample").set_value("animals_3class").run()
    key = f"role.mc.mode.{samples.load_class_sample('animals_3class').info.sha256[:12]}"
    at.segmented_control(key=key).set_value("binary").run()
    assert not at.exception
    assert any("has 3 distinct values" in shown(e.value) and "a binary label has exactly two" in e.value
               for e in at.main.error)
    at.segmented_control(key=key).set_value("multiclass").run()
    assert_clean(at)
    assert _metric(at, "Classes (K)") == "3"


def test_a_composite_hyperparameter_reaches_the_fit():
    """The panel's widgets for top_label:histogram carry its binary method's hyperparameters (keys
    hp.<method>.<name>, shared with Explore); a new bin count refits it, and the row equals the library's fit with those values."""
    at = start(DATA)
    at.selectbox(key="sample").set_value("logits_4class").run()
    go(at, COMPARE)
    method = "top_label:histogram"
    at.multiselect(key=CLASS_METHODS).set_value(["temperature", method]).run()
    keys = {hp.name: f"hp.{method}.{hp.name}" for hp in calibrators.get(method, "classes").hyperparams}
    assert keys and all(k in at.session_state for k in keys.values())
    slider = at.select_slider(key=keys["n_bins"])
    new = next(v for v in slider.options if str(v) != str(slider.value))
    slider.set_value(type(slider.value)(new)).run()
    assert_clean(at)
    params = {name: at.session_state[k] for name, k in keys.items()}
    cs = samples.load_class_sample("logits_4class")
    ev = evaluate_classes(cs.scores(), cs.labels, {method: params}, Scheme(), logits=True, split=cs.split)
    row = _frame(at, "cwECE").loc[calibrators.get(method, "classes").label]
    for name in ("ECE", "cwECE", "LogLoss"):
        assert abs(_number(row[name]) - ev.metrics.loc[method, name]) <= SHOWN, name


def test_full_maps_wait_for_the_switch_above_twenty_classes():
    """At K = 24 (above FULL_MAP_MAX_K) Dirichlet calibration, chosen, is not fitted until the switch is on: the
    page says why, its row is absent; with the switch on, its row equals the library's fit."""
    frame = gaussian_classes(24, temperature=2.0).draw(600, 5).frame
    frame = frame[["label"] + [c for c in frame.columns if c.startswith("p_")]]
    at = start(DATA)
    upload(at, "many.csv", frame.to_csv(index=False, float_format="%.8g").encode())
    go(at, COMPARE)
    at.multiselect(key=CLASS_METHODS).set_value(["temperature", "dirichlet"]).run()
    assert_clean(at)
    assert any("not fitted yet: 24 classes" in shown(i.value) for i in at.main.info)
    assert list(_frame(at, "cwECE").index) == ["Uncalibrated", calibrators.get("temperature", "classes").label]
    at.toggle(key="compare.mc.full_maps").set_value(True).run()
    assert_clean(at)
    assert calibrators.get("dirichlet", "classes").label in _frame(at, "cwECE").index
