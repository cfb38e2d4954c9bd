"""The "Large data" source: rows that stay on the server, summarised into score cells by DuckDB.

Off unless the operator names a data root (``CALIBDASH_DATA_ROOT``, or
``calibdash_data_root`` in Streamlit's secrets; :func:`data_root`). Then the
Data page offers a third source, read through
:class:`calibdash.data.guard.DataRoot` only:

* **files**: a path or glob relative to the root (or absolute under it),
  resolved by :meth:`DataRoot.resolve_glob`; the engine gets the validated
  files as an explicit list, so it reads nothing else;
* **a DuckDB table**: a database file under the root, attached read-only as
  ``source`` by :meth:`DataRoot.connect`;
* **a SELECT query**: checked by :meth:`DataRoot.check_query` (one SELECT
  statement) and run on :meth:`DataRoot.connect`'s locked connection, which
  reads files under the root only.

Every kind is read on a guarded connection: its columns (``LIMIT 0``), the
sample that guesses the roles, and the aggregation itself
(:func:`calibdash.engines.duckdb.aggregate` with ``connection=``).

The aggregation runs in a background thread (``SYNCHRONOUS``: in the script
thread, for tests); the page shows its stage and elapsed time (DuckDB reports
no row progress) and a Cancel button (``connection.interrupt()``). What it
gives, the score cells of the chosen scheme and the all-rows cells, is kept
in a cache bounded by bytes, keyed on the resolved files with their sizes and
modification times (or the query text, or the database file), the roles and
the scheme: never rows. ``st.session_state`` holds only the source's spec
(the texts typed and the roles, :data:`SPEC`) and the key of a stopped job.

Pages see the aggregated source as a :class:`LargeData`, which answers what
Compare and Explore read of a :class:`calibdash.data.ScoreSet` (name, roles,
rows, content key) and gives score cells per scheme (:meth:`LargeData.cells`)
instead of rows.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from calibdash import cells as ccells
from calibdash.data.guard import AccessDenied, DataRoot, data_root_from_env, quote_identifier
from calibdash.data.scoreset import _choose_positive
from calibdash.engines.duckdb import aggregate as duckdb_aggregate
from calibdash.engines.source import Source
from calibdash.errors import CalibdashError, DataError, EnvironmentProblem, SettingsError
from calibdash.evaluation import Scheme

__all__ = ["LARGE", "SPEC", "SYNCHRONOUS", "KINDS", "LargeData", "data_root", "available", "resolve_plan",
           "source_inputs", "large_data_or_stop", "peek", "NOT_ON_LARGE"]

LARGE = "Large data"               # the Data page's source choice
SPEC = "large.spec"                # session key: the active large source (texts typed, roles); set by Aggregate
STOPPED = "large.stopped"          # session key: {"key", "message", "level"} of a cancelled or failed job
#: Run aggregations in the script thread (tests: AppTest cannot wait on a thread's fragment).
SYNCHRONOUS = False
#: How many rows guess the roles (read through the guarded connection).
GUESS_ROWS = 2000
#: Most distinct split values read (the Data page's choice of the training value).
MAX_SPLIT_VALUES = 200
#: What pages that need rows say on a large source.
NOT_ON_LARGE = ("{page} needs the rows themselves, which a large source keeps on the server (only its score "
                "cells are read): it does not work on a large source yet. Compare and Explore do; choose a "
                "sample or an upload on the Data page for this page.")

KINDS = {"files": "Files (path or glob)", "table": "DuckDB table", "query": "SQL query"}
K_KIND, K_PATH, K_DB, K_TABLE, K_QUERY, K_ORDER = ("large.kind", "large.path", "large.database", "large.table",
                                                   "large.query", "large.order_by")
K_SCORE, K_LABEL, K_SPLIT = "large.score", "large.label", "large.split"
NONE = "(none)"
_STAGES = ("1. statistics: rows, missing values, the score range, distinct scores (one scan)",
           "2. exact distinct count, only when the estimate is near the limit of exact cells (one scan)",
           "3. grouping the rows by part and score cell (one scan)")


# -- the data root ------------------------------------------------------------------------------------
def _secret_root():
    try:
        return st.secrets.get("calibdash_data_root")
    except Exception:  # noqa: BLE001 - no secrets.toml (or an unreadable one): the environment decides
        return None


#: Where the guarded DuckDB connection may spill past its memory limit: the server's own, outside the data root.
SPILL_DIRECTORY = Path(tempfile.gettempdir()) / f"calibdash-spill-{os.getuid() if hasattr(os, 'getuid') else 0}"


def data_root() -> DataRoot | None:
    """The operator's data root (secrets ``calibdash_data_root``, else ``CALIBDASH_DATA_ROOT``), or None: off.

    Raises
    ------
    EnvironmentProblem
        The configured directory does not exist, is not a directory, or is ``/``.
    """
    return data_root_from_env(_secret_root(), spill_directory=SPILL_DIRECTORY)


def available() -> bool:
    """Whether the operator turned large sources on (also when the root is misconfigured: the Data page says so)."""
    try:
        return data_root() is not None
    except EnvironmentProblem:
        return True


# -- what a spec names, resolved under the root ------------------------------------------------------
def _lit(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _stat(path) -> list:
    s = path.stat()
    return [str(path), int(s.st_size), int(s.st_mtime_ns)]


@dataclass(frozen=True)
class Plan:
    """A spec resolved under the data root: validated files, database file, table or checked query.

    ``identity`` (the files with sizes and modification times, or the
    database file's, the table, the query text and ORDER BY) keys the caches.
    """

    kind: str
    files: tuple = ()
    fmt: str = "parquet"
    database: str | None = None
    table: tuple | None = None          # (schema, table) in the attached database "source"
    query: str | None = None            # checked: one SELECT statement
    order_by: str | None = None
    identity: tuple = ()

    def relation_sql(self) -> str:
        """``SELECT *`` of the source, for the guarded connection (composed of validated parts only)."""
        if self.kind == "files":
            listed = "[" + ", ".join(_lit(f) for f in self.files) + "]"
            return (f"SELECT * FROM read_parquet({listed})" if self.fmt == "parquet"
                    else f"SELECT * FROM read_csv({listed}, header = true)")
        if self.kind == "table":
            return f"SELECT * FROM {self._table_sql()}"
        return f"SELECT * FROM (\n{self.query}\n) AS __q"

    def _table_sql(self) -> str:
        schema, table = self.table
        return f"source.{quote_identifier(schema)}.{quote_identifier(table)}"

    def source(self, roles: dict) -> Source:
        """The engine's :class:`Source` (no ``database``: the guarded connection has it attached)."""
        r = {"score": roles["score"], "label": roles["label"], "split": roles.get("split") or None}
        if self.kind == "files":
            return Source(path=list(self.files), format=self.fmt, **r)
        if self.kind == "table":
            return Source(table=self._table_sql(), **r)
        return Source(query=self.query + "\n", order_by=self.order_by or None, **r)

    def describe(self, root: DataRoot) -> str:
        """One line naming the source, paths relative to the root."""
        def rel(p):
            try:
                return str(Path(p).relative_to(root.root))
            except ValueError:
                return str(p)
        if self.kind == "files":
            first = rel(self.files[0])
            return first if len(self.files) == 1 else f"{len(self.files)} files ({first}, …)"
        if self.kind == "table":
            return f"table {self.table[0]}.{self.table[1]} of {rel(self.database)}"
        return "query " + " ".join(self.query.split())[:80]


def resolve_plan(root: DataRoot, spec: dict) -> Plan:
    """Resolve the texts of ``spec`` under ``root``.

    Raises
    ------
    AccessDenied
        A path outside the root, a query that is not one SELECT.
    DataError
        Nothing found, an empty input, an unknown file format.
    """
    kind = spec.get("kind")
    if kind == "files":
        text = (spec.get("path") or "").strip()
        if not text:
            raise DataError("give a path or a glob under the data root, such as scores/part-*.parquet.")
        files = root.resolve_glob(text)
        suffixes = {f.name.lower().rsplit(".", 1)[-1] for f in files}
        if suffixes <= {"parquet", "pq", "parq"}:
            fmt = "parquet"
        elif suffixes <= {"csv", "tsv", "txt"}:
            fmt = "csv"
        else:
            raise DataError(f"{text!r} matches files of several or unknown kinds ({', '.join(sorted(suffixes))}); "
                            "match Parquet files only or CSV files only.")
        return Plan(kind="files", files=tuple(str(f) for f in files), fmt=fmt,
                    identity=("files", fmt, tuple(tuple(_stat(f)) for f in files)))
    database = _database(root, spec.get("database"))
    db_identity = tuple(_stat(Path(database))) if database else None
    if kind == "table":
        if database is None:
            raise DataError("give the DuckDB database file (under the data root) that holds the table.")
        table = spec.get("table")
        if not table:
            raise DataError("choose a table of the database.")
        return Plan(kind="table", database=database, table=tuple(table), identity=("table", db_identity, tuple(table)))
    if kind == "query":
        checked = root.check_query(spec.get("query") or "")
        order_by = (spec.get("order_by") or "").strip() or None
        if order_by:            # the ORDER BY list is composed into the engine's SQL: it must keep one SELECT
            if any(t in order_by for t in (";", "--", "/*")) or order_by.count("(") != order_by.count(")"):
                raise AccessDenied("the ORDER BY list may hold column names, expressions and ASC/DESC only "
                                   "(no ';', comments or unbalanced parentheses).")
            root.check_query(f"SELECT * FROM (\n{checked}\n) AS __q ORDER BY {order_by}\n")
        return Plan(kind="query", database=database, query=checked, order_by=order_by,
                    identity=("query", db_identity, checked, order_by))
    raise SettingsError(f"unknown large source kind {kind!r}.")


def _database(root: DataRoot, text) -> str | None:
    """The DuckDB database file ``text`` names under the root (None when no text)."""
    text = (text or "").strip()
    if not text:
        return None
    db = root.resolve(text)
    if not db.is_file():
        raise DataError(f"{text!r} is a directory, not a DuckDB database file.")
    return str(db)


def _connect(root: DataRoot, plan: Plan):
    return root.connect(database=plan.database)


@st.cache_data(show_spinner="Reading the source's columns…", max_entries=32, max_size="32MB")
def _schema(identity: str, _root: DataRoot, _plan: Plan) -> dict:
    """The source's columns and types (``LIMIT 0``) and guessed roles (from ``GUESS_ROWS`` rows), read on the
    guarded connection."""
    from calibdash.data import guess_roles

    con = _connect(_root, _plan)
    try:
        rel = _root.query(con, _plan.relation_sql() + " LIMIT 0")
        columns, types = list(rel.columns), [str(t) for t in rel.types]
        head = _root.query(con, _plan.relation_sql() + f" LIMIT {GUESS_ROWS}").df()
    finally:
        con.close()
    try:
        roles = guess_roles(head)
        guess = {"score": roles.scores[0] if roles.scores else None, "label": roles.label, "split": roles.split}
    except CalibdashError:
        guess = {}
    return {"columns": columns, "types": types, "guess": guess}


def _tables(root: DataRoot, plan_db: str) -> list:
    con = root.connect(database=plan_db)
    try:
        got = root.query(con, "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'source' "
                              "ORDER BY schema_name, table_name").fetchall()
    finally:
        con.close()
    return [tuple(r) for r in got]


# -- the aggregation, in a thread -----------------------------------------------------------------------
def _key(plan: Plan, roles: dict, scheme: Scheme | None = None) -> str:
    payload = [list(plan.identity), sorted((k, v or "") for k, v in roles.items()), repr(scheme)]
    return hashlib.sha256(json.dumps(payload, default=str).encode()).hexdigest()


class _NotKept(Exception):
    """Nothing kept under this key (exceptions are not cached)."""


@st.cache_data(show_spinner=False, max_entries=32, max_size="512MB")
def _kept(key: str, _value=None):
    """What an aggregation gave, under its key: cells (a few MB at most, never rows), bounded by bytes."""
    if _value is None:
        raise _NotKept(key)
    return _value


def _lookup(key: str):
    try:
        return _kept(key)
    except _NotKept:
        return None


def _pool(cells: ccells.ScoreCells) -> ccells.ScoreCells:
    """All parts' exact cells merged into one part (the all-rows cells; exact cells only)."""
    u, inv = np.unique(cells.score, return_inverse=True)
    return ccells.ScoreCells(score=u, n=np.bincount(inv, weights=cells.n).round().astype(np.int64),
                             n_pos=np.bincount(inv, weights=cells.n_pos).round().astype(np.int64),
                             score_sum=np.bincount(inv, weights=cells.score_sum), part=np.zeros(u.size, np.int16),
                             exact=True, n_rows=int(cells.n_rows))


@dataclass
class _Job:
    key: str
    what: str
    started: float = field(default_factory=time.monotonic)
    stage: str = "connecting"
    con: Any = None
    result: Any = None
    error: BaseException | None = None
    cancelled: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self.cancelled = True
        con = self.con
        if con is not None:
            try:
                con.interrupt()
            except Exception:  # noqa: BLE001 - already closed: the job is ending anyway
                pass


_JOBS: dict[str, _Job] = {}
_JOBS_LOCK = threading.Lock()


def _work(job: _Job, root: DataRoot, plan: Plan, roles: dict, scheme: Scheme, need_all: bool) -> None:
    """The job's body (no Streamlit call: it may run in a thread)."""
    con = None
    try:
        con = _connect(root, plan)
        job.con = con
        if job.cancelled:
            raise DataError("cancelled")
        src = plan.source(roles)
        job.stage = f"aggregating the rows into score cells for: {scheme.describe(on_cells=True)}"
        cells = duckdb_aggregate(src, scheme, features=[], connection=con)
        result = {"cells": cells}
        if need_all:
            if scheme.kind == "insample":
                every = cells
            elif cells.exact:
                every = _pool(cells)
            else:
                job.stage = "aggregating all rows (the Data page's raw reliability)"
                every = duckdb_aggregate(src, None, features=[], connection=con)
            job.stage = "reading the score's and the label's range"
            s = f"TRY_CAST({quote_identifier(src.score)} AS DOUBLE)"
            lab = quote_identifier(src.label)
            lo, hi, llo, lhi = con.execute(
                f"SELECT min({s}) FILTER (WHERE isfinite({s})), max({s}) FILTER (WHERE isfinite({s})), "
                f"min({lab}), max({lab}) FROM ({plan.relation_sql()}\n)").fetchone()
            splits = []
            if src.split:
                job.stage = "reading the split column's values"
                splits = [r[0] for r in con.execute(
                    f"SELECT DISTINCT {quote_identifier(src.split)} FROM ({plan.relation_sql()}\n) "
                    f"LIMIT {MAX_SPLIT_VALUES}").fetchall()]
            mapped = lo is not None and (lo < 0 or hi > 1)
            result["all"] = {"cells": every, "positive": _choose_positive([llo, lhi], None, src.label)[0],
                             "range": (lo, hi) if mapped else None, "splits": splits}
        job.result = result
    except BaseException as exc:  # noqa: BLE001 - handed to the page, which shows it as a message
        job.error = exc
    finally:
        job.con = None
        if con is not None:
            con.close()
        job.done.set()


def _start(key: str, what: str, root, plan, roles, scheme, need_all) -> _Job:
    with _JOBS_LOCK:
        job = _JOBS.get(key)
        if job is not None:
            return job
        job = _Job(key=key, what=what)
        _JOBS[key] = job
    if SYNCHRONOUS:
        _work(job, root, plan, roles, scheme, need_all)
    else:
        threading.Thread(target=_work, args=(job, root, plan, roles, scheme, need_all), daemon=True,
                         name=f"calibdash-aggregate-{key[:8]}").start()
    return job


def _finish(job: _Job, all_key: str) -> None:
    """Keep a finished job's cells in the cache, or remember why it stopped (the session's ``STOPPED``)."""
    with _JOBS_LOCK:
        _JOBS.pop(job.key, None)
    if job.error is None:
        _kept(job.key, job.result["cells"])
        if "all" in job.result:
            _kept(all_key, job.result["all"])
        return
    if job.cancelled:
        msg, level = "The aggregation was cancelled.", "warning"
    elif isinstance(job.error, CalibdashError):
        msg, level = f"**The large source cannot be aggregated:** {job.error}", "error"
    else:
        first = (str(job.error).splitlines() or [""])[0]
        msg, level = (f"**The large source cannot be aggregated:** DuckDB stopped with "
                      f"{type(job.error).__name__}: {first}"), "error"
    st.session_state[STOPPED] = {"key": job.key, "message": msg, "level": level}


@st.fragment(run_every=1.0)
def _progress(key: str) -> None:
    job = _JOBS.get(key)
    if job is None or job.done.is_set():
        st.rerun()
    status = st.status(f"Aggregating {job.what} with DuckDB…", state="running", expanded=True)
    status.markdown(f"**Now:** {job.stage} · {time.monotonic() - job.started:.0f} s elapsed")
    status.caption("DuckDB reports no row progress, only when a stage ends. Each aggregation is "
                   + "; ".join(_STAGES) + ". No row is sent to the dashboard.")
    st.button("Cancel", key=f"large.cancel.{key[:12]}", icon=":material/cancel:", on_click=_cancel, args=(key,))
    if job.cancelled:
        st.caption("Cancelling…")


def _cancel(key: str) -> None:
    job = _JOBS.get(key)
    if job is not None:
        job.cancel()


def _aggregate_or_stop(root, plan, roles, scheme, key, all_key, need_all) -> None:
    """Run (or wait on) the aggregation behind ``key``; return once its cells are kept, else show the
    progress, or why it stopped, and stop the page."""
    _show_stopped(key)
    try:
        plan.source(roles).check_keys(scheme)
    except SettingsError as exc:
        st.error(f"**This evaluation scheme does not work on this source:** {exc}")
        st.stop()
    job = _start(key, plan.describe(root), root, plan, roles, scheme, need_all)
    if job.done.is_set():
        _finish(job, all_key)
        if job.error is None:
            if need_all:
                st.rerun()               # once, so that the sidebar (drawn before the page) shows the new source
            return
        _show_stopped(key)
    _progress(key)
    st.stop()


def _show_stopped(key: str) -> None:
    """Why the job behind ``key`` stopped (cancelled, failed) with a button to try again; then stop the page."""
    stopped = st.session_state.get(STOPPED)
    if not stopped or stopped.get("key") != key:
        return
    getattr(st, stopped["level"])(stopped["message"])
    st.button("Aggregate again", key=f"large.again.{key[:12]}", icon=":material/refresh:",
              on_click=lambda: st.session_state.pop(STOPPED, None))
    st.stop()


# -- what the pages see --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LargeData:
    """An aggregated large source: what Compare and Explore read of a ScoreSet, with cells instead of rows.

    ``all_cells`` are the all-rows cells (one part); :meth:`cells` the cells
    of a scheme (aggregated on first use, with the progress shown).
    ``split`` holds the split column's distinct values only (for the choice
    of the training value), never one per row.
    """

    name: str
    score: str
    label_column: str
    split_column: str | None
    positive_label: Any
    all_cells: ccells.ScoreCells
    key: str
    mapped_range: tuple | None
    splits: tuple
    roles: dict
    _root: DataRoot
    _plan: Plan
    features = None
    feature_columns: tuple = ()
    is_large = True

    @property
    def n_rows(self) -> int:
        return int(self.all_cells.n_rows)

    @property
    def n_pos(self) -> int:
        return int(np.sum(self.all_cells.n_pos))

    @property
    def n_cells(self) -> int:
        return len(self.all_cells)

    @property
    def score_columns(self) -> list:
        return [self.score]

    @property
    def split(self):
        return np.array(self.splits, dtype=object) if self.split_column else None

    @property
    def report(self) -> SimpleNamespace:
        """What the pages read of a validation report: the mapped score's range, notes."""
        notes = [f"A large source on the server ({self.name}): {self.n_rows:,} rows summarised by DuckDB into "
                 f"{self.n_cells:,} score cells; no row was dropped (rows where they live are checked, not "
                 "filtered)."]
        return SimpleNamespace(mapped={self.score: self.mapped_range} if self.mapped_range else {}, messages=notes,
                               n_read=self.n_rows, n_used=self.n_rows)

    def content_key(self) -> str:
        return self.key

    def with_score(self, column: str) -> "LargeData":
        if column != self.score:
            raise DataError("a large source is aggregated for one score column; choose another on the Data page.")
        return self

    def cells(self, scheme: Scheme) -> ccells.ScoreCells:
        """The score cells of ``scheme`` (parts by row hash, or the split column); aggregated when not kept."""
        key = _key(self._plan, self.roles, scheme)
        got = _lookup(key)
        if got is None:
            _aggregate_or_stop(self._root, self._plan, self.roles, scheme, key, self.key, need_all=False)
            got = _lookup(key)
        return got

    def report_view(self) -> SimpleNamespace:
        """For :func:`calibdash.report.describe_source`, which sums ``labels``: the positives as one number."""
        return SimpleNamespace(name=self.name, labels=np.array([self.n_pos]), report=self.report, n_rows=self.n_rows,
                               score=self.score, label_column=self.label_column, positive_label=self.positive_label,
                               split_column=self.split_column, feature_columns=[])

    def describe(self) -> str:
        """The sidebar's line."""
        return f"{self.n_rows:,} rows summarised into {self.n_cells:,} score cells (DuckDB)"


def _scheme_for(split_column: str | None) -> Scheme:
    from pages.parts.scheme import current_scheme

    return current_scheme(SimpleNamespace(split_column=split_column))


def _resolved():
    """(root, spec, plan) of the active large source; raises as :func:`resolve_plan`, or DataError when none."""
    spec = st.session_state.get(SPEC)
    if not spec:
        raise DataError("no large source has been aggregated yet: choose one on the Data page and press Aggregate.")
    root = data_root()
    if root is None:
        raise DataError("large sources are off on this server (no data root is configured).")
    return root, spec, resolve_plan(root, spec)


def peek() -> LargeData | str:
    """The active large source when its cells are kept, else a line saying why not (no widget, no job)."""
    try:
        root, spec, plan = _resolved()
    except CalibdashError as exc:
        return str(exc)
    got = _lookup(_key(plan, spec["roles"]))
    if got is None:
        return f"{plan.describe(root)}: not aggregated yet."
    return _large(root, spec, plan, got)


def _large(root, spec, plan, got) -> LargeData:
    roles = spec["roles"]
    return LargeData(name=plan.describe(root), score=roles["score"], label_column=roles["label"],
                     split_column=roles.get("split") or None, positive_label=got["positive"],
                     all_cells=got["cells"], key=_key(plan, roles), mapped_range=got["range"],
                     splits=tuple(got["splits"]), roles=dict(roles), _root=root, _plan=plan)


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
    all_key = _key(plan, roles)
    got = _lookup(all_key)
    if got is None:
        scheme = _scheme_for(roles.get("split") or None)
        try:
            plan.source(roles).check_keys(scheme)
        except SettingsError:    # a query without ORDER BY: first all rows; the Data page then says what fails
            scheme = Scheme(kind="insample")
        _aggregate_or_stop(root, plan, roles, scheme, _key(plan, roles, scheme), all_key, need_all=True)
        got = _lookup(all_key)
    return _large(root, spec, plan, got)


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
            tables = _tables(root, _database(root, spec["database"]))
            if not tables:
                st.error("**This database holds no table.**")
                return
            chosen = st.selectbox("Table", tables, key=K_TABLE, persist_state="session",
                                  format_func=lambda t: f"{t[0]}.{t[1]}")
            spec["table"] = list(chosen)
        plan = resolve_plan(root, spec)
        schema = _schema(json.dumps(list(plan.identity), default=str), root, plan)
    except CalibdashError as exc:
        st.error(f"**This source cannot be read:** {exc}")
        return
    cols, types = schema["columns"], schema["types"]
    numeric = [c for c, t in zip(cols, types) if t.upper().startswith(
        ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
         "FLOAT", "DOUBLE", "DECIMAL", "REAL"))]
    guess = schema["guess"]
    st.caption(plan.describe(root) + " · columns: " + ", ".join(f"`{c}` ({t})" for c, t in zip(cols, types)))
    r1, r2, r3 = st.columns(3)
    score_opts = numeric or cols
    score = r1.selectbox("Score", score_opts, key=K_SCORE, persist_state="session",
                         index=score_opts.index(guess["score"]) if guess.get("score") in score_opts else 0)
    label_opts = [c for c in cols if c != score]
    label = r2.selectbox("Label (true outcome)", label_opts, key=K_LABEL, persist_state="session",
                         index=label_opts.index(guess["label"]) if guess.get("label") in label_opts else 0)
    split_opts = [NONE] + [c for c in cols if c not in (score, label)]
    split = r3.selectbox("Split column (optional)", split_opts, key=K_SPLIT, persist_state="session",
                         index=split_opts.index(guess["split"]) if guess.get("split") in split_opts else 0)
    spec["roles"] = {"score": score, "label": label, "split": "" if split in (None, NONE) else split}
    st.button("Aggregate", key="large.aggregate", type="primary", icon=":material/play_arrow:", on_click=_activate,
              args=(spec,), help="Summarise the rows into score cells with DuckDB; this source then feeds Compare "
                                 "and Explore.")


def _activate(spec: dict) -> None:
    """The Aggregate button: ``spec`` becomes the active large source (aggregated on this run)."""
    st.session_state[SPEC] = spec
    st.session_state.pop(STOPPED, None)


def stop_if_large(page: str) -> None:
    """On a page that needs rows: say plainly that it does not work on a large source, and stop."""
    st.info(NOT_ON_LARGE.format(page=page), icon=":material/info:")
    st.page_link("pages/data.py", label="Go to the Data page", icon=":material/folder_open:")
    st.stop()


def raw_cells(ld: LargeData) -> tuple:
    """``(scores, labels, weights)``: the all-rows cells as weighted rows (the Data page's raw reliability)."""
    c = ld.all_cells
    return c.weighted_predictions(c.score)


def summary_frame(ld: LargeData) -> pd.DataFrame:
    """Rows, cells, positives and the positive rate of the active large source, for the Data page."""
    return pd.DataFrame({"value": [f"{ld.n_rows:,}", f"{ld.n_cells:,}", f"{ld.n_pos:,}",
                                   f"{ld.n_pos / max(ld.n_rows, 1):.1%}"]},
                        index=["Rows", "Score cells", "Positives", "Positive rate"])
