"""SQL pieces in one dialect: DOUBLE literals that read back to the same double, quoted names, and the
:class:`SqlWriter` a :class:`~calibdash.core.sql_forms.ClosedForm` builds its expression with."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import SettingsError

__all__ = ["check_dialect"]

DIALECTS = ("duckdb", "spark", "ansi")


class SqlUnsupported(SettingsError):
    """The calibrator's map cannot be written as SQL (apply it with ``predict``, e.g. as a UDF)."""


def literal(x: float) -> str:
    """``x`` as a SQL DOUBLE literal that reads back to the same double: Python's shortest ``repr`` with an
    exponent (``0.1E0``; a plain ``0.1`` is a DECIMAL in DuckDB and Spark), parenthesised when negative
    (``(-2.5E-05)``, never ``--``). :class:`SqlUnsupported` for NaN or infinity (no portable literal)."""
    x = float(x)
    if not math.isfinite(x):
        raise SqlUnsupported(f"the value {x!r} has no portable SQL literal.")
    text = repr(x).upper()
    if "E" not in text:
        text += "E0"
    return f"({text})" if text.startswith("-") else text


@dataclass(frozen=True)
class SqlWriter:
    """Writes SQL pieces in ``dialect`` ("duckdb", "spark", "ansi"): ``score`` is the score's SQL (a quoted column,
    possibly qualified), ``features`` maps a model feature's name to its column's SQL (None: the column is absent,
    coded "unseen" as ``predict`` codes it)."""

    dialect: str
    score: str
    features: Mapping[str, str | None] = field(default_factory=dict)

    num = staticmethod(literal)

    def string(self, text: str) -> str:
        """A string literal (:func:`string_literal`)."""
        return string_literal(text, self.dialect)

    def feature(self, name: str) -> str | None:
        """SQL of feature ``name`` (None: the column is absent)."""
        return self.features[name] if name in self.features else quote(name, self.dialect)

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
        return "FALSE" if self.dialect == "ansi" else f"ISNAN(CAST({x} AS DOUBLE))"


def string_literal(text: str, dialect: str) -> str:
    """``text`` as a string literal of ``dialect``, whatever it holds: a doubled quote in DuckDB and ANSI SQL;
    in Spark SQL, which reads a backslash as an escape, the backslash and the quote escaped with a backslash."""
    text = str(text)
    if dialect == "spark":
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + text.replace("'", "''") + "'"


def quote(name: str, dialect: str) -> str:
    """A column name quoted for ``dialect``: any text (newlines, quotes, ``--``, ``;`` included) becomes one
    identifier, the quote character doubled (a backtick in Spark SQL, a double quote elsewhere)."""
    if dialect == "spark":
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


def check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise SettingsError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}.")
    return dialect
