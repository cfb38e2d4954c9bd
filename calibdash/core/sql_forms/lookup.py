"""The result of :func:`calibdash.io.sql.to_sql`: a :class:`SqlMap` and its :class:`Lookup` tables, joined by
bucket (a hash join) rather than by range."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .writer import literal, quote

__all__ = []


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


def _bucket_sql(s: str, g: int) -> str:
    """The bucket of score ``s``: ``floor(s * g)`` clipped to [0, g] (``g`` a power of 2: the product is exact)."""
    return f"LEAST(GREATEST(CAST(FLOOR({s} * {literal(float(g))}) AS BIGINT), 0), {g})"


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
    join = (f"LEFT JOIN {name} ON {name}.cd_b = {_bucket_sql('{score}', g)} "
            f"AND {{score}} >= {name}.cd_lo AND {{score}} < {name}.cd_hi")
    return Lookup(name, tuple(cols), rows), (join,)
