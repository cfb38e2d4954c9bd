"""Text columns held as categories: one small code per row instead of one string per row.

A 10^7-row column of ten-character dates takes about 180 MB as strings, 10 MB as a ``pandas.Categorical``. Text
columns whose distinct values are at most :data:`MAX_SHARE` of their rows are kept as categories; mostly distinct
ones (ids, free text) stay strings. The values and missing entries are unchanged (``is_string_dtype`` is true of
categories of text); the categories are sorted, so grouping lists the values in the same order as for strings, and
the same rows in another order give the same column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

#: Largest share of distinct values among a text column's non-missing entries for it to be held as categories.
MAX_SHARE = 0.5


def keep_as_categories(n_distinct: int, n_present: int) -> bool:
    """Whether a text column of ``n_present`` non-missing entries, ``n_distinct`` of them distinct, is held as
    categories."""
    return n_present > 1 and n_distinct <= MAX_SHARE * n_present


def _sorted_categories(s: pd.Series) -> pd.Series:
    """``s`` (categorical) with its categories sorted, its codes renumbered by one lookup (twice as fast as
    ``reorder_categories``)."""
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
    """``df`` (changed in place) with each text column of few distinct values as sorted categories."""
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
    """A Parquet file (path, file-like or :func:`pa_buffer`) as a DataFrame: text columns read straight into
    dictionaries, kept as sorted categories where :func:`keep_as_categories` says so (else strings); DATE columns
    as datetime64 (8 bytes a row), not one Python ``date`` object per row (about 56)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(source).schema_arrow
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if hasattr(source, "seek"):
        source.seek(0)
    table = pq.ParquetFile(source, read_dictionary=text or None).read(columns=columns, use_pandas_metadata=True)
    # one block per column, each Arrow column freed once converted: the reading never holds the table twice
    df = table.to_pandas(date_as_object=False, split_blocks=True, self_destruct=True)
    del table
    for c in df.columns:
        s = df[c]
        if not isinstance(s.dtype, pd.CategoricalDtype) or c not in text:
            continue
        if keep_as_categories(len(s.cat.categories), int(s.notna().sum())):
            df[c] = _sorted_categories(s)
        else:
            df[c] = s.astype(s.cat.categories.dtype)
    return df
