"""A fitted calibrator as SQL: calibrate scores where the data lives.

>>> from calibdash import calibrators, sql
>>> cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
>>> m = sql.to_sql(cal, score_column="score")
>>> print(m.expression)
CASE WHEN "score" IS NULL THEN NULL WHEN "score" < 0.25E0 THEN 0.0E0 ELSE 1.0E0 END
>>> print(m.select("my_table", keep_columns=["id"]))                  # doctest: +NORMALIZE_WHITESPACE
SELECT src."id", CASE WHEN src."score" IS NULL THEN NULL WHEN src."score" < 0.25E0 THEN 0.0E0
ELSE 1.0E0 END AS calibrated
FROM my_table AS src

:func:`to_sql` turns a calibrator (or a model file written by
:mod:`calibdash.export`) into a :class:`SqlMap`: a scalar SQL expression over
the score column that equals ``calibrator.predict`` on every score in
[0, 1], plus, for large maps, small lookup tables written as ``VALUES``
lists. The expression is NULL where the score is NULL. Three dialects:
``"duckdb"``, ``"spark"`` (Spark SQL) and ``"ansi"`` (double-quoted names,
``DOUBLE PRECISION``, ``LN``/``EXP``, ``GREATEST``/``LEAST``, which
PostgreSQL, Snowflake, BigQuery, Trino, Redshift and Oracle all have).

Forms
-----
What a method's map is, each calibrator class says itself: its ``sql_map``
method (:meth:`calibdash.calibrators.base.Calibrator.sql_map`) returns one of
the three forms below, built from the fitted state its ``predict`` uses, or
None (no SQL form). This module holds only the forms and their writers; for a
class one cannot edit, :func:`register_sql` registers a converter from its
model file's state. The forms:

:class:`ClosedForm`
    A formula. Platt: ``1 / (1 + exp(-(a logit(s) + b)))`` with the score
    clipped to ``[EPS, 1 - EPS]`` (``calibdash.calibrators.platt.EPS``) and
    ``logit(s) = ln(s) - log1p(-s)`` as ``platt.py`` computes it. DuckDB and
    ANSI SQL have no ``log1p``; there it is Goldberg's accurate form
    ``ln(u) * x / (u - 1)`` with ``u = 1 + x`` (``x`` itself when
    ``u = 1``), within an ulp or two of ``log1p``. So a closed form agrees
    with ``predict`` to rounding (about 1e-15 relative), not bit for bit:
    ``exp`` and ``ln`` of the engine and of numpy may differ in the last bit
    (measured: at most 9e-16 relative, against 4e-15 allowed by the tests).
    Beta calibration (``expit(a ln s + b (-log1p(-s)) + c)``, the same clip)
    and temperature scaling (``expit(logit(s) / T)``) likewise. MBCT is a
    closed form too, without ``exp``: per tree, a nested ``CASE`` routes the
    row to its node (comparisons of the raw score and features that are
    exactly those of its codes: see
    :func:`calibdash.calibrators._mbct_sql.mbct_form`), whose line maps the
    previous output (``slope * f + intercept``), clipped to [0, 1]
    (``MBCTCalibrator.predict``); it equals ``predict`` bit for bit.
:class:`StepMap`
    ``levels[k]`` on ``cuts[k-1] <= s < cuts[k]``: exactly
    :func:`calibdash.calibrators._steps.step_lookup`, i.e.
    ``np.searchsorted(cuts, s, side="right")``: a score on a cut takes the
    upper piece. Histogram, isotonic (step), BBQ, SBB, Venn-Abers (constant
    between calibration scores, another value at each: points; see
    ``VennAbersCalibrator.sql_map``). BBQ's authors' variant
    also overrides single points (``point_x``); a point ``x`` becomes the
    piece ``[x, nextafter(x, +inf))``, which holds exactly the double ``x``,
    so the override costs nothing and needs no equality test. Up to
    :data:`CASE_MAX_STEPS` pieces the map is ``CASE WHEN s < c0 THEN l0 WHEN
    s < c1 THEN l1 ... ELSE ln END``. Above, either a lookup table of the
    pieces (``form="lookup"``, the default) or a binary search written as
    nested CASEs (``form="bisect"``: one scalar expression, but engines
    evaluate a CASE of thousands of arms slowly: DuckDB takes seconds per
    million rows at 1,000 pieces). The lookup table is joined on a bucket of
    the score, ``floor(s * g)`` with ``g`` a power of 2 at least twice the
    pieces (an exact product), each piece listed once per bucket it meets,
    plus the range ``s >= lo AND s < hi``: a hash join in any engine rather
    than a nested loop over a range. Either way the comparisons are the ones
    ``searchsorted`` makes, so the result is the same double, not merely
    close. The levels
    are clipped to [0, 1] beforehand, as ``predict`` clips its output.
:class:`LinearMap`
    Linear interpolation between knots (isotonic with linear interpolation, ABB, ENIR), or the
    same with linear extension beyond the end knots (ELiTE's ``evaluate_linear``), then clipped to
    [0, 1]. Equal to :func:`calibdash.calibrators._steps.interp` (the overflow-free ``np.interp``
    that ``predict`` uses) operation for operation: below ``x[0]`` the value is ``y[0]``, at or
    above ``x[-1]`` it is ``y[-1]``, otherwise, on the interval ``x_j <= s < x_{j+1}``, the
    position ``t = (s - x_j) / (x_{j+1} - x_j)`` and then ``y_{j+1}`` if ``t >= 1``, else
    ``y_j + t (y_{j+1} - y_j)`` kept between ``y_j`` and ``y_{j+1}``, with the differences computed
    in Python as numpy computes them (same IEEE operations). No slope is ever formed, so knots
    closer than 1e-308 (subnormal scores) interpolate as any others instead of overflowing. Among
    knots with equal ``x`` the binary search lands on the last one, so zero-width intervals are
    dropped: a score equal to a repeated knot takes the value of its last copy. Small maps are a
    ``CASE``; large ones join a table of intervals as step maps do.

Floats are written as Python's shortest ``repr`` with an exponent
(``0.1E0``), which every dialect reads as a DOUBLE literal (a plain ``0.1``
would be a DECIMAL in DuckDB and Spark) rounding back to the same double;
negative literals are parenthesised (``x - (-0.5E0)``, never ``--``).

A method without a SQL form, or a state the forms cannot hold (MBCT
categories of mixed types), raises :class:`SqlUnsupported`;
:func:`calibdash.engines.apply.apply_model` then falls back to calling
``predict`` from the engine in vectorised batches.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .calibrators._steps import interp
from .errors import DataError, SettingsError

__all__ = ["SqlMap", "SqlUnsupported", "StepMap", "LinearMap", "ClosedForm", "SqlWriter", "to_sql",
           "register_sql", "sql_methods", "DIALECTS", "CASE_MAX_STEPS", "literal"]

DIALECTS = ("duckdb", "spark", "ansi")
FORMS = ("auto", "case", "bisect", "lookup", "scalar")
#: Largest number of pieces (steps, or intervals of a linear map) written as one CASE; above, a lookup table.
CASE_MAX_STEPS = 64
#: The largest double: the upper bound of the last piece of a range-joined lookup table.
_MAX_DOUBLE = float(np.finfo(float).max)


class SqlUnsupported(SettingsError):
    """The calibrator's map cannot be written as SQL (apply it with ``predict``, e.g. as a UDF)."""


# ---------------------------------------------------------------------------------------------------------
# literals and dialects
# ---------------------------------------------------------------------------------------------------------
def literal(x: float) -> str:
    """``x`` as a SQL DOUBLE literal that reads back to the same double (``0.1E0``, ``(-2.5E-05)``).

    Raises
    ------
    SqlUnsupported
        ``x`` is NaN or infinite (no portable literal).
    """
    x = float(x)
    if not math.isfinite(x):
        raise SqlUnsupported(f"the value {x!r} has no portable SQL literal.")
    text = repr(x).upper()
    if "E" not in text:
        text += "E0"
    return f"({text})" if text.startswith("-") else text


@dataclass(frozen=True)
class SqlWriter:
    """Writes SQL pieces in one dialect; what a :class:`ClosedForm` builds its expression with.

    Attributes
    ----------
    dialect : {"duckdb", "spark", "ansi"}
    score : str
        SQL of the score (a quoted column name, possibly qualified).
    features : mapping
        Model feature name -> SQL of that column (quoted), or None for a column
        that is absent (coded "unseen" as ``predict`` codes it).
    """

    dialect: str
    score: str
    features: Mapping[str, str | None] = field(default_factory=dict)

    num = staticmethod(literal)

    def ident(self, name: str) -> str:
        """A column name, quoted."""
        return quote(name, self.dialect)

    def string(self, text: str) -> str:
        """A string literal."""
        return "'" + text.replace("'", "''") + "'"

    def feature(self, name: str) -> str | None:
        """SQL of feature ``name`` (None: the column is absent)."""
        if name in self.features:
            return self.features[name]
        return self.ident(name)

    def double(self) -> str:
        return "DOUBLE PRECISION" if self.dialect == "ansi" else "DOUBLE"

    def log1p(self, x: str) -> str:
        """``log1p(x)``: Spark's own; elsewhere Goldberg's ``ln(u) * x / (u - 1)``, ``u = 1 + x``."""
        if self.dialect == "spark":
            return f"LOG1P({x})"
        u = f"(1.0E0 + {x})"
        return f"(CASE WHEN {u} = 1.0E0 THEN {x} ELSE LN({u}) * {x} / ({u} - 1.0E0) END)"

    def logit(self, x: str) -> str:
        """``ln(x) - log1p(-x)``, as ``calibdash.calibrators.platt.logit`` computes it (after its clip)."""
        return f"(LN({x}) - {self.log1p('-' + x)})"

    def sigmoid(self, x: str) -> str:
        """``1 / (1 + exp(-x))``, as ``scipy.special.expit`` computes it."""
        return f"(1.0E0 / (1.0E0 + EXP(-({x}))))"

    def clip(self, x: str, lo: float | str = 0.0, hi: float | str = 1.0) -> str:
        """``x`` clipped to [lo, hi] (``np.clip``; the caller handles NULLs); a bound is a number or SQL."""
        lo, hi = (b if isinstance(b, str) else literal(b) for b in (lo, hi))
        return f"LEAST(GREATEST({x}, {lo}), {hi})"

    def isnan(self, x: str) -> str:
        """Whether ``x`` is NaN (ANSI SQL has no NaN: always false there)."""
        if self.dialect == "ansi":
            return "FALSE"
        return f"ISNAN(CAST({x} AS {self.double()}))"


def quote(name: str, dialect: str) -> str:
    """A column name quoted for ``dialect``."""
    if dialect == "spark":
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


def _check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise SettingsError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}.")
    return dialect


# ---------------------------------------------------------------------------------------------------------
# the forms
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClosedForm:
    """A map written as one formula: ``build(writer) -> SQL`` (NULL scores are handled by the caller)."""

    build: Callable[[SqlWriter], str]


@dataclass(frozen=True)
class StepMap:
    """``levels[k]`` on ``cuts[k-1] <= s < cuts[k]`` (:func:`~calibdash.calibrators._steps.step_lookup`),
    except at the scores ``point_x``, which take ``point_value`` (the first of repeated points)."""

    cuts: Sequence[float]
    levels: Sequence[float]
    point_x: Sequence[float] = ()
    point_value: Sequence[float] = ()

    def evaluate(self, s) -> np.ndarray:
        """The map in numpy, as ``predict`` computes it (before its clip)."""
        cuts, levels = np.asarray(self.cuts, float), np.asarray(self.levels, float)
        s = np.asarray(s, dtype=float)
        p = levels[np.searchsorted(cuts, s, side="right")]
        px = np.asarray(self.point_x, float)
        if px.size:
            i = np.minimum(np.searchsorted(px, s), px.size - 1)
            hit = px[i] == s
            p = np.where(hit, np.asarray(self.point_value, float)[i], p)
        return p

    def pieces(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, values)``: the map, clipped to [0, 1], is ``values[0]`` below ``starts[0]`` and
        ``values[k + 1]`` on ``starts[k] <= s < starts[k + 1]``; no two neighbours have the same value.

        The starts are the cuts and, for each point ``x``, ``x`` and the next double after it; each
        piece's value is the map at its start, since the map is constant from one start to the next.
        """
        cuts = np.asarray(self.cuts, dtype=float)
        levels = np.asarray(self.levels, dtype=float)
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
        """The intervals ``lo[j] <= s < lo[j + 1]`` (the last up to ``x[-1]``) as columns: ``lo``, the
        width ``dx``, the values ``y0`` and ``y1`` at the two ends, their difference ``dy`` and the
        bounds ``ymin``/``ymax`` that the value is kept between; all finite. Zero-width intervals
        (repeated knots) are dropped, as the binary search skips them."""
        x, y = np.asarray(self.x, dtype=float), np.asarray(self.y, dtype=float)
        if x.size < 2:
            keep = np.zeros(0, dtype=bool)
        else:
            keep = x[:-1] < x[1:]
        j = np.flatnonzero(keep)
        y0, y1 = y[j], y[j + 1]
        return {"lo": x[j], "dx": x[j + 1] - x[j], "y0": y0, "dy": y1 - y0, "y1": y1,
                "ymin": np.minimum(y0, y1), "ymax": np.maximum(y0, y1)}

    def end(self, side: str, s: str, w: SqlWriter) -> str:
        """SQL of the map beyond the first (``side="left"``) or last knot."""
        x, y = np.asarray(self.x, dtype=float), np.asarray(self.y, dtype=float)
        mode = self.left if side == "left" else self.right
        if mode not in ("hold", "extend"):
            raise SqlUnsupported(f"a linear map's ends are 'hold' or 'extend', got {mode!r}.")
        k, k2 = (0, 1) if side == "left" else (-1, -2)
        if mode == "hold" or x.size == 1:
            return literal(y[k])
        dx = x[1] - x[0] if side == "left" else x[-1] - x[-2]
        dy = y[1] - y[0] if side == "left" else y[-1] - y[-2]
        if dx == 0:
            raise SqlUnsupported("a linear map extended beyond repeated end knots has no finite slope.")
        # evaluate_linear: y[k] + (s - x[k]) * dy / dx, left to right
        return f"({literal(y[k])} + ({s} - {literal(x[k])}) * {literal(dy)} / {literal(dx)})"


# ---------------------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------------------
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

    def cte(self, dialect: str) -> str:
        """``name AS (SELECT * FROM (VALUES ...) AS v(columns))``."""
        rows = ",\n    ".join("(" + ", ".join(str(v) if isinstance(v, int) else literal(v) for v in row) + ")"
                               for row in self.rows)
        cols = ", ".join(self.columns)
        return f"{self.name} AS (SELECT * FROM (VALUES\n    {rows}\n  ) AS v({cols}))"


@dataclass(frozen=True)
class SqlMap:
    """A calibrator as SQL.

    Attributes
    ----------
    expression : str
        Scalar SQL of the calibrated probability over the score column (and,
        with :attr:`lookups`, over the lookup tables' columns, which
        :meth:`select` joins); NULL where the score is NULL.
    lookups : dict
        Lookup table name -> :class:`Lookup` (empty for CASE and closed forms).
    method, dialect, score_column : str
        The calibrator's registry name, the dialect, the score column.
    form : {"closed", "case", "bisect", "lookup"}
        How the map is written.
    """

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
            A query (``SELECT ...``, ``WITH ...``; DuckDB's ``FROM ...``) or a
            table reference (``my_table``, ``read_parquet('x/*.parquet')``).
        keep_columns : sequence of str, optional
            Source columns to keep, in order (default: all, ``src.*``; then
            a source column named ``calibrated`` would appear twice: pass
            the columns without it).
        inline_lookups : bool, default True
            Write the lookup tables into the statement (``WITH name AS
            (VALUES ...)``); False leaves them out, for a caller that has
            made tables of those names (e.g. from :meth:`Lookup.arrow`:
            large maps then cost no SQL parsing).
        """
        src = source_sql.strip().rstrip(";")
        if src.split(None, 1)[0].upper() in ("SELECT", "WITH", "FROM", "VALUES"):
            src = f"(\n{src}\n)"
        score = "src." + quote(self.score_column, self.dialect)
        cols = "src.*" if keep_columns is None else ", ".join("src." + quote(c, self.dialect) for c in keep_columns)
        lines = []
        if self.lookups and inline_lookups:
            lines.append("WITH " + ",\n".join(lk.cte(self.dialect) for lk in self.lookups.values()))
        sep = ", " if cols else ""
        lines.append(f"SELECT {cols}{sep}{self._render(score)} AS calibrated")
        lines.append(f"FROM {src} AS src")
        lines += [j.format(score=score) for j in self._joins]
        return "\n".join(lines)

    def standalone(self, source: str = "scores") -> str:
        """One self-contained SQL statement (lookups as ``WITH ... VALUES``) that adds ``calibrated`` to
        every row of the table ``source`` (rename it to yours), with a comment saying what it is."""
        rows = source if source.strip().isidentifier() else "the source query"
        head = (f"-- calibdash: {self.method} calibrator as {self.dialect} SQL ({self.form} form).\n"
                f"-- Adds the column calibrated to every row of {rows}; score column "
                f"{quote(self.score_column, self.dialect)} in [0, 1] (NULL gives NULL).\n")
        return head + self.select(source) + ";\n"


# ---------------------------------------------------------------------------------------------------------
# rendering the forms
# ---------------------------------------------------------------------------------------------------------
def _bucket_sql(s: str, g: int) -> str:
    """The bucket of score ``s``: ``floor(s * g)`` clipped to [0, g] (``g`` a power of 2: the product is exact)."""
    return f"LEAST(GREATEST(CAST(FLOOR({s} * {literal(float(g))}) AS BIGINT), 0), {g})"


def _bucketed(name: str, lo: np.ndarray, hi: np.ndarray, columns: dict) -> tuple["Lookup", tuple]:
    """A lookup table of the pieces ``[lo[k], hi[k])`` and the join that finds a score's piece.

    A plain range join (``s >= lo AND s < hi``) is a nested loop in most engines. Instead the
    scores' range is cut into ``g`` buckets ``floor(s * g)`` (``g`` a power of 2, at least twice the
    pieces, so the product is exact and the bucket of a double is computed alike in Python and SQL),
    and each piece is listed once per bucket it meets: the join is an equi-join on the bucket (a hash
    join) whose range condition then keeps the one piece that holds the score. Since ``floor(s * g)``
    is non-decreasing in ``s``, the buckets a piece meets are those from the bucket of ``lo`` to the
    bucket of the largest double below ``hi``.
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
    join = (f"LEFT JOIN {name} ON {name}.cd_b = {_bucket_sql('{score}', g)} "
            f"AND {{score}} >= {name}.cd_lo AND {{score}} < {name}.cd_hi")
    return Lookup(name, tuple(cols), rows), (join,)


def _pick_form(form: str, pieces: int, max_case: int = CASE_MAX_STEPS) -> str:
    """The form for a map of ``pieces`` pieces: "auto" is CASE or lookup, "scalar" CASE or bisect."""
    if form == "auto":
        return "case" if pieces <= max_case else "lookup"
    if form == "scalar":
        return "case" if pieces <= max_case else "bisect"
    return form


def _null_guard(score: str, body: str) -> str:
    return f"CASE WHEN {score} IS NULL THEN NULL ELSE {body} END"


def _step_sql(step: StepMap, w: SqlWriter, form: str, method: str, score_column: str,
              max_case: int = CASE_MAX_STEPS) -> SqlMap:
    starts, values = step.pieces()
    form = _pick_form(form, values.size, max_case)
    num = literal
    if form == "bisect" and starts.size:
        def part(a: int, b: int, s: str) -> str:          # values[a..b]: values[i] on starts[i-1] <= s < starts[i]
            if a == b:
                return num(values[a])
            mid = (a + b + 1) // 2
            return f"CASE WHEN {s} < {num(starts[mid - 1])} THEN {part(a, mid - 1, s)} ELSE {part(mid, b, s)} END"
        return SqlMap(method, w.dialect, score_column, "bisect",
                      lambda s: f"CASE WHEN {s} IS NULL THEN NULL ELSE {part(0, values.size - 1, s)} END")
    if form == "case" or starts.size == 0:
        def render(s: str) -> str:
            if starts.size == 0:
                return f"CASE WHEN {s} IS NULL THEN NULL ELSE {num(values[0])} END"
            arms = " ".join(f"WHEN {s} < {num(c)} THEN {num(v)}" for c, v in zip(starts, values[:-1]))
            return f"CASE WHEN {s} IS NULL THEN NULL {arms} ELSE {num(values[-1])} END"
        return SqlMap(method, w.dialect, score_column, "case", render)
    name = "cd_steps"
    lookup, joins = _bucketed(name, starts, np.r_[starts[1:], np.inf], {"cd_value": values[1:]})

    def render_lookup(s: str) -> str:
        return (f"CASE WHEN {s} IS NULL THEN NULL WHEN {s} < {num(starts[0])} THEN {num(values[0])} "
                f"ELSE {name}.cd_value END")
    return SqlMap(method, w.dialect, score_column, "lookup", render_lookup, {name: lookup}, joins)


def _linear_sql(lin: LinearMap, w: SqlWriter, form: str, method: str, score_column: str,
                max_case: int = CASE_MAX_STEPS) -> SqlMap:
    x = np.asarray(lin.x, dtype=float)
    y = np.asarray(lin.y, dtype=float)
    if x.size == 0 or x.size != y.size:
        raise SqlUnsupported(f"a linear map needs as many values as knots (at least one); got {x.size}, {y.size}.")
    num = literal
    iv = lin.intervals()
    los = iv["lo"]
    form = _pick_form(form, los.size, max_case)
    if los.size == 0 and x.size > 1 and "extend" in (lin.left, lin.right):
        raise SqlUnsupported("a linear map extended beyond knots that all coincide has no finite slope.")

    def piece(s: str, col) -> str:
        """Interval values ``col(name)`` -> SQL of interp's formula on that interval."""
        pos = f"(({s} - {col('lo')}) / {col('dx')})"
        inside = w.clip(f"{col('y0')} + {pos} * {col('dy')}", col("ymin"), col("ymax"))
        return f"CASE WHEN {pos} >= {num(1.0)} THEN {col('y1')} ELSE {inside} END"

    def literals(j: int):
        return lambda name: num(iv[name][j])

    def ends(s: str) -> str:
        return (f"WHEN {s} < {num(x[0])} THEN {lin.end('left', s, w)} WHEN {s} = {num(x[-1])} THEN {num(y[-1])} "
                f"WHEN {s} > {num(x[-1])} THEN {lin.end('right', s, w)}")

    if form == "bisect" and los.size:
        def part(a: int, b: int, s: str) -> str:          # intervals a..b, interval j on los[j] <= s < los[j + 1]
            if a == b:
                return piece(s, literals(a))
            mid = (a + b + 1) // 2
            return f"CASE WHEN {s} < {num(los[mid])} THEN {part(a, mid - 1, s)} ELSE {part(mid, b, s)} END"

        def render_bisect(s: str) -> str:
            body = f"CASE {ends(s)} ELSE {part(0, los.size - 1, s)} END"
            return f"CASE WHEN {s} IS NULL THEN NULL ELSE {w.clip(body)} END"
        return SqlMap(method, w.dialect, score_column, "bisect", render_bisect)

    if form in ("case", "bisect") or los.size == 0:
        def render(s: str) -> str:
            if x.size == 1 or los.size == 0:
                return _null_guard(s, num(y[-1]) if x.size == 1 else f"CASE {ends(s)} ELSE {num(y[-1])} END")
            bounds = np.r_[los[1:], x[-1]]
            arms = [f"WHEN {s} < {num(bounds[j])} THEN {piece(s, literals(j))}" for j in range(los.size - 1)]
            last = piece(s, literals(los.size - 1))
            body = f"CASE {ends(s)} {' '.join(arms)} ELSE {last} END"
            return f"CASE WHEN {s} IS NULL THEN NULL ELSE {w.clip(body)} END"
        return SqlMap(method, w.dialect, score_column, "case", render)

    name = "cd_knots"
    columns = {f"cd_{k}": v for k, v in iv.items() if k != "lo"}
    lookup, joins = _bucketed(name, los, np.r_[los[1:], x[-1]], columns)

    def render_lookup(s: str) -> str:
        body = f"CASE {ends(s)} ELSE {piece(s, lambda k: f'{name}.cd_{k}')} END"
        return f"CASE WHEN {s} IS NULL THEN NULL ELSE {w.clip(body)} END"
    return SqlMap(method, w.dialect, score_column, "lookup", render_lookup, {name: lookup}, joins)


def _closed_sql(closed: ClosedForm, w: SqlWriter, method: str, score_column: str) -> SqlMap:
    features = dict(w.features)

    def render(s: str) -> str:
        body = closed.build(SqlWriter(w.dialect, s, features))
        return _null_guard(s, body)
    render(quote(score_column, w.dialect))          # fail now, not when the SQL is first asked for
    return SqlMap(method, w.dialect, score_column, "closed", render)


# ---------------------------------------------------------------------------------------------------------
# a method's form: its own sql_map, or a converter registered for a class that has none
# ---------------------------------------------------------------------------------------------------------
Converter = Callable[[dict, dict], "ClosedForm | StepMap | LinearMap"]
_CONVERTERS: dict[str, Converter] = {}


def register_sql(name: str, converter: Converter) -> None:
    """Say how the calibrator registered as ``name`` is written as SQL, from outside its class.

    A calibrator says this itself with its ``sql_map`` method
    (:meth:`calibdash.calibrators.base.Calibrator.sql_map`); this hook is for a
    class one cannot edit. A registered converter is asked before the class.

    Parameters
    ----------
    name : str
        The calibrator's registry name (``Calibrator.name``).
    converter : callable
        ``converter(state, params)`` -> :class:`ClosedForm`, :class:`StepMap`
        or :class:`LinearMap`, where ``state`` is the calibrator's
        ``_export_state()`` (what the model file holds) and ``params`` its
        ``get_params()``. It raises :class:`SqlUnsupported` for a state it
        cannot write. Registering a name again replaces its converter.
    """
    if not callable(converter):
        raise SettingsError(f"the SQL converter of {name!r} must be callable.")
    _CONVERTERS[name] = converter


def sql_methods() -> list[str]:
    """Registry names whose class declares its SQL form (defines its own ``sql_map``), then names with a
    registered converter. :func:`to_sql` still raises :class:`SqlUnsupported` where a fitted state has
    no form: ``sql_map`` returned None (a class that has no SQL form says so that way) or the state
    cannot be held (MBCT categories of mixed types)."""
    from . import calibrators
    from .calibrators.base import Calibrator
    names = [n for n, cls in calibrators.classes().items() if cls.sql_map is not Calibrator.sql_map]
    return names + [n for n in _CONVERTERS if n not in names]


def _form(cal) -> "ClosedForm | StepMap | LinearMap | None":
    """The fitted calibrator's form: a registered converter's, else its own ``sql_map``'s."""
    method = type(cal).name
    if method in _CONVERTERS:
        state = json.loads(json.dumps(cal._export_state()))      # exactly what a model file holds
        return _CONVERTERS[method](state, cal.get_params())
    return cal.sql_map()


# ---------------------------------------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------------------------------------
def _calibrator(model):
    """The fitted calibrator in ``model``: a Calibrator, an ExportedModel, a model file's path or text."""
    from . import export
    from .calibrators.base import Calibrator
    if isinstance(model, Calibrator):
        model._check_fitted()
        return model
    if isinstance(model, export.ExportedModel):
        return model.calibrator
    if isinstance(model, (bytes, bytearray)) or (isinstance(model, str) and model.lstrip().startswith("{")):
        return export.read_model(model).calibrator
    if isinstance(model, (str, Path)):
        try:
            text = Path(model).read_bytes()
        except OSError as exc:
            from .errors import EnvironmentProblem
            raise EnvironmentProblem(f"cannot read the model file {model}: {exc.strerror or exc}.") from None
        return export.read_model(text).calibrator
    raise DataError(f"to_sql takes a fitted calibrator, an exported model or a model file, "
                    f"not {type(model).__name__}.")


def to_sql(calibrator_or_model, score_column: str = "score", dialect: str = "duckdb",
           feature_columns: Mapping[str, str | None] | None = None, form: str = "auto",
           max_case: int = CASE_MAX_STEPS) -> SqlMap:
    """The calibrator as SQL over the column ``score_column``.

    Parameters
    ----------
    calibrator_or_model : Calibrator, ExportedModel, path or str
        A fitted calibrator, a loaded model (:func:`calibdash.export.read_model`),
        or a model file's path or JSON text.
    score_column : str, default "score"
        Column holding the scores, in [0, 1] (already mapped by the logistic
        function if the model was fitted on margins: see ``fitted_on``).
    dialect : {"duckdb", "spark", "ansi"}, default "duckdb"
    feature_columns : mapping, optional
        Feature-aware methods (MBCT): the model's feature name -> the SQL
        column holding it (default: the same name); None for a feature that
        is absent (coded unseen on every row, as ``predict`` without it).
    form : {"auto", "scalar", "case", "bisect", "lookup"}, default "auto"
        For step and linear maps: one flat CASE up to :data:`CASE_MAX_STEPS`
        pieces, above it a lookup table ("auto") or a binary search written
        as nested CASEs ("scalar"); or the form asked for. The lookup form's
        join need not keep the rows' order; the other forms do. Scores must
        lie in [0, 1] or be NULL (a NaN cannot be bucketed).
    max_case : int, default :data:`CASE_MAX_STEPS`
        Most pieces written as one flat CASE by "auto" and "scalar".

    Returns
    -------
    SqlMap

    Raises
    ------
    SqlUnsupported
        The method has no SQL form, or this fitted state cannot be written.
    SettingsError
        Unknown dialect or form.
    """
    _check_dialect(dialect)
    if form not in FORMS:
        raise SettingsError(f"form must be one of {', '.join(FORMS)}; got {form!r}.")
    cal = _calibrator(calibrator_or_model)
    method = type(cal).name
    shape = _form(cal)
    if shape is None:
        raise SqlUnsupported(f"{method} cannot be written as SQL (its class declares no SQL form; the methods "
                             f"that can: {', '.join(sql_methods())}); apply it with predict instead.")
    feats = {k: (None if v is None else quote(v, dialect)) for k, v in dict(feature_columns or {}).items()}
    writer = SqlWriter(dialect, quote(score_column, dialect), feats)
    if isinstance(shape, StepMap):
        return _step_sql(shape, writer, form, method, score_column, max_case)
    if isinstance(shape, LinearMap):
        return _linear_sql(shape, writer, form, method, score_column, max_case)
    if isinstance(shape, ClosedForm):
        return _closed_sql(shape, writer, method, score_column)
    raise SqlUnsupported(f"the SQL form of {method} is a {type(shape).__name__}, not a form of calibdash.sql.")
