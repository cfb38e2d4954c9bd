"""The limits a table must respect: its size in bytes, its shape, and its number of usable rows.

A file small on disk can unpack into far more work (a Parquet file of constant columns, a ``.csv.gz`` of one
repeated line, a header of a million commas), so the shape is bounded as well as the bytes, and checked before
the rows are read: from a Parquet file's metadata, a CSV's header and its line breaks (counted while a gzip inflates).
"""
from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_BYTES", "MAX_COLUMNS", "MAX_CELLS", "MAX_HEADER_BYTES", "MAX_UNPACKED_BYTES",
    "MAX_METADATA_ITEMS", "MAX_CLASSES", "MAX_GROUP_VALUES", "MIN_ROWS", "limit_name", "megabytes"
]

#: Largest file accepted, as ``server.maxUploadSize = 200`` (MB) in .streamlit/config.toml; a gzip's
#: decompressed content too.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Most columns a table may have: each is guessed a role, offered in the Data page's choices and carried along
#: as a feature. Checked from a CSV's header, or a Parquet file's schema, before the data is read.
MAX_COLUMNS = 2_000
#: Most cells (rows x columns): a CSV of the upload limit at four bytes a cell (``0.1,``), twice the upload
#: limit of 8-byte numbers once read (10 million rows of five columns). Checked before reading: a Parquet
#: file's metadata, a CSV's header columns times its line breaks.
MAX_CELLS = 2 * DEFAULT_MAX_BYTES // 8
#: Longest CSV header (its first record, blank lines before it included) looked for, in bytes: ample for
#: :data:`MAX_COLUMNS` names of 500 bytes. A gzip is inflated only this far before its header is checked.
MAX_HEADER_BYTES = 1024 * 1024
#: Most bytes a Parquet file's columns may take once decoded, counted from its metadata: 8 bytes a row for
#: numbers, dates and booleans (as pandas holds them, whatever the encoding), 8 a row plus the characters
#: for text. Twice the upload limit, as :data:`MAX_CELLS`.
MAX_UNPACKED_BYTES = 2 * DEFAULT_MAX_BYTES
#: Most entries in any one list of a Parquet file's metadata (columns, row groups): the footer is parsed only
#: this far, so a file of a million columns is refused at once.
MAX_METADATA_ITEMS = 100 * MAX_COLUMNS
#: Most classes a K-class table may have (class columns, or distinct label values), checked before any work
#: per class. ImageNet's 1,000 classes fit.
MAX_CLASSES = 1_000
#: Most distinct values a text column may have to be a group on Groups & time, checked in one pass before
#: any work per group (columns of numbers are cut into quantile groups instead).
MAX_GROUP_VALUES = 10_000
#: Fewest usable rows a score set may have.
MIN_ROWS = 20


def limit_name(name: str) -> str:
    """How a message names limit ``name`` for an operator: ``"(MAX_CLASSES in calibdash.core.limits)"``."""
    return f"({name} in calibdash.core.limits)"


def megabytes(n: int) -> str:
    """``n`` bytes as ``"12.3 MB"``, for messages."""
    return f"{n / (1024 * 1024):.1f} MB"
