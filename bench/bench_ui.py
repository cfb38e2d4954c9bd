"""Time, in a real browser, from a slider change on the Explore page to the redrawn chart.

    .venv/bin/python bench/bench_ui.py [--rows N] [--repeats R] [--strict]

Writes an N-row CSV (default 100,000: a score in [0, 1], a 0/1 label and an age
feature) to a temporary folder, starts ``streamlit run app.py`` on a free port,
opens it in Debian's headless Chromium (/usr/bin/chromium, driven by
Playwright; its own browser download is never used), uploads the CSV on the
Data page and goes to Explore (histogram binning). Then, R times per slider, it
presses ArrowRight on the slider thumb and measures in the page, with
``performance.now()``, the time from the keydown to the first animation frame
where the reliability chart's plotly ``data`` differs from before, and to the
end of the script run (no stale element left).

Sliders:
  * ``B — n_bins`` of histogram binning: every press is a new value, so the
    calibrator is refitted (no cache hit) and both charts and the table redrawn;
  * ``Bins of the reliability diagram``: only the diagram is recomputed
    (alternating right/left, since it has 6 stops).

Target: median and max under 1 s. ``--strict`` exits with 1 when it is missed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# The server and browser set-up is the end-to-end tests' own, so the bench measures the same thing.
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_streamlit as start_server  # noqa: E402
from tests.e2e.conftest import stop_process as stop_server  # noqa: E402
from tests.e2e.conftest import wait_idle  # noqa: E402
TARGET_S = 1.0
TIMEOUT_MS = 180_000

SIG_JS = """(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot');
                      return gd && gd.data ? JSON.stringify(gd.data) : null; }"""
INSTALL_JS = """() => {
    window.__bench = {t0: null};
    document.addEventListener('keydown', () => { window.__bench.t0 = performance.now(); }, true);
}"""
CHANGED_JS = """([sel, before]) => {
    const gd = document.querySelector(sel + ' .js-plotly-plot');
    const s = gd && gd.data ? JSON.stringify(gd.data) : null;
    if (s !== null && s !== before) { window.__bench.t1 = performance.now(); return true; }
    return false;
}"""
DONE_JS = """() => {
    const a = document.querySelector('[data-testid="stApp"]');
    const idle = !!a && a.getAttribute('data-test-script-state') === 'notRunning'
                 && !document.querySelector('[data-stale="true"]');
    if (idle) { window.__bench.t2 = performance.now(); }
    return idle;
}"""


def make_csv(n: int, path: Path) -> int:
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < np.clip(1.3 * s, 0, 1)).astype(int)     # miscalibrated on purpose
    age = rng.integers(18, 80, n)
    with open(path, "w") as fh:
        fh.write("age,score,label\n")
        fh.writelines(f"{a},{p:.6f},{t}\n" for a, p, t in zip(age, s, y))
    return path.stat().st_size


def upload_and_open_explore(page, url: str, csv: Path, n: int) -> None:
    page.goto(url + "/data")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=TIMEOUT_MS)
    wait_idle(page)
    page.locator(".st-key-source").get_by_role("radio", name="Upload").click()
    file_input = page.locator('[data-testid="stFileUploaderDropzoneInput"], input[type="file"]').first
    file_input.wait_for(state="attached", timeout=TIMEOUT_MS)
    wait_idle(page)
    file_input.set_input_files(str(csv))
    page.wait_for_function(
        """(n) => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                 .some(m => m.innerText.includes('Rows read') && m.innerText.includes(n))""",
        arg=f"{n:,}", timeout=TIMEOUT_MS)
    wait_idle(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Explore").click()
    page.wait_for_selector(".st-key-explore-reliability .js-plotly-plot", timeout=TIMEOUT_MS)
    wait_idle(page)
    caption = page.locator('[data-testid="stMain"]').inner_text()
    if csv.name not in caption:
        raise RuntimeError(f"Explore does not show the uploaded file {csv.name}")


def time_slider(page, key_class: str, keys: list[str]) -> list[tuple[float, float, str]]:
    """For each key press: (s to chart data change, s to end of run, new slider value)."""
    out = []
    thumb = page.locator(key_class).get_by_role("slider")
    chart = ".st-key-explore-reliability"
    for key in keys:
        wait_idle(page)
        before = page.evaluate(SIG_JS, chart)
        page.evaluate("() => { window.__bench.t0 = null; window.__bench.t1 = null; window.__bench.t2 = null; }")
        thumb.focus()
        page.keyboard.press(key)
        page.wait_for_function(CHANGED_JS, arg=[chart, before], timeout=TIMEOUT_MS, polling="raf")
        page.wait_for_function(DONE_JS, timeout=TIMEOUT_MS, polling="raf")
        t = page.evaluate("() => window.__bench")
        out.append(((t["t1"] - t["t0"]) / 1000, (t["t2"] - t["t0"]) / 1000, thumb.get_attribute("aria-valuetext")))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--strict", action="store_true", help="exit 1 when the 1 s target is missed")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        print(f"bench_ui: skipped, {CHROMIUM} is missing (install Debian's chromium; never `playwright install`)")
        return 0
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / f"bench_ui_{args.rows}.csv"
        size = make_csv(args.rows, csv)
        proc, url = start_server(Path(tmp) / "streamlit.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.set_default_timeout(TIMEOUT_MS)
                    t = time.perf_counter()
                    upload_and_open_explore(page, url, csv, args.rows)
                    t_setup = time.perf_counter() - t
                    page.evaluate(INSTALL_JS)
                    refit = time_slider(page, ".st-key-hp-histogram-n_bins", ["ArrowRight"] * args.repeats)
                    redraw = time_slider(page, ".st-key-explore-n_bins",
                                         ["ArrowRight" if i % 2 == 0 else "ArrowLeft" for i in range(args.repeats)])
                    version = browser.version
                finally:
                    browser.close()
        finally:
            stop_server(proc)

    print(f"UI bench: Explore page, {args.rows:,} uploaded rows ({size / 1e6:.1f} MB CSV), "
          f"Chromium {version} headless, {os.cpu_count()} CPUs; upload + first Explore render {t_setup:.1f} s")
    print("time from ArrowRight/Left keydown to the reliability chart's new plotly data (and to the end of the run)")
    header = f"{'slider':<44} {'runs':>4} {'median s':>9} {'max s':>7} {'run end median s':>17} {'run end max s':>14}  target"
    print(header)
    print("-" * len(header))
    missed = False
    for name, res in (("B — n_bins (histogram refit + redraw)", refit),
                      ("Bins of the reliability diagram (redraw)", redraw)):
        chart = [r[0] for r in res]
        done = [r[1] for r in res]
        ok = max(chart) < TARGET_S
        missed |= not ok
        print(f"{name:<44} {len(res):>4} {statistics.median(chart):>9.3f} {max(chart):>7.3f} "
              f"{statistics.median(done):>17.3f} {max(done):>14.3f}  {'< 1 s ok' if ok else 'MISSED (>= 1 s)'}")
    for name, res in (("B", refit), ("diagram bins", redraw)):
        print(f"  {name}: " + ", ".join(f"{v}: {c:.3f}s" for c, _, v in res))
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
