"""Sessions that visit every page: seconds per page and the server's memory after each, for U people at once.

    .venv/bin/python bench/bench_sessions.py [--rows N] [--users U] [--parquet] [--classes K]

Starts ``streamlit run app.py`` (the end-to-end tests' own start-up, :func:`tests.e2e.conftest.start_streamlit`),
writes U different N-row files (CSV, or Parquet with ``--parquet``) with a score, a 0/1 label, a segment column
(five text values) and a date column (90 days) (with ``--classes K``: a K-class label and K probability columns
instead of the score and label; the pages' titles are then waited on, not their charts), and measures first the server at rest: just started, then
after one browser session has opened the default page on the sample and closed. Then U browser sessions run at
once, each in its own process with its own headless Chromium (Debian's /usr/bin/chromium driven by Playwright,
never ``playwright install``): open the Data page, upload its file (timed from the file being set to "Rows read"
showing that number), then visit Explore, Compare, Groups & time, Benchmark and Learn through the sidebar, each
timed from the click to its page drawn: its title shown, its main charts present and the app idle (no script run,
no stale element, no spinner: :func:`tests.e2e.conftest.wait_idle`).

Printed: per session and page the seconds, the server's resident memory right after (VmRSS of the server
and its children, from /proc) and the largest sampled while the page ran, the server's peak (VmHWM, and the largest sum over its process tree seen by a
sampler every 50 ms), and the memory at rest. Targets (issue 20): three sessions with a 1e6-row CSV each,
every page < 10 s, server peak < 1.2 GB; one such session adds < 250 MB to the server at rest; one session
with a 1e7-row Parquet: Compare < 8 s after the upload, every page < 10 s, server peak < 1 GB.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_streamlit, stop_process  # noqa: E402
from tests.e2e.conftest import wait_idle as idle  # noqa: E402

TIMEOUT_MS = 180_000
MAIN = '[data-testid="stMain"]'
#: The pages visited after the upload: sidebar link, words of its title, charts that must be drawn.
PAGES = (
    ("Explore", "Explore a calibrator", (".st-key-explore-reliability", ".st-key-explore-map")),
    ("Compare", "Compare calibrators", (".st-key-compare-reliability", ".st-key-compare-map")),
    ("Groups & time", "Groups & time", (".st-key-segments-forest",)),
    ("Benchmark", "Benchmark calibrators", ()),
    ("Learn", "Learn calibration", ()),
)
SEGMENTS = np.array(["app", "web", "store", "partner", "phone"])
#: Set from ``--classes``: the sessions upload K-class tables (their pages' charts differ: titles are waited on).
K_CLASSES = 0
#: The K-class pages' charts drawn once their fits (jobs with a progress box) are done: waited on as well.
CLASS_CHARTS = {"Explore": (".st-key-explore-mc-confidence",), "Compare": (".st-key-compare-classes-confidence",)}


def make_file(n: int, path: Path, seed: int, classes: int = 0) -> None:
    """``n`` rows: score (6 decimals), label, segment (5 values, one miscalibrated), date (90 days); with
    ``classes`` = K >= 3, a K-class table instead of the score and label: a ``label`` of K class names and one
    probability column per class (``p_<class>``, 4 decimals, overconfident)."""
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    seg = rng.integers(0, len(SEGMENTS), n)
    lift = np.where(seg == 3, 1.6, 1.2)
    y = (rng.uniform(size=n) < np.clip(lift * s, 0, 1)).astype(np.int8)
    day = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 90, n), unit="D")
    df = pd.DataFrame({"score": np.round(s, 6), "label": y, "segment": SEGMENTS[seg],
                       "date": day.strftime("%Y-%m-%d")})
    if classes >= 3:
        logits = rng.normal(size=(n, classes)) * 2.0
        cum = np.cumsum(_softmax(logits / 2.0), axis=1)                   # the truth: a softer softmax
        truth = np.minimum((cum < rng.uniform(size=(n, 1))).sum(axis=1), classes - 1)
        p = np.round(_softmax(logits), 4)
        names = [f"c{k}" for k in range(classes)]
        df = pd.DataFrame({"label": np.array(names)[truth], **{f"p_{c}": p[:, k] for k, c in enumerate(names)},
                           "segment": df["segment"], "date": df["date"]})
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- the server's memory -------------------------------------------------------------------------------------
def _status(pid: int, field: str) -> int:
    """A /proc/PID/status field in kB (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*") if Path(f"/proc/{p}/task").exists() else ():
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return out


def rss_mb(pid: int) -> float:
    """Resident memory of the server and its children, MB."""
    return sum(_status(p, "VmRSS") for p in _tree(pid)) / 1024


def hwm_mb(pid: int) -> float:
    """The server process's peak resident memory (VmHWM), MB."""
    return _status(pid, "VmHWM") / 1024


class Sampler(threading.Thread):
    """:func:`rss_mb` every 50 ms until stopped: the largest seen, and each sample's wall time."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()
        self.samples: list[tuple[float, float]] = []

    def run(self) -> None:
        while not self.done.wait(0.05):
            mb = rss_mb(self.pid)
            self.samples.append((time.time(), mb))
            self.peak = max(self.peak, mb)

    def peak_between(self, t0: float, t1: float) -> float:
        """The largest sample taken from wall time ``t0`` to ``t1`` (0 when none was)."""
        return max((mb for t, mb in self.samples if t0 <= t <= t1), default=0.0)


# -- a browser session -----------------------------------------------------------------------------------------
def _drawn(page, title: str, charts) -> None:
    page.wait_for_function("(t) => { const h = document.querySelector('[data-testid=\"stMain\"] h1');"
                           " return !!h && h.textContent.includes(t); }", arg=title, timeout=TIMEOUT_MS, polling=100)
    idle(page, timeout_ms=TIMEOUT_MS)
    for sel in charts:
        page.wait_for_selector(f"{sel} .js-plotly-plot", timeout=TIMEOUT_MS)
    idle(page, timeout_ms=TIMEOUT_MS)
    errors = page.locator(f'[data-testid="stException"], {MAIN} [data-testid="stAlertContentError"]')
    if errors.count():
        raise RuntimeError(f"the page shows an error: {errors.first.inner_text()[:300]}")


def session(url: str, path: str, rows: int, pid: int, out) -> None:
    """One person's run; puts (file, [(page, seconds, server MB)]) or (file, error text) on ``out``."""
    try:
        out.put((Path(path).name, _session(url, path, rows, pid)))
    except Exception as exc:  # noqa: BLE001 - reported in the table instead of leaving the parent waiting
        out.put((Path(path).name, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))


def _session(url: str, path: str, rows: int, pid: int) -> list:
    from playwright.sync_api import sync_playwright

    steps = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        step = "open the Data page"
        try:
            page.goto(url + "/data")
            _drawn(page, "Data", ())
            page.locator(".st-key-source").get_by_role("radio", name="Upload").click()
            file_input = page.locator('[data-testid="stFileUploaderDropzoneInput"], input[type="file"]').first
            file_input.wait_for(state="attached", timeout=TIMEOUT_MS)
            idle(page)
            step = "upload"
            t0, w0 = time.perf_counter(), time.time()
            file_input.set_input_files(path)
            page.wait_for_function(
                """(n) => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                         .some(m => m.innerText.includes('Rows read') && m.innerText.includes(n))""",
                arg=f"{rows:,}", timeout=TIMEOUT_MS, polling=100)
            _drawn(page, "Data", () if K_CLASSES else (".st-key-data-reliability",))
            steps.append(("Data (upload)", time.perf_counter() - t0, rss_mb(pid), w0, time.time()))
            for link, title, charts in PAGES:
                step = f"open {link}"
                t0, w0 = time.perf_counter(), time.time()
                page.locator('[data-testid="stSidebarNav"] a', has_text=link).click()
                # K-class pages have titles of their own ("Explore a multi-class calibrator"): their first word
                _drawn(page, link.split()[0] if K_CLASSES else title,
                       CLASS_CHARTS.get(link, ()) if K_CLASSES else charts)
                steps.append((link, time.perf_counter() - t0, rss_mb(pid), w0, time.time()))
        except Exception as exc:
            shot = Path(tempfile.gettempdir()) / f"bench_sessions_{Path(path).stem}.png"
            page.screenshot(path=str(shot), full_page=True)
            raise RuntimeError(f"step '{step}' failed (screenshot {shot}): {exc}") from exc
        browser.close()
    return steps


def visit_sample(url: str) -> None:
    """One session that opens the default page (Compare on the sample) and leaves."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        _drawn(page, "Compare calibrators", (".st-key-compare-reliability", ".st-key-compare-map"))
        browser.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=3)
    ap.add_argument("--parquet", action="store_true", help="upload Parquet files instead of CSV")
    ap.add_argument("--classes", type=int, default=0, help="K >= 3: upload K-class tables (pages' titles waited on)")
    args = ap.parse_args()
    global K_CLASSES
    K_CLASSES = args.classes
    if not Path(CHROMIUM).is_file():
        print(f"bench_sessions: skipped, {CHROMIUM} is missing (install Debian's chromium)")
        return 0
    suffix = ".parquet" if args.parquet else ".csv"
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for u in range(args.users):
            path = Path(tmp) / f"user{u + 1}_{args.rows}{suffix}"
            make_file(args.rows, path, seed=u, classes=args.classes)
            files.append(str(path))
        size = Path(files[0]).stat().st_size / 1e6
        proc, url = start_streamlit(Path(tmp) / "server.log")
        try:
            started = rss_mb(proc.pid)
            visit_sample(url)
            rest = rss_mb(proc.pid)
            sampler = Sampler(proc.pid)
            sampler.start()
            out = mp.Queue()
            workers = [mp.Process(target=session, args=(url, f, args.rows, proc.pid, out)) for f in files]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            results = [out.get(timeout=20 * TIMEOUT_MS / 1000) for _ in workers]
            for w in workers:
                w.join()
            wall = time.perf_counter() - t0
            sampler.done.set()
            sampler.join()
            after, hwm = rss_mb(proc.pid), hwm_mb(proc.pid)
        finally:
            stop_process(proc)
    kind = "Parquet" if args.parquet else "CSV"
    what = f"label, {args.classes} class probabilities" if args.classes else "score, label"
    print(f"{args.users} session(s) at once, each uploading its own {args.rows:,}-row {kind} ({size:.1f} MB: {what}, "
          "segment, date) and visiting every page; server memory in MB")
    print(f"{'session':<26} {'page':<16} {'seconds':>8} {'server MB':>10} {'peak during':>12}")
    worst = 0.0
    for name, steps in sorted(results):
        if isinstance(steps, str):
            print(f"{name:<26} failed: {steps}")
            continue
        for page, sec, mb, w0, w1 in steps:
            worst = max(worst, sec)
            print(f"{name:<26} {page:<16} {sec:>8.1f} {mb:>10.0f} {sampler.peak_between(w0, w1):>12.0f}")
    print(f"server just started {started:.0f} MB; at rest with the sample {rest:.0f} MB; after the sessions "
          f"{after:.0f} MB ({after - rest:+.0f} MB); peak {max(hwm, sampler.peak):.0f} MB (VmHWM {hwm:.0f}, "
          f"sampled {sampler.peak:.0f}); slowest page {worst:.1f} s; all done in {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
