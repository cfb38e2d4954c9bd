"""The "Large data" source's widgets: rows that stay on the server, summarised into score cells by DuckDB.

Off unless the operator names a data root (:mod:`pages.parts.server_settings`). Then the Data page offers a third
source: files (a path or glob), a DuckDB table, or a SELECT query under the root. What they name, how they are read,
keyed and aggregated, the roles offered and the pages' :class:`calibdash.data.LargeData` live in the library
(:mod:`calibdash.engines.plan`, :mod:`calibdash.data.guard`); each step runs as a
job (:mod:`calibdash.core.jobs`) shown by :mod:`pages.parts.job_panel`. What a job gives (columns and guessed roles; score
cells, never rows) is kept in stores bounded by bytes (:class:`pages.parts.bounded_cache.Store`);
``st.session_state`` holds the source's spec (:data:`SPEC`).

A saved run of a large source (:mod:`pages.parts.runs`) keeps the spec, the plan it was resolved to and the cells
its view read; opening it puts the cells back in the stores under the same keys and the spec with its saved plan in
:data:`SPEC` (:func:`active_source`), so the view reads them and no job runs. Other settings aggregate the lake
again only while it is as it was saved; gone, unreadable or changed, the pages say so (:func:`_unreadable`).
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

import streamlit as st
from pages.parts import bounded_cache, job_panel
from pages.parts.server_settings import available, data_root, registry
from pages.parts.text import md

from calibdash.data import LargeData
from calibdash.data.guard import data_root_from_env
from calibdash.engines import plan as cplan
from calibdash.engines.plan import LargeSource, Plan
from calibdash.engines.plan import resolve_plan
from calibdash.core.errors import CalibdashError, EnvironmentProblem, SettingsError

__all__ = ["LARGE", "SPEC", "SYNCHRONOUS", "KINDS", "LargeData", "data_root", "available", "registry",
           "resolve_plan", "data_root_from_env", "source_inputs", "large_data_or_stop", "peek", "stop_if_large",
           "NOT_ON_LARGE", "CELLS", "READS", "KEYED", "schema_or_stop", "keyed_or_stop", "scheme_problem",
           "active_source"]

LARGE = "Large data"               # the Data page's source choice
SPEC = "large.spec"                # session key: the active large source (texts typed, roles); set by Aggregate
#: Wait for jobs in the script thread (tests: AppTest cannot run the polling fragment).
SYNCHRONOUS = False
#: What pages that need rows say on a large source.
NOT_ON_LARGE = ("{page} needs the rows themselves, which a large source keeps on the server (only its score "
                "cells are read): it does not work on a large source yet. Compare, Explore and Groups & time "
                "do; choose a "
                "sample or an upload on the Data page for this page.")

KINDS = {"files": "Files (path or glob)", "table": "DuckDB table", "query": "SQL query"}
K_KIND, K_PATH, K_DB, K_TABLE, K_QUERY, K_ORDER = ("large.kind", "large.path", "large.database", "large.table",
                                                   "large.query", "large.order_by")
ROLE_LABELS = ("Score", "Label (true outcome)", "Split column (optional)")     # the choices of engines.plan.ROLES


# -- what the jobs gave, kept by bytes ------------------------------------------------------------------
#: What aggregations gave: cells (a few MB at most, never rows); a source's columns and guessed roles, a database's
#: tables.
CELLS = bounded_cache.Store("large_source.cells", max_entries=32, budget="large_source.cells")
READS = bounded_cache.Store("large_source.reads", max_entries=64, budget="large_source.reads")
#: What keyed aggregations gave (Groups & time): keyed cells, a few MB each at most, never rows.
KEYED = bounded_cache.Store("large_source.keyed", max_entries=32, budget="large_source.keyed")


def _read_step(key: str, what: str, work):
    """The result of a reading job (tables, columns), kept; or its progress and :class:`job_panel.Pending`."""
    got = READS.get(key)
    if got is None:
        got = job_panel.run("read", key, what, work, functools.partial(READS.put, key), "This source cannot be read",
                            halt=job_panel.raise_pending, synchronous=SYNCHRONOUS)
    return got


def _aggregate_or_stop(src: LargeSource, scheme, need_all: bool = False) -> None:
    """Run (or wait on) the aggregation of ``scheme``; return once its cells are kept, else show the progress,
    or why it stopped, and stop the page."""
    key = src.key(scheme)
    if job_panel.show_stopped(key):
        st.stop()
    _stop_if_unreadable(src)
    try:
        src.check(scheme)
    except SettingsError as exc:
        st.error(f"**This evaluation scheme does not work on this source:** {md(exc)}")
        st.stop()
    job_panel.run("aggregate", key, f"Aggregating {src.describe()} with DuckDB",
                  lambda job: src.aggregate(job, scheme, need_all), lambda got: CELLS.update(src.kept(scheme, got)),
                  "The large source cannot be aggregated", note=cplan.AGGREGATE_NOTE, synchronous=SYNCHRONOUS)
    if need_all:
        st.rerun()               # once, so that the sidebar (drawn before the page) shows the new source


# -- what the pages see --------------------------------------------------------------------------------
def active_source() -> LargeSource:
    """The active large source; raises as :meth:`LargeSource.resolve`. A saved run's source is its saved plan (the
    keys of its saved cells), not the lake as it is now."""
    spec, root = st.session_state.get(SPEC), data_root()
    if spec and spec.get("plan") and root is not None:
        return LargeSource(root, spec, Plan(**{k: _tuples(v) for k, v in spec["plan"].items()}))
    return LargeSource.resolve(root, spec)


def _tuples(value):
    return tuple(map(_tuples, value)) if isinstance(value, list) else value


def _unreadable(src: LargeSource) -> str | None:
    """Why a saved run's source cannot give more cells now (gone, unreadable, changed since the run was saved);
    None when it can, and for a source aggregated in this session."""
    if not src.spec.get("plan"):
        return None
    try:
        fresh = resolve_plan(src.root, src.spec)
    except CalibdashError as exc:
        return f"it cannot be read now ({exc})"
    return None if fresh.identity == src.plan.identity else "it has changed since the run was saved"


def _stop_if_unreadable(src: LargeSource) -> None:
    why = _unreadable(src)
    if why:
        st.info(f"**This saved run's source, {md(src.describe())}, gives no more cells:** {md(why)}. Its saved cells "
                "cover the view it was saved in; to see other settings, aggregate a source on the Data page.",
                icon=":material/cloud_off:")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
        st.stop()


def _large(src: LargeSource, got) -> LargeData:
    return src.large_data(got, CELLS.get, functools.partial(_aggregate_or_stop, src))


def peek() -> LargeData | str:
    """The active large source when its cells are kept, else a line saying why not (no widget, no job)."""
    try:
        src = active_source()
    except CalibdashError as exc:
        return str(exc)
    got = CELLS.get(src.key())
    return f"{src.describe()}: not aggregated yet." if got is None else _large(src, got)


def large_data_or_stop() -> LargeData:
    """The active large source, aggregated (showing the progress and stopping the page until it is), or an error
    box, a link to the Data page and a stop (never a traceback)."""
    try:
        src = active_source()
    except CalibdashError as exc:
        st.error(f"**The large source cannot be used:** {md(exc)}")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
        st.stop()
    if CELLS.get(src.key()) is None:
        from pages.parts.scheme import current_scheme

        scheme = current_scheme(SimpleNamespace(split_column=src.roles.get("split") or None))
        _aggregate_or_stop(src, src.first_scheme(scheme), need_all=True)
    why = _unreadable(src)
    if why:
        st.caption(f":material/cloud_off: The saved run's source, {md(src.describe())}: {md(why)}. The numbers "
                   "come from the score cells saved with the run.")
    return _large(src, CELLS.get(src.key()))


def schema_or_stop() -> dict:
    """The active large source's columns and their types (``{"columns", "types", "guess"}``, read once as a job
    and kept), or its progress / why not, and a stop."""
    try:
        src = active_source()
        return _read_step(*cplan.schema_step(src.root, src.plan))
    except CalibdashError as exc:
        st.error(f"**The large source cannot be read:** {md(exc)}")
    except job_panel.Pending:
        pass
    st.stop()


def scheme_problem(scheme) -> str | None:
    """Why ``scheme`` does not work on the active large source (None when it does)."""
    try:
        active_source().check(scheme)
    except CalibdashError as exc:
        return str(exc)
    return None


def keyed_or_stop(key, scheme=None) -> tuple:
    """``(id, KeyedCells)``: the active large source's keyed cells of ``key`` (a :class:`calibdash.monitoring.keyed.Key`)
    under ``scheme``, aggregated by DuckDB as a job and kept in :data:`KEYED`; until then the job's progress
    (or why it stopped) and a stop."""
    src = active_source()
    key_id = src.keyed_key(key, scheme)
    got = KEYED.get(key_id)
    if got is None:
        _stop_if_unreadable(src)
        what = f"Aggregating {src.describe()} by {key.column!r} with DuckDB"
        got = job_panel.run("keyed", key_id, what, lambda job: src.aggregate_keyed(job, key, scheme),
                            functools.partial(KEYED.put, key_id), "The large source cannot be aggregated by "
                            f"{key.column!r}", note=cplan.AGGREGATE_NOTE, synchronous=SYNCHRONOUS)
    return key_id, got


# -- the Data page's inputs ----------------------------------------------------------------------------------
def source_inputs() -> None:
    """The Data page's inputs for a large source and its Aggregate button (which makes it the active source).

    Every refusal (a path outside the root, a query that is not one SELECT
    or reads outside the root) is an error box, never a traceback.
    """
    try:
        root = data_root()
    except EnvironmentProblem as exc:
        st.error(f"**Large sources are misconfigured on this server:** {md(exc)}")
        st.stop()
    shown = st.radio("Large source", list(KINDS.values()), key=K_KIND, horizontal=True, persist_state="session")
    kind = {v: k for k, v in KINDS.items()}.get(shown, "files")
    st.caption(f"Data root: {md(root.root)}. Only files under it can be read; the rows stay on the server and "
               "DuckDB summarises them into score cells.")
    spec = {"kind": kind}
    if kind == "files":
        spec["path"] = st.text_input("Path or glob under the data root", key=K_PATH, persist_state="session",
                                     placeholder="scores/part-*.parquet",
                                     help="Parquet or CSV files, relative to the data root (or absolute under it).")
    elif kind == "table":
        spec["database"] = st.text_input("DuckDB database file under the data root", key=K_DB, persist_state="session",
                                         placeholder="warehouse.duckdb")
    else:
        spec["query"] = st.text_area(
            "SELECT query", key=K_QUERY, persist_state="session", height=110,
            placeholder=f"SELECT p, clicked FROM read_parquet('{root.root}/scores/*.parquet')",
            help="One SELECT statement. Files by absolute path under the data root; with a database file, its "
                 "tables as source.main.<table>.")
        q1, q2 = st.columns(2)
        spec["database"] = q1.text_input("DuckDB database file (optional)", key=K_DB, persist_state="session")
        spec["order_by"] = q2.text_input("Order by (for a random split or k-fold)", key=K_ORDER,
                                         persist_state="session",
                                         help="Columns making the rows' order unique: a query's rows have no "
                                              "position, and the split hashes it.")
    if not any((spec.get(k) or "").strip() for k in ("path", "database", "query")):
        return
    try:
        if kind == "table":
            tables = _read_step(*cplan.tables_step(root, spec["database"]))
            if not tables:
                st.error("**This database holds no table.**")
                return
            chosen = st.selectbox("Table", tables, key=K_TABLE, persist_state="session",
                                  format_func=lambda t: f"{t[0]}.{t[1]}")
            spec["table"] = list(chosen)
        plan = resolve_plan(root, spec)
        schema = _read_step(*cplan.schema_step(root, plan))
    except CalibdashError as exc:
        st.error(f"**This source cannot be read:** {md(exc)}")
        return
    except job_panel.Pending:    # reading: its progress and Cancel are shown (or why it stopped)
        return
    st.caption(md(plan.describe(root)) + " · columns: "
               + md(cplan.describe_columns(schema["columns"], schema["types"])))
    roles = {}
    for column, role, label in zip(st.columns(3), cplan.ROLES, ROLE_LABELS):
        options, index = cplan.role_choices(schema, role, roles)
        roles[role] = column.selectbox(label, options, key=f"large.{role}", persist_state="session", index=index)
    spec["roles"] = cplan.chosen_roles(roles)
    st.button("Aggregate", key="large.aggregate", type="primary", icon=":material/play_arrow:", on_click=_activate,
              args=(spec,), help="Summarise the rows into score cells with DuckDB; this source then feeds Compare, "
                                 "Explore and Groups & time.")


def _activate(spec: dict) -> None:
    """The Aggregate button: ``spec`` becomes the active large source (aggregated on this run)."""
    st.session_state[SPEC] = spec
    job_panel.forget_stopped()


def stop_if_large(page: str) -> None:
    """On a page that needs rows: say plainly that it does not work on a large source, and stop."""
    st.info(NOT_ON_LARGE.format(page=page), icon=":material/info:")
    st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
    st.stop()
