"""The runs' catalog, one table of runs with their tags and shares, in SQLite (the default, a file in the
workspace) or PostgreSQL (``CALIBDASH_CATALOG=postgresql://...``, for a team running several app replicas); and
the errors a refused run request raises.

Only portable SQL is used; the two databases differ in the parameter marker (``?`` / ``%s``) and in how a writer
takes the catalog for itself (SQLite's ``BEGIN IMMEDIATE``; a PostgreSQL table lock), which keeps each save's quota
check and insert one serial step even with several servers writing at once.
"""
from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import CalibdashError, DataError, EnvironmentProblem, SettingsError

__all__ = ["Catalog", "RunRecord", "RunNotFound", "RunNotShared", "NotTheOwner", "QuotaReached", "RUN_ERRORS"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        id VARCHAR(32) PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, dataset TEXT NOT NULL,
        owner TEXT NOT NULL, visibility TEXT NOT NULL, saved_at DOUBLE PRECISION NOT NULL, bytes BIGINT NOT NULL,
        headline TEXT NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS run_tags (run_id VARCHAR(32) NOT NULL, tag TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (run_id, tag))",
    "CREATE TABLE IF NOT EXISTS run_shares (run_id VARCHAR(32) NOT NULL, user_name TEXT NOT NULL, "
    "PRIMARY KEY (run_id, user_name))",
    "CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner)",
)
_COLUMNS = "id, name, kind, dataset, owner, visibility, saved_at, bytes, headline"


class RunNotFound(CalibdashError, LookupError):
    """No run has this id: it was never saved, it was deleted, or the link was mistyped."""

    def __init__(self, run_id: str):
        shown = run_id if len(run_id) <= 40 and run_id.isprintable() else repr(run_id[:40]) + "..."
        super().__init__(f"No saved run has the id {shown}: it was deleted, or the link is not complete.")


class RunNotShared(CalibdashError, PermissionError):
    """The run exists but its owner has not shared it with this user (nothing of it is shown)."""

    def __init__(self, run_id: str):
        super().__init__(f"Run {run_id} is not shared with you. Ask its owner to share it.")


class NotTheOwner(CalibdashError, PermissionError):
    """Only a run's owner deletes it or changes who sees it."""

    def __init__(self, run_id: str, owner: str, action: str):
        super().__init__(f"Only the owner of run {run_id} ({owner}) can {action} it.")


class QuotaReached(EnvironmentProblem):
    """Saving would take the user's runs over their storage quota (``CALIBDASH_QUOTA_MB``)."""

    def __init__(self, used: int, adding: int, quota: int):
        mb = 1 << 20
        super().__init__(f"Your saved runs hold {used / mb:,.1f} MB and this run needs {adding / mb:,.1f} MB more, "
                         f"over your quota of {quota / mb:,.0f} MB. Delete runs you no longer need on the Runs page "
                         "(or `python -m calibdash runs delete ID`), or ask the operator to raise CALIBDASH_QUOTA_MB.")


#: Errors of a bad run request a person should see as one message (the pages and the CLI catch these).
RUN_ERRORS = (RunNotFound, RunNotShared, NotTheOwner, QuotaReached, DataError)


@dataclass(frozen=True)
class RunRecord:
    """A run's catalog entry: what the Runs page lists and what access is decided on.

    ``visibility`` is ``"private"`` (the owner and ``shared_with``) or ``"all"`` (every signed-in user);
    ``headline`` holds a few measures per method or group for the list; ``saved_at`` is seconds since the epoch.
    """

    id: str
    name: str
    kind: str
    dataset: str
    owner: str
    visibility: str
    saved_at: float
    bytes: int
    headline: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    shared_with: tuple = ()


class Catalog:
    """The catalog at ``url``: ``sqlite:///PATH`` or a ``postgresql://`` connection URL.

    Each call opens its own connection, so one catalog serves many threads and processes.
    """

    def __init__(self, url: str):
        self.url = url
        if url.startswith("sqlite:///"):
            self.kind, self._marker = "sqlite", "?"
            Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        elif url.startswith(("postgresql://", "postgres://")):
            self.kind, self._marker = "postgresql", "%s"
        else:
            raise SettingsError(f"CALIBDASH_CATALOG must be sqlite:///PATH or postgresql://..., not {url!r}.")
        with self._transaction() as cur:
            for statement in _SCHEMA:
                cur.execute(statement)

    def _connect(self):
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.url[len("sqlite:///"):], timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            return conn
        try:
            import psycopg
        except ImportError as exc:
            raise EnvironmentProblem("A PostgreSQL catalog needs the psycopg package: pip install "
                                     "'psycopg[binary]'.") from exc
        try:
            return psycopg.connect(self.url, connect_timeout=20)
        except psycopg.OperationalError as exc:
            raise EnvironmentProblem(f"The run catalog's PostgreSQL server cannot be reached: "
                                     f"{str(exc).strip().splitlines()[0]}") from exc

    @contextmanager
    def _transaction(self, exclusive: bool = False):
        """A cursor inside one transaction, committed on success and rolled back on any exception;
        ``exclusive``: no other writer runs until it ends."""
        conn = self._connect()
        try:
            cur = conn.cursor()
            if self.kind == "sqlite":
                cur.execute("BEGIN IMMEDIATE" if exclusive else "BEGIN")
            elif exclusive:
                cur.execute("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")
            try:
                yield _Cursor(cur, self._marker)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
        finally:
            conn.close()

    def insert(self, record: RunRecord, quota: int | None = None) -> None:
        """Add ``record`` in one transaction; with ``quota`` (bytes), refuse with :class:`QuotaReached` when the
        owner's runs would then hold more."""
        with self._transaction(exclusive=True) as cur:
            if quota is not None:
                used = cur.one("SELECT COALESCE(SUM(bytes), 0) FROM runs WHERE owner = ?", record.owner)[0]
                if int(used) + record.bytes > quota:
                    raise QuotaReached(int(used), record.bytes, quota)
            cur.execute(f"INSERT INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", record.id,
                        record.name, record.kind, record.dataset, record.owner, record.visibility,
                        float(record.saved_at), int(record.bytes), json.dumps(record.headline))
            for tag, value in record.tags.items():
                cur.execute("INSERT INTO run_tags (run_id, tag, value) VALUES (?, ?, ?)", record.id, tag, value)
            for user in record.shared_with:
                cur.execute("INSERT INTO run_shares (run_id, user_name) VALUES (?, ?)", record.id, user)

    def get(self, run_id: str) -> RunRecord | None:
        found = self.records("WHERE id = ?", run_id)
        return found[0] if found else None

    def records(self, where: str = "", *params) -> list[RunRecord]:
        """Runs matching the SQL ``where`` clause (``?`` markers), newest first."""
        with self._transaction() as cur:
            rows = cur.all(f"SELECT {_COLUMNS} FROM runs {where} ORDER BY saved_at DESC, id", *params)
            ids = [r[0] for r in rows]
            tags, shares = {i: {} for i in ids}, {i: [] for i in ids}
            if ids:
                marks = ", ".join("?" * len(ids))
                for run_id, tag, value in cur.all(f"SELECT run_id, tag, value FROM run_tags WHERE run_id IN "
                                                  f"({marks})", *ids):
                    tags[run_id][tag] = value
                for run_id, user in cur.all(f"SELECT run_id, user_name FROM run_shares WHERE run_id IN ({marks}) "
                                            "ORDER BY user_name", *ids):
                    shares[run_id].append(user)
        return [RunRecord(*r[:6], float(r[6]), int(r[7]), json.loads(r[8]), tags[r[0]], tuple(shares[r[0]]))
                for r in rows]

    def set_sharing(self, run_id: str, visibility: str, users) -> None:
        with self._transaction(exclusive=True) as cur:
            cur.execute("UPDATE runs SET visibility = ? WHERE id = ?", visibility, run_id)
            cur.execute("DELETE FROM run_shares WHERE run_id = ?", run_id)
            for user in sorted(set(users)):
                cur.execute("INSERT INTO run_shares (run_id, user_name) VALUES (?, ?)", run_id, user)

    def delete(self, run_id: str) -> None:
        with self._transaction(exclusive=True) as cur:
            for table, column in (("run_tags", "run_id"), ("run_shares", "run_id"), ("runs", "id")):
                cur.execute(f"DELETE FROM {table} WHERE {column} = ?", run_id)

    def ids(self) -> set[str]:
        with self._transaction() as cur:
            return {r[0] for r in cur.all("SELECT id FROM runs")}


class _Cursor:
    """A DB-API cursor that takes ``?`` markers whatever the driver's paramstyle."""

    def __init__(self, cur, marker: str):
        self._cur, self._marker = cur, marker

    def execute(self, sql: str, *params):
        self._cur.execute(sql.replace("?", self._marker) if self._marker != "?" else sql, params)
        return self._cur

    def one(self, sql: str, *params):
        return self.execute(sql, *params).fetchone()

    def all(self, sql: str, *params):
        return self.execute(sql, *params).fetchall()
