"""K-class rows with DuckDB: checked rows as a relation, cells in one scan, :class:`DuckRows` for fitting."""
from __future__ import annotations

import contextlib
from functools import reduce

import numpy as np

from ...evaluation.cells import GRID, MAX_EXACT, ClassCells
from ...data.guard import engine_error, quote_identifier
from ...core.errors import DataError
from ...core.validation import SUM_TOLERANCE
from ...evaluation.scheme import Scheme
from ..classes import (BATCH_ROWS, KEY_CLIP, KEY_OFFSET, KEY_STEP, ClassRows, ClassSource, ClassStats,
                       checked_class_stats, exact_flags, part_count, split_cells)
from .rows import SourceRows, connection_for, row_hash_sql

__all__ = []

_M32 = 0xFFFFFFFF


def _chain(terms: list[str], op: str) -> str:
    """``((t0 op t1) op t2) ...``: left to right, as :func:`softmax_rows` sums."""
    return reduce(lambda a, b: f"({a} {op} {b})", terms)


def aggregate_classes(csrc: ClassSource, scheme: Scheme, *, max_exact: int = MAX_EXACT, memory_limit: str = "1GB",
                      threads: int | None = None, connection=None) -> ClassCells:
    """K-class cells with DuckDB: one statistics scan, exact distinct counts where needed, then every reduction
    aggregated in one scan (the rows unnested into K + 1 reductions); ``connection`` as
    :func:`calibdash.engines.duckdb.rows.aggregate` takes it."""
    with connection_for(connection, memory_limit, threads) as (con, own):
        rows = SourceRows(con, csrc.source, scheme, list(csrc.columns), tune=own)
        rel, st = checked_rows(csrc, rows)
        classes, K = list(csrc.classes), csrc.k
        reductions = ["__top"] + [f"__p{k}" for k in range(K)]
        exact = exact_flags(st.distinct, max_exact, lambda idx: rows._run(
            f"SELECT {', '.join(f'count(DISTINCT {reductions[r]})' for r in idx)} FROM ({rel})", [classes],
            fetch="one"))
        part, params = rows.part()
        codes = [v if ex else f"CAST(LEAST(floor({v} * {GRID}), {GRID - 1}) AS DOUBLE)"
                 for v, ex in zip(reductions, exact)]
        labels = ["CAST(__pred = __y AS INTEGER)"] + [f"CAST(__y = {k} AS INTEGER)" for k in range(K)]
        unnested = (f"SELECT {part} AS part, unnest(range({K + 1})) AS r, unnest([{', '.join(codes)}]) AS code, "
                    f"unnest([{', '.join(reductions)}]) AS s, unnest([{', '.join(labels)}]) AS y FROM ({rel})")
        res = rows._run(f"SELECT r, part, code, count(*) AS n, CAST(sum(y) AS BIGINT) AS n_pos, sum(s) AS s_sum "
                        f"FROM ({unnested}) GROUP BY r, part, code", params + [classes], fetch="df")
        return split_cells(res, exact, st.n_rows)


def checked_rows(csrc: ClassSource, rows: SourceRows, distinct: bool = True) -> tuple[str, ClassStats]:
    """The checked rows over ``rows`` (read with the class columns as features): a relation with ``__key``,
    ``__label`` (``__split``), the values ``__x0..``, probabilities ``__p0..``, ``__top``, the class index ``__y``
    and ``__pred``, its one parameter the classes; and its checked statistics (``distinct``: with estimates)."""
    src, K = csrc.source, csrc.k
    xs, p = [f"__x{k}" for k in range(K)], [f"__p{k}" for k in range(K)]
    x = [f"TRY_CAST({quote_identifier('__f_' + c)} AS DOUBLE) AS __x{k}" for k, c in enumerate(csrc.columns)]
    keep = "__key, __label" + (", __split" if src.split else "")
    base = f"SELECT {keep}, {', '.join(x)} FROM ({rows.sql})"
    if csrc.logits:
        m = f"greatest({', '.join(xs)})"
        exps = ", ".join(f"exp(__x{k} - __m) AS __e{k}" for k in range(K))
        total = _chain([f"__e{k}" for k in range(K)], "+")
        probs = ", ".join(f"__e{k} / {total} AS __p{k}" for k in range(K))
        base = f"SELECT *, {probs} FROM (SELECT *, {exps} FROM (SELECT *, {m} AS __m FROM ({base})))"
    else:
        base = f"SELECT *, {', '.join(f'__x{k} AS __p{k}' for k in range(K))} FROM ({base})"
    rel = (f"SELECT *, list_position([{', '.join(p)}], __top) - 1 AS __pred FROM ("
           f"SELECT *, greatest({', '.join(p)}) AS __top, list_position(?, __label) - 1 AS __y FROM ({base}))")
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
    got = rows._run(f"SELECT count(*), {', '.join(stats)} FROM ({rel})", [list(csrc.classes)], fetch="one")
    return rel, checked_class_stats(got, csrc, len(reductions) if distinct else 0)


class DuckRows(ClassRows):
    """The checked rows as a relation of a DuckDB connection (see :func:`class_rows`)."""

    def __init__(self, con, csrc: ClassSource, scheme: Scheme, own: bool):
        self.rows = SourceRows(con, csrc.source, scheme, list(csrc.columns), tune=own)
        rel, st = checked_rows(csrc, self.rows, distinct=False)
        part, params = self.rows.part()
        self.params = params + [list(csrc.classes)]
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
        q = f"SELECT *, {row_hash_sql('__y', seed)} AS __ckey FROM ({self.sql})"
        for k in range(self.k):
            u = (f"CAST(floor(LEAST(GREATEST(__x{k}, {-KEY_CLIP!r}), {KEY_CLIP!r}) * {KEY_STEP!r}) AS BIGINT) "
                 f"+ {KEY_OFFSET}")
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


@contextlib.contextmanager
def class_rows(csrc: ClassSource, scheme: Scheme, *, memory_limit: str = "1GB", threads: int | None = None,
               connection=None, on_connect=None):
    """The checked rows as a :class:`DuckRows` on ``connection`` or a private connection (``memory_limit``,
    ``threads``, a spill directory removed on exit); ``on_connect(con)`` is called with it first, e.g. to let
    a job interrupt it."""
    with connection_for(connection, memory_limit, threads, on_connect) as (con, own):
        yield DuckRows(con, csrc, scheme, own=own)
