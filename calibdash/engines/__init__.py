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

from ..cells import MAX_EXACT
from ..errors import SettingsError
from .source import Source

__all__ = ["Source", "aggregate", "default_engine", "ENGINES", "MEMORY_MAX_BYTES"]

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
    engine = engine or default_engine(source)
    if engine == "memory":
        from .memory import aggregate as run
    elif engine == "duckdb":
        from .duckdb import aggregate as run
    elif engine == "spark":
        from .spark import aggregate as run
    else:
        raise SettingsError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}.")
    return run(source, scheme, max_exact=max_exact, memory_limit=memory_limit, threads=threads,
               features=features, feature_bins=feature_bins, sample_rows=sample_rows, seed=seed,
               **engine_options)
