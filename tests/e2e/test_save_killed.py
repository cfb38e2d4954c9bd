"""End-to-end: the dashboard's server is killed (SIGKILL) while it saves a run of a 1,000,000-row upload. No half
run is left: the catalog lists only complete runs, the Runs page after a restart does not show the killed save, and
the orphan files are swept. The run saved whole before the kill opens by link in a fresh browser after the restart
(SQLite catalog) with every shown number equal to its saved JSON.

The kill must land in the middle of the save, so the test freezes the server (SIGSTOP) as soon as the save's
``.partial-<id>`` folder appears and looks: if the folder is still partial, the save is caught half-way and the
server is killed; if the save had already finished, the server is resumed and the test saves again."""
from __future__ import annotations

import os
import signal
import time

import pytest

from calibdash.io.runs import Workspace

from .test_browser import MAIN, _nav, _upload_input
from .test_large import _write_big_csv

pytestmark = pytest.mark.e2e

ATTEMPTS = 6


def _folders(runs_folder) -> tuple[list[str], int]:
    """The save folders still partial, and how many runs are in place (renamed)."""
    if not runs_folder.exists():
        return [], 0
    names = [e.name for e in os.scandir(runs_folder)]
    partial = [n for n in names if n.startswith(".partial-")]
    return partial, len(names) - len(partial)


def _click_save(page, ui, name: str):
    """Open Save run, name the run and click Save; returns the locator of its "Saved" message."""
    page.get_by_role("button", name="Save run").click()
    page.get_by_role("textbox", name="Name").fill(name)
    page.get_by_role("textbox", name="Name").press("Enter")
    ui.wait_idle(page)
    page.get_by_role("button", name="Save", exact=True).click()
    return page.locator(f'[data-testid="stAlertContentSuccess"]:has-text("{name}")')


def _close_saved(page, ui, done) -> None:
    """Wait for the "Saved" message, then close the popover (the next Save run click must open it)."""
    done.wait_for(timeout=ui.timeout_ms)
    page.keyboard.press("Escape")
    ui.wait_idle(page)


def _save_and_freeze(page, ui, proc, runs_folder, name: str) -> bool:
    """Click Save; freeze the server once a partial folder appears. True if it froze mid-save (the partial folder
    still there), False if the save finished first (the server is resumed and the popover closed). The loop reads
    only the folder (no browser call), so it looks every half millisecond even on a busy machine."""
    _, placed = _folders(runs_folder)
    done = _click_save(page, ui, name)
    deadline = time.monotonic() + ui.timeout_ms / 1000
    while True:
        partial, now_placed = _folders(runs_folder)
        if partial:
            break
        if now_placed > placed or time.monotonic() > deadline:
            _close_saved(page, ui, done)
            return False
        time.sleep(0.0005)
    os.kill(proc.pid, signal.SIGSTOP)
    if _folders(runs_folder)[0]:
        return True
    os.kill(proc.pid, signal.SIGCONT)
    _close_saved(page, ui, done)
    return False


def test_a_server_killed_mid_save_leaves_no_half_run(chromium, ui, results_dir, tmp_path):
    from tests.e2e.conftest import start_streamlit, stop_process
    folder = tmp_path / "workspace"
    env = {"CALIBDASH_WORKSPACE": str(folder), "CALIBDASH_CATALOG": f"sqlite:///{folder / 'catalog.sqlite'}"}
    proc, url = start_streamlit(results_dir / "streamlit-killed.log", env=env)
    runs_folder = folder / "runs"
    context = ui.new_context(chromium)
    try:
        page = context.new_page()
        ui.goto(page, url + "/data", f"{MAIN} h1")
        _upload_input(page, ui).set_input_files(str(_write_big_csv(tmp_path / "clicks_1m.csv")))
        page.wait_for_function(
            """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]'))
                     .some(m => m.innerText.includes('Rows read') && m.innerText.includes('1,000,000'))""",
            timeout=ui.timeout_ms)
        ui.wait_idle(page)
        _nav(page, ui, "Compare")
        page.locator(".st-key-compare-reliability .js-plotly-plot").wait_for(timeout=ui.timeout_ms)
        ui.wait_idle(page)

        _close_saved(page, ui, _click_save(page, ui, "whole run"))
        finished = ["whole run"]
        for attempt in range(ATTEMPTS):
            name = f"killed save {attempt}"
            if _save_and_freeze(page, ui, proc, runs_folder, name):
                break
            finished.append(name)
        else:
            pytest.fail(f"no save was caught half-way in {ATTEMPTS} attempts")
        orphan = _folders(runs_folder)[0]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        context.close()
        stop_process(proc)

    ws = Workspace(folder)                      # its start-up sweep keeps young orphans: a save may be under way
    listed = ws.list(None)
    assert sorted(r.name for r in listed) == sorted(finished)
    for record in listed:                       # every listed run is whole
        assert len(ws.open(record.id, None).rows()) == 1_000_000
    assert set(orphan) <= {e.name for e in os.scandir(runs_folder)}

    proc, url = start_streamlit(results_dir / "streamlit-killed-2.log", env=env)
    try:
        _after_restart(chromium, ui, url, ws, listed, killed=f"killed save {len(finished) - 1}")
    finally:
        stop_process(proc)
    assert ws.sweep(older_than=0) == orphan
    assert sorted(e.name for e in os.scandir(runs_folder)) == sorted(r.id for r in listed)


def _after_restart(chromium, ui, url, ws, listed, killed: str) -> None:
    """The Runs page lists the whole runs and not the killed save; the whole run opens by link in a teammate's
    fresh browser with the numbers of its saved JSON."""
    context = ui.new_context(chromium)
    try:
        page = context.new_page()
        ui.goto(page, url + "/runs", f"{MAIN} h1:has-text('Saved runs')")
        assert f"{len(listed)} of {len(listed)} run(s)" in page.locator(MAIN).inner_text()
        names = {row.get("name") or label for label, row in ui.table(page, 0).items()}
        assert "whole run" in names and killed not in names, names
        ui.screenshot(page, "e2e-save-killed-runs-after-restart")
        whole = next(r for r in listed if r.name == "whole run")
        ui.goto(page, f"{url}/?run={whole.id}", f"{MAIN} h1:has-text('Compare calibrators')")
        ui.assert_table_shows(ui.table(page, 0), ws.open(whole.id, None).results["metrics"])
        ui.screenshot(page, "e2e-save-killed-whole-run-by-link")
    finally:
        context.close()
