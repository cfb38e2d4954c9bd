"""Large sources under a data root: what a typed spec names, and the jobs that read it on a guarded connection.

:func:`resolve_plan` turns typed texts into a :class:`Plan` through :class:`calibdash.data.guard.DataRoot` only
(validated files read by their exact names, a database under the root, a checked query). The jobs'
work (:func:`read_tables`, :func:`read_schema`, :func:`aggregate_plan`) opens the root's locked connection, lets
the job interrupt it and read its progress, and turns every error into a short typed one; :func:`plan_key`
keys their results; :class:`LargeSource` is the dashboard's active large source (spec, cell keys, LargeData) without
its widgets. Nothing here imports Streamlit; :data:`NO_JOB` runs work in the caller's thread."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from ..evaluation import cells as ccells
from ..data.guard import AccessDenied, DataRoot, engine_error, quote_identifier
from ..data.large_source import LargeData
from ..core.validation import choose_positive
from ..core.errors import CalibdashError, DataError, SettingsError
from ..evaluation.scheme import Scheme
from .duckdb.rows import ident, is_numeric_type, lit, literal_path
from .flow import STAGES
from .source import Source

__all__ = ["resolve_plan", "aggregate_job", "describe_columns", "AGGREGATE_NOTE", "STAGE_TEXT", "LargeSource", "Plan",
           "tables_step", "schema_step", "ROLES", "role_choices", "chosen_roles"]

#: How many rows guess the roles.
GUESS_ROWS = 2000
#: Longest text read per value of the role-guessing sample (longer text is cut; lists and structs are read as text).
SAMPLE_CHARS = 200
#: Most distinct split values read (the Data page's choice of the training value).
MAX_SPLIT_VALUES = 200
#: What each stage of :func:`calibdash.engines.duckdb.rows.aggregate` does, for people.
STAGE_TEXT = {
    STAGES[0]: "1. statistics: rows, missing values, the score range, distinct scores (one scan)",
    STAGES[1]: "2. exact distinct count, only when the estimate is near the limit of exact cells (one scan)",
    STAGES[2]: "3. grouping the rows by part and score cell (one scan)",
    STAGES[3]: "a reproducible sample of rows",
}

#: What a watcher of :func:`aggregate_plan` is told about its progress.
AGGREGATE_NOTE = ("DuckDB reports the progress of each query, not of the whole. Each aggregation is "
                  + "; ".join(list(STAGE_TEXT.values())[:3]) + ".")


class _NoJob:
    """The job interface for work run in the caller's thread: no stage shown, nothing to interrupt."""

    def set_stage(self, stage, progress=None):
        pass

    def check(self):
        pass

    def progress_from(self, probe):
        pass

    def interrupt_with(self, interrupt):
        return contextlib.nullcontext()


#: Run a job's work directly: ``read_schema(NO_JOB, root, plan)``.
NO_JOB = _NoJob()


def describe_columns(columns, types, most: int = 50) -> str:
    """The first ``most`` columns with their types, as one line (names and types cut short)."""
    shown = ", ".join(f"`{str(c)[:60]}` ({str(t)[:40]})" for c, t in list(zip(columns, types))[:most])
    return shown + (f", … ({len(columns):,} in all)" if len(columns) > most else "")


def _stat(path) -> list:
    s = Path(path).stat()
    return [str(path), int(s.st_size), int(s.st_mtime_ns)]


@dataclass(frozen=True)
class Plan:
    """A spec resolved under the data root: validated files, database file, table or checked query;
    ``identity`` (the files' or database's paths, sizes and modification times, the table, the query) keys caches.
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
        """``SELECT *`` of the source, for the guarded connection (composed of validated parts only; each file
        named literally, so DuckDB does not expand its name as a pattern)."""
        if self.kind == "files":
            listed = "[" + ", ".join(lit(literal_path(f)) for f in self.files) + "]"
            return (f"SELECT * FROM read_parquet({listed})" if self.fmt == "parquet"
                    else f"SELECT * FROM read_csv({listed}, header = true)")
        if self.kind == "table":
            return f"SELECT * FROM {self._table_sql()}"
        return f"SELECT * FROM (\n{self.query}\n) AS __q"

    def _table_sql(self) -> str:
        schema, table = self.table
        return f"source.{quote_identifier(schema)}.{quote_identifier(table)}"

    def source(self, roles: dict) -> Source:
        """The engine's :class:`Source` (files by their exact names; no ``database``: the guarded connection has
        it attached)."""
        r = {"score": roles["score"], "label": roles["label"], "split": roles.get("split") or None}
        if self.kind == "files":
            return Source(path=list(self.files), format=self.fmt, exact_paths=True, **r)
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
    """Resolve the texts of ``spec`` (``kind``: files, table or query, and its texts) under ``root``.

    Raises
    ------
    AccessDenied
        A path outside the root, a query that is not one SELECT.
    DataError
        Nothing found, an empty input, an unknown file format, a path that cannot be read.
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
            raise DataError(f"{text[:120]!r} matches files of several or unknown kinds "
                            f"({', '.join(sorted(suffixes))[:200]}); match Parquet files only or CSV files only.")
        for f in files:
            literal_path(f)             # a name DuckDB cannot read as named is refused here, with a message
        try:
            identity = tuple(tuple(_stat(f)) for f in files)
        except OSError as exc:
            raise engine_error(exc, what=f"{text[:120]!r}", root=root.root) from None
        return Plan(kind="files", files=tuple(str(f) for f in files), fmt=fmt, identity=("files", fmt, identity))
    database = database_file(root, spec.get("database"))
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


def database_file(root: DataRoot, text) -> str | None:
    """The DuckDB database file ``text`` names under the root (None when no text)."""
    text = (text or "").strip()
    if not text:
        return None
    db = root.resolve(text)
    try:
        is_file = db.is_file()
    except OSError as exc:
        raise engine_error(exc, what=f"{text[:120]!r}", root=root.root) from None
    if not is_file:
        raise DataError(f"{text[:120]!r} is a directory, not a DuckDB database file.")
    return str(db)


def plan_key(plan_or_identity, roles: dict | None = None, scheme: Scheme | None = None, *, step: str = "") -> str:
    """A key for what a job gives on ``plan`` (its identity), ``roles`` and ``scheme``: a SHA-256 hex digest.

    ``step`` names other work on the same source (``"schema"``, ``"tables"``).
    """
    identity = plan_or_identity.identity if isinstance(plan_or_identity, Plan) else plan_or_identity
    payload = [list(identity), sorted((k, v or "") for k, v in (roles or {}).items()), repr(scheme)]
    if step:
        payload.append(step)
    return hashlib.sha256(json.dumps(payload, default=str).encode()).hexdigest()


@contextlib.contextmanager
def watch(job, con):
    """While inside: ``job`` interrupts the DuckDB connection ``con`` when cancelled and reads its query
    progress."""
    with job.interrupt_with(con.interrupt):
        job.progress_from(lambda: _progress(con))
        try:
            yield con
        finally:
            job.progress_from(None)


@contextlib.contextmanager
def _connected(job, root: DataRoot, database=None):
    """The root's locked connection, interrupted by ``job`` when cancelled and reporting its query progress."""
    job.set_stage("connecting")
    con = root.connect(database=database)
    try:
        with watch(job, con):
            yield con
    finally:
        con.close()


def _progress(con) -> float | None:
    p = con.query_progress()
    return p / 100.0 if p is not None and p >= 0 else None


def _fetch(root: DataRoot, con, sql: str, how: str, what: str, guarded: bool = True):
    """Run ``sql`` (checked as one SELECT when ``guarded``) and fetch it: every error short and typed."""
    try:
        rel = root.query(con, sql) if guarded else con.sql(sql)
        if how == "df":
            return rel.df()
        if how == "columns":
            return list(rel.columns), [str(t) for t in rel.types]
        return rel.fetchall()
    except CalibdashError:
        raise
    except Exception as exc:  # noqa: BLE001 - DuckDB's (or pandas') error while fetching: short, typed, no data
        raise engine_error(exc, what=what, root=root.root) from None


def read_tables(job, root: DataRoot, database: str) -> list:
    """The ``(schema, table)`` pairs of the DuckDB database file ``database`` under the root."""
    what = f"the database {Path(database).name[:120]!r}"
    with _connected(job, root, database) as con:
        job.set_stage("listing the database's tables")
        got = _fetch(root, con, "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'source' "
                                "ORDER BY schema_name, table_name", "all", what)
    return [tuple(r) for r in got]


def read_schema(job, root: DataRoot, plan: Plan, rows: int = GUESS_ROWS) -> dict:
    """The source's columns and types (``LIMIT 0``) and roles guessed from its first ``rows`` rows.

    The sample reads numbers and booleans as they are and every other column as text cut to :data:`SAMPLE_CHARS`
    characters, so no huge value and no type pandas cannot hold reaches Python; a guess that fails is no guess.

    Returns
    -------
    dict
        ``{"columns": [...], "types": [...], "guess": {"score", "label", "split"}}``.
    """
    from ..data import guess_roles

    what = plan.describe(root)
    with _connected(job, root, plan.database) as con:
        job.set_stage("reading the columns")
        columns, types = _fetch(root, con, plan.relation_sql() + "\nLIMIT 0", "columns", what)
        if not columns:
            raise DataError(f"{what} has no columns.")
        job.set_stage(f"reading {rows:,} rows to guess the roles")
        picked = ", ".join(ident(c) if is_numeric_type(t) or str(t).upper() == "BOOLEAN"
                           else f"left(CAST({ident(c)} AS VARCHAR), {SAMPLE_CHARS}) AS {ident(c)}"
                           for c, t in zip(columns, types))
        head = _fetch(root, con, f"SELECT {picked} FROM (\n{plan.relation_sql()}\n) AS __s LIMIT {int(rows)}", "df",
                      what)
    try:
        roles = guess_roles(head)
        guess = {"score": roles.scores[0] if roles.scores else None, "label": roles.label, "split": roles.split}
    except Exception:  # noqa: BLE001 - a guess is a convenience: any failure is no guess, the user picks
        guess = {}
    return {"columns": columns, "types": types, "guess": guess}


def aggregate_plan(job, root: DataRoot, plan: Plan, roles: dict, scheme: Scheme, need_all: bool) -> dict:
    """Score cells of ``plan`` under ``scheme`` on the guarded connection (no row leaves DuckDB).

    Returns
    -------
    dict
        ``{"cells": ScoreCells}``, and with ``need_all`` also ``"all"``: ``{"cells"`` (the all-rows cells),
        ``"positive"``, ``"negative"`` (the label's values), ``"range"`` (the raw scores' range when mapped),
        ``"splits"`` (at most :data:`MAX_SPLIT_VALUES` distinct split values)``}``.
    """
    from .duckdb.rows import aggregate

    what, src = plan.describe(root), plan.source(roles)
    for_scheme = f" — for {scheme.describe(on_cells=True)}"
    with _connected(job, root, plan.database) as con:
        cells = aggregate(src, scheme, features=[], connection=con,
                          on_stage=lambda name: job.set_stage(STAGE_TEXT.get(name, name) + for_scheme))
        result: dict[str, Any] = {"cells": cells}
        if need_all:
            if scheme.kind == "insample":
                every = cells
            elif cells.exact:                   # all parts' exact cells merged into one part
                u, inv = np.unique(cells.score, return_inverse=True)
                every = ccells.ScoreCells(
                    score=u, n=np.bincount(inv, weights=cells.n).round().astype(np.int64),
                    n_pos=np.bincount(inv, weights=cells.n_pos).round().astype(np.int64),
                    score_sum=np.bincount(inv, weights=cells.score_sum), part=np.zeros(u.size, np.int16),
                    exact=True, n_rows=int(cells.n_rows))
            else:
                job.set_stage("aggregating all rows (the Data page's raw reliability)")
                every = aggregate(src, None, features=[], connection=con)
            job.set_stage("reading the score's and the label's range")
            s = f"TRY_CAST({quote_identifier(src.score)} AS DOUBLE)"
            lab = quote_identifier(src.label)
            (lo, hi, llo, lhi), = _fetch(
                root, con, f"SELECT min({s}) FILTER (WHERE isfinite({s})), max({s}) FILTER (WHERE isfinite({s})), "
                           f"min({lab}), max({lab}) FROM ({plan.relation_sql()}\n)", "all", what, guarded=False)
            splits = []
            if src.split:
                job.set_stage("reading the split column's values")
                splits = [r[0] for r in _fetch(
                    root, con, f"SELECT DISTINCT {quote_identifier(src.split)} FROM ({plan.relation_sql()}\n) "
                               f"LIMIT {MAX_SPLIT_VALUES}", "all", what, guarded=False)]
            mapped = lo is not None and (lo < 0 or hi > 1)
            positive, negative = choose_positive([llo, lhi], column=src.label)
            result["all"] = {"cells": every, "positive": positive, "negative": negative,
                             "range": (lo, hi) if mapped else None, "splits": splits}
    return result


def aggregate_job(job, source: Source, scheme: Scheme | None = None, *, engine: str | None = None, **options):
    """:func:`calibdash.engines.aggregate` as the work of ``job`` (a :class:`calibdash.core.jobs.Job`, or
    :data:`NO_JOB`): each stage reported (:data:`STAGE_TEXT`; a cancelled job stops there), and a watched engine
    (:meth:`~calibdash.engines.base.Engine.watched`) interrupted on cancel and read for its progress."""
    from . import aggregate, default_engine, get

    eng = get(engine or default_engine(source))
    with contextlib.ExitStack() as watching:
        return aggregate(source, scheme, engine=eng.name,
                         on_stage=lambda name: job.set_stage(STAGE_TEXT.get(name, name)),
                         **eng.watched(job, watching), **options)


#: The roles a large source's columns play, in the order they are chosen.
ROLES = ("score", "label", "split")
#: The split role's choice of no column.
NO_SPLIT = "(none)"


class ReadStep(NamedTuple):
    """A reading job before a source is aggregated: its key, what it does (for people), its work ``fn(job)``."""

    key: str
    what: str
    work: Callable


def tables_step(root: DataRoot, database: str) -> ReadStep:
    """Listing the tables of the DuckDB database file ``database`` (as typed) under ``root``."""
    db = database_file(root, database)
    return ReadStep(plan_key(("tables", tuple(_stat(db))), step="tables"), "Listing the database's tables",
                    lambda job: read_tables(job, root, db))


def schema_step(root: DataRoot, plan: Plan) -> ReadStep:
    """Reading a source's columns, their types and the roles guessed from a sample
    (:func:`calibdash.engines.plan.read_schema`)."""
    return ReadStep(plan_key(plan, step="schema"), f"Reading the columns of {plan.describe(root)}",
                    lambda job: read_schema(job, root, plan))


def role_choices(schema: dict, role: str, chosen: dict) -> tuple[list, int]:
    """The columns offered for ``role`` (one of :data:`ROLES`) once the roles before it are ``chosen``, and the
    index of the guessed one (else 0): a numeric score, a label other than the score, an optional split."""
    cols = list(schema["columns"])
    if role == "score":
        options = [c for c, t in zip(cols, schema["types"]) if is_numeric_type(t)] or cols
    elif role == "label":
        options = [c for c in cols if c != chosen["score"]]
    else:
        options = [NO_SPLIT] + [c for c in cols if c not in (chosen["score"], chosen["label"])]
    guessed = schema["guess"].get(role)
    return options, options.index(guessed) if guessed in options else 0


def chosen_roles(chosen: dict) -> dict:
    """A spec's ``roles`` from the choices: no split column is ``""``."""
    split = chosen.get("split")
    return {"score": chosen["score"], "label": chosen["label"], "split": "" if split in (None, NO_SPLIT) else split}


@dataclass(frozen=True)
class LargeSource:
    """A large source's root, spec (``kind``, the texts typed, ``roles``) and resolved :class:`Plan`."""

    root: DataRoot
    spec: dict
    plan: Plan

    @classmethod
    def resolve(cls, root: DataRoot | None, spec: dict | None) -> "LargeSource":
        """The source of ``spec`` under ``root``; DataError when there is none or no root, else as
        :func:`calibdash.engines.plan.resolve_plan`."""
        if not spec:
            raise DataError("no large source has been aggregated yet: choose one on the Data page and press "
                            "Aggregate.")
        if root is None:
            raise DataError("large sources are off on this server (no data root is configured).")
        return cls(root, spec, resolve_plan(root, spec))

    @property
    def roles(self) -> dict:
        return self.spec["roles"]

    def key(self, scheme: Scheme | None = None) -> str:
        """The key of the cells of ``scheme``; without one, of the all-rows cells."""
        return plan_key(self.plan, self.roles, scheme)

    def describe(self) -> str:
        return self.plan.describe(self.root)

    def check(self, scheme: Scheme) -> None:
        """SettingsError when ``scheme`` does not work on this source (e.g. a hashed split of a query's rows
        without ORDER BY)."""
        self.plan.source(self.roles).check_keys(scheme)

    def first_scheme(self, scheme: Scheme) -> Scheme:
        """The scheme of the first aggregation, which also gives the all-rows cells: ``scheme`` when it works on
        this source, else all rows in sample (the Data page then says what fails)."""
        try:
            self.check(scheme)
        except SettingsError:
            return Scheme(kind="insample")
        return scheme

    def aggregate(self, job, scheme: Scheme, need_all: bool) -> dict:
        """An aggregation job's work (:func:`calibdash.engines.plan.aggregate_plan`)."""
        return aggregate_plan(job, self.root, self.plan, self.roles, scheme, need_all)

    def keyed_key(self, key, scheme: Scheme | None = None) -> str:
        """The key of the keyed cells of ``key`` (a :class:`calibdash.monitoring.keyed.Key`) under ``scheme``."""
        return plan_key(self.plan, self.roles, scheme, step=f"keyed {key!r}")

    def aggregate_keyed(self, job, key, scheme: Scheme | None = None):
        """A keyed aggregation job's work: the :class:`calibdash.monitoring.keyed.KeyedCells` of ``key``
        (:func:`calibdash.engines.duckdb.keyed.aggregate_keyed`) on the guarded connection, each stage reported
        (:data:`STAGE_TEXT`); no row leaves DuckDB."""
        from .duckdb.keyed import aggregate_keyed

        what = f" — by {key.column!r}" if key.kind == "group" else f" — per period of {key.column!r}"
        with _connected(job, self.root, self.plan.database) as con:
            return aggregate_keyed(self.plan.source(self.roles), key, scheme, connection=con,
                                   on_stage=lambda name: job.set_stage(STAGE_TEXT.get(name, name) + what))

    def kept(self, scheme: Scheme, result: dict) -> dict:
        """What to keep of an aggregation's ``result``, by key: the cells of ``scheme`` and, when it gave them,
        the all-rows cells."""
        out = {self.key(scheme): result["cells"]}
        if "all" in result:
            out[self.key()] = result["all"]
        return out

    def cells(self, scheme: Scheme, lookup: Callable[[str], Any], aggregate: Callable[[Scheme], None]):
        """The cells of ``scheme``: ``lookup(key)``, else ``aggregate(scheme)`` (which returns once they are kept,
        or does not return) and ``lookup`` again."""
        got = lookup(self.key(scheme))
        if got is None:
            aggregate(scheme)
            got = lookup(self.key(scheme))
        return got

    def large_data(self, got: dict, lookup: Callable[[str], Any],
                   aggregate: Callable[[Scheme], None]) -> LargeData:
        """The pages' :class:`LargeData` from the all-rows aggregation ``got``; the cells of a scheme through
        :meth:`cells` with ``lookup`` and ``aggregate``."""
        return LargeData.from_aggregate(self.describe(), self.roles, got, self.key(),
                                        aggregate=functools.partial(self.cells, lookup=lookup, aggregate=aggregate))
