"""K-class work bounded before it starts (calibdash.evaluation.class_budget), stopped on request (should_stop), run as the
session's cancellable jobs on the pages (pages.parts.class_jobs), and the class-wise bin rule on more classes than
rows."""
from __future__ import annotations

import numpy as np
import pytest

from calibdash.core.errors import DataError
from calibdash.core.jobs import Cancelled
from calibdash.calibrators import available
from calibdash.evaluation import class_budget as budget
from calibdash.evaluation import bootstrap as mboot
from calibdash.diagrams import classwise_bin_count, prepare_classwise
from calibdash.evaluation.holdout import MAX_FIT_ROWS, evaluate_classes
from tests.conftest import APPTEST_TIMEOUT
from tests.pages.test_app import shown as _shown


@pytest.fixture(autouse=True)
def _nothing_cached():
    """Each test starts as on a fresh server: with nothing cached. These tests check which fits run as jobs, and a
    module run earlier in the same process (the golden page cases) fits the same samples with the same scheme."""
    import streamlit as st
    from pages.parts import bounded_cache
    st.cache_data.clear()
    for cache in list(bounded_cache.CACHES.values()):
        getattr(cache, "clear", lambda: None)()
    yield


def _table(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=p) for p in P])
    return P, y


# -- the bounds ------------------------------------------------------------------------------------------------
def test_work_follows_each_family_cost_model():
    k, n = 10, 1000
    assert budget.work("temperature", n, k) == k * n
    assert budget.work("vector", n, k) == k * n
    assert budget.work("dirichlet", n, k) == budget.work("matrix", n, k) == k * k * n
    assert budget.work("ovr:isotonic", n, k) == k * n
    assert budget.work("ovr:abb", n, k) == k * (n + budget.BINARY_FIT_ROWS["abb"])
    assert budget.work("top_label:sbb", n, k) == k * n + (k + 1) * budget.BINARY_FIT_ROWS["sbb"]
    # the parametric maps are fitted on at most MAX_FIT_ROWS rows; the composites on every row
    big = 10 * MAX_FIT_ROWS
    assert budget.work("vector", big, k) == k * MAX_FIT_ROWS
    assert budget.work("ovr:isotonic", big, k) == k * big


def test_fitting_leaves_out_a_method_over_the_limit_naming_it():
    n, k = 20_000, 150                 # K^2 n = 4.5e8 > the full maps' 2e8; K n = 3e6 fits the others
    fit, refused = budget.fitting(["temperature", "dirichlet", "ovr:isotonic"], n, k)
    assert fit == ["temperature", "ovr:isotonic"] and list(refused) == ["dirichlet"]
    assert "200,000,000" in refused["dirichlet"] and "K^2 x n" in refused["dirichlet"]
    fit, refused = budget.fitting(["vector", "matrix", "ovr:isotonic"], n, k)
    assert fit == ["vector", "ovr:isotonic"] and list(refused) == ["matrix"]


def test_the_limits_are_tight_at_their_boundary():
    def fits(method, n, k):          # over a table's own bound, fitting refuses it whole
        try:
            return budget.fitting([method], n, k)[0] == [method]
        except DataError:
            return False

    n_full = budget.WORK_LIMITS["full"] // (100 * 100)      # exactly at the limit: allowed; one row more: not
    assert fits("matrix", n_full, 100) and not fits("matrix", n_full + 1, 100)
    k = 10
    n = budget.WORK_LIMITS["ovr"] // k
    assert fits("ovr:isotonic", n, k) and not fits("ovr:isotonic", n + 1, k)
    assert fits("matrix", 1000, budget.FULL_MAX_K)
    why = budget.fitting(["matrix"], 1000, budget.FULL_MAX_K + 1)[1]["matrix"]
    assert f"at most {budget.FULL_MAX_K} classes" in why


def test_a_table_of_1999_classes_is_refused_before_any_fit_for_every_method():
    with pytest.raises(DataError, match="1,999 classes are more than this server fits"):
        budget.fitting(available("classes"), 26_000, 1999)
    with pytest.raises(DataError, match="probabilities, more than"):
        budget.check_table(budget.MAX_CELLS // 100 + 1, 100)


def test_bootstrap_bound_counts_rows_classes_and_methods():
    budget.check_bootstrap(300_000, 10, 5)        # the measured case: 2.4e7
    with pytest.raises(DataError, match="bootstrap intervals of 5 methods"):
        budget.check_bootstrap(1_000_000, 10, 5)


# -- the cooperative stop -----------------------------------------------------------------------------------
class _StopAfter:
    """should_stop that answers False ``calls`` times, then True; counts the questions."""

    def __init__(self, calls: int):
        self.calls, self.asked = calls, 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.asked > self.calls


def test_evaluation_stops_between_methods_and_runs_unchanged_when_never_stopped():
    P, y = _table(600, 4)
    done = []
    with pytest.raises(Cancelled):           # asked before each of the two fits: the second one is refused
        evaluate_classes(P, y, ["temperature", "ovr:histogram"], should_stop=_StopAfter(1),
                         progress=lambda f, msg: done.append(msg))
    assert done == ["temperature: fold 1 of 2"]      # one fit of the two methods x one split
    stop = _StopAfter(10 ** 6)
    ev = evaluate_classes(P, y, ["temperature", "ovr:histogram"], should_stop=stop)
    plain = evaluate_classes(P, y, ["temperature", "ovr:histogram"])
    assert stop.asked == 3                   # two fits and the measures
    assert ev.metrics.equals(plain.metrics)


def test_kfold_stops_between_folds():
    from calibdash.evaluation.scheme import Scheme
    P, y = _table(600, 3)
    done = []
    with pytest.raises(Cancelled):
        evaluate_classes(P, y, ["temperature"], Scheme(kind="kfold", n_folds=5), should_stop=_StopAfter(2),
                         progress=lambda f, msg: done.append(msg))
    assert len(done) == 2                    # two of five folds fitted, then stopped


def test_bootstrap_stops_between_blocks_and_is_unchanged_when_never_stopped():
    P, y = _table(400, 3)
    preds = {"uncalibrated": P, "other": np.roll(P, 1, axis=1)}
    stop = _StopAfter(10 ** 6)
    a = mboot.bootstrap_multiclass(preds, y, n_boot=40, names=["ECE"], should_stop=stop, workers=1)
    b = mboot.bootstrap_multiclass(preds, y, n_boot=40, names=["ECE"], workers=1)
    assert a.table.equals(b.table)
    # two reductions, then ceil(40 / 16) = 3 blocks
    assert stop.asked == 2 + -(-40 // mboot.row_resamples._BOOT_BLOCK)
    with pytest.raises(Cancelled):
        mboot.bootstrap_multiclass(preds, y, n_boot=40, names=["ECE"], should_stop=_StopAfter(3), workers=1)


# -- the class-wise bin rule -------------------------------------------------------------------------------
def test_classwise_auto_bins_with_fewer_rows_than_classes_is_the_fewest_bins_said_so():
    bins, caption = classwise_bin_count("auto", np.zeros(1935, int), 1999)     # 0.9679 rows per class
    assert bins == 2 and "fewer than one row per class" in caption
    assert classwise_bin_count("auto", np.zeros(1999, int), 1999)[0] == 2      # exactly one row per class
    assert classwise_bin_count("auto", np.zeros(3000, int), 100)[0] == 4       # ceil(30^(1/3))
    with pytest.raises(DataError, match="at least one held-out row"):
        classwise_bin_count("auto", np.zeros(0, int), 5)
    P, y = _table(40, 50)
    assert "the fewest" in prepare_classwise({"uncalibrated": P}, y, n_bins="auto").caption({})


# -- the pages' fits as the session's jobs -----------------------------------------------------------------
def test_a_session_that_leaves_stops_its_fit_before_the_next_fit(monkeypatch):
    """The tab closed while the first method was fitting: its lease expires, the job is cancelled, and the
    fit stops at its next check (the real evaluation's should_stop), the second method never started."""
    import threading

    from calibdash import samples
    from calibdash.core.jobs import CANCELLED, JobRegistry
    from calibdash.evaluation.scheme import Scheme
    from pages.parts import classes

    cs = samples.load_class_sample("animals_3class")
    now = [0.0]
    reg = JobRegistry(max_jobs=1, lease_s=30.0, clock=lambda: now[0])
    started, go_on, calls = threading.Event(), threading.Event(), []
    real = classes._fit

    def fit(cs, scheme, method, params, should_stop=None):
        calls.append(method)
        if len(calls) == 1:
            started.set()
            go_on.wait(APPTEST_TIMEOUT)
        return real(cs, scheme, method, params, should_stop)

    monkeypatch.setattr(classes, "_fit", fit)
    job = reg.submit("fit", classes._fit_job(cs, Scheme(), {"temperature": {}, "vector": {}}), owner="tab")
    assert started.wait(APPTEST_TIMEOUT)
    now[0] += 31.0                       # nobody renewed the lease (the tab is gone) and no probe says it is there
    reg.sweep()
    assert job.cancelled
    go_on.set()
    assert job.done.wait(APPTEST_TIMEOUT)
    assert job.state == CANCELLED and isinstance(job.error, Cancelled)
    assert calls == ["temperature"]      # stopped inside the first method's evaluation, the second never began


def test_the_sessions_cancel_stops_the_bootstrap_between_blocks(monkeypatch):
    from calibdash.core.jobs import CANCELLED, JobRegistry

    P, y = _table(300, 3)
    reg = JobRegistry(max_jobs=1, lease_s=None)
    asked = []

    def work(job):
        def should_stop():
            asked.append(1)
            if len(asked) == 3:          # the owner cancels while the first block runs
                reg.release("boot", "tab")
            return job.cancelled
        return mboot.bootstrap_multiclass({"uncalibrated": P}, y, n_boot=200, names=["ECE"], should_stop=should_stop,
                                          workers=1)

    job = reg.submit("boot", work, owner="tab")
    assert job.done.wait(APPTEST_TIMEOUT)
    assert job.state == CANCELLED and len(asked) == 3     # one reduction, two blocks asked; 13 blocks never drawn


# -- the pages (AppTest: the script waits for its jobs, no browser polls their progress) ---------------------
def _on_sample(page: str, name: str = "animals_3class"):
    from tests.pages.test_app import COMPARE, DATA, go, start
    at = start(DATA)
    at.selectbox(key="sample").set_value(name).run()
    return go(at, page) if page != DATA else at


def test_compare_leaves_out_a_method_over_its_bound_says_why_and_fits_the_rest_in_jobs(monkeypatch):
    from tests.pages.test_app import COMPARE, _run_entry_point_every_time  # noqa: F401 - the fixture, by name
    from pages.parts import job_panel
    monkeypatch.setattr(budget, "WORK_LIMITS", {**budget.WORK_LIMITS, "full": 1})     # no full map fits
    slots, real = [], job_panel.run
    monkeypatch.setattr(job_panel, "run", lambda slot, *a, **kw: slots.append(slot) or real(slot, *a, **kw))
    at = _on_sample(COMPARE)
    assert not at.exception and not at.error, [e.value for e in at.error]
    warned = " ".join(_shown(w.value) for w in at.warning)
    assert "dirichlet: its work (K^2 x n) is" in warned and "over its limit of 1" in warned
    assert "Methods that fit here: temperature, vector, ovr:" in warned and "dirichlet," not in warned.split(
        "Methods that fit here:")[1]
    shown = at.main.dataframe[0].value.index
    assert not any("Dirichlet" in str(m) for m in shown) and any("Temperature" in str(m) for m in shown)
    assert "classes.fit" in slots and "classes.boot" in slots


def test_explore_with_its_method_over_every_bound_shows_the_message_not_a_traceback(monkeypatch):
    from tests.pages.test_app import EXPLORE, _run_entry_point_every_time  # noqa: F401
    monkeypatch.setattr(budget, "WORK_LIMITS", dict.fromkeys(budget.WORK_LIMITS, 1))
    at = _on_sample(EXPLORE)
    assert not at.exception
    text = " ".join(_shown(e.value) for e in at.error)
    assert "Temperature" in text or "temperature" in text
    assert "Methods that fit here: none." in text


def test_compare_over_the_bootstrap_bound_shows_the_measures_without_intervals(monkeypatch):
    from tests.pages.test_app import COMPARE, _run_entry_point_every_time  # noqa: F401
    monkeypatch.setattr(budget, "BOOTSTRAP_LIMIT", 1)
    at = _on_sample(COMPARE)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("No intervals" in _shown(w.value) and "BOOTSTRAP" not in w.value for w in at.warning)
    assert "ECE" in at.main.dataframe[0].value.columns


def test_a_table_over_the_class_limit_gets_the_message_on_compare_and_explore_before_any_fit(monkeypatch):
    from tests.pages.test_app import COMPARE, DATA, EXPLORE, go, _run_entry_point_every_time  # noqa: F401
    from pages.parts import classes
    monkeypatch.setattr(budget, "MAX_CLASSES", 2)                 # the 3-class sample is then "too many classes"
    fitted = []
    monkeypatch.setattr(classes, "_fit_job", lambda *a: fitted.append(a) or (lambda job: {}))
    at = _on_sample(COMPARE)
    assert not at.exception
    assert any("3 classes are more than this server fits (2" in _shown(e.value) for e in at.error)
    go(at, EXPLORE)
    assert not at.exception
    assert any("3 classes are more than this server fits (2" in _shown(e.value) for e in at.error)
    go(at, DATA)                                                  # said as the server's bound, not the scheme's
    assert not at.exception
    assert any("over the server's bounds" in _shown(e.value) and "3 classes are more" in _shown(e.value)
               for e in at.error)
    assert not any("evaluation scheme does not work" in _shown(e.value) for e in at.error)
    assert fitted == []
