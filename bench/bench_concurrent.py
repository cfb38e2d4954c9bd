"""Three people at once: each uploads a 1,000,000-row CSV and opens Compare; time per person and server peak RSS.

    .venv/bin/python bench/bench_concurrent.py [--rows N] [--users U]

Starts ``streamlit run app.py`` (the end-to-end tests' own start-up), writes U different N-row CSVs, then runs U
browser sessions at once, each in its own process with its own headless Chromium (Debian's /usr/bin/chromium
driven by Playwright). Each one opens the Data page, uploads its file, goes to Compare and waits until the metrics
table with intervals and both charts are drawn. It prints each session's time from the upload to a ready
Compare page, and the server process's peak resident memory (VmHWM). Targets (issue "Scale I"): under 10 s for
each of three sessions, server peak under 1.5 GB.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_streamlit, stop_process  # noqa: E402
from tests.e2e.conftest import wait_idle as idle  # noqa: E402

TIMEOUT_MS = 120_000


def make_csv(n: int, path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < np.clip(1.3 * s, 0, 1)).astype(int)
    with open(path, "w") as fh:
        fh.write("score,label\n")
        np.savetxt(fh, np.column_stack([s, y]), fmt=["%.6f", "%d"], delimiter=",")


def session(url: str, csv: str, rows: int, out) -> None:
    """One person's run; puts (file, seconds) on ``out``, or (file, error text) if a step failed."""
    try:
        _session(url, csv, rows, out)
    except Exception as exc:  # noqa: BLE001 - reported in the table instead of leaving the parent waiting
        out.put((Path(csv).name, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))


def _session(url: str, csv: str, rows: int, out) -> None:
    from playwright.sync_api import sync_playwright

    name = Path(csv).name
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        step = "open the Data page"
        try:
            page.goto(url + "/data")
            page.wait_for_selector('[data-testid="stMain"] h1', timeout=TIMEOUT_MS)
            idle(page)
            step = "choose Upload"
            page.locator(".st-key-source").get_by_role("radio", name="Upload").click()
            file_input = page.locator('[data-testid="stFileUploaderDropzoneInput"], input[type="file"]').first
            file_input.wait_for(state="attached", timeout=TIMEOUT_MS)
            idle(page)
            t0 = time.perf_counter()
            step = "upload"
            file_input.set_input_files(csv)
            # The file's name shows in the uploader as soon as the browser starts sending it; the server has
            # read it only when the Data page's "Rows read" says so (switching page before that drops the file).
            page.wait_for_function(
                """(n) => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                         .some(m => m.innerText.includes('Rows read') && m.innerText.includes(n))""",
                arg=f"{rows:,}", timeout=TIMEOUT_MS, polling=100)
            idle(page)
            step = "open Compare"
            page.locator('[data-testid="stSidebarNav"] a', has_text="Compare").click()
            page.wait_for_selector(".st-key-compare-reliability .js-plotly-plot", timeout=TIMEOUT_MS)
            page.wait_for_selector(".st-key-compare-map .js-plotly-plot", timeout=TIMEOUT_MS)
            step = "wait for the cells note"
            page.wait_for_function("""() => document.querySelector('[data-testid="stMain"]').innerText
                                     .includes('score cells')""", timeout=TIMEOUT_MS, polling=200)
            idle(page)
        except Exception as exc:
            shot = Path(tempfile.gettempdir()) / f"bench_concurrent_{Path(csv).stem}.png"
            page.screenshot(path=str(shot), full_page=True)
            raise RuntimeError(f"step '{step}' failed (screenshot {shot}): {exc}") from exc
        out.put((name, time.perf_counter() - t0))
        browser.close()


def peak_rss_gb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024 ** 2
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for u in range(args.users):
            path = Path(tmp) / f"user{u + 1}_{args.rows}.csv"
            make_csv(args.rows, path, seed=u)
            files.append(str(path))
        proc, url = start_streamlit(Path(tmp) / "server.log")
        try:
            base = peak_rss_gb(proc.pid)
            out = mp.Queue()
            workers = [mp.Process(target=session, args=(url, f, args.rows, out)) for f in files]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            results = [out.get(timeout=TIMEOUT_MS / 1000) for _ in workers]
            for w in workers:
                w.join()
            wall = time.perf_counter() - t0
            peak = peak_rss_gb(proc.pid)
        finally:
            stop_process(proc)
    print(f"{args.users} sessions at once, {args.rows:,} rows each (CSV upload -> Compare with Platt, histogram, "
          "isotonic and intervals, on score cells)")
    print(f"{'session':<24} {'seconds':>8}")
    for name, sec in sorted(results):
        print(f"{name:<24} {sec:>8.1f}" if isinstance(sec, float) else f"{name:<24} failed: {sec}")
    print(f"all done in {wall:.1f} s; server peak RSS {peak:.2f} GB (at start {base:.2f} GB); targets: < 10 s each, "
          "< 1.5 GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
