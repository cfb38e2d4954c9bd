"""The three SQL forms a calibrator's ``sql_map`` returns, the builders that write each as a :class:`SqlMap` (one
CASE, a binary search of nested CASEs, or a lookup table), and the :class:`SqlMap` that
:func:`calibdash.io.sql.to_sql` returns with its :class:`Lookup` tables, joined by bucket (a hash join) rather than
by range."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..step_maps import interp, step_lookup
from .writer import SqlUnsupported, SqlWriter, literal, quote

__all__ = ["closed_sql", "linear_sql", "step_sql"]

#: Largest number of pieces (steps, or intervals of a linear map) written as one CASE; above, a lookup table.
CASE_MAX_STEPS = 64


@dataclass(frozen=True)
class ClosedForm:
    """A map written as one formula: ``build(writer) -> SQL`` (NULL scores are handled by the caller)."""

    build: Callable[[SqlWriter], str]


@dataclass(frozen=True)
class StepMap:
    """``levels[k]`` on ``cuts[k-1] <= s < cuts[k]`` (:func:`~calibdash.core.step_maps.step_lookup`),
    except at the scores ``point_x``, which take ``point_value`` (the first of repeated points)."""

    cuts: Sequence[float]
    levels: Sequence[float]
    point_x: Sequence[float] = ()
    point_value: Sequence[float] = ()

    def evaluate(self, s) -> np.ndarray:
        """The map in numpy, as ``predict`` computes it (before its clip)."""
        s = np.asarray(s, dtype=float)
        p = step_lookup(np.asarray(self.cuts, float), np.asarray(self.levels, float), s)
        px = np.asarray(self.point_x, float)
        if px.size:
            i = np.minimum(np.searchsorted(px, s), px.size - 1)
            p = np.where(px[i] == s, np.asarray(self.point_value, float)[i], p)
        return p

    def pieces(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, values)``: the map, clipped to [0, 1], is ``values[0]`` below ``starts[0]`` and
        ``values[k + 1]`` on ``starts[k] <= s < starts[k + 1]``, no two neighbours equal. The starts are the cuts
        and each point ``x`` and the double after it; a piece's value is the map at its start."""
        cuts, levels = np.asarray(self.cuts, dtype=float), np.asarray(self.levels, dtype=float)
        if levels.size != cuts.size + 1:
            raise SqlUnsupported(f"a step map needs one level more than cuts; got {levels.size} and {cuts.size}.")
        px = np.asarray(self.point_x, dtype=float)
        starts = np.unique(np.concatenate([cuts, px, np.nextafter(px, np.inf)]))
        values = np.clip(np.concatenate([levels[:1], self.evaluate(starts)]), 0.0, 1.0)
        keep = np.r_[True, values[1:] != values[:-1]]          # merge neighbours of equal value
        return starts[keep[1:]], values[keep]


@dataclass(frozen=True)
class LinearMap:
    """``np.interp(s, x, y)``, or beyond the end knots the straight line through the two end knots
    (``left``/``right`` ``"extend"``, as ELiTE's ``evaluate_linear``); clipped to [0, 1]."""

    x: Sequence[float]
    y: Sequence[float]
    left: str = "hold"
    right: str = "hold"

    def evaluate(self, s) -> np.ndarray:
        """The map in numpy (before the clip)."""
        x, y = np.asarray(self.x, float), np.asarray(self.y, float)
        s = np.asarray(s, dtype=float)
        if x.size == 1:
            return np.full(s.shape, y[0])
        out = interp(s, x, y)
        if self.left == "extend":
            lo = s < x[0]
            out[lo] = y[0] + (s[lo] - x[0]) * (y[1] - y[0]) / (x[1] - x[0])
        if self.right == "extend":
            hi = s > x[-1]
            out[hi] = y[-1] + (s[hi] - x[-1]) * (y[-1] - y[-2]) / (x[-1] - x[-2])
        return out

    def intervals(self) -> dict[str, np.ndarray]:
        """The intervals ``lo[j] <= s < lo[j + 1]`` (the last up to ``x[-1]``) as columns: ``lo``, the width ``dx``,
        the end values ``y0``, ``y1``, their difference ``dy`` and the bounds ``ymin``/``ymax`` the value is kept
        between. Zero-width intervals (repeated knots) are dropped, as the binary search skips them."""
        x, y = np.asarray(self.x, dtype=float), np.asarray(self.y, dtype=float)
        j = np.flatnonzero(x[:-1] < x[1:])
        y0, y1 = y[j], y[j + 1]
        return {"lo": x[j], "dx": x[j + 1] - x[j], "y0": y0, "dy": y1 - y0, "y1": y1,
                "ymin": np.minimum(y0, y1), "ymax": np.maximum(y0, y1)}

    def end(self, side: str, s: str) -> str:
        """SQL of the map beyond the first (``side="left"``) or last knot."""
        x, y = np.asarray(self.x, dtype=float), np.asarray(self.y, dtype=float)
        mode = self.left if side == "left" else self.right
        if mode not in ("hold", "extend"):
            raise SqlUnsupported(f"a linear map's ends are 'hold' or 'extend', got {mode!r}.")
        k, k2 = (0, 1) if side == "left" else (-1, -2)
        if mode == "hold" or x.size == 1:
            return literal(y[k])
        dx, dy = (x[k2] - x[k], y[k2] - y[k]) if side == "left" else (x[k] - x[k2], y[k] - y[k2])
        if dx == 0:
            raise SqlUnsupported("a linear map extended beyond repeated end knots has no finite slope.")
        # evaluate_linear: y[k] + (s - x[k]) * dy / dx, left to right
        return f"({literal(y[k])} + ({s} - {literal(x[k])}) * {literal(dy)} / {literal(dx)})"


def _pick_form(form: str, pieces: int, max_case: int = CASE_MAX_STEPS) -> str:
    """The form for a map of ``pieces`` pieces: "auto" is CASE or lookup, "scalar" CASE or bisect."""
    if form == "auto":
        return "case" if pieces <= max_case else "lookup"
    if form == "scalar":
        return "case" if pieces <= max_case else "bisect"
    return form


def _null_guard(score: str, body: str) -> str:
    return f"CASE WHEN {score} IS NULL THEN NULL ELSE {body} END"


def _bisect(s: str, a: int, b: int, bound, leaf) -> str:
    """Nested CASEs choosing among pieces ``a..b``: piece ``i`` from ``s >= bound(i)`` on, ``leaf(i)`` its SQL."""
    if a == b:
        return leaf(a)
    mid = (a + b + 1) // 2
    return (f"CASE WHEN {s} < {literal(bound(mid))} THEN {_bisect(s, a, mid - 1, bound, leaf)} "
            f"ELSE {_bisect(s, mid, b, bound, leaf)} END")


def step_sql(step: StepMap, writer: SqlWriter, form: str, method: str, score_column: str,
              max_case: int = CASE_MAX_STEPS) -> SqlMap:
    starts, values = step.pieces()
    form = _pick_form(form, values.size, max_case)
    if form == "bisect" and starts.size:          # values[i] on starts[i-1] <= s < starts[i]
        return SqlMap(method, writer.dialect, score_column, "bisect", lambda s: _null_guard(
            s, _bisect(s, 0, values.size - 1, lambda i: starts[i - 1], lambda i: literal(values[i]))))
    if form == "case" or starts.size == 0:
        def render(s: str) -> str:
            if starts.size == 0:
                return _null_guard(s, literal(values[0]))
            arms = " ".join(f"WHEN {s} < {literal(c)} THEN {literal(v)}" for c, v in zip(starts, values[:-1]))
            return f"CASE WHEN {s} IS NULL THEN NULL {arms} ELSE {literal(values[-1])} END"
        return SqlMap(method, writer.dialect, score_column, "case", render)
    name = "cd_steps"
    lookup, joins = bucketed(name, starts, np.r_[starts[1:], np.inf], {"cd_value": values[1:]})

    def render_lookup(s: str) -> str:
        return (f"CASE WHEN {s} IS NULL THEN NULL WHEN {s} < {literal(starts[0])} THEN {literal(values[0])} "
                f"ELSE {name}.cd_value END")
    return SqlMap(method, writer.dialect, score_column, "lookup", render_lookup, {name: lookup}, joins)


def linear_sql(lin: LinearMap, writer: SqlWriter, form: str, method: str, score_column: str,
                max_case: int = CASE_MAX_STEPS) -> SqlMap:
    x, y = np.asarray(lin.x, dtype=float), np.asarray(lin.y, dtype=float)
    if x.size == 0 or x.size != y.size:
        raise SqlUnsupported(f"a linear map needs as many values as knots (at least one); got {x.size}, {y.size}.")
    iv = lin.intervals()
    los = iv["lo"]
    form = _pick_form(form, los.size, max_case)
    if los.size == 0 and x.size > 1 and "extend" in (lin.left, lin.right):
        raise SqlUnsupported("a linear map extended beyond knots that all coincide has no finite slope.")

    def piece(s: str, col) -> str:
        """Interval values ``col(name)`` -> SQL of interp's formula on that interval."""
        pos = f"(({s} - {col('lo')}) / {col('dx')})"
        inside = writer.clip(f"{col('y0')} + {pos} * {col('dy')}", col("ymin"), col("ymax"))
        return f"CASE WHEN {pos} >= {literal(1.0)} THEN {col('y1')} ELSE {inside} END"

    def literals(j: int):
        return lambda name: literal(iv[name][j])

    def ends(s: str) -> str:
        return (f"WHEN {s} < {literal(x[0])} THEN {lin.end('left', s)} WHEN {s} = {literal(x[-1])} "
                f"THEN {literal(y[-1])} WHEN {s} > {literal(x[-1])} THEN {lin.end('right', s)}")

    if form == "bisect" and los.size:             # interval j on los[j] <= s < los[j + 1]
        def render_bisect(s: str) -> str:
            part = _bisect(s, 0, los.size - 1, lambda j: los[j], lambda j: piece(s, literals(j)))
            return _null_guard(s, writer.clip(f"CASE {ends(s)} ELSE {part} END"))
        return SqlMap(method, writer.dialect, score_column, "bisect", render_bisect)

    if form in ("case", "bisect") or los.size == 0:
        def render(s: str) -> str:
            if x.size == 1 or los.size == 0:
                return _null_guard(s, literal(y[-1]) if x.size == 1 else f"CASE {ends(s)} ELSE {literal(y[-1])} END")
            bounds = np.r_[los[1:], x[-1]]
            arms = [f"WHEN {s} < {literal(bounds[j])} THEN {piece(s, literals(j))}" for j in range(los.size - 1)]
            last = piece(s, literals(los.size - 1))
            return _null_guard(s, writer.clip(f"CASE {ends(s)} {' '.join(arms)} ELSE {last} END"))
        return SqlMap(method, writer.dialect, score_column, "case", render)

    name = "cd_knots"
    columns = {f"cd_{k}": v for k, v in iv.items() if k != "lo"}
    lookup, joins = bucketed(name, los, np.r_[los[1:], x[-1]], columns)

    def render_lookup(s: str) -> str:
        return _null_guard(s, writer.clip(f"CASE {ends(s)} ELSE {piece(s, lambda k: f'{name}.cd_{k}')} END"))
    return SqlMap(method, writer.dialect, score_column, "lookup", render_lookup, {name: lookup}, joins)


def closed_sql(closed: ClosedForm, writer: SqlWriter, method: str, score_column: str) -> SqlMap:
    features = dict(writer.features)

    def render(s: str) -> str:
        return _null_guard(s, closed.build(SqlWriter(writer.dialect, s, features)))
    render(quote(score_column, writer.dialect))          # fail now, not when the SQL is first asked for
    return SqlMap(method, writer.dialect, score_column, "closed", render)


def _word(text: str) -> str:
    """``text`` if it is a plain word (letters, digits, ``_``, ``-``, ``:``), else ``?``: what a comment may hold."""
    return text if re.fullmatch(r"[A-Za-z0-9_:\-]{1,64}", str(text)) else "?"


#: The largest double: the upper bound of the last piece of a range-joined lookup table.
_MAX_DOUBLE = float(np.finfo(float).max)


@dataclass(frozen=True)
class Lookup:
    """A small table written as a ``VALUES`` list: its name, column names and rows (ints and floats)."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]

    def arrow(self):
        """The table as a ``pyarrow.Table`` of float64 columns (exactly the doubles of :attr:`rows`)."""
        import pyarrow as pa
        cols = list(zip(*self.rows)) if self.rows else [()] * len(self.columns)
        return pa.table({c: pa.array(v, pa.int64() if v and isinstance(v[0], int) else pa.float64())
                         for c, v in zip(self.columns, cols)})

    def cte(self) -> str:
        """``name AS (SELECT * FROM (VALUES ...) AS v(columns))``."""
        rows = ",\n    ".join("(" + ", ".join(str(v) if isinstance(v, int) else literal(v) for v in row) + ")"
                               for row in self.rows)
        cols = ", ".join(self.columns)
        return f"{self.name} AS (SELECT * FROM (VALUES\n    {rows}\n  ) AS v({cols}))"


@dataclass(frozen=True)
class SqlMap:
    """A calibrator as SQL: ``method`` (its registry name), ``dialect``, ``score_column``, ``form`` ("closed",
    "case", "bisect" or "lookup"), and ``lookups`` (table name -> :class:`Lookup`; empty but for the lookup form).
    :attr:`expression` is the calibrated probability's scalar SQL (over the lookups' columns too, which
    :meth:`select` joins), NULL where the score is NULL."""

    method: str
    dialect: str
    score_column: str
    form: str
    _render: Callable[[str], str] = field(repr=False)
    lookups: dict = field(default_factory=dict)
    _joins: tuple = field(default=(), repr=False)

    @property
    def expression(self) -> str:
        return self._render(quote(self.score_column, self.dialect))

    def select(self, source_sql: str, keep_columns: Sequence[str] | None = None, *,
               inline_lookups: bool = True) -> str:
        """A full SELECT adding the column ``calibrated`` to the rows of ``source_sql``.

        Parameters
        ----------
        source_sql : str
            A query (``SELECT ...``, ``WITH ...``; DuckDB's ``FROM ...``) or a table reference (``my_table``,
            ``read_parquet('x/*.parquet')``).
        keep_columns : sequence of str, optional
            Source columns to keep, in order (default: all, ``src.*``; a source column named ``calibrated``
            would then appear twice: pass the columns without it).
        inline_lookups : bool, default True
            Write the lookup tables into the statement (``WITH name AS (VALUES ...)``); False leaves them out,
            for a caller that made tables of those names (from :meth:`Lookup.arrow`: no SQL parsing).
        """
        src = source_sql.strip().rstrip(";")
        if src.split(None, 1)[0].upper() in ("SELECT", "WITH", "FROM", "VALUES"):
            src = f"(\n{src}\n)"
        score = "src." + quote(self.score_column, self.dialect)
        cols = "src.*" if keep_columns is None else ", ".join("src." + quote(c, self.dialect) for c in keep_columns)
        inline = self.lookups and inline_lookups
        head = ["WITH " + ",\n".join(lk.cte() for lk in self.lookups.values())] if inline else []
        sep = ", " if cols else ""
        body = [f"SELECT {cols}{sep}{self._render(score)} AS calibrated", f"FROM {src} AS src"]
        return "\n".join(head + body + [j.format(score=score) for j in self._joins])

    def standalone(self, source: str = "scores") -> str:
        """One self-contained statement (lookups inlined) adding ``calibrated`` to every row of ``source`` (the
        caller's table or query, written as given), with a comment saying what it is. The comment holds no text
        from the data or a model file (only plain words, and ``source`` when it is a plain identifier): names
        from a model file appear only quoted, in the statement."""
        src = source.strip()
        rows = src if src.isidentifier() and src.isascii() else "the source query"
        head = (f"-- calibdash: {_word(self.method)} calibrator as {_word(self.dialect)} SQL "
                f"({_word(self.form)} form).\n"
                f"-- Adds the column calibrated to every row of {rows}; the score column, named in the "
                f"SELECT below, holds scores in [0, 1] (NULL gives NULL).\n")
        return head + self.select(src) + ";\n"


def bucketed(name: str, lo: np.ndarray, hi: np.ndarray, columns: dict) -> tuple["Lookup", tuple]:
    """A lookup table of the pieces ``[lo[k], hi[k])`` and the join that finds a score's piece.

    A range join (``s >= lo AND s < hi``) is a nested loop in most engines. Instead the scores are cut into
    ``g`` buckets ``floor(s * g)`` (``g`` a power of 2, at least twice the pieces: the product is exact, alike
    in Python and SQL) and each piece is listed once per bucket it meets (from the bucket of ``lo`` to that of
    the largest double below ``hi``): an equi-join on the bucket (a hash join), then the range condition.
    """
    g = 1 << max(4, int(np.ceil(np.log2(2 * max(lo.size, 1)))))

    def bucket(v):
        with np.errstate(invalid="ignore", over="ignore"):
            return np.clip(np.floor(np.clip(v, -1.0, 2.0) * g), 0, g).astype(np.int64)
    b0, b1 = bucket(lo), bucket(np.nextafter(hi, -np.inf))
    keep = hi > lo
    b0, b1 = b0[keep], np.maximum(b1[keep], b0[keep])
    piece = np.repeat(np.flatnonzero(keep), b1 - b0 + 1)
    first = np.repeat(b0 - np.r_[0, np.cumsum(b1 - b0 + 1)[:-1]], b1 - b0 + 1)
    buckets = first + np.arange(piece.size)
    his = np.where(np.isfinite(hi), hi, _MAX_DOUBLE)
    cols = {"cd_b": buckets, "cd_lo": lo[piece], "cd_hi": his[piece]}
    cols.update({k: np.asarray(v, dtype=float)[piece] for k, v in columns.items()})
    rows = tuple(zip(*[c.tolist() for c in cols.values()]))
    join = (f"LEFT JOIN {name} ON {name}.cd_b = "
            f"LEAST(GREATEST(CAST(FLOOR({{score}} * {literal(float(g))}) AS BIGINT), 0), {g}) "    # floor(s * g)
            f"AND {{score}} >= {name}.cd_lo AND {{score}} < {name}.cd_hi")
    return Lookup(name, tuple(cols), rows), (join,)
