"""K-class rows where they live, for fitting and judging calibrators: counts per part and class, a
content-keyed sample of a fitting part, and the judged rows in batches (memory, DuckDB, Spark).

:func:`open_class_rows` opens a source's checked rows (:func:`calibdash.engines.classes.memory_class_rows`,
:func:`~calibdash.engines.classes.duckdb_class_rows`, :func:`~calibdash.engines.classes.spark_class_rows`: the
rows, checks and parts the K-class cells are aggregated from) as a :class:`ClassRows`, which gives

* :meth:`ClassRows.counts`: rows per part and class (one grouped scan);
* :meth:`ClassRows.candidates`: the rows whose content key lies below a threshold of their part and class
  (one filtered scan; only those rows are fetched);
* :meth:`ClassRows.batches`: the values, classes and parts of the rows of some parts, ``batch_rows`` at a
  time (DuckDB: Arrow record batches of a streaming result; Spark: ``toLocalIterator``, one partition at a
  time on the driver; memory: slices), so memory stays bounded by a batch.

Spark computes the content key in a pandas UDF (the numpy function itself), so its Python workers need
numpy, pandas, pyarrow and calibdash, as ``apply``'s UDF path does (:mod:`calibdash.engines.apply`).

The content key
---------------
A row's key depends on what the row holds, never on where it lies: :func:`content_key`, a chain of
:func:`calibdash.cells.row_hash` (MurmurHash3's finaliser, written in SQL by
:func:`calibdash.engines.duckdb.row_hash_sql`; Spark runs the numpy function in a pandas UDF)
over the row's class index and, for each class column, the two 32-bit halves of
``u = floor(clip(x, -2^20, 2^20) * 2^32) + 2^52``. Every step is exact in every engine (a product by a power
of two, a floor, integers below 2^53), so the three engines give each row the same key. The key is not
:func:`calibdash.scheme.content_keys` (which hashes a value's 64 bit pattern, not readable in SQL):
it quantizes a value to ``2^-32`` (probabilities) and clips logits beyond ``2^20``, so distinct rows may
share a key; :func:`fit_samples` breaks ties by the values themselves, so the rows chosen depend on the
rows' content alone.

:func:`fit_samples` draws, for each fitting part, the stratified sample
:func:`calibdash.scheme.content_sample` would draw with these keys: class ``c`` gets its
Hamilton quota ``q_c`` (:func:`~calibdash.scheme.class_quotas`) and takes its ``q_c`` rows first
in the order (key, values). Only rows whose key lies below ``t_c = 2^32 (q_c + 4 sqrt(q_c) + 16) / n_c``
are fetched: the keys are uniform, so about ``q_c + 4 sqrt(q_c) + 16`` rows of class ``c`` pass (four
binomial standard deviations and some above ``q_c``); if fewer than ``q_c`` pass, the margin is raised and
the scan repeated. Every row before the ``q_c``-th passing one in that order has a smaller key, so it
passed too: the sample is exactly the first ``q_c`` rows of the class.
"""
from __future__ import annotations

import abc
import contextlib
import shutil
import tempfile
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..cells import row_hash
from ..errors import DataError
from ..scheme import class_quotas
from ..scheme import Scheme
from .classes import ClassSource, duckdb_class_rows, memory_class_rows, spark_class_rows

__all__ = ["ClassRows", "open_class_rows", "content_key", "fit_samples", "part_count", "BATCH_ROWS",
           "KEY_CLIP", "KEY_STEP"]

#: Rows per batch of the judged rows.
BATCH_ROWS = 65_536
#: Values are clipped to [-KEY_CLIP, KEY_CLIP] for the content key (logits beyond are equal for the key only).
KEY_CLIP = 2.0 ** 20
#: Values are quantized to steps of 1 / KEY_STEP for the content key.
KEY_STEP = 2.0 ** 32
_OFFSET = 2 ** 52
_M32 = 0xFFFFFFFF
_ALL = 2 ** 32          # a threshold every key lies below


def part_count(scheme: Scheme) -> int:
    """How many parts ``scheme`` makes: the folds of ``"kfold"``, 2 for a split (0 fit, 1 held out), else 1."""
    return int(scheme.n_folds) if scheme.kind == "kfold" else 2 if scheme.kind in ("split", "column") else 1


def content_key(X: np.ndarray, y: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each row's 32-bit content key (uint64) from its class index and class values (see the module docstring)."""
    X = np.asarray(X, dtype=float)
    h = row_hash(np.asarray(y, dtype=np.int64).astype(np.uint64), seed)
    for k in range(X.shape[1]):
        u = (np.floor(np.clip(X[:, k], -KEY_CLIP, KEY_CLIP) * KEY_STEP).astype(np.int64) + _OFFSET).astype(np.uint64)
        h = row_hash(h ^ (u & np.uint64(_M32)), seed)
        h = row_hash(h ^ (u >> np.uint64(32)), seed)
    return h


class ClassRows(abc.ABC):
    """A source's checked K-class rows and their parts under a scheme (see the module docstring).

    Attributes
    ----------
    k : int
    n_rows : int
    n_parts : int
    """

    k: int
    n_rows: int
    n_parts: int

    @abc.abstractmethod
    def counts(self) -> np.ndarray:
        """Rows per part and class, shape (n_parts, K), int64."""

    @abc.abstractmethod
    def candidates(self, limits: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, part, key)`` of the rows whose :func:`content_key` with ``seed`` lies below
        ``limits[part, y]`` (an int64 array of shape (n_parts, K); ``2**32`` takes every row), in no order."""

    @abc.abstractmethod
    def batches(self, parts: Sequence[int], batch_rows: int = BATCH_ROWS
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(X, y, part)`` of the rows in ``parts``, at most ``batch_rows`` at a time, in no order."""


class _MemoryRows(ClassRows):
    def __init__(self, csrc: ClassSource, scheme: Scheme):
        self.X, self.y, self.part = memory_class_rows(csrc, scheme)
        self.k, self.n_rows, self.n_parts = csrc.k, int(self.y.size), part_count(scheme)

    def counts(self) -> np.ndarray:
        out = np.zeros((self.n_parts, self.k), dtype=np.int64)
        np.add.at(out, (self.part.astype(np.int64), self.y), 1)
        return out

    def candidates(self, limits, seed):
        key = content_key(self.X, self.y, seed)
        keep = key < np.asarray(limits, dtype=np.int64)[self.part.astype(np.int64), self.y].astype(np.uint64)
        return self.X[keep], self.y[keep], self.part[keep].astype(np.int64), key[keep]

    def batches(self, parts, batch_rows=BATCH_ROWS):
        rows = np.flatnonzero(np.isin(self.part, np.asarray(list(parts))))
        for start in range(0, rows.size, int(batch_rows)):
            r = rows[start:start + int(batch_rows)]
            yield self.X[r], self.y[r], self.part[r].astype(np.int64)


class _DuckRows(ClassRows):
    def __init__(self, con, csrc: ClassSource, scheme: Scheme, own: bool):
        from .duckdb import SourceRows, part_sql

        src = csrc.source
        self.rows = SourceRows(con, src, list(csrc.columns), src.needs_keys(scheme), tune=own)
        rel, st = duckdb_class_rows(csrc, self.rows, distinct=False)
        part = part_sql(scheme, src, self.rows)
        self.params = ([[v for v in self.rows.train_values if v is not None]] if "unnest(?)" in part else [])
        self.params.append(list(csrc.classes))
        xs = ", ".join(f"__x{k}" for k in range(csrc.k))
        self.sql = f"SELECT CAST({part} AS BIGINT) AS __part, CAST(__y AS BIGINT) AS __y, {xs} FROM ({rel})"
        self.k, self.n_rows, self.n_parts = csrc.k, st.n_rows, part_count(scheme)

    def counts(self):
        got = self.rows._run(f"SELECT __part, __y, count(*) FROM ({self.sql}) GROUP BY ALL", self.params,
                             fetch="all")
        out = np.zeros((self.n_parts, self.k), dtype=np.int64)
        for p, c, n in got:
            out[int(p), int(c)] = int(n)
        return out

    def _keyed(self, seed: int) -> str:
        """The rows with ``__ckey``, :func:`content_key` in SQL, one hash per projection (each step reads the
        previous one's column, so no expression is copied into the next)."""
        from .duckdb import row_hash_sql

        q = f"SELECT *, {row_hash_sql('__y', seed)} AS __ckey FROM ({self.sql})"
        for k in range(self.k):
            u = (f"CAST(floor(LEAST(GREATEST(__x{k}, {-KEY_CLIP!r}), {KEY_CLIP!r}) * {KEY_STEP!r}) AS BIGINT) "
                 f"+ {_OFFSET}")
            q = f"SELECT *, {u} AS __u{k} FROM ({q})"
            for half in (f"__u{k} & {_M32}", f"__u{k} >> 32"):
                q = f"SELECT * REPLACE ({row_hash_sql(f'xor(__ckey, {half})', seed)} AS __ckey) FROM ({q})"
        return q

    def candidates(self, limits, seed):
        flat = ", ".join(str(int(v)) for v in np.asarray(limits, dtype=np.int64).ravel())
        xs = ", ".join(f"__x{k}" for k in range(self.k))
        got = self.rows._run(f"SELECT __part, __y, __ckey, {xs} FROM ({self._keyed(seed)}) WHERE __ckey < "
                             f"([{flat}]::BIGINT[])[__part * {self.k} + __y + 1]", self.params, fetch="df")
        return (got[[f"__x{k}" for k in range(self.k)]].to_numpy(dtype=float), got["__y"].to_numpy(np.int64),
                got["__part"].to_numpy(np.int64), got["__ckey"].to_numpy().astype(np.uint64))

    def batches(self, parts, batch_rows=BATCH_ROWS):
        parts = sorted({int(p) for p in parts})
        where = "" if parts == list(range(self.n_parts)) else f" WHERE __part IN ({', '.join(map(str, parts))})"
        from ..data.guard import engine_error

        try:
            # a relation read as a stream of Arrow batches (DuckDB 2 names it to_arrow_reader, earlier
            # fetch_arrow_reader): the rows are produced as the batches are read, never all held
            rel = self.rows.con.sql(f"SELECT * FROM ({self.sql}){where}", params=self.params)
            reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(int(batch_rows))
            for batch in reader:            # columns: __part, __y, __x0, ..., __x{K-1}
                cols = [c.to_numpy(zero_copy_only=False) for c in batch.columns]
                yield np.column_stack(cols[2:]).astype(float), cols[1].astype(np.int64), cols[0].astype(np.int64)
        except Exception as exc:  # noqa: BLE001 - DuckDB's errors while streaming: short and typed
            if isinstance(exc, DataError):
                raise
            raise engine_error(exc, what=self.rows.what) from None


class _SparkRows(ClassRows):
    def __init__(self, spark, csrc: ClassSource, scheme: Scheme):
        from pyspark.sql import functions as F

        from .spark import part_column

        df, st, split_values = spark_class_rows(csrc, scheme, spark, distinct=False)
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
        from pyspark.sql import functions as F

        from .spark import to_pandas

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
        from pyspark.sql import functions as F

        df = self.df.where(F.col("__part").isin([int(p) for p in parts]))
        buf: list = []
        for row in df.toLocalIterator(prefetchPartitions=True):
            buf.append(tuple(row))
            if len(buf) >= int(batch_rows):
                yield self._arrays(buf)
                buf = []
        if buf:
            yield self._arrays(buf)

    def _arrays(self, buf: list):
        a = np.asarray(buf, dtype=float)
        return a[:, 2:], a[:, 1].astype(np.int64), a[:, 0].astype(np.int64)


@contextlib.contextmanager
def open_class_rows(csrc: ClassSource, scheme: Scheme, engine: str = "duckdb", *, memory_limit: str = "1GB",
                    threads: int | None = None, spark=None, on_connect=None):
    """The checked rows of ``csrc`` under ``scheme`` as a :class:`ClassRows`, open while inside.

    ``engine`` reads them: "memory" (pandas, every row in memory), "duckdb" (a private connection with
    ``memory_limit``, ``threads`` and a spill directory, removed on exit; ``on_connect(con)`` is called with
    it first, e.g. to let a job interrupt it), or "spark" (``spark``, default ``getOrCreate()``).

    Raises
    ------
    DataError
        As :func:`calibdash.engines.classes.check_class_stats`.
    SettingsError
        An unknown engine; a hashed scheme on rows without positions.
    """
    from .classes import ENGINES
    from .duckdb import check_scheme, connect

    check_scheme(scheme)
    csrc.source.check_keys(scheme)
    if engine == "memory":
        yield _MemoryRows(csrc, scheme)
    elif engine == "duckdb":
        tmp = tempfile.mkdtemp(prefix="calibdash-duckdb-")
        con = connect(memory_limit, threads, tmp)
        try:
            if on_connect is not None:
                on_connect(con)
            yield _DuckRows(con, csrc, scheme, own=True)
        finally:
            con.close()
            shutil.rmtree(tmp, ignore_errors=True)
    elif engine == "spark":
        from .spark import release, session

        try:
            yield _SparkRows(session(spark), csrc, scheme)
        finally:
            release()
    else:
        from ..errors import SettingsError
        raise SettingsError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}.")


def fit_samples(rows: ClassRows, fit_parts: Sequence[Sequence[int]], size: int | None, seed: int = 0,
                on_scan=None) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Each fitting part's rows, or its stratified content-keyed sample of ``size`` rows (see the module
    docstring), as ``(X, y)`` ordered by class, key and values; and the counts per part and class.

    Parameters
    ----------
    rows : ClassRows
    fit_parts : sequence of sequences of int
        The parts each fit is made on (k-fold: every fold but one).
    size : int or None
        The sample's rows; None (or at least the part's rows) takes every row.
    seed : int
        The content key's seed.
    on_scan : callable, optional
        Called before each scan for the sample (one, unless too few rows passed the thresholds).

    Raises
    ------
    DataError
        A fitting part that is empty or holds one class only.
    """
    counts = rows.counts()
    sets = [np.asarray(sorted({int(p) for p in f}), dtype=np.int64) for f in fit_parts]
    n_of = [counts[f].sum(axis=0) for f in sets]
    quotas = [n.copy() if size is None else class_quotas(n, int(size)) for n in n_of]
    for n in n_of:
        if n.sum() == 0:
            raise DataError("the fitting part is empty.")
        if np.count_nonzero(n) < 2:
            raise DataError(f"the fitting part ({int(n.sum()):,} rows) holds one class only; calibration needs "
                            "at least two.")
    margin = 4.0
    while True:
        cuts = [np.where(q >= n, _ALL, np.minimum(_ALL, np.ceil(_ALL * (q + margin * np.sqrt(q) + 16)
                                                                / np.maximum(n, 1)))).astype(np.int64)
                for q, n in zip(quotas, n_of)]
        limits = np.zeros((rows.n_parts, rows.k), dtype=np.int64)
        for f, t in zip(sets, cuts):
            limits[f] = np.maximum(limits[f], t[None, :])
        if on_scan is not None:
            on_scan()
        X, y, part, key = rows.candidates(limits, seed)
        out, short = [], False
        for f, t, q in zip(sets, cuts, quotas):
            keep = np.isin(part, f) & (key < t[y].astype(np.uint64))
            Xf, yf, kf = X[keep], y[keep], key[keep]
            if np.any(np.bincount(yf, minlength=rows.k) < q):
                short = True
                break
            order = np.lexsort(tuple(Xf[:, j] for j in range(rows.k - 1, -1, -1)) + (kf, yf))
            ys = yf[order]
            starts = np.searchsorted(ys, np.arange(rows.k))
            rank = np.arange(ys.size) - starts[ys]
            take = order[rank < q[ys]]
            out.append((Xf[take], yf[take]))
        if not short:
            return out, counts
        margin *= 4


