"""What a file is, from its first bytes: Parquet, gzip or CSV (magic bytes, then the name); a CSV's delimiter,
its header (read from a bounded prefix, so that columns are counted before any row is parsed) and decimal commas.
"""
from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from ..core.errors import DataError
from .roles import NUMERIC_SHARE

__all__ = ["sniff_delimiter"]

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
ZIP_MAGIC = b"PK\x03\x04"
#: How many leading bytes (or characters) are looked at.
SNIFF_BYTES = 64 * 1024
#: How many characters of that sample csv.Sniffer reads: its quote-guessing regular expressions take time quadratic
#: in their input on text of many quotes (64 KB of ``+"a`` took 19 s; 8 KB at most 0.3 s).
SNIFFER_CHARS = 8 * 1024
_DELIMITERS = (",", ";", "\t")
#: Each delimiter's name, for messages.
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_LINE_END = re.compile(r"\r\n?|\n")            # what ends a line for pandas' CSV reader
_DECIMAL_COMMA = re.compile(r"[-+]?(\d+,\d*|,\d+|\d+)([eE][-+]?\d+)?")


def sniff_format(data: bytes, name: str) -> str:
    """``"parquet"``, ``"csv.gz"`` or ``"csv"``: the magic bytes first, then the name (DataError when the name says
    Parquet or gzip but the bytes do not)."""
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
    """Comma, semicolon or tab: csv.Sniffer (on the first :data:`SNIFFER_CHARS` characters), kept when every
    sample line splits into the same number (>1) of fields with it; else the delimiter giving a constant field
    count with the most fields (semicolon files with decimal commas), else the most fields in the header."""
    sample = text[:SNIFF_BYTES]
    lines = sample.splitlines()
    if len(sample) == SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]              # the last line may be cut
    lines = [ln for ln in lines if ln.strip()][:50]
    try:
        sniffed = csv.Sniffer().sniff("\n".join(lines)[:SNIFFER_CHARS], delimiters="".join(_DELIMITERS)).delimiter
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


@dataclass(frozen=True)
class Header:
    """A CSV text's first record: ``fields`` (unquoted; when not ``complete``, those read before the prefix ended),
    ``start`` (after blank lines) and ``end`` (after its line break), and whether it ended within the prefix."""

    fields: list[str]
    start: int
    end: int
    complete: bool


def read_header(text: str, delim: str, limit: int, *, more: bool = False) -> Header:
    """The first non-blank record of CSV ``text`` (quoted fields may hold delimiters and line breaks, as for
    pandas), reading at most its first ``limit`` characters. A record reaching the cut is complete only when the text
    ends there too (an open quote could hide more); ``more`` says ``text`` starts a longer text. A field over the
    csv module's limit (131,072 characters) raises ``csv.Error``."""
    head = text[:limit]
    cut = more or len(text) > len(head)
    consumed = 0

    def lines():                                # the lines of head with their endings, one slice each
        nonlocal consumed
        while consumed < len(head):
            end = _LINE_END.search(head, consumed)
            line = head[consumed:end.end() if end else len(head)]
            consumed += len(line)
            yield line

    start = 0
    for row in csv.reader(lines(), delimiter=delim, quotechar='"', doublequote=True, skipinitialspace=True):
        if not row or (len(row) == 1 and not row[0].strip()):
            start = consumed                    # a blank line
            continue
        return Header(fields=row, start=start, end=consumed, complete=not cut or consumed < len(head))
    return Header(fields=[], start=start, end=consumed, complete=not cut)


def unique_names(names, unnamed=()) -> list:
    """Column names made unique as pandas' CSV reader makes them, in linear time (pandas' takes ``n**2`` steps for
    ``n`` equal names): ``x, x, x`` -> ``x, x.1, x.2``, skipping names taken (``x, x, x.1`` -> ``x, x.2, x.1``); the
    positions in ``unnamed`` (empty header fields, ``Unnamed: i``) are numbered after the others."""
    names = list(names)
    if len(set(names)) == len(names):
        return names
    present = Counter(names)
    skip = set(unnamed)
    order = [i for i in range(len(names)) if i not in skip] + [i for i in unnamed if 0 <= i < len(names)]
    counts: dict = {}
    for i in order:
        col = old = names[i]
        cur = counts.get(col, 0)
        while cur > 0:
            counts[old] = cur + 1
            col = f"{old}.{cur}"
            cur = cur + 1 if present.get(col, 0) > 0 else counts.get(col, 0)
        if col != old:
            present[old] -= 1
            present[col] = present.get(col, 0) + 1
        names[i] = col
        counts[col] = cur + 1
    return names


def fix_decimal_commas(df: pd.DataFrame) -> list[str]:
    """Convert text columns of decimal-comma numbers (``0,25``: some entry has a comma, every present one is such a
    number) to floats, in place; return their names. When only most are (:data:`~calibdash.data.roles.NUMERIC_SHARE`),
    the numbers are converted and the rest kept, for validation to show among the dropped rows."""
    fixed = []
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        text = s.astype(str).str.strip().where(s.notna())
        present = s.notna() & text.ne("")
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
