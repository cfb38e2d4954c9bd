"""Which engine reads a command's rows (pandas in memory, DuckDB or Spark, :mod:`calibdash.engines`), and long
work run as a job of :mod:`calibdash.core.jobs`, its stage and elapsed time on stderr; Ctrl-C cancels it."""
from __future__ import annotations

import contextlib
import sys
import uuid
from pathlib import Path

from .. import engines
from ..core import jobs
from ..core.errors import DataError
from ..engines.classes import HEAD_ROWS
from ..engines.plan import STAGE_TEXT, aggregate_job

__all__ = []


def default_engine(path: str) -> str | None:
    """None (read the file into pandas) for one file under 200 MB or a path that names no file (loading says
    why), else the engine that keeps the rows where they lie (:func:`calibdash.engines.default_engine`)."""
    if any(c in path for c in "*?["):
        return engines.default_engine()
    if not Path(path).is_file():
        return None
    name = engines.default_engine(engines.Source(path=path))
    return name if engines.get(name).out_of_core else None


def engine_for(args) -> str | None:
    """The engine that reads ``args.file`` for evaluate and fit; None for the in-memory path."""
    if args.engine:
        return args.engine if engines.get(args.engine).out_of_core else None
    if getattr(args, "table", None) or getattr(args, "query", None):
        return engines.default_engine()
    return default_engine(args.file)


def engine_source(args, split: str | None = None, key: dict | None = None):
    """The command's source where its rows live. A column it names (``key``: ``{option: column}`` first, then the
    score, label and split) that the source lacks is refused here, listing the source's columns, before any job
    starts (one read of no rows; a table or query of Spark's catalog is left to Spark)."""
    src = engines.source_for(args.file, score=args.score, label=args.label, split=split,
                             **{k: getattr(args, k, None) for k in ("database", "table", "query", "order_by",
                                                                    "positive")})
    if src.kind == "files" or not (args.engine and engines.get(args.engine).catalog):
        columns = [str(c) for c in engines.reader(src).read_head(src, 0).columns]
        named = {**(key or {}), "--score": src.score, "--label": src.label, "--split": src.split}
        for option, column in named.items():
            if column is not None and column not in columns:
                raise DataError(f"{option} {column!r}: {src.describe()} has no such column; its columns are "
                                f"{', '.join(columns[:40])}{', ...' if len(columns) > 40 else ''}.")
    return src


class ProgressLine:
    """A job's stage and elapsed seconds on stderr: rewritten in place on a terminal, else one line per stage."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.printed, self.width, self.queued = 0, 0, False

    def __call__(self, status) -> None:
        if self.tty:
            text = status.line()[:150]
            self.stream.write("\r" + text.ljust(self.width) + ("\n" if status.finished else ""))
            self.width = 0 if status.finished else len(text)
        else:
            if status.queued and not self.queued:
                self.stream.write(status.line() + "\n")
                self.queued = True
            for stage, at in status.stages[self.printed:]:
                self.stream.write(f"{status.what}: {stage} ({at:.0f} s)\n")
            self.printed = max(self.printed, len(status.stages))
        self.stream.flush()

    def close(self) -> None:
        """End a line left open on a terminal (the job stopped before its last status was shown)."""
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def in_job(what: str, work):
    """``work(job)`` run as a job (:class:`ProgressLine` on stderr; Ctrl-C cancels it); returns its result."""
    reg = jobs.JobRegistry(max_jobs=1, timeout_s=float("inf"), lease_s=None)
    line = ProgressLine()
    try:
        return reg.run(uuid.uuid4().hex, work, owner="cli", what=what, on_status=line)
    finally:
        line.close()


def in_watched_job(what: str, engine: str, work):
    """:func:`in_job` of ``work(job, **watch)``, ``watch`` the engine's hooks that interrupt its query on Ctrl-C."""
    def run(job):
        with contextlib.ExitStack() as watching:
            return work(job, **engines.get(engine).watched(job, watching))

    return in_job(what, run)


def aggregate(source, scheme, engine: str, memory_limit: str):
    """:func:`calibdash.engines.aggregate` as a job (:func:`in_job`)."""
    return in_job(f"Aggregating {source.describe()} with {engine}",
                  lambda job: aggregate_job(job, source, scheme, engine=engine, features=[], memory_limit=memory_limit))


def aggregate_keyed(source, key, scheme, engine: str, memory_limit: str):
    """:func:`calibdash.engines.aggregate_keyed` as a watched job (:func:`in_watched_job`)."""
    return in_watched_job(f"Aggregating {source.describe()} by {key.column!r} with {engine}", engine,
                          lambda job, **watch: engines.aggregate_keyed(
                              source, key, scheme, engine=engine, memory_limit=memory_limit,
                              on_stage=lambda name: job.set_stage(STAGE_TEXT.get(name, name)), **watch))


def head_rows(path: str | None, label: str | None, **where):
    """The first rows (:data:`calibdash.engines.classes.HEAD_ROWS`, every column) of the file or glob ``path`` or
    of the DuckDB table or query ``where`` names, read where they lie: what tells a K-class table."""
    src = engines.Source(path=path, score="__unused__", label=label or "__unused_label__", **where)
    return engines.reader(src).read_head(src, HEAD_ROWS)


def source_labels(source, engine: str, limit: int):
    """Per label value (at most ``limit``) of the rows where they live: ``label``, ``rows``, ``score_min`` and
    ``score_max`` (the finite scores' range); one scan of two columns by the engine that reads the source."""
    return engines.reader(source, engine).label_counts(source, limit)
