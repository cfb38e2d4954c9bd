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

__all__ = ["DEFAULT_MAX_BYTES", "MAX_COLUMNS", "MAX_CELLS", "MAX_HEADER_BYTES", "MAX_UNPACKED_BYTES",
           "MAX_METADATA_ITEMS", "MIN_ROWS"]

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
#: Most bytes a Parquet file's column data may take decompressed (the row groups' sizes in its metadata,
#: before decoding): twice the upload limit, as :data:`MAX_CELLS`. A Parquet file of the upload limit
#: whose data does not compress (random float64 scores) stays well under it.
MAX_UNPACKED_BYTES = 2 * DEFAULT_MAX_BYTES
#: Most entries in any one list of a Parquet file's metadata (its columns, its row groups): the footer is
#: parsed only this far, so a file of a million columns is refused at once instead of after seconds of
#: parsing. Far above what :data:`MAX_COLUMNS` lets through, and than the row groups of any usual writer.
MAX_METADATA_ITEMS = 100 * MAX_COLUMNS
#: Fewest usable rows a score set may have.
MIN_ROWS = 20


def megabytes(n: int) -> str:
    """``n`` bytes as ``"12.3 MB"``, for messages."""
    return f"{n / (1024 * 1024):.1f} MB"
