"""Fixtures of the end-to-end tests: a live `streamlit run app.py` and Debian's headless Chromium.

The server is started once per test session from the repository root with this
interpreter (``sys.executable -m streamlit``) on a free port, and stopped at the
end. Chromium is always /usr/bin/chromium driven by Playwright's sync API; the
browser Playwright would download is never used (``playwright install`` is
never run). Screenshots go to ``test-results/`` at the repository root.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "test-results"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
#: Limits, never measures: the machine has two slow cores, the first run compiles caches, and CI may share the
#: cores with other CPU-heavy work, under which a page that renders in 10 s alone takes minutes. Every wait is
#: on a condition; these only bound how long a hung page can hold the run.
SERVER_START_S = 300
UI_TIMEOUT_MS = 600_000
VIEWPORT = {"width": 1400, "height": 900}
#: One server log per pytest-xdist worker, so parallel workers do not overwrite each other's.
SERVER_LOG = RESULTS / f"streamlit-server-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log"


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: end-to-end tests in a real headless Chromium")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_streamlit(log_path: Path, port: int | None = None, env: dict | None = None, args: tuple = ()
                    ) -> tuple[subprocess.Popen, str]:
    """Start ``streamlit run app.py`` from the repo root (with ``env`` added to the environment and ``args`` to
    streamlit's options); returns (process, base URL) once it answers."""
    port = port or free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *args],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"streamlit exited with code {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        if _answers(url + "/_stcore/health"):
            proc.log_file = log          # closed by stop_process
            return proc, url
        time.sleep(0.25)
    stop_process(proc)
    log.close()
    raise RuntimeError(f"streamlit did not answer on {url} within {SERVER_START_S} s:\n"
                       f"{log_path.read_text()[-3000:]}")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
    log = getattr(proc, "log_file", None)
    if log is not None and not log.closed:
        log.close()


def chromium_or_skip() -> None:
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`make chromium`); "
                    "Playwright's own browser download is never used")


@pytest.fixture(scope="session")
def results_dir() -> Path:
    RESULTS.mkdir(exist_ok=True)
    return RESULTS


@pytest.fixture(scope="session")
def server_url(results_dir) -> str:
    """Base URL of a live dashboard, started for this session and stopped at its end."""
    chromium_or_skip()
    proc, url = start_streamlit(SERVER_LOG)
    try:
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, headless, through Playwright's sync API."""
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()


@pytest.fixture
def app_page(chromium, server_url):
    """A fresh browser context (so a fresh Streamlit session) and page; ``page.app_url`` is the base URL."""
    context = new_context(chromium)
    page = context.new_page()
    page.app_url = server_url
    log = SERVER_LOG
    page.server_log = (log, log.stat().st_size if log.exists() else 0)   # what this test added is checked
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    try:
        yield page
    finally:
        context.close()


# -- helpers shared by the e2e tests and bench/bench_ui.py ---------------------------------
PLOT_SIGNATURE_JS = """(sel) => {
    const gd = document.querySelector(sel + ' .js-plotly-plot');
    return gd && gd.data ? JSON.stringify(gd.data) : null;
}"""

IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stSpinner"]');
}"""


#: Counts the script runs that finished in this page: every time the app's run state leaves "running".
#: Installed in every context (``new_context``), so a test can wait for "a run after my click" instead of a
#: fixed time.
RUNS_INIT_JS = """(() => {
    window.__calibdashRuns = 0;
    new MutationObserver(records => {
        for (const r of records) if (r.oldValue === 'running') window.__calibdashRuns += 1;
    }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                          attributeFilter: ['data-test-script-state']});
})();"""

FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def new_context(browser, **options):
    """A browser context (a fresh Streamlit session) whose pages count finished script runs."""
    context = browser.new_context(**{"viewport": VIEWPORT, **options})
    context.set_default_timeout(UI_TIMEOUT_MS)
    context.add_init_script(RUNS_INIT_JS)
    return context


def runs(page) -> int:
    """How many script runs have finished in ``page`` so far (a marker for :func:`wait_idle`)."""
    return int(page.evaluate("() => window.__calibdashRuns || 0"))


def wait_idle(page, since: int | None = None, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    """Wait until the app is idle: no script run, no stale element, no spinner.

    With ``since`` (a :func:`runs` value read before an action that reruns the script), first wait until a
    run has finished after it, so the wait cannot end before the action's run has started. Without it, wait
    for idle, let the browser render two frames (a click's state update is committed by then, and a rerun it
    asked for shows as "rerunRequested"), and wait for idle again. Conditions only, never a fixed time.
    """
    if since is not None:
        page.wait_for_function("(n) => (window.__calibdashRuns || 0) > n", arg=since, timeout=timeout_ms,
                               polling=100)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=100)
    page.evaluate(FRAMES_JS)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=100)


def plot_signature(page, key_class: str) -> str | None:
    """JSON of the plotly ``data`` of the chart in the element with class ``key_class``."""
    return page.evaluate(PLOT_SIGNATURE_JS, key_class)


def wait_plot_changed(page, key_class: str, before: str | None, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    page.wait_for_function(f"([sel, before]) => {{ const s = ({PLOT_SIGNATURE_JS})(sel); "
                           "return s !== null && s !== before; }",
                           arg=[key_class, before], timeout=timeout_ms, polling="raf")


TABLE_ROWS_JS = """(i) => {
    const df = document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')[i];
    if (!df) return null;
    const rows = Array.from(df.querySelectorAll('[role=row]'))
                      .map(r => Array.from(r.children).map(c => c.textContent));
    return rows.length > 1 ? rows : null;
}"""


def table(page, index: int = 0, timeout_ms: int = UI_TIMEOUT_MS) -> dict[str, dict[str, str]]:
    """The ``index``-th st.dataframe of the main area as {row label: {column: text}}.

    The grid draws on a canvas and fills its accessible table only for the
    cells on screen (columns are virtualised too), so the frame is scrolled into
    view first and only the rendered columns are returned.
    """
    page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').nth(index).scroll_into_view_if_needed(
        timeout=timeout_ms)
    rows = page.wait_for_function(TABLE_ROWS_JS, arg=index, timeout=timeout_ms, polling=100).json_value()
    header = rows[0]
    return {r[0]: dict(zip(header[1:], r[1:])) for r in rows[1:] if r}


def same_columns(a: dict[str, str], b: dict[str, str]) -> tuple[dict, dict]:
    """Two table rows restricted to the columns both have rendered."""
    common = sorted(set(a) & set(b))
    assert common, (a, b)
    return {k: a[k] for k in common}, {k: b[k] for k in common}


#: The Compare table's row for each method of an ``evaluate --json`` document's ``metrics``.
METHOD_LABELS = {"uncalibrated": "Uncalibrated", "platt": "Platt scaling", "histogram": "Histogram binning",
                 "isotonic": "Isotonic regression"}


def assert_table_shows(shown: dict[str, dict[str, str]], metrics: dict) -> None:
    """A Compare table (:func:`table`) shows every method of ``metrics`` (a saved ``evaluate --json``'s) and each
    rendered measure equals the saved value to the places shown ("0.7333 [0.731, 0.736]": value, interval)."""
    assert set(shown) == {METHOD_LABELS[m] for m in metrics}
    compared = 0
    for method, measures in metrics.items():
        for column, text in shown[METHOD_LABELS[method]].items():
            if column in measures:
                value = text.split()[0]
                places = len(value.partition(".")[2])
                assert float(value) == pytest.approx(measures[column], abs=0.5 * 10 ** -places + 1e-12), column
                compared += 1
    assert compared >= 2 * len(metrics)


def goto(page, url: str, selector: str = '[data-testid="stMain"] h1', timeout_ms: int = UI_TIMEOUT_MS) -> None:
    """Open ``url`` and wait until ``selector`` is there and the app is idle."""
    page.goto(url)
    page.wait_for_selector(selector, timeout=timeout_ms)
    wait_idle(page, timeout_ms=timeout_ms)


def screenshot(page, name: str) -> Path:
    """Full-page PNG under test-results/.

    Streamlit scrolls inside its main container, so Playwright's ``full_page``
    alone stops at the viewport: the viewport is stretched to the content first.
    """
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.png"
    size = page.viewport_size or VIEWPORT
    height = page.evaluate("""() => Math.max(document.documentElement.scrollHeight,
        ...['stMain', 'stAppViewContainer', 'stSidebarContent', 'stMainBlockContainer']
            .map(t => document.querySelector(`[data-testid="${t}"]`))
            .filter(Boolean).map(e => e.scrollHeight))""")
    height = int(min(max(height + 40, size["height"]), 8000))
    try:
        if height > size["height"]:
            page.set_viewport_size({"width": size["width"], "height": height})
            page.wait_for_function("(h) => window.innerHeight === h", arg=height)
            page.evaluate(FRAMES_JS)            # the resize is laid out and painted
            if page.locator('[data-testid="stApp"]').count():
                wait_idle(page)                 # a Streamlit page: any run the resize caused is over
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


def server_log_since(page) -> str:
    """What the server logged since the test's page was opened."""
    path, start = page.server_log
    if not path.exists():
        return ""
    with open(path, errors="replace") as fh:
        fh.seek(start)
        return fh.read()


@pytest.fixture
def ui():
    """The helpers above, for the test modules (a conftest is not importable by name)."""
    return SimpleNamespace(wait_idle=wait_idle, runs=runs, new_context=new_context, frames_js=FRAMES_JS,
                           plot_signature=plot_signature,
                           wait_plot_changed=wait_plot_changed, table=table, same_columns=same_columns,
                           assert_table_shows=assert_table_shows, goto=goto,
                           screenshot=screenshot, results=RESULTS, timeout_ms=UI_TIMEOUT_MS,
                           start_streamlit=start_streamlit, stop_process=stop_process,
                           server_log_since=server_log_since)
