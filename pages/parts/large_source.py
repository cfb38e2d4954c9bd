"""The "Large data" source's widgets: rows that stay on the server, summarised into score cells by DuckDB.

Off unless the operator names a data root (:mod:`pages.parts.server_settings`). Then the Data page offers a third
source: files (a path or glob), a DuckDB table, or a SELECT query under the root. What they name, how they are read
and aggregated lives in the library (:mod:`calibdash.engines.plan`, :mod:`calibdash.data.guard`); each step runs as a
job (:mod:`calibdash.jobs`) shown by :mod:`pages.parts.job_panel`. What a job gives (columns and guessed roles; score
cells, never rows) is kept in page caches bounded by bytes, keyed by :func:`calibdash.engines.plan.plan_key`;
``st.session_state`` holds the source's spec (:data:`SPEC`). Pages see an aggregated source as a
:class:`calibdash.data.LargeData`.
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

import streamlit as st
from pages.parts import bounded_cache, job_panel
from pages.parts.server_settings import available, data_root, registry

from calibdash.data import LargeData
from calibdash.data.guard import data_root_from_env
from calibdash.engines import plan as cplan
from calibdash.engines.plan import resolve_plan
from calibdash.errors import CalibdashError, DataError, EnvironmentProblem, SettingsError
from calibdash.evaluation import Scheme

__all__ = ["LARGE", "SPEC", "SYNCHRONOUS", "KINDS", "LargeData", "data_root", "available", "registry",
           "resolve_plan", "data_root_from_env", "source_inputs", "large_data_or_stop", "peek", "stop_if_large",
           "raw_cells", "NOT_ON_LARGE"]

LARGE = "Large data"               # the Data page's source choice
SPEC = "large.spec"                # session key: the active large source (texts typed, roles); set by Aggregate
#: Wait for jobs in the script thread (tests: AppTest cannot run the polling fragment).
SYNCHRONOUS = False
#: What pages that need rows say on a large source.
NOT_ON_LARGE = ("{page} needs the rows themselves, which a large source keeps on the server (only its score "
                "cells are read): it does not work on a large source yet. Compare and Explore do; choose a "
                "sample or an upload on the Data page for this page.")

KINDS = {"files": "Files (path or glob)", "table": "DuckDB table", "query": "SQL query"}
K_KIND, K_PATH, K_DB, K_TABLE, K_QUERY, K_ORDER = ("large.kind", "large.path", "large.database", "large.table",
                                                   "large.query", "large.order_by")
K_SCORE, K_LABEL, K_SPLIT = "large.score", "large.label", "large.split"
NONE = "(none)"


# -- what the jobs gave, kept by bytes ------------------------------------------------------------------
class _NotKept(Exception):
    """Nothing kept under this key (exceptions are not cached)."""


@bounded_cache.cache_data(show_spinner=False, max_entries=32, max_size="512MB")
def _kept(key: str, _value=None):
    """What an aggregation gave, under its key: cells (a few MB at most, never rows), bounded by bytes."""
    if _value is None:
        raise _NotKept(key)
    return _value


@bounded_cache.cache_data(show_spinner=False, max_entries=64, max_size="32MB")
def _read(key: str, _value=None):
    """A source's columns and guessed roles, or a database's tables, under their key."""
    if _value is None:
        raise _NotKept(key)
    return _value


def _lookup(key: str, cache=_kept):
    try:
        return cache(key)
    except _NotKept:
        return None


def _read_step(key: str, what: str, work):
    """The result of a reading job (tables, columns), kept; or its progress and :class:`job_panel.Pending`."""
    got = _lookup(key, _read)
    if got is None:
        got = job_panel.run("read", key, what, work, lambda result: _read(key, result), "This source cannot be read",
                            halt=job_panel.raise_pending, synchronous=SYNCHRONOUS)
    return got


def _aggregate_or_stop(root, plan, roles, scheme, key, all_key, need_all) -> None:
    """Run (or wait on) the aggregation behind ``key``; return once its cells are kept, else show the progress,
    or why it stopped, and stop the page."""
    if job_panel.show_stopped(key):
        st.stop()
    try:
        plan.source(roles).check_keys(scheme)
    except SettingsError as exc:
        st.error(f"**This evaluation scheme does not work on this source:** {exc}")
        st.stop()

    def keep(result):
        _kept(key, result["cells"])
        if "all" in result:
            _kept(all_key, result["all"])

    job_panel.run("aggregate", key, f"Aggregating {plan.describe(root)} with DuckDB",
                  lambda job: cplan.aggregate_plan(job, root, plan, roles, scheme, need_all), keep,
                  "The large source cannot be aggregated", note=cplan.AGGREGATE_NOTE, synchronous=SYNCHRONOUS)
    if need_all:
        st.rerun()               # once, so that the sidebar (drawn before the page) shows the new source


# -- what the pages see --------------------------------------------------------------------------------
def _scheme_cells(root, plan, roles: dict, all_key: str, scheme: Scheme):
    """The cells of ``scheme`` (a :class:`LargeData`'s ``aggregate``): kept, else aggregated with the progress."""
    key = cplan.plan_key(plan, roles, scheme)
    got = _lookup(key)
    if got is None:
        _aggregate_or_stop(root, plan, roles, scheme, key, all_key, need_all=False)
        got = _lookup(key)
    return got


def _resolved():
    """(root, spec, plan) of the active large source; raises as :func:`resolve_plan`, or DataError when none."""
    spec = st.session_state.get(SPEC)
    if not spec:
        raise DataError("no large source has been aggregated yet: choose one on the Data page and press Aggregate.")
    root = data_root()
    if root is None:
        raise DataError("large sources are off on this server (no data root is configured).")
    return root, spec, resolve_plan(root, spec)


def _large(root, spec, plan, got) -> LargeData:
    roles, key = spec["roles"], cplan.plan_key(plan, spec["roles"])
    return LargeData.from_aggregate(plan.describe(root), roles, got, key,
                                    aggregate=functools.partial(_scheme_cells, root, plan, dict(roles), key))


def peek() -> LargeData | str:
    """The active large source when its cells are kept, else a line saying why not (no widget, no job)."""
    try:
        root, spec, plan = _resolved()
    except CalibdashError as exc:
        return str(exc)
    got = _lookup(cplan.plan_key(plan, spec["roles"]))
    return f"{plan.describe(root)}: not aggregated yet." if got is None else _large(root, spec, plan, got)


def large_data_or_stop() -> LargeData:
    """The active large source, aggregated (showing the progress and stopping the page until it is), or an error
    box, a link to the Data page and a stop (never a traceback)."""
    try:
        root, spec, plan = _resolved()
    except CalibdashError as exc:
        st.error(f"**The large source cannot be used:** {exc}")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
        st.stop()
    roles = spec["roles"]
    all_key = cplan.plan_key(plan, roles)
    if _lookup(all_key) is None:
        from pages.parts.scheme import current_scheme

        scheme = current_scheme(SimpleNamespace(split_column=roles.get("split") or None))
        try:
            plan.source(roles).check_keys(scheme)
        except SettingsError:    # a query without ORDER BY: first all rows; the Data page then says what fails
            scheme = Scheme(kind="insample")
        _aggregate_or_stop(root, plan, roles, scheme, cplan.plan_key(plan, roles, scheme), all_key, need_all=True)
    return _large(root, spec, plan, _lookup(all_key))


# -- the Data page's inputs ----------------------------------------------------------------------------------
def source_inputs() -> None:
    """The Data page's inputs for a large source and its Aggregate button (which makes it the active source).

    Every refusal (a path outside the root, a query that is not one SELECT
    or reads outside the root) is an error box, never a traceback.
    """
    try:
        root = data_root()
    except EnvironmentProblem as exc:
        st.error(f"**Large sources are misconfigured on this server:** {exc}")
        st.stop()
    shown = st.radio("Large source", list(KINDS.values()), key=K_KIND, horizontal=True, persist_state="session")
    kind = {v: k for k, v in KINDS.items()}.get(shown, "files")
    st.caption(f"Data root: `{root.root}`. Only files under it can be read; the rows stay on the server and "
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
            db = cplan.database_file(root, spec["database"])
            tables = _read_step(cplan.tables_key(db), "Listing the database's tables",
                                lambda job: cplan.read_tables(job, root, db))
            if not tables:
                st.error("**This database holds no table.**")
                return
            chosen = st.selectbox("Table", tables, key=K_TABLE, persist_state="session",
                                  format_func=lambda t: f"{t[0]}.{t[1]}")
            spec["table"] = list(chosen)
        plan = resolve_plan(root, spec)
        schema = _read_step(cplan.plan_key(plan, step="schema"), f"Reading the columns of {plan.describe(root)}",
                            lambda job: cplan.read_schema(job, root, plan))
    except CalibdashError as exc:
        st.error(f"**This source cannot be read:** {exc}")
        return
    except job_panel.Pending:    # reading: its progress and Cancel are shown (or why it stopped)
        return
    cols, types = schema["columns"], schema["types"]
    numeric = cplan.numeric_columns(cols, types)
    guess = schema["guess"]
    st.caption(plan.describe(root) + " · columns: " + cplan.describe_columns(cols, types))
    r1, r2, r3 = st.columns(3)
    score_opts = numeric or cols
    score = r1.selectbox("Score", score_opts, key=K_SCORE, persist_state="session",
                         index=_index(score_opts, guess.get("score")))
    label_opts = [c for c in cols if c != score]
    label = r2.selectbox("Label (true outcome)", label_opts, key=K_LABEL, persist_state="session",
                         index=_index(label_opts, guess.get("label")))
    split_opts = [NONE] + [c for c in cols if c not in (score, label)]
    split = r3.selectbox("Split column (optional)", split_opts, key=K_SPLIT, persist_state="session",
                         index=_index(split_opts, guess.get("split")))
    spec["roles"] = {"score": score, "label": label, "split": "" if split in (None, NONE) else split}
    st.button("Aggregate", key="large.aggregate", type="primary", icon=":material/play_arrow:", on_click=_activate,
              args=(spec,), help="Summarise the rows into score cells with DuckDB; this source then feeds Compare "
                                 "and Explore.")


def _index(options: list, guessed) -> int:
    return options.index(guessed) if guessed in options else 0


def _activate(spec: dict) -> None:
    """The Aggregate button: ``spec`` becomes the active large source (aggregated on this run)."""
    st.session_state[SPEC] = spec
    job_panel.forget_stopped()


def stop_if_large(page: str) -> None:
    """On a page that needs rows: say plainly that it does not work on a large source, and stop."""
    st.info(NOT_ON_LARGE.format(page=page), icon=":material/info:")
    st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
    st.stop()


def raw_cells(ld: LargeData) -> tuple:
    """``(scores, labels, weights)``: the all-rows cells as weighted rows (the Data page's raw reliability)."""
    return ld.weighted_rows()
