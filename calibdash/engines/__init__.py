"""Engines that turn rows where they live into cells, found by scanning this package.

Each backend is one package (:mod:`.memory`, :mod:`.duckdb`, :mod:`.spark`) whose ``__init__`` defines an
:class:`~calibdash.engines.base.Engine` subclass; adding an engine is adding its package, and
``tests/engines/test_engine_contract.py`` checks it gives the others' cells. Shared code lives beside them.

>>> from calibdash.engines import Source, aggregate                     # doctest: +SKIP
>>> src = Source("scores/part-*.parquet", score="p", label="clicked")   # doctest: +SKIP
>>> c = aggregate(src, Scheme("kfold", n_folds=5))                      # doctest: +SKIP
"""
from __future__ import annotations

import pkgutil

from ..evaluation.cells import MAX_EXACT
from ..core.errors import DataError, SettingsError
from ..core.scan import scan
from .base import Engine
from .source import Source

__all__ = [
    "Source", "aggregate", "aggregate_keyed", "available", "get", "find", "reader", "default_engine", "source_for"
]

_REGISTRY: dict[str, Engine] | None = None


def _engines() -> dict[str, Engine]:
    """Registry name -> engine, in ``order``: the :class:`Engine` subclasses of the subpackages' ``__init__``."""
    global _REGISTRY
    if _REGISTRY is None:
        modules = tuple(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg)
        _REGISTRY = {name: cls() for name, cls in scan(__path__, __name__, Engine, skip=modules).items()}
    return _REGISTRY


def available() -> list[str]:
    """The engines' names, in their declared order (the CLI's ``--engine`` choices)."""
    return list(_engines())


def get(name: str) -> Engine:
    """The engine registered as ``name``.

    Raises
    ------
    SettingsError
        No engine has that name.
    """
    engines = _engines()
    if name not in engines:
        raise SettingsError(f"engine must be one of {', '.join(engines)}, got {name!r}.")
    return engines[name]


def find(**capabilities) -> str:
    """The name of the first engine (in order) whose attributes equal ``capabilities``, e.g.
    ``find(out_of_core=False)``: the engine that reads rows into memory.

    Raises
    ------
    SettingsError
        No engine has them.
    """
    for name, eng in _engines().items():
        if all(getattr(eng, k) == v for k, v in capabilities.items()):
            return name
    raise SettingsError(f"no engine has {capabilities}.")


def default_engine(source: Source | None = None) -> str:
    """The first engine (in order) chosen by default whose :meth:`~Engine.suits` takes ``source``: in memory
    for a single file under 200 MB, else DuckDB (Spark only when asked). Without a source (a glob not yet
    opened, a table, a query): the first such engine that keeps rows where they live."""
    for name, eng in _engines().items():
        if eng.by_default and (eng.suits(source) if source is not None else eng.out_of_core):
            return name
    raise SettingsError("no engine takes this source by default; choose one.")


def reader(source: Source, engine: str | None = None) -> Engine:
    """The engine that reads ``source``'s first rows and counts its labels: ``engine`` for a table or query of
    its own catalog, else the first that reads files and DuckDB sources."""
    if engine is not None and get(engine).catalog and source.kind != "files":
        return get(engine)
    return get(find(reads_heads=True))


def dispatch(method: str, engine: str | None, source: Source | None, *args, **options):
    """``method`` of ``engine`` (default :func:`default_engine` of ``source``) on ``args``, the options given as
    None left out."""
    eng = get(engine or default_engine(source))
    return getattr(eng, method)(*args, **{k: v for k, v in options.items() if v is not None})


def aggregate(source: Source, scheme=None, *, engine: str | None = None, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features=None, feature_bins: int = 16,
              sample_rows: int = 0, seed: int = 0, on_stage=None, **engine_options):
    """Aggregate ``source`` into score cells with ``engine`` (default :func:`default_engine`).

    The parameters are :func:`calibdash.engines.duckdb.rows.aggregate`'s; ``on_stage`` is told each stage's
    name; ``engine_options`` go to the engine (DuckDB: ``connection=``, ``on_connect=``; Spark: ``spark=`` a
    session), those given as None left out.

    Returns
    -------
    ScoreCells, or (ScoreCells, DataFrame) when ``sample_rows > 0``
    """
    return dispatch("aggregate", engine, source, source, scheme, max_exact=max_exact, memory_limit=memory_limit,
                    threads=threads, features=features, feature_bins=feature_bins, sample_rows=sample_rows,
                    seed=seed, on_stage=on_stage, **engine_options)


def aggregate_keyed(source: Source, key, scheme=None, *, engine: str | None = None, max_exact: int = MAX_EXACT,
                    memory_limit: str = "1GB", threads: int | None = None, on_stage=None, **engine_options):
    """Keyed cells of ``source`` (:class:`calibdash.monitoring.keyed.KeyedCells`), the cells of each group or
    period of ``key`` (a :class:`calibdash.monitoring.keyed.Key`), the same from every engine; the other
    parameters as :func:`aggregate`."""
    return dispatch("aggregate_keyed", engine, source, source, key, scheme, max_exact=max_exact,
                    memory_limit=memory_limit, threads=threads, on_stage=on_stage, **engine_options)


def source_for(path, *, score: str | None = None, label: str | None = None, split: str | None = None,
               database: str | None = None, table: str | None = None, query: str | None = None,
               order_by: str | None = None, sample_rows: int = 2000, positive=None) -> Source:
    """A :class:`Source` for a path, glob, DuckDB table or query, its columns' roles guessed where not given.

    For files, the columns not named are guessed by :func:`calibdash.data.guess_roles` from the first
    ``sample_rows`` rows, read by DuckDB. A table or a query needs ``score`` and ``label``. A guessed score named
    after a class (``p_0``, ``p_1``) is the ``positive`` class's (:func:`calibdash.data.roles.check_guessed_score`).

    Raises
    ------
    SettingsError
        A table or query without ``score`` and ``label``.
    DataError
        No score or label column can be guessed.
    """
    from ..data import guess_roles
    from ..data.roles import check_guessed_score

    if table or query:
        if not (score and label):
            raise SettingsError("a table or query source needs --score and --label (its columns are not guessed).")
        return Source(database=database, table=table, query=query, order_by=order_by, score=score, label=label,
                      split=split, positive=positive)
    probe = Source(path=path, score=score or "score", label=label or "label") if not (score and label) else None
    if probe is None:
        return Source(path=path, score=score, label=label, split=split, positive=positive)
    head = reader(probe).read_head(probe, sample_rows)
    roles = guess_roles(head, label=label, split=split, positive=positive)
    found_score = score or (roles.scores[0] if roles.scores else None)
    if not found_score or not roles.label:
        raise DataError(f"cannot tell the score and label columns of {probe.describe()} (columns: "
                        f"{', '.join(map(str, head.columns))}); name them with --score and --label.")
    if not score:
        check_guessed_score(roles.classes, found_score, probe.describe())
    return Source(path=path, score=found_score, label=roles.label, split=split or roles.split, positive=positive)
