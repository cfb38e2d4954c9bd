"""Engines that turn rows where they live into score cells (:mod:`calibdash.cells`).

Three engines share one signature and give the same cells on the same rows
(integer counts equal, sums to rounding; ``tests/test_engines.py``):

``"memory"`` (:mod:`~calibdash.engines.memory`)
    Reads the rows into numpy and calls :func:`calibdash.cells.aggregate`.
``"duckdb"`` (:mod:`~calibdash.engines.duckdb`)
    One grouped query where the files are, out of core (``memory_limit``,
    a spill directory); no row enters Python.
``"spark"`` (:mod:`~calibdash.engines.spark`)
    The same aggregation as a Spark job, on an existing session (or
    ``SparkSession.builder.getOrCreate()``), so it runs under spark-submit.

Rows are put in parts by the hash of their position in the source (see
:mod:`calibdash.engines.source` for how each engine finds it), so a fold is
the same in every engine.

>>> from calibdash.engines import Source, aggregate                     # doctest: +SKIP
>>> src = Source("scores/part-*.parquet", score="p", label="clicked")   # doctest: +SKIP
>>> c = aggregate(src, Scheme("kfold", n_folds=5))                      # doctest: +SKIP
"""
from __future__ import annotations

import importlib

from ..cells import MAX_EXACT
from ..errors import SettingsError
from .source import Source

__all__ = ["Source", "aggregate", "aggregate_keyed", "default_engine", "source_for", "ENGINES", "MEMORY_MAX_BYTES"]

#: The engines :func:`aggregate` knows.
ENGINES = ("memory", "duckdb", "spark")
#: A single file below this size is aggregated in memory by default (the dashboard's upload limit).
MEMORY_MAX_BYTES = 200 * 1024 * 1024


def default_engine(source: Source) -> str:
    """``"memory"`` for a single file under 200 MB, else ``"duckdb"`` (Spark only when asked)."""
    if source.kind == "files":
        files = source.files()
        if len(files) == 1 and source.size_bytes() < MEMORY_MAX_BYTES:
            return "memory"
    return "duckdb"


#: Each engine's module of cells and of keyed cells (imported when used: Spark is optional).
_MODULES = {"memory": (".memory", ".memory"), "duckdb": (".duckdb", ".duckdb_keyed"),
            "spark": (".spark", ".spark_keyed")}


def _engine_function(engine: str, keyed: bool):
    """The engine's ``aggregate`` or ``aggregate_keyed``."""
    if engine not in _MODULES:
        raise SettingsError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}.")
    module = importlib.import_module(_MODULES[engine][keyed], __name__)
    return getattr(module, "aggregate_keyed" if keyed else "aggregate")


def aggregate(source: Source, scheme=None, *, engine: str | None = None, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features=None, feature_bins: int = 16,
              sample_rows: int = 0, seed: int = 0, **engine_options):
    """Aggregate ``source`` into score cells with ``engine`` (default :func:`default_engine`).

    The parameters are :func:`calibdash.engines.duckdb.aggregate`'s;
    ``engine_options`` go to the engine (Spark: ``spark=`` a session).

    Returns
    -------
    ScoreCells, or (ScoreCells, DataFrame) when ``sample_rows > 0``
    """
    run = _engine_function(engine or default_engine(source), keyed=False)
    return run(source, scheme, max_exact=max_exact, memory_limit=memory_limit, threads=threads,
               features=features, feature_bins=feature_bins, sample_rows=sample_rows, seed=seed,
               **engine_options)


def aggregate_keyed(source: Source, key, scheme=None, *, engine: str | None = None, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, on_stage=None, **engine_options):
    """Keyed cells of ``source`` (:class:`calibdash.keyed.KeyedCells`) with ``engine`` (default
    :func:`default_engine`): the same cells from every engine.

    Parameters
    ----------
    source : Source
    key : calibdash.keyed.Key
        The group or period column and how its values become keys.
    scheme : Scheme, optional
        How rows are divided into parts (default: none).
    engine : {"memory", "duckdb", "spark"}, optional
    max_exact, memory_limit, threads
        As :func:`aggregate`.
    on_stage : callable, optional
        Called with the name of each stage as it starts.
    engine_options
        To the engine (DuckDB: ``connection=``, ``on_connect=``; Spark: ``spark=`` a session).

    Returns
    -------
    KeyedCells
    """
    run = _engine_function(engine or default_engine(source), keyed=True)
    return run(source, key, scheme, max_exact=max_exact, memory_limit=memory_limit, threads=threads,
               on_stage=on_stage, **engine_options)


def source_for(path, *, score: str | None = None, label: str | None = None, split: str | None = None,
               database: str | None = None, table: str | None = None, query: str | None = None,
               order_by: str | None = None, sample_rows: int = 2000, positive=None) -> Source:
    """A :class:`Source` for a path, glob, DuckDB table or query, its columns' roles guessed where not given.

    For files, the score, label and split columns not named are guessed by
    :func:`calibdash.data.guess_roles` from the first ``sample_rows`` rows,
    read by DuckDB (so a glob of any size costs one small read). A table or
    a query needs ``score`` and ``label``. A guessed score named after a class
    (``p_0``, ``p_1``) is the ``positive`` class's (default: as
    :func:`calibdash.validation.choose_positive` chooses), never the other's
    (:func:`calibdash.data.roles.check_guessed_score`).

    Raises
    ------
    SettingsError
        A table or query without ``score`` and ``label``.
    DataError
        No score or label column can be guessed.
    """
    from ..data import guess_roles
    from ..data.roles import check_guessed_score
    from ..errors import DataError

    if table or query:
        if not (score and label):
            raise SettingsError("a table or query source needs --score and --label (its columns are not guessed).")
        return Source(database=database, table=table, query=query, order_by=order_by, score=score, label=label,
                      split=split, positive=positive)
    probe = Source(path=path, score=score or "score", label=label or "label") if not (score and label) else None
    if probe is None:
        return Source(path=path, score=score, label=label, split=split, positive=positive)
    from .duckdb import read_head

    head = read_head(probe, sample_rows)
    roles = guess_roles(head, label=label, split=split, positive=positive)
    found_score = score or (roles.scores[0] if roles.scores else None)
    if not found_score or not roles.label:
        raise DataError(f"cannot tell the score and label columns of {probe.describe()} (columns: "
                        f"{', '.join(map(str, head.columns))}); name them with --score and --label.")
    if not score:
        check_guessed_score(roles.classes, found_score, probe.describe())
    return Source(path=path, score=found_score, label=roles.label, split=split or roles.split, positive=positive)
