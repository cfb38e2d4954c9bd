"""K-class rows aggregated into multi-class score cells where they live (memory, DuckDB, Spark).

A :class:`ClassSource` names rows with a label column and K class columns
(probabilities, or logits softmaxed in the engine). Each engine computes, per
row, the probabilities ``p_k``, the top probability ``c = max_k p_k``, the
predicted class (the lowest index among the maxima, ``numpy.argmax``'s rule)
and the label's class index, and aggregates the K + 1 binary reductions of
:mod:`calibdash.cells` (confidence, and each class's
one-vs-rest) into :class:`~calibdash.cells.ClassCells`:

1. **statistics** (one scan): rows, rows with a missing or non-finite class
   value, missing labels, labels that name no class column, the classes
   seen, and for probabilities the rows with a negative entry, an entry above
   1 or a sum more than :data:`~calibdash.multiclass.base.SUM_TOLERANCE`
   from 1; and an estimate of each reduction's distinct scores
   (HyperLogLog). Checked by :func:`check_class_stats` alike in every engine;
2. **distinct scores** (only for reductions whose estimate lies between
   ``max_exact / 4`` and ``4 max_exact``, as the binary engines): exact counts;
3. **the aggregation** (one scan, all K + 1 reductions at once): each row
   unnested into K + 1 rows ``(reduction, part, score code, label)`` and
   grouped by ``(reduction, part, score code)``; each reduction's cells are
   then assembled as the binary engines assemble theirs
   (:func:`calibdash.engines.source.assemble_cells`).

The rows, their keys and their parts are the binary engines' own: the source
is read by :class:`calibdash.engines.duckdb.SourceRows` /
:func:`calibdash.engines.spark.keyed_rows` /
:func:`calibdash.engines.memory.read_rows` with the class columns as extra
columns, and parts come from :func:`calibdash.engines.duckdb.part_sql` /
:func:`calibdash.engines.spark.part_column` / :func:`calibdash.engines.memory.parts`
(the hash of the row's position, :func:`calibdash.cells.row_hash`).

Arithmetic, the same in every engine. Probabilities are measured as given
(as :mod:`calibdash.multiclass.metrics` does: not divided by their sums), so
the cells hold the file's very values and every engine gives identical
cells. Logits: ``p_k = e_k / (((e_0 + e_1) + e_2) + ...)`` with
``e_k = exp(z_k - max_j z_j)``, the sum taken left to right in every engine
(the memory engine too, rather than ``scipy.special.softmax``), so the only
difference between engines is their ``exp``, which may differ in the last
bit (numpy, DuckDB's C library, the JVM): logit cells agree to about 1e-15,
not bit for bit.

Rows are not dropped (as in the binary engines, dropping would move the rows
after them to other parts): a missing or non-finite class value, a missing
label or a label with no class column refuses the source with counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

import numpy as np
import pandas as pd

from ..cells import GRID, MAX_EXACT
from ..data.guard import quote_identifier
from ..errors import DataError, SettingsError
from ..multiclass.base import SUM_TOLERANCE
from ..cells import ClassCells, class_cells
from ..scheme import Scheme
from ..validation import format_values
from .duckdb import SourceRows, check_scheme, connection_for, part_sql, read_head
from .source import Source, assemble_cells

__all__ = ["ClassSource", "ClassStats", "class_source", "check_class_stats", "aggregate_classes",
           "memory_class_rows", "duckdb_class_rows", "spark_class_rows", "softmax_rows", "HEAD_ROWS", "ENGINES"]

#: Rows read from the start of a source to find its class columns and the class of each.
HEAD_ROWS = 20_000
#: Spark's relative error for the distinct-score estimates: the exact-or-grid choice needs a factor of 4 only,
#: and Spark's HyperLogLog++ at 1% costs seconds per column even on small data (measured: 40 s for 10 columns
#: of 10,000 rows at 1%, 3 s at 5%).
HLL_RSD = 0.05
#: The engines :func:`aggregate_classes` knows.
ENGINES = ("memory", "duckdb", "spark")


@dataclass(frozen=True)
class ClassSource:
    """Rows of a K-class model where they live, and what their columns mean.

    Attributes
    ----------
    source : Source
        The rows (files, a DuckDB table or a query, or a Spark table or
        query), the label column and the split column. Its ``score`` names
        the first class column (an engine's :class:`Source` names one score;
        the class columns are read as extra columns).
    columns : tuple of str
        The K class columns, in class order.
    classes : tuple
        The label value of each class column.
    logits : bool
        Whether the class columns hold logits (softmaxed in the engine) rather than probabilities.
    """

    source: Source
    columns: tuple
    classes: tuple
    logits: bool = False

    def __post_init__(self):
        if len(self.columns) < 3:
            raise DataError(f"a multi-class source has at least three class columns, got {len(self.columns)}.")
        if len(self.classes) != len(self.columns):
            raise SettingsError(f"one class per class column is needed: {len(self.columns)} columns, "
                                f"{len(self.classes)} classes.")
        if len(set(self.columns)) != len(self.columns):
            raise DataError("the class columns are named more than once.")
        if self.source.label in self.columns or (self.source.split and self.source.split in self.columns):
            raise DataError("the label or split column cannot also be a class column.")

    @property
    def k(self) -> int:
        return len(self.columns)

    def describe(self) -> str:
        what = "logits" if self.logits else "probabilities"
        return f"{self.source.describe()} ({self.k} classes, {what} in {self.columns[0]!r}, ...)"


def class_source(path=None, label: str | None = None, probs=None, logits=None, *, split: str | None = None,
                 database: str | None = None, table: str | None = None, query: str | None = None,
                 order_by: str | None = None, format: str | None = None, head_rows: int = HEAD_ROWS
                 ) -> ClassSource:
    """A :class:`ClassSource` for files, a DuckDB table or a query, its class columns found or named.

    The class columns and the class each stands for are found as for a file
    in memory, by :func:`calibdash.data.build_class_set` (``label``, ``probs``,
    ``logits`` as it takes them) applied to the first ``head_rows`` rows,
    read by DuckDB; those rows must hold at least two classes. Labels beyond
    them that name no class column are refused by the aggregation.
    """
    from ..data.classes import build_class_set

    rows = Source(path=path, database=database, table=table, query=query, order_by=order_by, format=format,
                  score="__unused__", label=label or "__unused_label__")
    head = read_head(rows, head_rows)
    cs = build_class_set(head, label=label, probs=probs, logits=logits, features=[], split=False,
                         name=rows.describe())
    src = Source(path=path, database=database, table=table, query=query, order_by=order_by, format=format,
                 score=cs.columns[0], label=cs.label_column, split=split)
    return ClassSource(source=src, columns=tuple(cs.columns), classes=tuple(cs.classes), logits=cs.logits)


# ---------------------------------------------------------------------------------------------------------
# statistics and their checks, alike in every engine
# ---------------------------------------------------------------------------------------------------------
@dataclass
class ClassStats:
    """What the first pass finds (the input of :func:`check_class_stats`).

    ``n_bad``: rows with a missing or non-finite class value; ``n_label_null``:
    missing labels; ``n_other``: labels naming no class column;
    ``n_classes_seen``: distinct classes among the labels; for probabilities,
    ``n_negative``, ``n_above`` (an entry above 1) and ``n_off_sum`` (a sum
    more than ``SUM_TOLERANCE`` from 1); ``distinct``: per reduction
    (confidence, then each class) an estimate of its distinct scores.
    """

    n_rows: int
    n_bad: int
    n_label_null: int
    n_other: int
    n_classes_seen: int
    n_negative: int = 0
    n_above: int = 0
    n_off_sum: int = 0
    distinct: list = field(default_factory=list)


def check_class_stats(st: ClassStats, csrc: ClassSource) -> None:
    """Refuse the rows as every engine refuses them (:class:`~calibdash.errors.DataError`, with counts)."""
    name, cols = csrc.source.describe(), format_values(list(csrc.columns), 4)
    hint = " If the columns hold logits, read them as logits." if not csrc.logits else ""
    if st.n_rows == 0:
        raise DataError(f"{name} holds no rows.")
    if st.n_bad:
        raise DataError(f"{st.n_bad:,} of {st.n_rows:,} rows have a missing or non-finite value in the class "
                        f"columns ({cols}); filter them out first (rows where they live are not dropped, which "
                        "would move the rows after them to other folds).")
    if st.n_label_null:
        raise DataError(f"label column {csrc.source.label!r} has {st.n_label_null:,} missing values among "
                        f"{st.n_rows:,} rows; filter them out first.")
    if st.n_other:
        raise DataError(f"{st.n_other:,} rows have a label that names no class column (label column "
                        f"{csrc.source.label!r}; the classes are {format_values(list(csrc.classes), 6)}). Every "
                        "class needs a column.")
    if st.n_classes_seen < 2:
        raise DataError(f"label column {csrc.source.label!r} holds one class only; calibration needs at least two.")
    if st.n_negative:
        raise DataError(f"{st.n_negative:,} rows hold negative values in the class columns ({cols}); probabilities "
                        f"are never negative.{hint}")
    if st.n_above:
        raise DataError(f"{st.n_above:,} rows hold values above 1 in the class columns ({cols}); probabilities "
                        f"lie in [0, 1].{hint}")
    if st.n_off_sum:
        raise DataError(f"{st.n_off_sum:,} of {st.n_rows:,} rows of the class columns ({cols}) do not sum to 1 "
                        f"within {SUM_TOLERANCE:g}; a probability column is needed for every class.{hint}")


def _exact_flags(distinct, max_exact: int, count) -> list[bool]:
    """Exact cells or the grid, per reduction, as the binary engines decide: the estimate taken as it says
    beyond a factor 4 of ``max_exact``, else ``count(indices)`` gives the exact distinct counts."""
    m = int(max_exact)
    flags = [d <= m / 4 for d in distinct]
    unsure = [r for r, d in enumerate(distinct) if m / 4 < d <= 4 * m]
    if unsure:
        for r, n in zip(unsure, count(unsure)):
            flags[r] = int(n) <= m
    return flags


def _split_cells(res: pd.DataFrame, exact: list[bool], n_rows: int) -> ClassCells:
    """The grouped ``(r, part, code, n, n_pos, s_sum)`` of every reduction as :class:`ClassCells`."""
    out = []
    for r, ex in enumerate(exact):
        g = res[res["r"] == r]
        out.append(assemble_cells(g["part"].to_numpy(), g["code"].to_numpy(dtype=float), g["n"].to_numpy(),
                                  g["n_pos"].to_numpy(), g["s_sum"].to_numpy(dtype=float), exact=ex))
    return ClassCells(top=out[0], classes=tuple(out[1:]), n_rows=int(n_rows))


# ---------------------------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------------------------
def softmax_rows(Z: np.ndarray) -> np.ndarray:
    """``exp(z_k - max z) / sum_j exp(z_j - max z)`` with the sum taken left to right, as the SQL engines."""
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    total = E[:, 0].copy()
    for j in range(1, E.shape[1]):
        total += E[:, j]
    return E / total[:, None]


def memory_class_rows(csrc: ClassSource, scheme: Scheme) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The memory engine's checked rows: ``(X, y, part)``, the class columns' values as read (probabilities
    or logits, shape (n, K)), each row's class index and its part, in the source's order; refused as
    :func:`check_class_stats` says."""
    from .memory import parts, read_rows

    src = csrc.source
    df, keys = read_rows(src, list(csrc.columns), src.needs_keys(scheme))
    X = np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                         for c in csrc.columns])
    label = df[src.label]
    code = pd.Index(list(csrc.classes)).get_indexer(label)
    null = label.isna().to_numpy()
    finite = np.isfinite(X).all(axis=1)
    st = ClassStats(n_rows=len(df), n_bad=int((~finite).sum()), n_label_null=int(null.sum()),
                    n_other=int(((code < 0) & ~null).sum()), n_classes_seen=int(np.unique(code[code >= 0]).size))
    if not csrc.logits and finite.all():
        total = X[:, 0].copy()
        for j in range(1, X.shape[1]):
            total += X[:, j]
        st.n_negative, st.n_above = int((X < 0).any(axis=1).sum()), int((X > 1).any(axis=1).sum())
        st.n_off_sum = int((np.abs(total - 1) > SUM_TOLERANCE).sum())
    check_class_stats(st, csrc)
    return X, code, parts(len(df), keys, scheme, df[src.split] if src.split else None)


def _memory(csrc: ClassSource, scheme: Scheme, max_exact: int) -> ClassCells:
    X, code, part = memory_class_rows(csrc, scheme)
    return class_cells(softmax_rows(X) if csrc.logits else X, code, part, max_exact=max_exact)


# ---------------------------------------------------------------------------------------------------------
# DuckDB
# ---------------------------------------------------------------------------------------------------------
def _chain(terms: list[str], op: str) -> str:
    """``((t0 op t1) op t2) ...``: left to right, as :func:`softmax_rows` sums."""
    return reduce(lambda a, b: f"({a} {op} {b})", terms)


def _duckdb(csrc: ClassSource, scheme: Scheme, max_exact: int, memory_limit: str, threads, connection
            ) -> ClassCells:
    src, K = csrc.source, csrc.k
    with connection_for(connection, memory_limit, threads) as (con, own):
        rows = SourceRows(con, src, list(csrc.columns), src.needs_keys(scheme), tune=own)
        rel, st = duckdb_class_rows(csrc, rows)
        classes, K = list(csrc.classes), csrc.k
        reductions = ["__top"] + [f"__p{k}" for k in range(K)]
        # -- 2. exact or grid --
        exact = _exact_flags(st.distinct, max_exact, lambda idx: rows._run(
            f"SELECT {', '.join(f'count(DISTINCT {reductions[r]})' for r in idx)} FROM ({rel})", [classes],
            fetch="one"))
        # -- 3. the aggregation: every reduction at once --
        part = part_sql(scheme, src, rows)
        params = [[v for v in rows.train_values if v is not None]] if "unnest(?)" in part else []
        codes = [v if ex else f"CAST(LEAST(floor({v} * {GRID}), {GRID - 1}) AS DOUBLE)"
                 for v, ex in zip(reductions, exact)]
        labels = ["CAST(__pred = __y AS INTEGER)"] + [f"CAST(__y = {k} AS INTEGER)" for k in range(K)]
        unnested = (f"SELECT {part} AS part, unnest(range({K + 1})) AS r, unnest([{', '.join(codes)}]) AS code, "
                    f"unnest([{', '.join(reductions)}]) AS s, unnest([{', '.join(labels)}]) AS y FROM ({rel})")
        res = rows._run(f"SELECT r, part, code, count(*) AS n, CAST(sum(y) AS BIGINT) AS n_pos, sum(s) AS s_sum "
                        f"FROM ({unnested}) GROUP BY r, part, code", params + [classes], fetch="df")
        return _split_cells(res, exact, st.n_rows)


def duckdb_class_rows(csrc: ClassSource, rows: SourceRows, distinct: bool = True) -> tuple[str, ClassStats]:
    """DuckDB's checked rows: the relation over ``rows`` (a :class:`~calibdash.engines.duckdb.SourceRows` read
    with the class columns as extra columns) with ``__key``, ``__label`` (and ``__split``), the values read
    ``__x0..``, the probabilities ``__p0..``, ``__top``, ``__y`` (the class index) and ``__pred``, whose
    one parameter is the list of classes; and its statistics, checked by :func:`check_class_stats` (one
    scan; ``distinct``: with the reductions' distinct-score estimates)."""
    src, K = csrc.source, csrc.k
    x = [f"TRY_CAST({quote_identifier('__f_' + c)} AS DOUBLE) AS __x{k}" for k, c in enumerate(csrc.columns)]
    keep = "__key, __label" + (", __split" if src.split else "")
    base = f"SELECT {keep}, {', '.join(x)} FROM ({rows.sql})"
    if csrc.logits:
        m = f"greatest({', '.join(f'__x{k}' for k in range(K))})"
        exps = ", ".join(f"exp(__x{k} - __m) AS __e{k}" for k in range(K))
        total = _chain([f"__e{k}" for k in range(K)], "+")
        probs = ", ".join(f"__e{k} / {total} AS __p{k}" for k in range(K))
        base = f"SELECT *, {probs} FROM (SELECT *, {exps} FROM (SELECT *, {m} AS __m FROM ({base})))"
    else:
        base = f"SELECT *, {', '.join(f'__x{k} AS __p{k}' for k in range(K))} FROM ({base})"
    p = [f"__p{k}" for k in range(K)]
    rel = (f"SELECT *, list_position([{', '.join(p)}], __top) - 1 AS __pred FROM ("
           f"SELECT *, greatest({', '.join(p)}) AS __top, list_position(?, __label) - 1 AS __y FROM ({base}))")
    classes = list(csrc.classes)
    # -- 1. statistics --
    xs = [f"__x{k}" for k in range(K)]
    finite = " AND ".join(f"isfinite({v})" for v in xs)
    stats = [f"count(*) FILTER (WHERE NOT coalesce({finite}, false))",
             "count(*) FILTER (WHERE __label IS NULL)",
             "count(*) FILTER (WHERE __label IS NOT NULL AND __y IS NULL)", "count(DISTINCT __y)"]
    if not csrc.logits:
        stats += [f"count(*) FILTER (WHERE least({', '.join(xs)}) < 0)",
                  f"count(*) FILTER (WHERE greatest({', '.join(xs)}) > 1)",
                  f"count(*) FILTER (WHERE abs({_chain(xs, '+')} - 1) > {SUM_TOLERANCE!r})"]
    reductions = ["__top"] + p
    if distinct:
        stats += [f"approx_count_distinct({v})" for v in reductions]
    got = rows._run(f"SELECT count(*), {', '.join(stats)} FROM ({rel})", [classes], fetch="one")
    n_checks = 7 if not csrc.logits else 4
    st = ClassStats(int(got[0]), *[int(g) for g in got[1:5]],
                    **({} if csrc.logits else dict(n_negative=int(got[5]), n_above=int(got[6]),
                                                   n_off_sum=int(got[7]))),
                    distinct=[float(g or 0) for g in got[1 + n_checks:]])
    check_class_stats(st, csrc)
    return rel, st


# ---------------------------------------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------------------------------------
def _spark(csrc: ClassSource, scheme: Scheme, max_exact: int, spark) -> ClassCells:
    from pyspark.sql import functions as F

    from .spark import part_column, release, session, to_pandas

    K = csrc.k
    spark = session(spark)
    try:
        df, st, split_values = spark_class_rows(csrc, scheme, spark)
        ps = [F.col(f"__p{k}") for k in range(K)]
        y = F.col("__y")
        reductions = [F.col("__top")] + ps
        exact = _exact_flags(st.distinct, max_exact, lambda idx: df.agg(
            *[F.countDistinct(reductions[r]) for r in idx]).collect()[0])
        df, part = part_column(df, scheme, csrc.source, split_values)
        codes = [v if ex else F.least(F.floor(v * GRID), F.lit(GRID - 1)).cast("double")
                 for v, ex in zip(reductions, exact)]
        labels = [(F.col("__pred") == y).cast("long")] + [(y == k).cast("long") for k in range(K)]
        cells = F.array(*[F.struct(c.cast("double").alias("code"), s.alias("s"), lab.alias("y"))
                          for c, s, lab in zip(codes, reductions, labels)])
        long = df.select(part.cast("int").alias("part"), F.posexplode(cells).alias("r", "c"))
        res = long.groupBy("r", "part", F.col("c.code").alias("code")).agg(
            F.count(F.lit(1)).alias("n"), F.sum("c.y").alias("n_pos"), F.sum("c.s").alias("s_sum"))
        res = to_pandas(spark, res, ["r", "part", "code", "n", "n_pos", "s_sum"])
        return _split_cells(res, exact, st.n_rows)
    finally:
        release()


def spark_class_rows(csrc: ClassSource, scheme: Scheme, spark, distinct: bool = True):
    """Spark's checked rows: ``(df, stats, split_values)``, the DataFrame with ``__key``, ``__label`` (and the
    split column), ``__x0..``, ``__p0..``, ``__top``, ``__y`` and ``__pred`` as :func:`duckdb_class_rows` has
    them, its statistics checked by :func:`check_class_stats` (one job; ``distinct``: with the reductions'
    distinct-score estimates), and for the ``"column"`` scheme the split column's values (for
    :func:`calibdash.engines.spark.part_column`). The caller calls :func:`calibdash.engines.spark.release`
    when done."""
    from pyspark.sql import functions as F
    from pyspark.sql.utils import AnalysisException

    from .spark import col, keyed_rows

    src, K = csrc.source, csrc.k
    src.check_keys(scheme, spark=True)
    cols = [src.label] + ([src.split] if src.split else []) + list(csrc.columns)
    try:
        df = keyed_rows(spark, src, cols, src.needs_keys(scheme))
    except AnalysisException as exc:
        raise DataError(f"Spark could not read {src.describe()}: {exc}") from None
    x = [col(c).cast("double") for c in csrc.columns]
    df = df.select("__key", *([col(src.split)] if src.split else []), col(src.label).alias("__label"),
                   *[v.alias(f"__x{k}") for k, v in enumerate(x)])
    xs = [F.col(f"__x{k}") for k in range(K)]
    if csrc.logits:
        df = df.withColumn("__m", F.greatest(*xs))
        df = df.select("*", *[F.exp(v - F.col("__m")).alias(f"__e{k}") for k, v in enumerate(xs)])
        total = reduce(lambda a, b: a + b, [F.col(f"__e{k}") for k in range(K)])
        df = df.select("*", *[(F.col(f"__e{k}") / total).alias(f"__p{k}") for k in range(K)])
    else:
        df = df.select("*", *[v.alias(f"__p{k}") for k, v in enumerate(xs)])
    ps = [F.col(f"__p{k}") for k in range(K)]
    label_type = df.schema["__label"].dataType
    classes = F.array(*[F.lit(v).cast(label_type) for v in csrc.classes])
    df = df.withColumn("__top", F.greatest(*ps))
    df = df.withColumn("__y", F.when(F.col("__label").isNotNull(),
                                     F.array_position(classes, F.col("__label")) - 1))
    df = df.withColumn("__pred", F.array_position(F.array(*ps), F.col("__top")) - 1)
    finite = reduce(lambda a, b: a & b, [v.isNotNull() & ~F.isnan(v) & ~v.isin(float("inf"), float("-inf"))
                                         for v in xs])
    y = F.col("__y")
    aggs = [F.count(F.lit(1)), F.count(F.when(~finite, 1)), F.count(F.when(F.col("__label").isNull(), 1)),
            F.count(F.when(y < 0, 1)), F.countDistinct(F.when(y >= 0, y))]
    if not csrc.logits:
        aggs += [F.count(F.when(F.least(*xs) < 0, 1)), F.count(F.when(F.greatest(*xs) > 1, 1)),
                 F.count(F.when(F.abs(reduce(lambda a, b: a + b, xs) - 1) > SUM_TOLERANCE, 1))]
    n_distinct = K + 1 if distinct else 0
    if distinct:
        aggs += [F.approx_count_distinct(v, HLL_RSD) for v in [F.col("__top")] + ps]
    if scheme.kind == "column" and src.split:
        aggs += [F.collect_set(col(src.split)), F.count(F.when(col(src.split).isNull(), 1))]
    got = df.agg(*aggs).collect()[0]
    n_checks = 7 if not csrc.logits else 4
    st = ClassStats(int(got[0]), *[int(g) for g in got[1:5]],
                    **({} if csrc.logits else dict(n_negative=int(got[5]), n_above=int(got[6]),
                                                   n_off_sum=int(got[7]))),
                    distinct=[float(g or 0) for g in got[1 + n_checks:1 + n_checks + n_distinct]])
    check_class_stats(st, csrc)
    split_values = None
    if scheme.kind == "column" and src.split:
        split_values = list(got[-2]) + ([None] if got[-1] else [])
    return df, st, split_values


# ---------------------------------------------------------------------------------------------------------
def aggregate_classes(csrc: ClassSource, scheme: Scheme | None = None, *, engine: str = "duckdb",
                      max_exact: int = MAX_EXACT, memory_limit: str = "1GB", threads: int | None = None,
                      connection=None, spark=None) -> ClassCells:
    """Aggregate a K-class source into :class:`~calibdash.cells.ClassCells` with ``engine``.

    Parameters
    ----------
    csrc : ClassSource
    scheme : Scheme, optional
        How rows are divided into parts (default every row in part 0); the
        binary engines' rule (:mod:`calibdash.cells`), so a row falls in the
        same part in every engine and for binary and K-class cells alike.
    engine : {"memory", "duckdb", "spark"}
    max_exact : int
        Per reduction: its distinct scores as cells up to this many, else the grid.
    memory_limit, threads, connection
        DuckDB's, as :func:`calibdash.engines.duckdb.aggregate` takes them.
    spark : SparkSession, optional
        Spark's session (default ``getOrCreate()``).

    Raises
    ------
    DataError
        As :func:`check_class_stats`; engine errors as the binary engines raise them.
    SettingsError
        An unknown engine; bad scheme settings; a hashed scheme on rows without positions.
    """
    scheme = scheme or Scheme(kind="insample")
    check_scheme(scheme)
    csrc.source.check_keys(scheme)
    if engine == "memory":
        return _memory(csrc, scheme, max_exact)
    if engine == "duckdb":
        return _duckdb(csrc, scheme, max_exact, memory_limit, threads, connection)
    if engine == "spark":
        return _spark(csrc, scheme, max_exact, spark)
    raise SettingsError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}.")

