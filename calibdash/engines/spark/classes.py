"""K-class rows with Spark: checked rows as a DataFrame, cells in one job, :class:`SparkRows` for fitting."""
from __future__ import annotations

import contextlib
import itertools
from functools import reduce

import numpy as np
import pandas as pd

from ...evaluation.cells import GRID, MAX_EXACT, ClassCells
from ...core.validation import SUM_TOLERANCE
from ...evaluation.scheme import Scheme
from ..classes import (BATCH_ROWS, ClassRows, ClassSource, checked_class_stats, content_key, exact_flags,
                       part_count, split_cells)
from .rows import F, col, keyed_rows, part_column, release, session, split_job, to_pandas

__all__ = []

#: Spark's relative error for the distinct-score estimates: the exact-or-grid choice needs a factor of 4 only,
#: and Spark's HyperLogLog++ at 1% costs seconds per column even on small data (measured: 40 s for 10 columns
#: of 10,000 rows at 1%, 3 s at 5%).
HLL_RSD = 0.05


def aggregate_classes(csrc: ClassSource, scheme: Scheme, *, max_exact: int = MAX_EXACT, memory_limit: str = "1GB",
                      threads: int | None = None, spark=None) -> ClassCells:
    """K-class cells with Spark: one statistics job, exact distinct counts where needed, then every reduction
    aggregated in one job (``posexplode`` of the K + 1 reductions); ``spark`` is the session (default
    ``getOrCreate()``; ``memory_limit`` and ``threads`` belong to it)."""
    K = csrc.k
    spark = session(spark)
    try:
        df, st, split_values = checked_rows(csrc, scheme, spark)
        y = F.col("__y")
        reductions = [F.col("__top")] + [F.col(f"__p{k}") for k in range(K)]
        exact = exact_flags(st.distinct, max_exact, lambda idx: df.agg(
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
        return split_cells(res, exact, st.n_rows)
    finally:
        release()


def checked_rows(csrc: ClassSource, scheme: Scheme, spark, distinct: bool = True):
    """``(df, stats, split_values)``: the checked rows' columns as :func:`calibdash.engines.duckdb.classes.checked_rows`
    has them, their statistics (``distinct``: with the distinct-score estimates) and the split column's values
    (``"column"`` scheme). The caller calls :func:`calibdash.engines.spark.rows.release` when done."""
    src, K = csrc.source, csrc.k
    src.check_keys(scheme, table_positions=False, engine="Spark")
    cols = [src.label] + ([src.split] if src.split else []) + list(csrc.columns)
    df = keyed_rows(spark, src, cols, src.needs_keys(scheme))
    df = df.select("__key", *([col(src.split)] if src.split else []), col(src.label).alias("__label"),
                   *[col(c).cast("double").alias(f"__x{k}") for k, c in enumerate(csrc.columns)])
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
    got, split_values = split_job(df, src, scheme, aggs)
    return df, checked_class_stats(got, csrc, n_distinct), split_values


class SparkRows(ClassRows):
    """The checked rows as a Spark DataFrame (see :func:`class_rows`)."""

    def __init__(self, spark, csrc: ClassSource, scheme: Scheme):
        df, st, split_values = checked_rows(csrc, scheme, spark, distinct=False)
        df, part = part_column(df, scheme, csrc.source, split_values)
        self.spark = spark
        self.df = df.select(part.cast("long").alias("__part"), F.col("__y").cast("long").alias("__y"),
                            *[F.col(f"__x{k}") for k in range(csrc.k)])
        self.k, self.n_rows, self.n_parts = csrc.k, st.n_rows, part_count(scheme)

    def counts(self):
        out = np.zeros((self.n_parts, self.k), dtype=np.int64)
        for r in self.df.groupBy("__part", "__y").count().collect():
            out[int(r[0]), int(r[1])] = int(r[2])
        return out

    def candidates(self, limits, seed):
        # the key by content_key itself on the executors' Arrow batches: the hash chain written as 2K + 1
        # nested column expressions grows past what Catalyst's code generation holds (measured: out of heap
        # at K = 4), while a pandas UDF runs the very numpy function the memory engine runs
        k = self.k

        def keys(y: pd.Series, *xs: pd.Series) -> pd.Series:
            X = np.column_stack([x.to_numpy(dtype=float) for x in xs])
            return pd.Series(content_key(X, y.to_numpy(dtype=np.int64), seed).astype(np.int64))

        key_udf = F.pandas_udf(keys, "long")
        df = self.df.withColumn("__ckey", key_udf(F.col("__y"), *[F.col(f"__x{j}") for j in range(k)]))
        flat = F.array(*[F.lit(int(v)).cast("long") for v in np.asarray(limits, dtype=np.int64).ravel()])
        df = df.where(F.col("__ckey") < F.element_at(flat, (F.col("__part") * k + F.col("__y") + 1).cast("int")))
        xs = [f"__x{j}" for j in range(k)]
        got = to_pandas(self.spark, df.select("__part", "__y", "__ckey", *xs), ["__part", "__y", "__ckey"] + xs)
        return (got[xs].to_numpy(dtype=float), got["__y"].to_numpy(np.int64), got["__part"].to_numpy(np.int64),
                got["__ckey"].to_numpy().astype(np.uint64))

    def batches(self, parts, batch_rows=BATCH_ROWS):
        df = self.df.where(F.col("__part").isin([int(p) for p in parts]))
        rows = (tuple(row) for row in df.toLocalIterator(prefetchPartitions=True))
        while buf := list(itertools.islice(rows, int(batch_rows))):
            a = np.asarray(buf, dtype=float)
            yield a[:, 2:], a[:, 1].astype(np.int64), a[:, 0].astype(np.int64)


@contextlib.contextmanager
def class_rows(csrc: ClassSource, scheme: Scheme, *, memory_limit: str = "1GB", threads: int | None = None,
               spark=None):
    """The checked rows as a :class:`SparkRows` on ``spark`` (default ``getOrCreate()``), released on exit."""
    try:
        yield SparkRows(session(spark), csrc, scheme)
    finally:
        release()
