"""Numbers in a column: whether it has a numeric dtype or is text, and the numbers its entries read as."""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["is_numeric", "is_text", "parse_numbers"]


def is_numeric(s: pd.Series) -> bool:
    """Whether ``s`` has a numeric dtype (booleans are not numbers here)."""
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def is_text(s: pd.Series) -> bool:
    return s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def parse_numbers(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The numbers in ``s`` and where an entry is present but not a number.

    Numeric columns are taken as they are. Text (and mixed object) columns are parsed (``pandas.to_numeric`` on
    the distinct values, spaces stripped); booleans, blanks and missing entries are not numbers.

    Returns
    -------
    values : ndarray of float
        NaN where the entry is missing or not a number.
    not_number : ndarray of bool
        The entry is present and not blank, yet not a number (``"abc"``); all False for a numeric column.
    """
    n = len(s)
    if is_numeric(s):
        # a float64 column's own array (no copy: ``na_value`` would make one); other numbers converted
        values = s.to_numpy() if s.dtype == np.float64 else s.to_numpy(dtype=float, na_value=np.nan)
        return values, np.zeros(n, dtype=bool)
    if not is_text(s):              # booleans, dates, categories: no numbers here
        return np.full(n, np.nan), np.asarray(s.notna(), dtype=bool)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    if s.dtype != object:            # a string dtype: every distinct value is a str
        text = pd.Series(np.asarray(uniques, dtype=object), dtype=object).str.strip()
        is_bool = np.zeros(len(text), dtype=bool)
        blank = (text == "").to_numpy(dtype=bool)
    else:                            # mixed objects: strings, numbers, booleans
        raw = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
        is_bool = raw.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
        text = raw.map(lambda v: v.strip() if isinstance(v, str) else v)
        blank = text.map(lambda v: isinstance(v, str) and v == "").to_numpy(dtype=bool)
    parsed = np.array(pd.to_numeric(text.where(~(is_bool | blank)), errors="coerce"), dtype=float)
    parsed[is_bool] = np.nan
    bad_unique = np.isnan(parsed) & ~blank
    present = codes >= 0
    values = np.full(n, np.nan)
    values[present] = parsed[codes[present]]
    not_number = np.zeros(n, dtype=bool)
    not_number[present] = bad_unique[codes[present]]
    return values, not_number
