"""The command line's engine and job helpers: which engine reads a FILE (pandas in memory, DuckDB or Spark,
:mod:`calibdash.engines`), the engine's source for the parsed arguments, and long work run as a job of
:mod:`calibdash.core.jobs` with its stage and elapsed time on stderr (:class:`ProgressLine`); Ctrl-C cancels it."""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = []


def default_engine(path: str) -> str | None:
    """None (read the file into pandas) for one file under 200 MB, else the engine that keeps the rows where
    they lie (:func:`calibdash.engines.default_engine`: a larger file or a glob); None for a path that names
    no file, so loading says why."""
    from .. import engines

    if any(c in path for c in "*?["):
        return engines.default_engine()
    if not Path(path).is_file():
        return None
    name = engines.default_engine(engines.Source(path=path))
    return name if engines.get(name).out_of_core else None


def engine_for(args) -> str | None:
    """The engine that reads ``args.file`` for evaluate and fit: None for the in-memory path that reads one
    file into pandas (an in-memory ``--engine``, or by default a single file under 200 MB), else the engine."""
    from .. import engines

    if args.engine:
        return args.engine if engines.get(args.engine).out_of_core else None
    if getattr(args, "table", None) or getattr(args, "query", None):
        return engines.default_engine()
    return default_engine(args.file)


def engine_source(args, split: str | None = None):
    from .. import engines

    src = engines.source_for(args.file, score=args.score, label=args.label, split=split,
                             database=getattr(args, "database", None), table=getattr(args, "table", None),
                             query=getattr(args, "query", None), order_by=getattr(args, "order_by", None),
                             positive=getattr(args, "positive", None))
    return src


class ProgressLine:
    """A job's stage and elapsed seconds on stderr: rewritten in place with ``\\r`` on a terminal
    (:meth:`calibdash.core.jobs.Status.line`), else one line per stage; nothing goes to stdout."""

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
    """``work(job)`` run as a job of :mod:`calibdash.core.jobs`: its stage and elapsed time on stderr while it runs,
    and Ctrl-C cancels it (interrupting the DuckDB connection it watches); returns its result."""
    import uuid

    from ..core import jobs

    reg = jobs.JobRegistry(max_jobs=1, timeout_s=float("inf"), lease_s=None)
    line = ProgressLine()
    try:
        return reg.run(uuid.uuid4().hex, work, owner="cli", what=what, on_status=line)
    finally:
        line.close()


def aggregate(source, scheme, engine: str, memory_limit: str):
    """:func:`calibdash.engines.aggregate` as a job (:func:`in_job`; :func:`calibdash.engines.plan.aggregate_job`)."""
    from ..engines.plan import aggregate_job

    return in_job(f"Aggregating {source.describe()} with {engine}",
                   lambda job: aggregate_job(job, source, scheme, engine=engine, features=[], memory_limit=memory_limit))


def aggregate_keyed(source, key, scheme, engine: str, memory_limit: str):
    """:func:`calibdash.engines.aggregate_keyed` as a job (:func:`in_job`): its stages on stderr (named by
    :data:`calibdash.engines.plan.STAGE_TEXT`), and a watched engine's query interrupted on Ctrl-C
    (:meth:`calibdash.engines.base.Engine.watched`)."""
    import contextlib

    from .. import engines
    from ..engines.plan import STAGE_TEXT

    def work(job):
        with contextlib.ExitStack() as watching:
            return engines.aggregate_keyed(source, key, scheme, engine=engine, memory_limit=memory_limit,
                                           on_stage=lambda name: job.set_stage(STAGE_TEXT.get(name, name)),
                                           **engines.get(engine).watched(job, watching))

    return in_job(f"Aggregating {source.describe()} by {key.column!r} with {engine}", work)


def head_rows(path: str, label: str | None):
    """The first rows of the file or glob ``path`` (:data:`calibdash.engines.classes.HEAD_ROWS`), every column,
    read where they lie (:func:`calibdash.engines.reader`): what is looked at to tell a K-class table before the
    rows are read where they lie."""
    from ..engines import Source, reader
    from ..engines.classes import HEAD_ROWS

    src = Source(path=path, score="__unused__", label=label or "__unused_label__")
    return reader(src).read_head(src, HEAD_ROWS)


def source_labels(source, engine: str, limit: int):
    """Per label value of the rows where they live: ``label``, ``rows``, ``score_min`` and ``score_max`` (the
    finite scores' range), at most ``limit`` values; one scan of two columns, by the engine that reads the
    source (:func:`calibdash.engines.reader`: DuckDB for files and DuckDB sources, Spark for a table or query of
    its catalog). What ``evaluate --json``'s validation block says of rows it did not read into memory."""
    from ..engines import reader

    return reader(source, engine).label_counts(source, limit)
