"""The limits a table must respect: its size in bytes, its shape, and its number of usable rows.

A file small on disk can unpack into far more work than its size says: a
Parquet file of constant columns compresses a billion rows into kilobytes,
a ``.csv.gz`` of one repeated line inflates a thousandfold, and a header
line names as many columns as it has commas. So the shape is bounded as well
as the bytes, and checked before the rows are read: the columns and rows
of a Parquet file from its metadata, a CSV's columns from its header and
its rows from its line breaks (counted while a gzip inflates).
"""
from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_BYTES", "MAX_COLUMNS", "MAX_CELLS", "MAX_HEADER_BYTES", "MAX_UNPACKED_BYTES",
    "MAX_METADATA_ITEMS", "MAX_CLASSES", "MAX_GROUP_VALUES", "MIN_ROWS", "limit_name", "megabytes"
]

#: Largest file accepted, as ``server.maxUploadSize = 200`` (MB) in .streamlit/config.toml; a gzip's
#: decompressed content is held to it too.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Most columns a table may have. Every column is guessed a role, offered in the Data page's column
#: choices and, as a feature, carried along with the usable rows: a score, a label and the features a
#: calibrator may use fit in far fewer. A CSV header is checked before the rows are parsed, a Parquet
#: file's schema before its data is read.
MAX_COLUMNS = 2_000
#: Most cells (rows x columns) a table may have: as many as a CSV of the upload limit holds at four
#: bytes a cell (``0.1,``), which is also twice the upload limit (400 MB) of 8-byte numbers once read.
#: 10 million rows of five columns fit. Checked before reading: from a Parquet file's metadata, and for
#: a CSV from its header's columns times its line breaks (a row short of fields is still read as a row
#: of every column).
MAX_CELLS = 2 * DEFAULT_MAX_BYTES // 8
#: Longest CSV header (its first record, with any blank lines before it) looked for, in bytes: ample for
#: :data:`MAX_COLUMNS` names of 500 bytes. A gzip is inflated only this far before its header is checked.
MAX_HEADER_BYTES = 1024 * 1024
#: Most bytes a Parquet file's columns may take once decoded, counted from its metadata before any data is
#: read: 8 bytes a row for a column of numbers, dates or booleans (as pandas holds it, whatever its
#: encoding: a dictionary-encoded column of a few distinct values is kilobytes on disk and 8 bytes a row in
#: memory), and for text 8 bytes a row plus its characters (the column chunks' uncompressed size). Twice
#: the upload limit, as :data:`MAX_CELLS`. A Parquet file of the upload limit whose data does not compress
#: (random float64 scores) stays well under it.
MAX_UNPACKED_BYTES = 2 * DEFAULT_MAX_BYTES
#: Most entries in any one list of a Parquet file's metadata (its columns, its row groups): the footer is
#: parsed only this far, so a file of a million columns is refused at once instead of after seconds of
#: parsing. Far above what :data:`MAX_COLUMNS` lets through, and than the row groups of any usual writer.
MAX_METADATA_ITEMS = 100 * MAX_COLUMNS
#: Most classes a K-class table may have: class columns, and distinct values of its label. Checked before
#: any work per class (a column of numbers read per class, a probability check per row and class, a
#: diagram per class): a file of thousands of ``logit_`` columns, or a label of ids with a million distinct
#: values, is refused at once. ImageNet's 1,000 classes fit.
MAX_CLASSES = 1_000
#: Most distinct values a text column may have to be a group on Groups & time, checked in one pass over
#: the rows before any work per group (pooling the small groups, naming them): a column of ids with a
#: million distinct values is refused at once instead of after a minute. Columns of numbers are cut into
#: quantile groups instead, whatever their distinct values.
MAX_GROUP_VALUES = 10_000
#: Fewest usable rows a score set may have.
MIN_ROWS = 20


def limit_name(name: str) -> str:
    """How a message names limit ``name`` of this module, so that an operator finds it: ``"(MAX_CLASSES in
    calibdash.core.limits)"``."""
    return f"({name} in calibdash.core.limits)"


def megabytes(n: int) -> str:
    """``n`` bytes as ``"12.3 MB"``, for messages."""
    return f"{n / (1024 * 1024):.1f} MB"
