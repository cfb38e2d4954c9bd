"""Every page's figures and tables on the samples, kept as golden outputs (issue 27: same answers before and after).

A case opens one page in a fresh AppTest session, on the built-in binary sample or on an uploaded K-class sample,
and dumps what the page draws: each plotly figure's JSON and each table's values. Widget keys and the order of the
parts on a page may change in a refactor; what the person sees may not, so the comparison (``test_pages.py``) matches
each golden figure and table with one of the page's by content (text exactly, numbers to 1e-12).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = Path(__file__).resolve().parent / "pages_outputs"
PAGES = ["data", "explore", "compare", "segments", "benchmark", "learn"]
UPLOADS = {"binary": None, "k3": "multiclass/animals_3class.csv"}
BINARY_METHODS = ["platt", "histogram", "isotonic", "bbq", "sbb", "abb", "elite", "mbct", "enir", "beta",
                  "temperature", "venn_abers", "scaling_binning"]
CLASS_METHODS = ["temperature", "vector", "matrix", "dirichlet", "ovr:histogram", "top_label:isotonic"]
RUN_BENCHMARK = [("select_slider", "bench.folds", 3), ("select_slider", "bench.repeats", 1), ("button", "bench.run", None)]


def _cases() -> dict[str, tuple[str, str | None, list]]:
    """name -> (page, uploaded sample or None for the built-in one, widget actions after opening the page)."""
    cases = {f"{page}_{data}": (f"pages/{page}.py", upload, []) for data, upload in UPLOADS.items() for page in PAGES}
    cases["benchmark_binary_run"] = ("pages/benchmark.py", None, RUN_BENCHMARK)
    cases["benchmark_k3_run"] = ("pages/benchmark.py", UPLOADS["k3"], RUN_BENCHMARK)
    for method in BINARY_METHODS:
        cases[f"explore_binary_{method}"] = ("pages/explore.py", None, [("selectbox", "explore.method", method)])
    for method in CLASS_METHODS:
        cases[f"explore_k3_{method.replace(':', '_')}"] = ("pages/explore.py", UPLOADS["k3"],
                                                           [("selectbox", "explore.mc.method", method)])
    return cases


CASES = _cases()


def _start_from_entry_point():
    """Every run starts from app.py, as the live server does after its first run (see tests/pages/test_app.py)."""
    from streamlit.runtime.pages_manager import PagesManager
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init
    return lambda: setattr(PagesManager, "__init__", original)


def page_parts(name: str, timeout: float) -> dict:
    """Open the case's page as a person would and return ``{"figures": [...], "tables": [...], "errors": [...]}``."""
    from streamlit.testing.v1 import AppTest

    page, upload, actions = CASES[name]
    restore = _start_from_entry_point()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout).run()
        if upload is not None:
            at.switch_page("pages/data.py").run()
            at.segmented_control(key="source").set_value("Upload").run()
            data = (ROOT / "sample_data" / upload).read_bytes()
            at.file_uploader(key="data.uploader").set_value((Path(upload).name, data, "text/csv")).run()
        at.switch_page(page).run()
        at.run()
        for kind, key, value in actions:
            widget = getattr(at, kind)(key=key)
            (widget.click() if kind == "button" else widget.set_value(value)).run()
    finally:
        restore()
    figures = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    for figure in figures:
        figure.get("layout", {}).pop("template", None)        # plotly's theme, the same on every figure
    tables = [json.loads(t.value.to_json(orient="split", double_precision=15, default_handler=str))
              for t in at.dataframe if hasattr(t.value, "to_json")]
    errors = [str(e.value) for e in list(at.exception) + list(at.error)]
    return {"figures": figures, "tables": tables, "errors": errors}


def dump(parts: dict) -> str:
    return json.dumps(parts, indent=1, sort_keys=True, allow_nan=True)


def golden_path(name: str) -> Path:
    return OUTPUTS / f"{name}.json.gz"


def write_golden(name: str, timeout: float = 600) -> dict:
    parts = page_parts(name, timeout)
    OUTPUTS.mkdir(exist_ok=True)
    with open(golden_path(name), "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(dump(parts).encode("utf-8"))                    # mtime 0: the same text gives the same bytes
    return parts


def read_golden(name: str) -> str:
    with gzip.open(golden_path(name), "rt", encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":           # python tests/golden/pages.py [NAME ...]: write the golden outputs
    import sys
    sys.path.insert(0, str(ROOT))
    for case in sys.argv[1:] or sorted(CASES):
        found = write_golden(case)
        print(case, len(found["figures"]), "figures", len(found["tables"]), "tables", found["errors"][:1], flush=True)
