"""Compare page: the view travels in the URL, intervals and verdict, downloads."""
from streamlit.testing.v1 import AppTest

from tests.conftest import APPTEST_TIMEOUT, REPO
from tests.pages.test_app import shown


def _app():
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=APPTEST_TIMEOUT)


def test_url_restores_methods_and_hyperparameters():
    at = _app()
    at.query_params["methods"] = "platt,bbq"
    at.query_params["bbq.c"] = "5"
    at.query_params["sample"] = "breast_cancer_nb"
    at.run()
    assert not at.exception
    ms = [m for m in at.multiselect if m.label == "Calibrators"][0]
    assert ms.value == ["platt", "bbq"]
    assert at.session_state["hp.bbq.c"] == 5
    assert shown(at.sidebar.caption[0].value).startswith("breast_cancer_nb.csv")     # the sidebar's data line
    table = at.dataframe[0].value
    assert list(table.index) == ["Uncalibrated", "Platt scaling", "BBQ"]


def test_widget_changes_are_written_to_the_url():
    at = _app()
    at.run()
    ms = [m for m in at.multiselect if m.label == "Calibrators"][0]
    ms.set_value(["isotonic"]).run()
    assert at.query_params["methods"] == "isotonic"


def test_intervals_verdict_and_downloads():
    at = _app()
    at.run()
    cell = at.dataframe[0].value.iloc[0, 0]
    assert "[" in cell and "]" in cell                     # value [low, high]
    assert any("has the lowest ECE" in i.value for i in at.info)
    labels = [b.label for b in at.get("download_button")]
    assert "Calibrated predictions (CSV)" in labels and "Measures table (CSV)" in labels
    assert any(lab.startswith("Fitted Platt scaling") for lab in labels)


def test_more_measures_on_request_with_intervals_and_readings():
    """Off by default (Compare stays fast); on, a table of every further measure with intervals, and the two
    tests with their p-values and readings, each method on one row."""
    at = _app()
    at.run()
    assert len(at.dataframe) == 1
    at.toggle(key="compare.measures").set_value(True).run()
    assert not at.exception and not at.error
    table, tests = at.dataframe[1].value, at.dataframe[2].value
    assert list(table.columns) == ["smECE", "ACE", "dCE", "ICI", "E50", "E90", "CITL", "Slope", "MCB", "DSC",
                                   "UNC", "REL", "RES", "Spieg. z", "HL"]
    assert list(table.index) == ["Uncalibrated", "Platt scaling", "Histogram binning", "Isotonic regression"]
    value, interval = table.loc["Platt scaling", "Slope"].split(" [")
    lo, hi = map(float, interval.rstrip("]").split(", "))
    assert lo <= float(value) <= hi
    assert list(tests.index) == list(table.index)
    assert all(r.startswith(("Evidence", "No evidence")) for r in tests["reading (z)"])



def test_report_download_is_offered():
    """Compare offers the HTML report beside the CSVs (its content: tests/report/test_report.py)."""
    at = _app()
    at.run()
    labels = [b.label for b in at.get("download_button")]
    assert "Report (HTML)" in labels and labels.index("Report (HTML)") == labels.index("Measures table (CSV)") + 1
