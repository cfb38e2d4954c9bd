"""AppTest of "Groups & time" (pages/segments.py) on a K-class table: its top-label reduction, per group and period.

The table: three sites of an animal classifier, two where the model's probabilities are the true posterior
(temperature 1) and one, "east", where it is over-confident (temperature 3), with a month column. The page
must read it as K classes, say that it judges the top-label (confidence) calibration, find "east" the least
calibrated, and show the numbers the library gives on the same rows: accuracy, confidence ECE (the page's
10 equal-count bins) and the class-wise ECE of each group. The page runs on its own through the driver of
tests/test_app_segments.py, the file arriving as an upload in the session.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibdash import metrics
from calibdash.data import load_classes
from calibdash.multiclass import metrics as mmetrics
from calibdash.synthetic.multiclass import gaussian_classes
from test_app_segments import _assert_clean, _charts, _select, _session

CLASSES = ("ant", "bee", "cow")
#: A displayed value has 4 decimals: within half a unit of the 4th decimal of the library's.
SHOWN = 5e-5


def _value(cell: str) -> float:
    return float(str(cell).split(" [", 1)[0])


@pytest.fixture(scope="module")
def table() -> tuple[bytes, pd.DataFrame]:
    parts = []
    for i, (site, temperature) in enumerate((("north", 1.0), ("south", 1.0), ("east", 3.0))):
        frame = gaussian_classes(CLASSES, radius=1.0, temperature=temperature).draw(400, seed=10 + i).frame
        frame = frame[["label", *(f"p_{c}" for c in CLASSES)]].assign(site=site)
        parts.append(frame)
    frame = pd.concat(parts, ignore_index=True)
    frame["month"] = pd.date_range("2025-01-01", "2025-04-28", periods=len(frame)).strftime("%Y-%m-%d")
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)    # sites and months interleaved
    data = frame.to_csv(index=False, float_format="%.8g").encode()
    return data, frame


def test_groups_of_a_k_class_table_are_judged_on_the_top_label(table):
    data, _ = table
    at = _session(pd.read_csv(pd.io.common.BytesIO(data)), "three_sites.csv")
    _assert_clean(at)
    assert any("top-label (confidence) calibration" in i.value for i in at.info)
    assert "K = 3" in at.caption[0].value and "confidence" in at.caption[0].value
    # a segment is guessed before the true and the predicted class
    assert _select(at, "Group column").value == "site"
    assert {"label", "predicted class", "month"} <= set(_select(at, "Group column").options)

    cs = load_classes(data, filename="three_sites.csv")          # the library on the same rows (as read)
    P, y = cs.scores().probabilities, cs.labels
    conf, right = mmetrics.top_label(P, y)
    site = cs.raw["site"].to_numpy()[cs.rows]
    shown = at.dataframe[0].value
    assert list(shown.index) == ["east", "north", "south"]
    assert {"accuracy", "mean confidence", "confidence ECE", "cwECE"} <= set(shown.columns)
    for g in shown.index:
        m = site == g
        assert shown.loc[g, "rows"] == f"{m.sum():,}"
        assert abs(_value(shown.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
        assert abs(_value(shown.loc[g, "mean confidence"]) - conf[m].mean()) <= SHOWN
        ece = metrics.ece(conf[m], right[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(_value(shown.loc[g, "confidence ECE"]) - ece) <= SHOWN
        cw = mmetrics.classwise_ece(P[m], y[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(float(shown.loc[g, "cwECE"]) - cw) <= SHOWN
    # the over-confident site: its confidence ECE the largest, and its confidence above its accuracy
    assert any("least calibrated group is **east**" in i.value for i in at.info)
    east = site == "east"
    assert conf[east].mean() > right[east].mean() + 0.05
    assert float(shown.loc["east", "cwECE"]) > max(float(shown.loc[g, "cwECE"]) for g in ("north", "south"))

    # the calibrator that fixes the groups: binary calibrators on the confidence, said so
    assert any("binary ones fitted on the confidence" in c.value for c in at.caption)
    fixed = at.dataframe[1].value
    assert list(fixed.columns) == ["uncalibrated", "Isotonic regression", "MBCT"]
    # isotonic on the confidence pulls the over-confident site's held-out confidence ECE down
    assert fixed.loc["east", "Isotonic regression"] < fixed.loc["east", "uncalibrated"]
    assert {"segments.forest", "segments.grid", "segments.fix"} <= _charts(at)

    # grouped by the predicted class: top-label calibration class by class (Gupta & Ramdas' eq. 2)
    _select(at, "Group column").set_value("predicted class").run()
    _assert_clean(at)
    by_class = at.dataframe[0].value
    predicted = np.asarray(CLASSES, dtype=object)[P.argmax(axis=1)]
    for g in by_class.index:
        m = predicted == g
        assert abs(_value(by_class.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
    assert not at.warning
    # grouped by the true class: said not to be a calibration check
    _select(at, "Group column").set_value("label").run()
    _assert_clean(at)
    assert any("Grouped by the **true** class" in w.value for w in at.warning)


def test_periods_of_a_k_class_table_show_accuracy_and_classwise_ece(table):
    data, _ = table
    at = _session(pd.read_csv(pd.io.common.BytesIO(data)), "three_sites.csv")
    at.segmented_control[0].set_value("Over time").run()
    _assert_clean(at)
    assert _select(at, "Date column").value == "month"
    assert {"segments.drift", "segments.stale", "segments.stale_matrix"} <= _charts(at)
    at.selectbox(key="segments.freq").set_value("M").run()
    _assert_clean(at)
    periods = at.dataframe[0].value
    assert list(periods.index) == ["2025-01", "2025-02", "2025-03", "2025-04"]
    cs = load_classes(data, filename="three_sites.csv")
    P, y = cs.scores().probabilities, cs.labels
    _, right = mmetrics.top_label(P, y)
    month = cs.raw["month"].str[:7].to_numpy()[cs.rows]
    for g in periods.index:
        m = month == g
        assert abs(_value(periods.loc[g, "accuracy"]) - right[m].mean()) <= SHOWN
        cw = mmetrics.classwise_ece(P[m], y[m], metrics.DEFAULT_N_BINS, metrics.DEFAULT_STRATEGY)
        assert abs(float(periods.loc[g, "cwECE"]) - cw) <= SHOWN
