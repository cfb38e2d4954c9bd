"""Text columns held as categories: one small code per row instead of one string per row.

A text column of an upload usually repeats a few values (a segment, a country, a date written as text):
held as strings, a 10^7-row column of ten-character dates takes about 180 MB (an 8-byte offset and the
characters per row); held as a ``pandas.Categorical`` it takes 10 MB (a 1-byte code per row and the 90
distinct values once). :func:`read_table <calibdash.data.read_table>` keeps every text column whose distinct
values are at most :data:`MAX_SHARE` of its rows as categories; a column of mostly distinct values (ids,
free text) stays as strings, where categories would save little and slow every operation on it.

What a column holds is unchanged: the same values and missing entries, read as text by every role
(``pandas.api.types.is_string_dtype`` is true of categories of text). The categories are sorted, so
grouping by the column lists its values in the same order as grouping the strings would, and the same rows in
another order give the same column type and categories. A Parquet column is read straight into categories
(``read_dictionary``: its pages are already dictionary-encoded), never into one string per row first.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

#: Largest share of distinct values among a text column's non-missing entries for it to be held as categories.
MAX_SHARE = 0.5


def keep_as_categories(n_distinct: int, n_present: int) -> bool:
    """Whether a text column of ``n_present`` non-missing entries, ``n_distinct`` of them distinct, is held as
    categories (at most :data:`MAX_SHARE` of its entries distinct, and more than one entry)."""
    return n_present > 1 and n_distinct <= MAX_SHARE * n_present


def _sorted_categories(s: pd.Series) -> pd.Series:
    """``s`` (categorical) with its categories sorted: its codes renumbered by one lookup (pandas'
    ``reorder_categories`` took twice as long on 10^7 rows)."""
    cats = s.cat.categories
    if cats.is_monotonic_increasing:
        return s
    order = np.argsort(cats.to_numpy(), kind="stable")
    new_code = np.empty(len(cats) + 1, dtype=s.cat.codes.dtype)
    new_code[order] = np.arange(len(cats), dtype=new_code.dtype)
    new_code[-1] = -1                                # a missing entry (code -1) stays missing
    codes = new_code[s.cat.codes.to_numpy()]
    cat = pd.Categorical.from_codes(codes, categories=cats[order], validate=False)
    return pd.Series(cat, index=s.index, name=s.name)


def compact_text(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each text column of few distinct values (:func:`keep_as_categories`) as sorted categories;
    other columns as they are (the frame is changed in place and returned)."""
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_string_dtype(s.dtype):
            continue
        if s.dtype == object and not s.map(type, na_action="ignore").eq(str).all():
            continue                               # mixed objects (not plain text): left alone
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        if keep_as_categories(len(uniques), int((codes >= 0).sum())):
            cat = pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=str), validate=False)
            df[c] = _sorted_categories(pd.Series(cat, index=df.index, name=c))
    return df


def pa_buffer(data: bytes):
    """Bytes as an Arrow file that reads them in place (``io.BytesIO`` made pyarrow copy what it read)."""
    import pyarrow as pa

    return pa.BufferReader(data)


def parquet_to_frame(source, columns=None) -> pd.DataFrame:
    """A Parquet file (path, file-like or :func:`pa_buffer`) as a DataFrame, its text columns read as
    dictionaries and kept as sorted categories where :func:`keep_as_categories` says so (else decoded to
    strings); DATE columns as datetime64 (8 bytes a row), not one Python ``date`` object per row (about 56)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(source).schema_arrow
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if hasattr(source, "seek"):
        source.seek(0)
    table = pq.ParquetFile(source, read_dictionary=text or None).read(columns=columns, use_pandas_metadata=True)
    # one block per column and each Arrow column freed once converted: numbers without missing values are
    # taken over without a copy, so the reading never holds the table twice; the row groups' dictionaries
    # are unified by the conversion
    df = table.to_pandas(date_as_object=False, split_blocks=True, self_destruct=True)
    del table
    for c in df.columns:
        s = df[c]
        if not isinstance(s.dtype, pd.CategoricalDtype) or c not in text:
            continue
        if keep_as_categories(len(s.cat.categories), int(s.notna().sum())):
            df[c] = _sorted_categories(s)
        else:                                      # mostly distinct values: strings, as pandas reads them
            df[c] = s.astype(s.cat.categories.dtype)
    return df
