"""The Spark engine: :mod:`calibdash.engines.duckdb.rows`'s aggregation as Spark jobs (works under spark-submit).

Only the grouped cells (and an optional row sample) reach the driver. Row keys (``monotonically_increasing_id``
alone is not file order: Spark packs file splits by size):

* Parquet: ``_metadata.row_index`` (Spark >= 3.5) plus the file's offset; up to 64 files each is read with its
  offset (from pyarrow metadata) as a literal and the reads unioned, beyond that one job counts each file's rows;
* CSV: within a split ``monotonically_increasing_id`` counts rows in order, so one job groups by
  ``(file_path, file_block_start)`` for each split's ``min(id)`` and row count, giving its offset;
* a table or a query with ``order_by``: the sorted rows are persisted (``DISK_ONLY``, released at the end) so
  partitions are stable; the key is the rows of earlier partitions plus ``id - (partition << 33)``."""
from __future__ import annotations

from functools import reduce
from typing import Sequence
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd

from ...evaluation.cells import GRID, MAX_EXACT
from ...core.errors import DataError, EnvironmentProblem
from ...evaluation.scheme import Scheme
from ..flow import STAGES, Flow
from ..source import SAMPLE_SALT, Source, Stats, check_other_labels, check_stats, checked_scheme, column_train_values

__all__ = []

try:                    # the module loads without pyspark; session() then says what to install
    from pyspark import StorageLevel
    from pyspark.sql import functions as F, types as T
    from pyspark.sql.utils import AnalysisException
except ImportError:
    StorageLevel = F = T = AnalysisException = None

_M32 = 0xFFFFFFFF
#: Up to this many Parquet files are read one by one with their offsets (no counting job), else counted by Spark.
_UNION_FILES = 64
#: Sorted rows persisted for a table's or query's keys, unpersisted when the aggregation ends.
_PERSISTED: list = []


def session(spark=None):
    """The session given, else ``SparkSession.builder.getOrCreate()`` (the one spark-submit made)."""
    if spark is not None:
        return spark
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EnvironmentProblem("the Spark engine needs pyspark (pip install 'calibdash[spark]') "
                                 "and a Java runtime.") from None
    return SparkSession.builder.getOrCreate()


def col(name: str):
    """The column named ``name``, whatever the name holds (dots, backticks, spaces, newlines): quoted with
    backticks, so that Spark does not read it as a path into a struct (``a.b``) or refuse it."""
    return F.col("`" + str(name).replace("`", "``") + "`")


def _mul32(h, c: int):
    lo, hi = F.lit(c & 0xFFFF).cast("long"), F.lit(c >> 16).cast("long")
    return (h * lo + F.shiftleft((h * hi).bitwiseAND(F.lit(0xFFFF)), 16)).bitwiseAND(F.lit(_M32))


def _xorshift(h, s: int):
    return h.bitwiseXOR(F.shiftright(h, s))


def with_row_hash(df, key: str, seed: int, name: str):
    """``df`` with a column ``name`` = :func:`calibdash.evaluation.cells.row_hash` of the long column ``key``.

    One step per projection, each reading the previous one's column, so Catalyst does not copy the nested
    expression (whose xor-shifts use their input twice) into one tree 32 times deep.
    """
    h = F.col(name)
    df = df.withColumn(name, (F.col(key).cast("long") + F.lit(int(seed) * 0x9E3779B1 & _M32)).bitwiseAND(F.lit(_M32)))
    for step in (lambda c: _xorshift(c, 16), lambda c: _mul32(c, 0x85EBCA6B), lambda c: _xorshift(c, 13),
                 lambda c: _mul32(c, 0xC2B2AE35), lambda c: _xorshift(c, 16)):
        df = df.withColumn(name, step(h))
    return df


def _local(uri: str) -> str:
    """A file URI as Spark shows it (``file:/a/b%20c``) as a path, for sorting like :meth:`Source.files`."""
    p = urlparse(uri)
    return unquote(p.path) if p.scheme in ("file", "") else uri


def _with_offsets(spark, df, groups: list, by: list, base: str, offsets):
    """``df`` with ``__key = base + offset`` of its group (``groups``: the values of the columns ``by``)."""
    table = spark.createDataFrame([tuple(g) + (int(o),) for g, o in zip(groups, offsets)], by + ["__off"])
    return df.join(F.broadcast(table), by).withColumn("__key", (F.col(base) + F.col("__off")).cast("long"))


def _starts(counts) -> np.ndarray:
    """Each group's first position: the running count of the groups before it."""
    return np.r_[0, np.cumsum(counts)[:-1]]


def keyed_rows(spark, source: Source, cols: list, need_keys: bool):
    """The source's rows with a ``__key`` column (file order; see the module docstring); DataError when Spark
    cannot read them."""
    try:
        return _keyed_rows(spark, source, cols, need_keys)
    except AnalysisException as exc:
        raise DataError(f"Spark could not read {source.describe()}: {exc}") from None


def _keyed_rows(spark, source: Source, cols: list, need_keys: bool):
    if source.kind == "files":
        files = source.files()
        if source.file_format() == "parquet":
            if not need_keys:
                return spark.read.parquet(*files).select(*map(col, cols)).withColumn("__key", F.lit(0).cast("long"))
            if len(files) <= _UNION_FILES:
                frames = [spark.read.parquet(f).select(*map(col, cols), (F.lit(int(off)) + F.col("_metadata.row_index"))
                                                       .cast("long").alias("__key"))
                          for f, off in zip(files, source.file_offsets())]
                return reduce(lambda a, b: a.unionByName(b), frames)
            df = spark.read.parquet(*files)
            df = df.select(*map(col, cols), F.col("_metadata.file_path").alias("__fp"),
                           F.col("_metadata.row_index").alias("__ri"))
            counts = df.groupBy("__fp").count().collect()
            counts.sort(key=lambda r: _local(r["__fp"]))
            return _with_offsets(spark, df, [(r["__fp"],) for r in counts], ["__fp"], "__ri",
                                 _starts([r["count"] for r in counts]))
        df = spark.read.csv(files, header=True, inferSchema=True, sep=source.csv_delimiter())
        if not need_keys:
            return df.select(*map(col, cols)).withColumn("__key", F.lit(0).cast("long"))
        df = df.select(*map(col, cols), F.col("_metadata.file_path").alias("__fp"),
                       F.col("_metadata.file_block_start").alias("__bs"),
                       F.monotonically_increasing_id().alias("__id"))
        splits = df.groupBy("__fp", "__bs").agg(F.min("__id").alias("m0"), F.count("*").alias("n")).collect()
        splits.sort(key=lambda r: (_local(r["__fp"]), r["__bs"]))
        deltas = [int(st) - int(r["m0"]) for st, r in zip(_starts([r["n"] for r in splits]), splits)]
        return _with_offsets(spark, df, [(r["__fp"], r["__bs"]) for r in splits], ["__fp", "__bs"], "__id", deltas)
    df = spark.table(source.table) if source.kind == "table" else spark.sql(source.query)
    if not (need_keys and source.order_by):
        return df.select(*map(col, cols)).withColumn("__key", F.lit(0).cast("long"))
    view = "__calibdash_rows"
    df.createOrReplaceTempView(view)
    names = ", ".join("`" + c.replace("`", "``") + "`" for c in cols)
    srt = (spark.sql(f"SELECT {names} FROM {view} ORDER BY {source.order_by}")
           .withColumn("__pid", F.spark_partition_id()).withColumn("__id", F.monotonically_increasing_id())
           .persist(StorageLevel.DISK_ONLY))
    _PERSISTED.append(srt)
    counts = sorted((r["__pid"], r["count"]) for r in srt.groupBy("__pid").count().collect())
    deltas = [int(o) - (int(p) << 33) for (p, _), o in zip(counts, _starts([c for _, c in counts]))]
    return _with_offsets(spark, srt, [(p,) for p, _ in counts], ["__pid"], "__id", deltas)


def to_pandas(spark, df, columns: list) -> pd.DataFrame:
    """The (grouped, small) result on the driver, through Arrow (set for this call, then restored)."""
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        out = df.toPandas()
    finally:
        spark.conf.set(key, before)
    return out[columns] if len(out.columns) else pd.DataFrame(columns=columns)


def aggregate(source: Source, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features: Sequence[str] | None = None,
              feature_bins: int = 16, sample_rows: int = 0, seed: int = 0, on_stage=None, spark=None):
    """Aggregate a source's rows into score cells with Spark, as :func:`calibdash.engines.duckdb.rows.aggregate`
    (``memory_limit`` and ``threads`` belong to the session ``spark``, default ``getOrCreate()``)."""
    scheme = checked_scheme(source, scheme, table_positions=False, engine="Spark")
    spark = session(spark)
    feats = list(source.features if features is None else features)
    stage = on_stage or (lambda name: None)
    try:
        stage(STAGES[0])
        return SparkFlow(spark, source, scheme, feats, sample_rows > 0).aggregate(feats, feature_bins, max_exact,
                                                                                  sample_rows, seed, stage)
    finally:
        release()


def release() -> None:
    """Unpersist the sorted rows :func:`keyed_rows` persisted for a table's or query's keys (call when done)."""
    while _PERSISTED:
        _PERSISTED.pop().unpersist()


def part_column(df, scheme: Scheme, source: Source, split_values=None):
    """``(df, part)``: each row's part as a Spark column (``df`` gains the row hash when the scheme hashes keys),
    as :meth:`calibdash.engines.duckdb.rows.SourceRows.part`; ``split_values`` (``None`` for missing) for
    ``"column"``."""
    if scheme.kind == "insample":
        return df, F.lit(0)
    if scheme.kind == "column":
        if not source.split:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        train = column_train_values(split_values, scheme)
        cond = col(source.split).isin([v for v in train if v is not None])
        if any(v is None for v in train):
            cond = cond | col(source.split).isNull()
        return df, F.when(cond, 0).otherwise(1)
    df = with_row_hash(df, "__key", scheme.seed, "__hash")
    h = F.col("__hash")
    return df, ((h % F.lit(int(scheme.n_folds))) if scheme.kind == "kfold" else F.when(
        h < F.lit(int(float(scheme.test_size) * 2 ** 32)), 1).otherwise(0))


def split_job(df, source: Source, scheme: Scheme, aggs: list) -> tuple:
    """``(values, split_values)``: one job's ``aggs`` and, for the ``"column"`` scheme, the split column's distinct
    values (``None`` for missing; else None)."""
    split = col(source.split) if scheme.kind == "column" and source.split else None
    if split is None:
        return df.agg(*aggs).collect()[0], None
    got = df.agg(*aggs, F.collect_set(split), F.count(F.when(split.isNull(), 1))).collect()[0]  # the set drops NULL
    return got[:-2], list(got[-2]) + ([None] if got[-1] else [])


class SparkFlow(Flow):
    """The source's rows as a Spark DataFrame: the Spark steps of :class:`~calibdash.engines.flow.Flow`
    (``sample``: keys for a row sample)."""

    def __init__(self, spark, source: Source, scheme: Scheme, features: Sequence[str], sample: bool = False):
        self.spark, self.source, self.scheme, self.split_values = spark, source, scheme, None
        self.df = keyed_rows(spark, source, source.columns(features), source.needs_keys(scheme) or sample)

    def kind(self, name):
        t = self.df.schema[name].dataType
        if isinstance(t, T.NumericType):
            return "number"
        if isinstance(t, (T.DateType, T.TimestampType, T.TimestampNTZType)):
            return "date"
        return "boolean" if isinstance(t, T.BooleanType) else "text" if isinstance(t, T.StringType) else "other"

    def column(self, name):
        return col(name)

    def number(self, x):
        return F.when(~F.isnan(x.cast("double")), x.cast("double"))

    def bin(self, x, edges):
        return F.when(x.isNotNull(), reduce(lambda b, e: b + (x >= F.lit(float(e))).cast("int"), edges, F.lit(0)))

    def quantiles(self, x, levels):
        return F.percentile(x, F.array(*[F.lit(q) for q in levels]))

    def distinct(self, x, approx=False):
        return F.approx_count_distinct(x, 0.01) if approx else F.countDistinct(x)

    def one(self, aggregates):
        return self.df.agg(*aggregates).collect()[0]

    def statistics(self, extra):
        """Also collects the split column's values for the ``"column"`` scheme."""
        raw, lab = col(self.source.score).cast("double"), col(self.source.label)
        finite = ~(F.isnan(raw) | raw.isin(float("inf"), float("-inf")))
        aggs = [F.count(F.lit(1)), F.count(F.when(raw.isNull() | ~finite, 1)),
                F.min(F.when(finite, raw)), F.max(F.when(finite, raw)),
                F.count(F.when(finite & ((raw < 0) | (raw > 1)), 1)), F.count(F.when(lab.isNull(), 1)),
                F.min(lab), F.max(lab), F.approx_count_distinct(raw, 0.01), *extra]
        got, self.split_values = split_job(self.df, self.source, self.scheme, aggs)
        st = Stats.of(got)
        return (st, *check_stats(st, self.source), list(got[9:]))

    def score(self, mapped):
        raw = col(self.source.score).cast("double")
        return (F.lit(1.0) / (F.lit(1.0) + F.exp(-raw))) if mapped else raw

    def grouped(self, st, positive, mapped, exact, codes):
        self.df, self.part = part_column(self.df, self.scheme, self.source, self.split_values)
        s, lab = self.score(mapped), col(self.source.label)
        code = s if exact else F.least(F.floor(s * GRID).cast("long"), F.lit(GRID - 1).cast("long"))
        rows = self.df.select(self.part.cast("int").alias("__part"), code.alias("__code"),
                              *[c.alias(n) for n, c in codes.items()],
                              (lab == F.lit(positive)).cast("long").alias("__y"), s.alias("__s"),
                              (~(lab.eqNullSafe(F.lit(st.label_lo)) | lab.eqNullSafe(F.lit(st.label_hi))))
                              .cast("long").alias("__other"))
        names = ["__part", "__code", *codes]
        res = rows.groupBy(*names).agg(F.count(F.lit(1)).alias("n"), F.sum("__y").alias("n_pos"),
                                       F.sum("__s").alias("s_sum"), F.sum("__other").alias("n_other"))
        res = to_pandas(self.spark, res, names + ["n", "n_pos", "s_sum", "n_other"])
        check_other_labels(self.source.label, int(res["n_other"].sum()))
        return res

    def sample(self, positive, mapped, feats, seed, n):
        df = with_row_hash(self.df, "__key", int(seed) + SAMPLE_SALT, "__sample_hash")
        picked = (df.select(F.col("__key").alias("key"), self.score(mapped).alias("score"),
                            (col(self.source.label) == F.lit(positive)).cast("int").alias("label"),
                            self.part.cast("int").alias("part"), *[col(f) for f in feats],
                            F.col("__sample_hash").alias("__h"))
                  .orderBy("__h", "key").limit(int(n)).collect())
        return pd.DataFrame([r.asDict() for r in picked], columns=["key", "score", "label", "part"] + feats + ["__h"])


def label_counts(source: Source, limit: int, spark=None) -> pd.DataFrame:
    """Per label value of a Spark table or query (at most ``limit``, the most frequent): ``label``, ``rows``,
    ``score_min`` and ``score_max`` (the finite scores' range), in one job."""
    spark = session(spark)
    df = spark.table(source.table) if source.kind == "table" else spark.sql(source.query)
    s = col(source.score).cast("double")
    finite = s.isNotNull() & ~F.isnan(s) & (F.abs(s) != float("inf"))
    got = (df.where(col(source.label).isNotNull()).groupBy(col(source.label).alias("label"))
           .agg(F.count(F.lit(1)).alias("rows"), F.min(F.when(finite, s)).alias("score_min"),
                F.max(F.when(finite, s)).alias("score_max")).orderBy(F.desc("rows")).limit(int(limit)).collect())
    return pd.DataFrame([r.asDict() for r in got], columns=["label", "rows", "score_min", "score_max"])
