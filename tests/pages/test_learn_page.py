"""AppTest of the Learn page (pages/learn.py) through app.py: it renders, shows the known true errors, and follows
its widgets.

The page runs inside app.py's st.navigation; tests switch to it as a user would.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from calibdash import calibrators, synthetic
from calibdash.measures import calibration as metrics
from tests.conftest import APPTEST_TIMEOUT

APP = Path(__file__).resolve().parents[2] / "app.py"
LEARN = "pages/learn.py"
CHARTS = {"learn.truth", "learn.maps", "learn.bias"}
TRUE = "true | score"


def open_learn(**state) -> AppTest:
    """A fresh session on the Learn page; ``state`` presets widget values (key -> value) before the first run."""
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    at.run()
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page(LEARN).run()
    return at


def label(method: str) -> str:
    return calibrators.get_class(method).label


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, [e.value for e in at.main.error]


def charts(at: AppTest) -> dict[str, dict]:
    out = {}
    for el in at.get("plotly_chart"):
        out[el.proto.id.rsplit("-", 1)[-1]] = json.loads(el.proto.spec)
    return out


def draw_table(at: AppTest):
    """The table of true error vs ECE/MVCE on the current draw."""
    for df in at.main.dataframe:
        if TRUE in df.value.columns:
            return df.value
    raise AssertionError("no true-error table on the page")


def study_table(at: AppTest):
    for df in at.main.dataframe:
        if "bias" in df.value.columns:
            return df.value
    raise AssertionError("no bias/variance table on the page")


def test_learn_page_renders_with_its_defaults():
    at = open_learn(**{"learn.repeats": 5})
    assert_clean(at)
    assert at.title[0].value == "Learn calibration with a known truth"
    assert at.selectbox(key="learn.scenario").value == "calibrated"
    assert at.multiselect(key="learn.methods").value == ["platt", "isotonic", "bbq"]
    figs = charts(at)
    assert CHARTS <= set(figs), set(figs)
    truth = [t for t in figs["learn.maps"]["data"] if t.get("legendgroup") == "truth"]
    assert len(truth) == 3 and {t["line"]["color"] for t in truth} == {"#000000"}
    table = draw_table(at)
    assert list(table.index) == ["Uncalibrated"] + [label(m) for m in ("platt", "isotonic", "bbq")]
    assert table.loc["Uncalibrated", TRUE] == pytest.approx(0.0, abs=1e-12)      # calibrated by construction
    assert (table["ECE"] > 0).all()
    study = study_table(at)
    assert len(study) == 4 * 2
    # each chosen calibrator's hyperparameters are explained in words from its HyperParam.help
    captions = " ".join(c.value for c in at.main.caption)
    assert f"ECE ({metrics.binning_label()})" in captions       # the binning the table's ECE used
    for m in ("platt", "isotonic", "bbq"):
        for hp in calibrators.get_class(m).hyperparams:
            assert hp.help in captions


def test_scenario_choice_sets_its_sample_size_and_shows_its_known_error():
    at = open_learn(**{"learn.repeats": 5})
    at.selectbox(key="learn.scenario").set_value("small_sample").run()
    assert_clean(at)
    assert at.select_slider(key="learn.n").value == synthetic.SCENARIOS["small_sample"].default_n
    assert at.subheader[0].value == synthetic.SCENARIOS["small_sample"].title
    assert draw_table(at).loc["Uncalibrated", TRUE] == pytest.approx(1 / 6, abs=1e-6)
    at.selectbox(key="learn.scenario").set_value("overconfident").run()
    assert_clean(at)
    assert at.select_slider(key="learn.n").value == 1000
    assert draw_table(at).loc["Uncalibrated", TRUE] == pytest.approx(math.log(2) / 2 - 0.25, abs=1e-6)


def test_seed_calibrators_and_truth_toggle_follow_the_widgets():
    at = open_learn(**{"learn.repeats": 5, "learn.scenario": "circles_linear", "learn.n": 500})
    assert_clean(at)
    before = draw_table(at)
    at.slider(key="learn.seed").set_value(7).run()
    assert_clean(at)
    after = draw_table(at)
    assert after.loc["Uncalibrated", TRUE] == pytest.approx(before.loc["Uncalibrated", TRUE])   # the population's
    assert after.loc["Uncalibrated", "ECE"] != pytest.approx(before.loc["Uncalibrated", "ECE"])  # the sample's
    bias = [t for t in charts(at)["learn.bias"]["data"] if t.get("legendgroup") == "current"]
    assert bias and "seed 7" in bias[0]["name"]

    at.multiselect(key="learn.methods").set_value(["histogram"]).run()
    assert_clean(at)
    hist = label("histogram")
    assert list(draw_table(at).index) == ["Uncalibrated", hist]
    by_score = study_table(at)
    at.segmented_control(key="learn.against").set_value("prediction").run()
    assert_clean(at)
    by_pred = study_table(at)
    # a step map's error given its prediction is smaller, so the estimates' differences from it are larger
    assert by_pred.loc[(hist, "ECE"), "bias"] > by_score.loc[(hist, "ECE"), "bias"]
    np.testing.assert_allclose(by_pred.loc[("Uncalibrated", "ECE"), "bias"], by_score.loc[("Uncalibrated", "ECE"),
                                                                                          "bias"])

    at.multiselect(key="learn.methods").set_value([]).run()
    assert_clean(at)
    assert list(draw_table(at).index) == ["Uncalibrated"]
    assert "learn.maps" not in charts(at)


def test_a_draw_that_cannot_be_used_shows_a_message_not_a_traceback():
    seed = next(s for s in range(100) if synthetic.draw("imbalance", 100, s).labels.sum() < 2)
    at = open_learn(**{"learn.scenario": "imbalance", "learn.n": 100, "learn.seed": seed, "learn.repeats": 5})
    assert not at.exception
    assert any("fewer than 2 rows" in e.value for e in at.main.error)


def test_learn_kclass_lesson():
    """The K-class lesson: this draw's true error per method and the error-against-n curve, one line per method."""
    at = open_learn()
    at.segmented_control(key="learn.mode").set_value("classes").run()
    assert_clean(at)
    table = at.main.dataframe[0].value
    assert table.loc["One-vs-rest histogram binning", "true error"] < table.loc["Uncalibrated", "true error"]
    curve = charts(at)["learn.mc.sizes"]
    assert [t["meta"] for t in curve["data"]][0] == "uncalibrated"
    assert "ovr:histogram" in [t["meta"] for t in curve["data"]]


def test_kclass_lesson_fits_the_hyperparameters_chosen():
    """The K-class lesson offers its methods' hyperparameters as the binary one does, and fits with them: the
    table is the library's trial at those settings."""
    from calibdash.synthetic import multiclass_study as mstudy

    at = open_learn(**{"learn.mode": "classes", "learn.mc.methods": ["ovr:histogram"], "learn.mc.n": 1000,
                       "learn.mc.repeats": 3})
    assert_clean(at)
    name = "One-vs-rest histogram binning"

    def expected(params: dict) -> float:
        tr = mstudy.class_trial(mstudy.overconfident(3, mstudy.TEMPERATURE), 1000, 0, {"ovr:histogram": params})
        return float(tr.errors.set_index("method").loc["ovr:histogram", "true_error"])

    assert at.main.dataframe[0].value.loc[name, "true error"] == pytest.approx(expected({}), abs=1e-12)
    at.select_slider(key="hp.ovr:histogram.n_bins").set_value(3).run()
    assert_clean(at)
    coarse = at.main.dataframe[0].value.loc[name, "true error"]
    assert coarse == pytest.approx(expected({"n_bins": 3}), abs=1e-12)
    assert coarse != pytest.approx(expected({}), abs=1e-6)
