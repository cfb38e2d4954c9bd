"""What a file is, from its first bytes: Parquet, gzip or CSV; the CSV's delimiter; decimal commas.

The format is taken from the magic bytes when they say gzip (``1f 8b``) or
Parquet (``PAR1``), else from the file name. A CSV's delimiter (comma,
semicolon or tab) is sniffed from its first 64 KB; text columns of a
semicolon or tab file that hold decimal-comma numbers (``0,25``) are read
as numbers. The text encoding (UTF-8, UTF-16 with its byte-order mark,
Latin-1) is decided in :mod:`calibdash.data.read`.
"""
from __future__ import annotations

import csv
import re

import pandas as pd

from ..errors import DataError
from .roles import NUMERIC_SHARE

__all__ = ["sniff_format", "sniff_delimiter", "fix_decimal_commas", "DELIMITER_NAMES"]

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
ZIP_MAGIC = b"PK\x03\x04"
#: How many leading bytes (or characters) are looked at.
SNIFF_BYTES = 64 * 1024
_DELIMITERS = (",", ";", "\t")
#: Each delimiter's name, for messages.
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_DECIMAL_COMMA = re.compile(r"[-+]?(\d+,\d*|,\d+|\d+)([eE][-+]?\d+)?")


def sniff_format(data: bytes, name: str) -> str:
    """``"parquet"``, ``"csv.gz"`` or ``"csv"``: the magic bytes first, then the name.

    Raises
    ------
    DataError
        The name says Parquet or gzip but the bytes do not.
    """
    if data.startswith(PARQUET_MAGIC):
        return "parquet"
    if data.startswith(GZIP_MAGIC):
        return "csv.gz"
    lower = name.lower()
    if lower.endswith((".parquet", ".pq")):
        raise DataError(f"{name} is named like a Parquet file but does not start with the "
                        "Parquet signature 'PAR1'; is it a CSV? rename it to .csv.")
    if lower.endswith(".gz"):
        raise DataError(f"{name} is named .gz but is not gzip-compressed; rename it to .csv.")
    return "csv"


def _field_counts(lines: list[str], delim: str) -> list[int]:
    try:
        return [len(row) for row in csv.reader(lines, delimiter=delim) if row]
    except csv.Error:
        return []


def _consistent(counts: list[int]) -> bool:
    return bool(counts) and counts[0] > 1 and all(c == counts[0] for c in counts)


def sniff_delimiter(text: str) -> str:
    """Comma, semicolon or tab: csv.Sniffer, checked by a field-count heuristic.

    The sniffer's answer is kept when every sample line splits into the same
    number (>1) of fields with it. Otherwise the delimiter that gives a
    constant field count with the most fields wins (this resolves e.g.
    semicolon files with decimal commas); a one-column file gets ``","``.
    """
    sample = text[:SNIFF_BYTES]
    lines = sample.splitlines()
    if len(sample) == SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]              # the last line may be cut
    lines = [ln for ln in lines if ln.strip()][:50]
    try:
        sniffed = csv.Sniffer().sniff("\n".join(lines), delimiters="".join(_DELIMITERS)).delimiter
    except csv.Error:
        sniffed = None
    if sniffed in _DELIMITERS and _consistent(_field_counts(lines, sniffed)):
        return sniffed
    best, best_n = ",", 1
    for delim in _DELIMITERS:
        counts = _field_counts(lines, delim)
        if _consistent(counts) and counts[0] > best_n:
            best, best_n = delim, counts[0]
    if best_n == 1:                     # no constant split: most fields in the header
        header = lines[:1]
        best = max(_DELIMITERS, key=lambda d: ((_field_counts(header, d) or [0])[0], d == ","))
    return best


def fix_decimal_commas(df: pd.DataFrame) -> list[str]:
    """Convert text columns holding decimal-comma numbers (``0,25``) to floats, in place.

    A column is converted when some entry has a comma and every present,
    non-blank entry is such a number. When only most of them are (at least
    :data:`~calibdash.data.roles.NUMERIC_SHARE`), the numbers are converted
    and the other entries (``"abc"``) are kept as they are, so that
    :func:`~calibdash.data.build_score_set` can read them as missing and
    show them among the dropped rows.

    Returns
    -------
    list of str
        The converted columns.
    """
    fixed = []
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        present = s.notna()
        text = s.astype(str).str.strip().where(present)
        present &= text.ne("")
        vals = text[present]
        if vals.empty or not vals.str.contains(",", regex=False).any():
            continue
        match = vals.str.fullmatch(_DECIMAL_COMMA)
        if match.all():
            df[col] = pd.to_numeric(text.str.replace(",", ".", regex=False).where(present), errors="coerce")
        elif match.mean() >= NUMERIC_SHARE:
            numbers = pd.to_numeric(vals[match].str.replace(",", ".", regex=False))
            mixed = s.astype(object)
            mixed.loc[numbers.index] = numbers.to_numpy(dtype=float)
            df[col] = mixed
        else:
            continue
        fixed.append(str(col))
    return fixed
