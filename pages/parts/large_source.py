"""The "Large data" source's widgets: rows that stay on the server, summarised into score cells by DuckDB.

Off unless the operator names a data root (``CALIBDASH_DATA_ROOT``, or
``calibdash_data_root`` in Streamlit's secrets; :func:`data_root`). Then the
Data page offers a third source: files (a path or glob), a DuckDB table, or
a SELECT query under the root. What they name and how they are read lives
in the library (:mod:`calibdash.engines.plan`, :mod:`calibdash.data.guard`);
here are only the widgets.

Every step that runs a query (the database's tables, the columns and the
sample that guesses the roles, the aggregation) is a job of
:mod:`calibdash.jobs`: it runs in the server's bounded pool (queued when
``CALIBDASH_MAX_JOBS`` run already, stopped after
``CALIBDASH_JOB_TIMEOUT_S``), owned by the sessions that wait for it. The
page shows its stage, progress, elapsed time or place in the queue, and a
Cancel button that withdraws only this session's interest; the job stops
when no session wants it, and a session that closes stops renewing its
lease. ``SYNCHRONOUS`` waits in the script instead of polling (AppTest
cannot poll). The operator's settings are read from the environment or
from Streamlit's secrets (the variables' names in lower case).

What a job gives (columns and guessed roles; the score cells of a scheme
and the all-rows cells, never rows) is kept in caches bounded by bytes,
keyed by :func:`calibdash.engines.plan.plan_key`. ``st.session_state``
holds only the source's spec (:data:`SPEC`), the keys of the jobs this
session waits for, and why one stopped. Pages see an aggregated source as a
:class:`LargeData`: what Compare and Explore read of a ScoreSet, with score
cells per scheme instead of rows.
"""
from __future__ import annotations

import functools
import logging
import os
import tempfile
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from pages.parts import bounded_cache

from calibdash import cells as ccells, jobs
from calibdash.data.guard import ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, ENV_VAR, DataRoot, data_root_from_env
from calibdash.engines import plan as cplan
from calibdash.engines.plan import Plan, resolve_plan
from calibdash.errors import CalibdashError, DataError, EnvironmentProblem, SettingsError
from calibdash.evaluation import Scheme

__all__ = ["LARGE", "SPEC", "SYNCHRONOUS", "KINDS", "LargeData", "data_root", "available", "registry",
           "resolve_plan", "source_inputs", "large_data_or_stop", "peek", "NOT_ON_LARGE"]

log = logging.getLogger("calibdash.app")

LARGE = "Large data"               # the Data page's source choice
SPEC = "large.spec"                # session key: the active large source (texts typed, roles); set by Aggregate
STOPPED = "large.stopped"          # session key: {job key: {"message", "level"}} of this session's stopped jobs
HELD = "large.held"                # session key: {slot: job key} of the jobs this session waits for
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
_SECRETS = (ENV_VAR, ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, jobs.ENV_MAX_JOBS, jobs.ENV_JOB_TIMEOUT, jobs.ENV_JOB_LEASE,
            jobs.ENV_MAX_QUEUED)


# -- the operator's settings ----------------------------------------------------------------------------
def _secrets() -> dict:
    """The operator's settings in Streamlit's secrets (``calibdash_data_root``, ``calibdash_max_jobs``, ...)."""
    try:
        return {k.lower(): st.secrets.get(k.lower()) for k in _SECRETS if st.secrets.get(k.lower()) is not None}
    except Exception:  # noqa: BLE001 - no secrets.toml (or an unreadable one): the environment decides
        return {}


@functools.lru_cache(maxsize=4)
def _root(given: tuple, environ: tuple) -> DataRoot | None:
    given = dict(given)
    return data_root_from_env(given.get(ENV_VAR.lower()), environ=dict(environ), given=given,
                              spill_directory=tempfile.gettempdir())


def data_root() -> DataRoot | None:
    """The operator's data root (secrets ``calibdash_data_root``, else ``CALIBDASH_DATA_ROOT``), or None: off.

    One :class:`DataRoot` per configuration, so its private spill directory is made once.

    Raises
    ------
    EnvironmentProblem
        The configured directory does not exist, is not a directory, or is ``/``; a limit is not a size.
    """
    given = tuple(sorted((k, str(v)) for k, v in _secrets().items()))
    return _root(given, tuple((k, os.environ.get(k, "")) for k in (ENV_VAR, ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT)))


def available() -> bool:
    """Whether the operator turned large sources on (also when the root is misconfigured: the Data page says so)."""
    try:
        return data_root() is not None
    except EnvironmentProblem:
        return True


def _session_alive(owner) -> bool | None:
    """Whether the session of ``owner`` is still connected (asked when its lease expires), or None: unknown."""
    try:
        from streamlit import runtime

        return runtime.exists() and runtime.get_instance().is_active_session(str(owner).split("/")[0])
    except Exception:  # noqa: BLE001 - no runtime (tests): the lease decides
        return None


def registry() -> jobs.JobRegistry:
    """The server's jobs (:func:`calibdash.jobs.shared_registry`), with the operator's current limits."""
    return jobs.shared_registry(jobs.limits_from_env(given=_secrets()), alive=_session_alive)


# -- jobs, as this session sees them --------------------------------------------------------------------
def _owner() -> str:
    """This session as a job's owner: its session id (so the registry can ask whether it is connected) and a token
    kept in the session (AppTest gives every session the same id)."""
    token = st.session_state.setdefault("large.owner", uuid.uuid4().hex[:12])
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return f"{ctx.session_id}/{token}" if ctx is not None else token
    except Exception:  # noqa: BLE001 - no script context: the token alone
        return token


def _hold(slot: str, key: str | None) -> None:
    """This session now waits for ``key`` in ``slot`` (reading, aggregating): it lets go of the job it held there."""
    held = dict(st.session_state.get(HELD) or {})
    old = held.get(slot)
    if old and old != key:
        registry().release(old, _owner())
    if key is None:
        held.pop(slot, None)
    else:
        held[slot] = key
    st.session_state[HELD] = held


def _stop_note(key: str, message: str, level: str) -> None:
    notes = {k: v for k, v in (st.session_state.get(STOPPED) or {}).items() if k != key}
    st.session_state[STOPPED] = dict(list(notes.items())[-15:]) | {key: {"message": message, "level": level}}


class _Pending(Exception):
    """The job is still running, or stopped (what the page shows says which): nothing to use yet."""


def _halt() -> None:
    st.stop()


def _pending() -> None:
    raise _Pending


def _run_job(slot: str, key: str, what: str, work, keep, fail: str, note: str = "", halt=_halt):
    """The result of the job behind ``key`` (running ``work(job)`` unless it runs already), once it finished: its
    result is passed to ``keep`` and returned. Until then the page shows its progress, and ``halt()`` (default:
    stop the page); when it failed or was cancelled for this session, why, with a button to try again, and
    ``halt()``."""
    if _show_stopped(key):
        halt()
    reg, me = registry(), _owner()
    try:
        job = reg.submit(key, work, owner=me, what=what)
    except CalibdashError as exc:           # the queue is full
        st.warning(f"**{fail}:** {exc}")
        halt()
    _hold(slot, key)
    if SYNCHRONOUS:
        reg.wait(key, me)
    if job.finished:
        _hold(slot, None)
        reg.release(key, me)
        if job.state == jobs.DONE:
            keep(job.result)
            return job.result
        if isinstance(job.error, CalibdashError):
            _stop_note(key, f"**{fail}:** {job.error}", "warning" if job.state == jobs.CANCELLED else "error")
        else:
            log.error("large-source job failed", exc_info=job.error)
            _stop_note(key, f"**{fail}:** something went wrong ({type(job.error).__name__}); the details are in "
                            "the server log.", "error")
        _show_stopped(key)
    else:
        _progress(key, what, note)
    halt()


@st.fragment(run_every=1.0)
def _progress(key: str, what: str, note: str) -> None:
    """The job's stage, progress, elapsed time or place in the queue, and Cancel; renews this session's lease."""
    reg = registry()
    job = reg.get(key)
    if job is None or job.finished or not reg.heartbeat(key, _owner()):
        st.rerun()
    status = st.status(f"{what}…", state="running", expanded=True)
    limits = reg.limits
    if job.state == jobs.QUEUED:
        running, _ = reg.counts()
        status.markdown(f"**Waiting for a free slot:** number {job.place or 1} in line · {running} of at most "
                        f"{limits.max_jobs} jobs run on this server · {job.waited:.0f} s waited")
    else:
        status.markdown(f"**Now:** {job.stage} · {job.elapsed:.0f} s elapsed (at most {limits.timeout_s:.0f} s)")
        if job.progress is not None:
            status.progress(job.progress, text=f"this step: {job.progress:.0%}")
    others = len(job.owners) - 1
    status.caption((note + " " if note else "") + "No row is sent to the dashboard."
                   + (f" {others} other session{'s' if others > 1 else ''} wait for it too: Cancel stops it for you "
                      "only." if others > 0 else ""))
    st.button("Cancel", key=f"large.cancel.{key[:12]}", icon=":material/cancel:", on_click=_cancel,
              args=(key, what))
    if job.cancelled:
        st.caption("Cancelling…")


def _cancel(key: str, what: str) -> None:
    """This session no longer waits for the job (which stops when no other session does)."""
    job = registry().release(key, _owner())
    held = {k: v for k, v in (st.session_state.get(HELD) or {}).items() if v != key}
    st.session_state[HELD] = held
    others = len(job.owners) if job is not None and not job.finished else 0
    _stop_note(key, f"{what}: cancelled." + (f" It goes on for the {others} other session{'s' if others > 1 else ''} "
                                              "waiting for it." if others else ""), "warning")


def _show_stopped(key: str) -> bool:
    """Whether the job behind ``key`` stopped for this session; if so, why, with a button to try again."""
    stopped = (st.session_state.get(STOPPED) or {}).get(key)
    if not stopped:
        return False
    getattr(st, stopped["level"])(stopped["message"])
    st.button("Try again", key=f"large.again.{key[:12]}", icon=":material/refresh:", on_click=_forget_stop,
              args=(key,))
    return True


def _forget_stop(key: str) -> None:
    st.session_state[STOPPED] = {k: v for k, v in (st.session_state.get(STOPPED) or {}).items() if k != key}


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
    """The result of a reading job (tables, columns), kept; or its progress and a stop."""
    got = _lookup(key, _read)
    if got is None:
        got = _run_job("read", key, what, work, lambda result: _read(key, result), "This source cannot be read",
                       halt=_pending)
    return got


def _aggregate_or_stop(root, plan, roles, scheme, key, all_key, need_all) -> None:
    """Run (or wait on) the aggregation behind ``key``; return once its cells are kept, else show the progress,
    or why it stopped, and stop the page."""
    if _show_stopped(key):
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

    _run_job("aggregate", key, f"Aggregating {plan.describe(root)} with DuckDB",
             lambda job: cplan.aggregate_plan(job, root, plan, roles, scheme, need_all), keep,
             "The large source cannot be aggregated",
             note="DuckDB reports the progress of each query, not of the whole. Each aggregation is "
                  + "; ".join(list(cplan.STAGE_TEXT.values())[:3]) + ".")
    if need_all:
        st.rerun()               # once, so that the sidebar (drawn before the page) shows the new source


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
        key = cplan.plan_key(self._plan, self.roles, scheme)
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
    got = _lookup(cplan.plan_key(plan, spec["roles"]))
    if got is None:
        return f"{plan.describe(root)}: not aggregated yet."
    return _large(root, spec, plan, got)


def _large(root, spec, plan, got) -> LargeData:
    roles = spec["roles"]
    return LargeData(name=plan.describe(root), score=roles["score"], label_column=roles["label"],
                     split_column=roles.get("split") or None, positive_label=got["positive"],
                     all_cells=got["cells"], key=cplan.plan_key(plan, roles), mapped_range=got["range"],
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
    all_key = cplan.plan_key(plan, roles)
    got = _lookup(all_key)
    if got is None:
        scheme = _scheme_for(roles.get("split") or None)
        try:
            plan.source(roles).check_keys(scheme)
        except SettingsError:    # a query without ORDER BY: first all rows; the Data page then says what fails
            scheme = Scheme(kind="insample")
        _aggregate_or_stop(root, plan, roles, scheme, cplan.plan_key(plan, roles, scheme), all_key, need_all=True)
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
    except _Pending:             # reading: its progress and Cancel are shown (or why it stopped)
        return
    cols, types = schema["columns"], schema["types"]
    numeric = cplan.numeric_columns(cols, types)
    guess = schema["guess"]
    shown = ", ".join(f"`{str(c)[:60]}` ({str(t)[:40]})" for c, t in list(zip(cols, types))[:50])
    st.caption(plan.describe(root) + " · columns: " + shown + (f", … ({len(cols):,} in all)" if len(cols) > 50 else ""))
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
