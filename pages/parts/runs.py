"""Saved runs in the pages: the workspace, who is signed in, the Save panel, and opening ``?run=<id>``.

A run saved from a page holds the page's widget state (the view), the rows of an upload as Parquet (a built-in
sample is named, not copied) or a large source's spec and the score cells its view read (never its rows:
:func:`_large_kept`), the results as the command line's ``--json`` prints them and the fitted
models' export JSON (:mod:`calibdash.io.runs`). Opening its link puts the rows back as the session's upload (or
the cells back in the large source's stores) and the state back into the widgets, then shows the saved page: the
page computes the same numbers from the same rows (or cells) and settings, without a job.

Sign-in is Streamlit's own (``st.login``), on when the operator gives an ``[auth]`` section in
``.streamlit/secrets.toml``; without it the server is single-user and the sidebar says that anyone reaching it
sees every run.
"""
from __future__ import annotations

import dataclasses
import hashlib
from datetime import datetime, timezone
import io
import json
import logging
import re
from types import SimpleNamespace

import streamlit as st

from calibdash.cli.documents import evaluation_document
from calibdash.core.errors import CalibdashError, DataError
from calibdash.engines.plan import schema_step
from calibdash.io.runs import RUN_ERRORS, Workspace
from calibdash.monitoring.keyed import KeyedCells
from pages.parts import large_source
from pages.parts.fitting import is_large
from pages.parts.source import LARGE, SAMPLE, SOURCE, UPLOAD, source_table, using_large, using_upload
from pages.parts.text import md

__all__ = ["workspace", "sign_in_on", "user", "gate", "sidebar_note", "save_panel", "open_from_link", "run_to_show",
           "RUN", "evaluation_json"]

log = logging.getLogger("calibdash.app")

#: Query parameter of a saved run's link.
RUN = "run"
_OPENED = "_run_opened"                 # the run id this session last opened from a link
_SHOWING = "_run_showing"               # the sidebar's line on it
_SHOW = "_run_show"                     # a run without a page (saved by the command line), shown on the Runs page
_NOT_STATE = re.compile(r"(^_)|(\.dl\.)|(^upload$)|(^runs\.)|(^FormSubmitter)")
_ROLE = re.compile(r"^role\.(\w+)\.[0-9a-f]{12}$")


@st.cache_resource(show_spinner=False)
def workspace() -> Workspace:
    """The server's workspace (``CALIBDASH_WORKSPACE``, ``CALIBDASH_CATALOG``), opened once per process."""
    return Workspace()


def sign_in_on() -> bool:
    """Whether the operator configured OpenID Connect sign-in (an ``[auth]`` section in the secrets)."""
    try:
        return "auth" in st.secrets
    except Exception:                   # noqa: BLE001 - no secrets file at all: no sign-in
        return False


def user() -> str | None:
    """The signed-in user's e-mail (or subject); ``None`` on a server without sign-in."""
    if not sign_in_on() or not st.user.is_logged_in:
        return None
    return st.user.get("email") or st.user.get("sub")


def gate() -> None:
    """With sign-in on, a page for a signed-out visitor asks for sign-in and shows nothing else."""
    if sign_in_on() and not st.user.is_logged_in:
        st.title("calibdash")
        st.info("This calibdash server asks you to sign in first.", icon=":material/lock:")
        st.button("Sign in", type="primary", on_click=st.login, key="runs.sign_in")
        st.stop()


def sidebar_note() -> None:
    with st.sidebar:
        if st.session_state.get(_SHOWING):
            st.caption(st.session_state[_SHOWING])
        if sign_in_on():
            st.caption(f"Signed in as **{md(user())}**")
            st.button("Sign out", on_click=st.logout, key="runs.sign_out")
        else:
            st.caption("No sign-in on this server: anyone who reaches it sees every saved run.")


def view_state(page: str) -> dict:
    """The page and its widgets' state as plain values (roles by name, not by the file's hash)."""
    state, active = {}, None
    try:
        active = source_table()[1].sha256[:12]
    except CalibdashError:
        pass
    for key in st.session_state:
        value = st.session_state[key]
        if _NOT_STATE.search(key) or not isinstance(value, (str, int, float, bool, list, tuple, type(None))):
            continue
        if isinstance(value, (list, tuple)) and not all(isinstance(v, (str, int, float, bool)) for v in value):
            continue
        m = _ROLE.match(key)
        if m and not key.endswith(f".{active}"):
            continue                    # the roles chosen for other files
        state[f"role.{m.group(1)}" if m else key] = list(value) if isinstance(value, tuple) else value
    return {"page": page, "state": state}


def _kept_data(scheme, keyed) -> dict:
    """What a run keeps of the active data, as :meth:`Workspace.save` takes it: an upload's parsed table, a large
    source's cells (those of ``scheme`` and ``keyed`` besides the all-rows ones) and spec, or a sample's name."""
    if using_large():
        return _large_kept(scheme, keyed)
    if using_upload():
        df, info = source_table()
        return {"rows": df, "dataset": info.name}
    return {"dataset": str(st.session_state.get(SAMPLE))}


def _large_kept(scheme, keyed) -> dict:
    """What a run keeps of the active large source: the cells its view read, by their keys (the all-rows cells,
    those of ``scheme`` and the keyed cells ``keyed``, an id from :func:`large_source.keyed_or_stop`), and as
    ``source`` its spec, its resolved plan, what the all-rows aggregation found besides cells (the label's
    values, the raw range, the split values) and its columns as read (Groups & time offers them). DataError when
    a store no longer keeps the cells."""
    src = large_source.active_source()
    got = large_source.CELLS.get(src.key())
    cells = {src.key(): None if got is None else got["cells"]}
    if scheme is not None:
        cells[src.key(scheme)] = large_source.CELLS.get(src.key(scheme))
    if keyed is not None:
        cells[keyed] = large_source.KEYED.get(keyed)
    if any(v is None for v in cells.values()):
        raise DataError("this view's score cells are no longer kept on the server: show the page again, then save.")
    found = json.loads(json.dumps({k: v for k, v in got.items() if k != "cells"}, default=str))
    read = schema_step(src.root, src.plan).key
    source = {"spec": {k: v for k, v in src.spec.items() if k != "plan"}, "plan": dataclasses.asdict(src.plan),
              "engine": "duckdb", "all": {"key": src.key(), **found},
              "schema": {"key": read, "value": large_source.READS.get(read)}}
    return {"cells": cells, "source": source, "dataset": src.describe()}


def _restore_large(source: dict, cells: dict) -> None:
    """Make a saved run's large source (``source`` and ``cells`` as :func:`_large_kept` gave them) the active
    one, its cells kept under their keys."""
    st.session_state[large_source.SPEC] = {**source["spec"], "plan": source["plan"]}
    if source["schema"]["value"] is not None:
        large_source.READS.put(source["schema"]["key"], source["schema"]["value"])
    found = {k: v for k, v in source["all"].items() if k != "key"}
    found["range"] = tuple(found["range"]) if found["range"] else None
    for key, value in cells.items():
        if isinstance(value, KeyedCells):
            large_source.KEYED.put(key, value)
        else:
            large_source.CELLS.put(key, {**found, "cells": value} if key == source["all"]["key"] else value)


def evaluation_json(data, ev, scheme) -> dict:
    """``evaluate --json`` of the page's evaluation ``ev``; on a large source as the DuckDB engine's: its counts
    from its all-rows cells, its label's values from the aggregation, no row dropped."""
    if not is_large(data):
        return evaluation_document(data, ev, scheme)
    report = SimpleNamespace(**vars(data.report), dropped={}, dropped_examples={})
    negative = large_source.CELLS.get(data.key)["negative"]
    counted = SimpleNamespace(**{**vars(data.report_view()), "report": report, "negative_label": negative})
    return {**evaluation_document(counted, ev, scheme), "engine": "duckdb"}


def save_panel(page: str, kind: str, results, models=None, diagrams=None, *, scheme=None,
               keyed: str | None = None) -> None:
    """The "Save run" popover: a name, tags and who sees it; ``results()``, ``models()`` and ``diagrams()`` build
    the JSON only when the user saves. On a large source the run keeps the cells of ``scheme`` and the keyed
    cells ``keyed`` (their id) that the page showed."""
    with st.popover("Save run", icon=":material/bookmark_add:"):
        name = st.text_input("Name", key=f"runs.{page}.name", placeholder="e.g. model v2, November")
        tags = st.text_input("Tags", key=f"runs.{page}.tags", placeholder="model=churn, version=2",
                             help="KEY=VALUE pairs separated by commas; the Runs page filters by them")
        visibility, shared = "all", []
        if sign_in_on():
            who = st.radio("Who sees it", ["Only me (and those I name)", "Everyone signed in"],
                           key=f"runs.{page}.who")
            visibility = "private" if who.startswith("Only") else "all"
            if visibility == "private":
                shared = [u.strip() for u in st.text_input("Share with", key=f"runs.{page}.with",
                                                           placeholder="bob@example.org, ...").split(",") if u.strip()]
        if not st.button("Save", type="primary", key=f"runs.{page}.save"):
            return
        try:
            tag_pairs = _tags(tags)
            kept = _kept_data(scheme, keyed)
            record = workspace().save(name=name or f"{page} of {kept['dataset']}", kind=kind, results=results(),
                                      view=view_state(page), models=models() if models else None, tags=tag_pairs,
                                      diagrams=diagrams() if diagrams else None, owner=user(), visibility=visibility,
                                      shared_with=shared, **kept)
        except RUN_ERRORS as exc:
            st.error(md(exc))
            return
        st.success(f"Saved **{md(record.name)}**. Its link: `?{RUN}={record.id}`", icon=":material/check:")
        st.session_state["runs.last_saved"] = record.id


def _tags(text: str) -> dict:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CalibdashError(f"A tag is KEY=VALUE, not {part!r}.")
        out[key.strip()] = value.strip()
    return out


_PAGES = {"compare": "pages/compare.py", "explore": "pages/explore.py", "segments": "pages/segments.py"}


def open_from_link() -> None:
    """Open the run a ``?run=<id>`` link names, once per link: its rows become the session's data and its state
    the widgets', then its page is shown. A forged, deleted or unshared id shows why and no data."""
    run_id = st.query_params.get(RUN)
    if not run_id or st.session_state.get(_OPENED) == run_id:
        return
    try:
        run = workspace().open(run_id, user())
    except RUN_ERRORS as exc:
        log.info("refused run link %r: %s", str(run_id)[:40], exc)
        st.session_state.pop(UPLOAD, None)
        st.session_state[SOURCE] = "Sample"
        st.error(f"**This run cannot be opened.** {md(exc)}", icon=":material/link_off:")
        st.page_link("pages/runs.py", label="See the runs you can open", icon=":material/bookmarks:")
        st.stop()
    if run.holds == "cells":
        if not large_source.available():
            st.error("**This run was computed on a large source, and large sources are off on this server.**")
            st.stop()
        _restore_large(run.source, run.cells())
        st.session_state[SOURCE] = LARGE
    rows = run.rows()
    sha = None
    if rows is not None:
        buf = io.BytesIO()
        rows.to_parquet(buf, index=False)
        data = buf.getvalue()
        sha = hashlib.sha256(data).hexdigest()
        # the rows come back as Parquet under the data set's own name (the reader knows Parquet by its bytes), so
        # the pages, and a run saved from this one, name the file the user uploaded
        st.session_state[UPLOAD] = {"name": run.record.dataset, "data": data, "sha": sha}
    for key, value in run.view.get("state", {}).items():
        if key.startswith("role."):
            if sha is None:
                continue
            key = f"{key}.{sha[:12]}"
        try:
            st.session_state[key] = value
        except Exception:              # noqa: BLE001 - a key Streamlit will not take (a button's): left out
            continue
    if rows is not None:
        st.session_state[SOURCE] = "Upload"
    st.session_state[_OPENED] = run_id
    when = datetime.fromtimestamp(run.record.saved_at, timezone.utc)
    who = md(run.record.owner or "server")
    st.session_state[_SHOWING] = f"Opened the saved run **{md(run.record.name)}** ({who}, {when:%Y-%m-%d %H:%M} UTC)"
    page = _PAGES.get(run.view.get("page"))
    if page:
        st.switch_page(page)
    st.session_state[_SHOW] = run.record.id
    st.switch_page("pages/runs.py")


def run_to_show():
    """The run a link to a command-line run asked the Runs page to show (until another link), or None."""
    run_id = st.session_state.get(_SHOW)
    if run_id is None:
        return None
    try:
        return workspace().open(run_id, user())
    except RUN_ERRORS as exc:
        st.error(md(exc))
        return None
