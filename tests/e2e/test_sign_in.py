"""End-to-end: sign-in through a real OpenID Connect provider (oidc-provider-mock) and two users in headless
Chromium. Ann saves a private run; Bob, opening its link, is told it is not shared with him and sees no data; Ann
shares it with Bob on the Runs page; Bob's link then shows Ann's numbers."""
from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import IN_CI, REPO

pytestmark = pytest.mark.e2e

MAIN = '[data-testid="stMain"]'
USERS = {"ann": "ann@example.org", "bob": "bob@example.org"}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    """A local OpenID Connect provider that signs in whoever types a known subject."""
    exe = Path(sys.executable).parent / "oidc-provider-mock"
    if not exe.exists():
        if IN_CI:
            pytest.fail("the sign-in tests need oidc-provider-mock (tests/requirements.txt)", pytrace=False)
        pytest.skip("oidc-provider-mock is not installed (make test installs it)")
    from tests.e2e.conftest import free_port
    port = free_port()
    log = open(tmp_path_factory.mktemp("oidc") / "provider.log", "w")
    claims = [a for sub, email in USERS.items()
              for a in ("--user-claims", json.dumps({"sub": sub, "email": email, "name": sub.title()}))]
    proc = subprocess.Popen([str(exe), "--port", str(port), *claims], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/.well-known/openid-configuration", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the OpenID Connect provider did not start") from None
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


@pytest.fixture(scope="module")
def signed_server(provider, postgres_server, tmp_path_factory, results_dir):
    """(base URL, the server's environment, restart()): see :func:`_signed_server`."""
    yield from _signed_server(provider, postgres_server, tmp_path_factory, results_dir)


def _signed_server(provider, postgres_server, tmp_path_factory, results_dir):
    """The dashboard with sign-in on (an [auth] section naming the provider), a workspace of its own and its
    catalog on the test PostgreSQL server (a team server's set-up; the AppTest link tests use SQLite)."""
    from tests.conftest import new_database
    from tests.e2e.conftest import free_port, start_streamlit, stop_process
    port = free_port()
    folder = tmp_path_factory.mktemp("signed")
    secrets_file = folder / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(16)}"\n'
        'client_id = "calibdash"\nclient_secret = "calibdash-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n')
    env = {"CALIBDASH_WORKSPACE": str(folder / "workspace"), "CALIBDASH_CATALOG": new_database(postgres_server)}
    args = ("--secrets.files", str(secrets_file))
    server = {"proc": start_streamlit(results_dir / "streamlit-signed.log", port=port, env=env, args=args)[0]}

    def restart():
        stop_process(server["proc"])
        server["proc"] = start_streamlit(results_dir / "streamlit-signed-2.log", port=port, env=env, args=args)[0]

    try:
        yield f"http://127.0.0.1:{port}", env, restart
    finally:
        stop_process(server["proc"])


def _sign_in(chromium, ui, url: str, who: str):
    context = ui.new_context(chromium, viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.goto(url + "/")
    page.get_by_role("button", name="Sign in").click()
    page.locator('input[name="sub"]').fill(who)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_selector(f"{MAIN} h1:has-text('Compare calibrators')", timeout=ui.timeout_ms)
    ui.wait_idle(page)
    return context, page


def _errors(page) -> str:
    return " ".join(page.locator(f'{MAIN} [data-testid="stAlertContentError"]').all_inner_texts())


def test_a_private_run_is_seen_only_once_shared(chromium, ui, signed_server):
    url, env, restart = signed_server
    ann_ctx, ann = _sign_in(chromium, ui, url, "ann")
    bob_ctx, bob = _sign_in(chromium, ui, url, "bob")
    try:
        assert "Signed in as ann@example.org" in ann.locator('[data-testid="stSidebar"]').inner_text()
        ann_table = ui.table(ann, 0)

        # Ann saves the view as a private run
        ann.get_by_role("button", name="Save run").click()
        ann.get_by_role("textbox", name="Name").fill("churn v1")
        ann.get_by_role("textbox", name="Name").press("Enter")
        ui.wait_idle(ann)
        ann.get_by_role("button", name="Save", exact=True).click()
        ann.wait_for_selector('[data-testid="stAlertContentSuccess"]:has-text("?run=")', timeout=ui.timeout_ms)
        run_id = re.search(r"\?run=([A-Za-z0-9_-]{16})",
                           ann.locator('[data-testid="stAlertContentSuccess"]').first.inner_text()).group(1)
        ui.screenshot(ann, "e2e-sign-in-1-ann-saved")

        # Bob's link: refused, no data
        ui.goto(bob, f"{url}/?run={run_id}", f'{MAIN} [data-testid="stAlertContentError"]')
        assert "is not shared with you" in _errors(bob)
        assert bob.locator(f'{MAIN} [data-testid="stDataFrame"]').count() == 0
        assert bob.locator(f"{MAIN} .js-plotly-plot").count() == 0
        ui.screenshot(bob, "e2e-sign-in-2-bob-refused")

        # Ann shares it with Bob on the Runs page
        ui.goto(ann, url + "/runs", f"{MAIN} h1:has-text('Saved runs')")
        ann.get_by_role("tab", name="Share or delete").click()
        ann.get_by_role("textbox", name="Shared with").fill(USERS["bob"])
        ann.get_by_role("textbox", name="Shared with").press("Enter")
        ui.wait_idle(ann)
        ann.get_by_role("button", name="Save sharing").click()
        ann.wait_for_selector('[data-testid="stAlertContentSuccess"]:has-text("Sharing saved")',
                              timeout=ui.timeout_ms)

        # Bob's link now opens Ann's view with Ann's numbers
        ui.goto(bob, f"{url}/?run={run_id}", f"{MAIN} h1:has-text('Compare calibrators')")
        assert not _errors(bob)
        bob_table = ui.table(bob, 0)
        assert set(bob_table) == set(ann_table)
        for row in ann_table:
            assert ui.same_columns(ann_table[row], bob_table[row])[0] == ui.same_columns(ann_table[row],
                                                                                         bob_table[row])[1]
        ui.screenshot(bob, "e2e-sign-in-3-bob-shared")
    finally:
        ann_ctx.close()
        bob_ctx.close()

    # every number equals the saved JSON, and the same after a restart, in a fresh browser
    from calibdash.io.runs import Workspace
    saved = Workspace(env["CALIBDASH_WORKSPACE"], catalog=env["CALIBDASH_CATALOG"]).open(run_id, USERS["bob"])
    ui.assert_table_shows(bob_table, saved.results["metrics"])
    restart()
    bob_ctx, bob = _sign_in(chromium, ui, url, "bob")
    try:
        ui.goto(bob, f"{url}/?run={run_id}", f"{MAIN} h1:has-text('Compare calibrators')")
        ui.assert_table_shows(ui.table(bob, 0), saved.results["metrics"])
    finally:
        bob_ctx.close()


def test_a_command_line_run_opens_by_link_after_a_restart(chromium, ui, signed_server, tmp_path):
    """A nightly job's run (saved by the command line into the server's workspace and PostgreSQL catalog, with
    no owner) opens by link for a signed-in user with every number of its JSON, before and after a restart."""
    url, env, restart = signed_server
    done = subprocess.run([sys.executable, "-m", "calibdash", "groups", str(REPO / "sample_data" / "drift.csv"),
                           "--by", "segment", "--json", "--save", "nightly"], cwd=REPO, capture_output=True,
                          text=True, env={**__import__("os").environ, **env})
    assert done.returncode == 0, done.stderr
    saved = json.loads(done.stdout)
    run_id = re.search(r"saved run (\S+)", done.stderr).group(1)
    for attempt in ("before", "after"):
        if attempt == "after":
            restart()
        ctx, page = _sign_in(chromium, ui, url, "bob")
        try:
            ui.goto(page, f"{url}/?run={run_id}", f"{MAIN} h3:has-text('nightly')")
            table = ui.table(page, 0)
            for group in saved["groups"]:
                shown = table[group["key"]]
                assert int(shown["rows"].replace(",", "")) == group["rows"]
                assert float(shown["ECE"]) == pytest.approx(group["ECE"]["value"], abs=5e-5)
            ui.screenshot(page, f"e2e-sign-in-4-cli-run-{attempt}")
        finally:
            ctx.close()
