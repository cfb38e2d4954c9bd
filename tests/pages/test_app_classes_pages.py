"""AppTest of Explore on K-class data (the multi-class samples), headless."""
from __future__ import annotations

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from tests.conftest import APPTEST_TIMEOUT, REPO
from tests.pages.test_app import assert_clean, charts

APP = REPO / "app.py"
SAMPLES = REPO / "sample_data" / "multiclass"


@pytest.fixture(autouse=True)
def _run_entry_point_every_time(monkeypatch):
    """As tests/pages/test_app.py: every run starts from app.py, as the live server does after its first run."""
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def start(page: str, upload: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APPTEST_TIMEOUT).run()
    if upload is not None:                     # the Data page's uploader leaves the file in the session so
        at.switch_page("pages/data.py").run()
        at.segmented_control(key="source").set_value("Upload").run()
        data = (SAMPLES / upload).read_bytes()
        at.file_uploader(key="data.uploader").set_value((upload, data, "text/csv")).run()
    at.switch_page(page).run()
    return at.run()


def test_explore_three_classes_temperature_or_ovr_and_simplex():
    """On the 3-class sample Explore shows the multi-class page: measures of the raw probabilities and the method,
    confidence and class-wise diagrams, and, for one-vs-rest binning, the per-class maps and the simplex map."""
    at = start("pages/explore.py", "animals_3class.csv")
    assert_clean(at)
    assert at.title[0].value == "Explore a calibrator"
    at.selectbox(key="explore.mc.method").set_value("ovr:histogram").run()
    assert_clean(at)
    table = at.main.dataframe[0].value
    assert list(table.index) == ["Uncalibrated", "One-vs-rest histogram binning"]
    assert {"ECE", "cwECE", "LogLoss"} <= set(table.columns)
    # the sample's model is over-confident (README: ECE 0.093): the calibrated ECE is lower
    assert table.loc["One-vs-rest histogram binning", "ECE"] < table.loc["Uncalibrated", "ECE"]
    figs = charts(at)
    assert {"explore.mc.confidence", "explore.mc.classwise"} <= set(figs)
    inner = [figs[k] for k in figs if k.startswith("explore.inner.")]
    assert any(t.get("type") == "scatterternary" for f in inner for t in f["data"])
    maps = next(f for f in inner if any(t.get("meta") in (0, 1, 2) for t in f["data"]))
    assert sorted(t["meta"] for t in maps["data"] if isinstance(t.get("meta"), int)) == [0, 1, 2]
    assert "3 classes" in "\n".join(c.value for c in at.sidebar.caption)


def test_explore_ten_classes_top_label_shows_pooled_classes():
    at = start("pages/explore.py", "cifar10_lenet5.csv")
    at.selectbox(key="explore.mc.method").set_value("top_label:histogram").run()
    assert_clean(at)
    figs = charts(at)
    inner = [figs[k] for k in figs if k.startswith("explore.inner.")]
    assert len(inner) == 1                          # no simplex map for K = 10
    metas = [t.get("meta") for t in inner[0]["data"]]
    assert "pooled" in metas and sum(isinstance(m, int) for m in metas) == 10
    assert any("pooled map" in m.value for m in at.main.markdown)
