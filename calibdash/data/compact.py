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

__all__ = ["MAX_SHARE", "keep_as_categories", "compact_text", "parquet_to_frame"]

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


def parquet_to_frame(source, columns=None) -> pd.DataFrame:
    """A Parquet file (path or file-like) as a DataFrame, its text columns read as dictionaries and kept as
    sorted categories where :func:`keep_as_categories` says so (else decoded to strings); DATE columns as
    datetime64 (8 bytes a row), not one Python ``date`` object per row (about 56)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(source).schema_arrow
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if hasattr(source, "seek"):
        source.seek(0)
    table = pq.ParquetFile(source, read_dictionary=text or None).read(columns=columns, use_pandas_metadata=True)
    if text:
        table = table.unify_dictionaries()        # one dictionary per column, over its row groups
    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type):
            continue
        col = table.column(i)
        n_distinct = len(col.chunk(0).dictionary) if col.num_chunks else 0
        if not keep_as_categories(n_distinct, len(col) - col.null_count):
            table = table.set_column(i, field.name, pc.cast(col, field.type.value_type))
    df = table.to_pandas(date_as_object=False, self_destruct=True)
    del table
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = _sorted_categories(df[c])
    return df
