"""CSV that a spreadsheet opens as data: text cells that would start a formula are written as text.

A spreadsheet reads a cell starting with ``=``, ``+``, ``-`` or ``@`` (in some, a tab or carriage return) as a
formula: a class name ``=HYPERLINK(...)`` from an uploaded file would run when the downloaded CSV is opened. Every
CSV calibdash writes goes through :func:`csv_text`, which prefixes such a text cell with a single quote, as OWASP
recommends ("CSV Injection"). Numeric columns, and text cells that are a plain decimal number (``-1``, ``+0.5``),
are left alone: a spreadsheet reads them as numbers.
"""
from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["csv_text"]

#: The first characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def cell(value: Any) -> Any:
    """``value`` with a single quote before it if it is text a spreadsheet would read as a formula;
    anything else (numbers, missing values, text that is a plain number) as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    if isinstance(value, tuple):
        return tuple(cell(v) for v in value)
    return value


def safe_frame(frame: pd.DataFrame | pd.Series) -> pd.DataFrame:
    """A copy of ``frame`` (a Series becomes a one-column frame) with every text cell, column name, index
    label and axis name passed through :func:`cell`; numeric columns untouched."""
    out = frame.to_frame() if isinstance(frame, pd.Series) else frame.copy(deep=False)   # columns replaced, not changed
    out = out.rename(index=cell, columns=cell)
    out.index.names = [cell(n) for n in out.index.names]
    out.columns.names = [cell(n) for n in out.columns.names]
    types = pd.api.types
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if not (types.is_numeric_dtype(col.dtype) or types.is_bool_dtype(col.dtype)
                or types.is_datetime64_any_dtype(col.dtype) or types.is_timedelta64_dtype(col.dtype)):
            out.isetitem(i, col.astype(object).map(cell))
    return out


def csv_text(frame: pd.DataFrame | pd.Series, **to_csv) -> str:
    """``frame.to_csv(**to_csv)`` (as text) of :func:`safe_frame`: the one way calibdash writes a CSV."""
    to_csv.pop("path_or_buf", None)
    return safe_frame(frame).to_csv(**to_csv)
