"""The K-class Compare in the address bar (pages/parts/url_state.py) and its class-wise panels' bin count.

A shared link carries the multi-class methods (``mc_methods``) and their hyperparameters
(``<method>.<name>``); opened in a new session it restores them, and the fit uses those values. The class-wise
panels bin by the rule on the rows per class unless the user picks a count.
"""
from __future__ import annotations

from calibdash import calibrators
from calibdash import samples
from calibdash import diagrams as mdiagrams
from calibdash.evaluation.holdout import evaluate_classes
from calibdash.evaluation.scheme import Scheme
from pages.parts.diagrams import CLASSWISE_BINS
from pages.parts.url_state import CLASS_METHODS
from tests.pages.test_app import APP, _run_entry_point_every_time, assert_clean, charts  # noqa: F401
from tests.pages.test_app_classes import SHOWN, _frame, _number
from streamlit.testing.v1 import AppTest
from tests.conftest import APPTEST_TIMEOUT

METHOD = "top_label:histogram"


def _open(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def test_a_link_restores_the_k_class_methods_and_their_hyperparameters():
    at = _open({"sample": "logits_4class", "mc_methods": f"temperature,{METHOD},no_such_method",
                f"{METHOD}.n_bins": "7", f"{METHOD}.by": "bins"})
    assert_clean(at)
    assert at.multiselect(key=CLASS_METHODS).value == ["temperature", METHOD]   # unknown name dropped
    assert at.session_state[f"hp.{METHOD}.n_bins"] == 7
    # the measures table is the library's fit with the link's values, on the same held-out rows
    cs = samples.load_class_sample("logits_4class")
    hps = calibrators.get(METHOD, "classes").hyperparams
    params = {hp.name: at.session_state[f"hp.{METHOD}.{hp.name}"] for hp in hps}
    assert params["n_bins"] == 7
    ev = evaluate_classes(cs.scores(), cs.labels, {"temperature": {}, METHOD: params}, Scheme(), logits=True,
                          split=cs.split)
    table = _frame(at, "cwECE")
    shown = table.loc[calibrators.get(METHOD, "classes").label, "ECE"]
    assert abs(_number(shown) - ev.metrics.loc[METHOD, "ECE"]) <= SHOWN
    # the page writes its view back: the same methods and values travel on
    assert at.query_params["mc_methods"] == f"temperature,{METHOD}"
    assert at.query_params[f"{METHOD}.n_bins"] == "7" and at.query_params["sample"] == "logits_4class"


def test_choosing_methods_writes_them_to_the_address_bar():
    at = _open({"sample": "logits_4class"})
    assert_clean(at)
    at.multiselect(key=CLASS_METHODS).set_value(["vector"]).run()
    assert_clean(at)
    assert at.query_params["mc_methods"] == "vector"


def test_classwise_panels_bin_by_the_rows_per_class_unless_overridden():
    at = _open({"sample": "logits_4class", "mc_methods": "temperature"})
    assert_clean(at)
    cs = samples.load_class_sample("logits_4class")
    n_held = int(_frame(at, "frequency")["rows"].sum())                  # the held-out rows (per-class table)
    bins, text = mdiagrams.classwise_bin_count("auto", range(n_held), cs.k)
    captions = [c.value for c in at.main.caption]
    assert any(text in c for c in captions), captions                     # the chosen count, said
    fig = charts(at)["compare.classes.classwise"]
    assert bins < 15
    at.select_slider(key=CLASSWISE_BINS).set_value(10).run()    # the user's count overrides
    assert_clean(at)
    assert any("10 bins, equal-width" in c.value for c in at.main.caption)
    assert charts(at)["compare.classes.classwise"] != fig
