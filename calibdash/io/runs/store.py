"""A workspace of saved runs: a folder of run files plus a catalog (:mod:`.catalog`).

Layout of the folder (``CALIBDASH_WORKSPACE``, by default the user's data directory)::

    catalog.sqlite            the default catalog (unless CALIBDASH_CATALOG names a PostgreSQL server)
    runs/<id>/run.json        the view's state, the results (the commands' --json), the fitted models, the source
    runs/<id>/rows.parquet    the rows the run was computed on (an upload), or
    runs/<id>/cells.parquet   a large source's score cells the run was computed on (never a copy of its rows)
    runs/.partial-<id>/       a save in progress

Saving is atomic: the files are written into ``.partial-<id>``, flushed, and the folder renamed to ``<id>``; only then
one catalog transaction adds the run. A crash before the rename leaves a partial folder, one between the rename and
the transaction an uncatalogued folder: neither is ever listed or opened, and :meth:`Workspace.sweep` (run when a
workspace is opened) deletes both once they are older than any save in progress could be.

Run ids are 16 random URL-safe characters (96 bits), checked against that form before any path is built from them.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...core.errors import DataError, SettingsError
from .catalog import Catalog, NotTheOwner, RunNotFound, RunNotShared, RunRecord
from .cells_file import read_cells, write_cells

__all__ = ["Workspace", "Run", "default_folder", "new_run_id", "check_run_id", "headline_of", "may_see", "KINDS",
           "VISIBILITIES"]

_ID = re.compile(r"[A-Za-z0-9_-]{16}")
#: What a run holds the results of: a Compare/Explore evaluation, a by-group report, a report over time.
KINDS = ("evaluate", "groups", "drift")
VISIBILITIES = ("private", "all")
#: Partial and uncatalogued folders older than this (seconds) are swept.
SWEEP_AFTER = 600.0
DEFAULT_QUOTA_MB = 2048


def new_run_id() -> str:
    """16 URL-safe characters (about 96 random bits), never starting with ``-``: the command line would read such an id
    as an option (an older run's id that does: ``runs export --out DIR -- -ID``)."""
    while True:
        run_id = secrets.token_urlsafe(12)
        if not run_id.startswith("-"):
            return run_id


def check_run_id(text) -> str:
    """``text`` if it has the form of a run id, else :class:`RunNotFound` (a forged or cut id reaches no path)."""
    if not isinstance(text, str) or not _ID.fullmatch(text):
        raise RunNotFound(str(text))
    return text


def default_folder() -> Path:
    """``CALIBDASH_WORKSPACE``, else the platform's per-user data directory plus ``calibdash``."""
    if os.environ.get("CALIBDASH_WORKSPACE"):
        return Path(os.environ["CALIBDASH_WORKSPACE"]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "calibdash"


@dataclass(frozen=True)
class Run:
    """An opened run: its catalog record and the contents of ``run.json`` (``view``, ``results``, ``models``,
    ``source``, ``diagrams``; ``holds``: ``"rows"``, ``"cells"`` or None, what data it keeps; ``described``: its
    cells' descriptions); :meth:`rows` reads the saved rows, :meth:`cells` the saved cells, if any."""

    record: RunRecord
    view: dict
    results: dict
    models: dict
    source: dict
    folder: Path
    diagrams: dict
    holds: str | None = None
    described: dict | None = None

    def rows(self) -> pd.DataFrame | None:
        path = self.folder / "rows.parquet"
        return pd.read_parquet(path) if path.exists() else None

    def cells(self) -> dict | None:
        """The saved cells by name (ScoreCells or KeyedCells), or None when the run keeps none."""
        return read_cells(self.folder / "cells.parquet", self.described) if self.holds == "cells" else None


class Workspace:
    """The runs in ``folder`` (default :func:`default_folder`) and its catalog (``catalog``: a URL, default
    ``CALIBDASH_CATALOG`` or the folder's ``catalog.sqlite``).

    Users are plain strings (the signed-in e-mail or subject); ``user=None`` is the single-user server without
    sign-in, where everyone reaching the server sees and manages every run.

    Parameters
    ----------
    quota_mb : float, optional
        Per-user storage quota; default ``CALIBDASH_QUOTA_MB`` or 2,048 MB.
    """

    def __init__(self, folder=None, catalog: str | None = None, quota_mb: float | None = None):
        self.folder = Path(folder) if folder is not None else default_folder()
        self.runs_folder = self.folder / "runs"
        self.runs_folder.mkdir(parents=True, exist_ok=True)
        url = catalog or os.environ.get("CALIBDASH_CATALOG") or f"sqlite:///{self.folder / 'catalog.sqlite'}"
        self.catalog = Catalog(url)
        if quota_mb is None:
            quota_mb = float(os.environ.get("CALIBDASH_QUOTA_MB", DEFAULT_QUOTA_MB))
        self.quota = int(quota_mb * (1 << 20))
        self.sweep()

    # ---------------------------------------------------------------- saving
    def save(self, *, name: str, kind: str, dataset: str, results: dict, view: dict | None = None,
             models: dict | None = None, source: dict | None = None, rows: pd.DataFrame | None = None,
             tags: dict | None = None, owner: str | None = None, visibility: str = "private",
             shared_with=(), headline: dict | None = None, diagrams: dict | None = None,
             cells: dict | None = None) -> RunRecord:
        """Store a run and return its record (its ``id`` opens it).

        ``results`` is the JSON document the command line prints with ``--json``; ``view`` the page's state;
        ``models`` the fitted models' export JSON by method; ``source`` where large data lives (path or query,
        roles, engine); ``rows`` the upload itself, or ``cells`` a large source's score cells by name (ScoreCells or
        KeyedCells, :mod:`.cells_file`); ``diagrams`` each method's reliability bins
        (:func:`calibdash.cli.documents.reliability_document`), drawn when two runs are compared.
        Raises :class:`QuotaReached` when the owner's runs would exceed the quota (nothing is kept).
        """
        if kind not in KINDS:
            raise SettingsError(f"A run's kind is one of {', '.join(KINDS)}, not {kind!r}.")
        if visibility not in VISIBILITIES:
            raise SettingsError(f"A run is visible to 'private' (owner and named users) or 'all', not {visibility!r}.")
        if not str(name).strip():
            raise DataError("A saved run needs a name.")
        if rows is not None and cells is not None:
            raise SettingsError("A run keeps the rows it was computed on or a large source's cells, not both.")
        run_id = new_run_id()
        partial = self.runs_folder / f".partial-{run_id}"
        partial.mkdir()
        try:
            holds = "cells" if cells is not None else "rows" if rows is not None else None
            document = {"view": view or {}, "results": results, "models": models or {}, "source": source or {},
                        "diagrams": diagrams or {}, "holds": holds}
            if rows is not None:
                rows.to_parquet(partial / "rows.parquet", index=False)
            if cells is not None:
                document["cells"] = write_cells(partial / "cells.parquet", cells)
            (partial / "run.json").write_bytes(json.dumps(document, allow_nan=True).encode("utf-8"))
            for written in ([f"{holds}.parquet"] if holds else []) + ["run.json"]:
                _flush(partial / written)
            size = sum(p.stat().st_size for p in partial.iterdir())
            final = self.runs_folder / run_id
            os.replace(partial, final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        record = RunRecord(id=run_id, name=str(name).strip(), kind=kind, dataset=str(dataset),
                           owner=owner or "", visibility=visibility, saved_at=time.time(), bytes=size,
                           headline=headline if headline is not None else headline_of(kind, results),
                           tags={str(k): str(v) for k, v in (tags or {}).items()},
                           shared_with=tuple(sorted(set(shared_with))))
        try:
            self.catalog.insert(record, quota=self.quota if owner else None)
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
        return record

    # ---------------------------------------------------------------- reading
    def record(self, run_id, user: str | None = None) -> RunRecord:
        """The catalog record of ``run_id`` if ``user`` may see it (:class:`RunNotFound`, :class:`RunNotShared`)."""
        record = self.catalog.get(check_run_id(run_id))
        if record is None or not (self.runs_folder / record.id).is_dir():
            raise RunNotFound(run_id)
        if not may_see(record, user):
            raise RunNotShared(record.id)
        return record

    def open(self, run_id, user: str | None = None) -> Run:
        record = self.record(run_id, user)
        folder = self.runs_folder / record.id
        document = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        return Run(record, document["view"], document["results"], document["models"], document["source"], folder,
                   document.get("diagrams", {}), document.get("holds"), document.get("cells"))

    def list(self, user: str | None = None, *, dataset: str | None = None, tag: tuple | None = None,
             owner: str | None = None, name: str | None = None, since: float | None = None,
             until: float | None = None, kind: str | None = None) -> list[RunRecord]:
        """The runs ``user`` may see, newest first, filtered by data set, a ``(tag, value)`` pair, owner, name
        (a saved series), kind and the time saved (``since <= saved_at < until``, seconds since the epoch)."""
        clauses, params = [], []
        for column, value in (("dataset", dataset), ("owner", owner), ("name", name), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("saved_at >= ?")
            params.append(float(since))
        if until is not None:
            clauses.append("saved_at < ?")
            params.append(float(until))
        if tag is not None:
            clauses.append("id IN (SELECT run_id FROM run_tags WHERE tag = ? AND value = ?)")
            params += [str(tag[0]), str(tag[1])]
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        return [r for r in self.catalog.records(where, *params) if may_see(r, user)]

    # ---------------------------------------------------------------- changing
    def share(self, run_id, user: str | None, visibility: str, users=()) -> RunRecord:
        """Set who sees ``run_id``: ``"private"`` (owner and ``users``) or ``"all"``; its owner only."""
        if visibility not in VISIBILITIES:
            raise SettingsError(f"A run is visible to 'private' (owner and named users) or 'all', not {visibility!r}.")
        record = self._owned(run_id, user, "share")
        self.catalog.set_sharing(record.id, visibility, [u.strip() for u in users if u and u.strip()])
        return self.catalog.get(record.id)

    def delete(self, run_id, user: str | None = None) -> None:
        """Delete ``run_id`` (its owner only): the catalog entry first, then the files."""
        record = self._owned(run_id, user, "delete")
        self.catalog.delete(record.id)
        shutil.rmtree(self.runs_folder / record.id, ignore_errors=True)

    def _owned(self, run_id, user, action) -> RunRecord:
        record = self.record(run_id, user)
        if user is not None and record.owner != user:
            raise NotTheOwner(record.id, record.owner, action)
        return record

    def sweep(self, older_than: float = SWEEP_AFTER) -> list[str]:
        """Delete partial folders and folders no catalog entry names, once older than ``older_than`` seconds;
        return their names."""
        known, now, gone = self.catalog.ids(), time.time(), []
        for path in self.runs_folder.iterdir():
            orphan = path.name.startswith(".partial-") or (path.is_dir() and path.name not in known)
            if orphan and now - path.stat().st_mtime > older_than:
                shutil.rmtree(path, ignore_errors=True)
                gone.append(path.name)
        return gone


def may_see(record: RunRecord, user: str | None) -> bool:
    """Without sign-in (``user=None``) every run; else the owner's, the shared ones and those visible to all."""
    return user is None or record.owner in (user, "") or record.visibility == "all" or user in record.shared_with


def headline_of(kind: str, results: dict) -> dict:
    """The numbers the runs list and the history plot read: each method's ECE, Brier, accuracy and AUC
    (evaluate), or each group's or period's measures (groups, drift; the whole data under ``"(all rows)"``)."""
    if kind == "evaluate":
        pick = ("ECE", "Brier", "ACC", "AUC")
        return {m: {k: v for k, v in values.items() if k in pick and isinstance(v, (int, float))}
                for m, values in (results.get("metrics") or {}).items()}
    parts = [("(all rows)", results["overall"])] if isinstance(results.get("overall"), dict) else []
    parts += [(str(p.get("key")), p) for p in results.get("groups") or results.get("periods") or []]
    return {key: {k: v for k, v in ((k, _value(v)) for k, v in part.items() if k not in ("rows", "positives"))
                  if v is not None} for key, part in parts}


def _value(v):
    """A measure's value in a groups/drift record: ``{"value", "low", "high"}``, or a plain number (the whole
    data's line); None for anything else."""
    if isinstance(v, dict):
        v = v.get("value")
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _flush(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
