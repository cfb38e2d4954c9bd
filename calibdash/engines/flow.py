"""The SQL engines' one orchestration: score cells and keyed cells, the steps written once for DuckDB and Spark.

A :class:`Flow` is a source's rows on one engine; its subclass says only what differs: how an expression is
written (SQL text, Spark columns), how a scan runs and how the grouped rows reach Python. The steps: one
statistics scan (checked by :func:`calibdash.engines.source.check_stats`, with the extra aggregates a step asks
for), the exact distinct count only when the estimate lies within a factor 4 of the limit
(:func:`~calibdash.engines.source.unsure`), one grouped scan by part, score code and the other codes."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..evaluation.scheme import Scheme
from ..monitoring.drift import freq_from_days
from ..monitoring.grouping import GroupCoding, coding_for
from ..monitoring.keyed import PERIODS
from ..monitoring.keyed.from_rows import not_dates_error, read_dates_check
from ..monitoring.keyed.assemble import group_cells, period_cells
from .source import Source, Stats, assemble_cells, feature_frame, quantile_levels, unsure

__all__ = []

#: The stages :meth:`Flow.aggregate` reports to ``on_stage``, in order (the second only when needed).
STAGES = ("statistics", "distinct scores", "aggregation", "sample")
#: The stages :meth:`KeyedFlow.keyed` reports to ``on_stage``, in order (the second and third only when needed).
KEYED_STAGES = ("statistics", "distinct scores", "key quantiles", "aggregation")
#: SQL's ``date_trunc`` unit of each period length.
TRUNC_UNITS = {"D": "day", "W": "week", "M": "month", "Q": "quarter"}
#: How :func:`calibdash.monitoring.keyed.from_rows.read_dates_check` reads a period column of each kind.
_DATES_HOW = {"date": "dates", "number": "ymd", "text": "text"}


class Flow:
    """A source's rows on one engine under ``scheme``, and the steps of the shared aggregations.

    A subclass gives the steps what differs (``x`` an expression of its own, an aggregate too; a column is read by
    its source name): ``kind(name)`` (``"number"``, ``"boolean"``, ``"date"``, ``"text"`` or ``"other"``),
    ``column(name)``, ``number(x)`` (a double, NaN read as missing), ``bin(x, edges)`` (how many ``edges`` lie
    at or below ``x``; missing stays missing), the aggregates ``quantiles(x, levels)`` (numpy's linear rule) and
    ``distinct(x, approx=False)`` (``approx``: HyperLogLog's estimate), ``one(aggregates)`` (their values over
    every row, one scan), ``statistics(extra)`` (the checked statistics scan: ``(stats, mapped, positive,
    extra_values)``), ``score(mapped)`` (the probability), ``grouped(st, positive, mapped, exact, codes)`` (the
    rows grouped by ``__part``, ``__code``, the score or its grid step unless ``exact``, and ``codes``, name ->
    expression, with ``n``, ``n_pos``, ``s_sum``; a third label value refused) and, after it, ``sample(positive,
    mapped, feats, seed, n)`` (the ``n`` rows of smallest ``row_hash(key, seed + SAMPLE_SALT)``, ties by key).
    """

    source: Source
    scheme: Scheme

    def exact(self, st: Stats, mapped: bool, max_exact: int, stage) -> bool:
        """Exact cells or the grid, decided on all rows as in memory (one more scan when the estimate is unsure)."""
        if not unsure(st.distinct, int(max_exact)):
            return st.distinct <= int(max_exact)
        stage(STAGES[1])
        return int(self.one([self.distinct(self.score(mapped))])[0]) <= int(max_exact)

    def aggregate(self, feats: Sequence[str], feature_bins: int, max_exact: int, sample_rows: int, seed: int,
                  stage):
        """Score cells (and a row sample), as :func:`calibdash.engines.duckdb.rows.aggregate` returns them."""
        levels = quantile_levels(feature_bins) if feats else []
        kinds = {f: "numeric" if self.kind(f) == "number" else "categorical" for f in feats}
        numeric = [f for f in feats if kinds[f] == "numeric"]
        st, mapped, positive, got = self.statistics([self.quantiles(self.number(self.column(f)), levels)
                                                     for f in numeric])
        edges = {f: np.unique(np.asarray(q if q is not None else [], dtype=float)) for f, q in zip(numeric, got)}
        exact = self.exact(st, mapped, max_exact, stage)
        stage(STAGES[2])
        codes = {"__c_" + f: self.bin(self.number(self.column(f)), edges[f]) if f in edges else self.column(f)
                 for f in feats}
        res = self.grouped(st, positive, mapped, exact, codes)
        fdf = feature_frame({f: res["__c_" + f].to_numpy() for f in feats}, kinds, edges) if feats else None
        cells = assemble_cells(*_sums(res), exact=exact, features=fdf)
        if sample_rows <= 0:
            return cells
        stage(STAGES[3])
        sample = self.sample(positive, mapped, feats, seed, sample_rows).sort_values("key").reset_index(drop=True)
        return cells, sample[["key", "score", "label", "part"] + list(feats)]


class KeyedFlow(Flow):
    """A :class:`Flow` that also gives keyed cells. The subclass says how a key column is read:
    ``text_key(x, boolean, key)`` (a text or boolean group key's code after the statistics scan: ``(code, stats,
    mapped, positive, decode)``, ``decode(res)``, or None, giving ``res["__k"]`` the shown text), ``timestamps(x,
    kind)`` (a date, number or text column as a timestamp, and the aggregates
    :func:`~calibdash.monitoring.keyed.from_rows.read_dates_check` needs), ``date_range(ts)`` (aggregates: count,
    min, max), ``days(ts, unit=None)`` (days since 1970-01-01, cut to the start of ``unit``) and ``day_list(day)``
    (an aggregate listing the distinct days).
    """

    def keyed(self, key, max_exact: int, stage):
        """The :class:`~calibdash.monitoring.keyed.KeyedCells` of ``key``, as
        :func:`calibdash.engines.duckdb.keyed.aggregate_keyed` returns them."""
        kind, x = self.kind(key.column), self.column(key.column)
        if key.kind == "group":
            return self._groups(key, kind, x, max_exact, stage)
        if kind not in _DATES_HOW:
            raise not_dates_error(key.column)
        ts, checks = self.timestamps(x, kind)
        extra = self.date_range(ts) + checks + ([self.day_list(self.days(ts))] if key.freq == "auto" else [])
        st, mapped, positive, got = self.statistics(extra)
        n_read = int(got[0])
        notes = read_dates_check(_DATES_HOW[kind], n_read, got[3:3 + len(checks)], key.column)
        freq = freq_from_days(got[-1], PERIODS) if key.freq == "auto" else key.freq
        exact, res = self._cells(st, mapped, positive, max_exact, stage, self.days(ts, TRUNC_UNITS[freq]))
        res = res[res["__k"].notna().to_numpy()]            # rows whose date was not read are left out
        return period_cells(res["__k"].to_numpy(dtype=np.int64), *_sums(res), exact=exact, key=key, freq=freq,
                            first=pd.Timestamp(got[1]), last=pd.Timestamp(got[2]), n_left_out=st.n_rows - n_read,
                            notes=notes)

    def _groups(self, key, kind: str, x, max_exact: int, stage):
        coding, n_distinct, decode = None, 0, None
        if kind == "number":
            x = self.number(x)
            st, mapped, positive, (estimate,) = self.statistics([self.distinct(x, approx=True)])
            n_distinct = int(estimate or 0)
            if unsure(n_distinct, key.max_groups):
                n_distinct = int(self.one([self.distinct(x)])[0])
            if coding_for(True, n_distinct, key.max_groups) == "quantile":
                stage(KEYED_STAGES[2])
                levels = np.linspace(0, 1, int(key.n_quantiles) + 1).tolist()
                q, n_distinct = self.one([self.quantiles(x, levels), self.distinct(x)])
                edges = np.unique(np.asarray(q, dtype=float))
                x = self.bin(x, edges[1:-1])
                coding = GroupCoding("quantile", int(n_distinct), edges)
        else:
            x, st, mapped, positive, decode = self.text_key(x, kind == "boolean", key)
        exact, res = self._cells(st, mapped, positive, max_exact, stage, x)
        raw = (decode(res) if decode else res)["__k"]
        missing = raw.isna().to_numpy()
        if coding is None:
            coding = GroupCoding(kind if kind == "number" else "text",
                                 n_distinct if kind == "number" else int(pd.unique(raw[~missing]).size))
        values = raw.to_numpy(dtype=object) if coding.how == "text" else raw.to_numpy(dtype=float, na_value=np.nan)
        return group_cells(values, missing, *_sums(res), exact=exact, coding=coding, key=key)

    def _cells(self, st, mapped, positive, max_exact, stage, key_code) -> tuple[bool, pd.DataFrame]:
        exact = self.exact(st, mapped, max_exact, stage)
        stage(KEYED_STAGES[3])
        return exact, self.grouped(st, positive, mapped, exact, {"__k": key_code})


def _sums(res: pd.DataFrame) -> tuple:
    """Grouped rows' ``part, code, n, n_pos, s_sum`` arrays."""
    return (res["__part"].to_numpy(), res["__code"].to_numpy(dtype=float), res["n"].to_numpy(),
            res["n_pos"].to_numpy(), res["s_sum"].to_numpy(dtype=float))
