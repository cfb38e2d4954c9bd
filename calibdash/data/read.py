"""Reading a table: bytes from a path, raw bytes or an upload, decompressed, decoded and parsed.

:func:`read_table` gives a ``pandas.DataFrame`` and a :class:`FileInfo`
(format, encoding, delimiter, size, SHA-256). CSV (comma, semicolon or tab;
UTF-8 with or without BOM, UTF-16 LE or BE with BOM as Excel's "Unicode
text" export writes it, else Latin-1), gzipped CSV and Parquet are
accepted; what the bytes are is :mod:`calibdash.data.sniff`'s job. Sizes are
bounded (:data:`~calibdash.data.limits.DEFAULT_MAX_BYTES`), before and after
decompression: a gzip is decompressed only while its output stays under the
limit, so an oversized one is refused in about a second, pointing to the
large-data source (:mod:`calibdash.data.guard`) that reads large files.
"""
from __future__ import annotations

import hashlib
import io
import zlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import DataError, EnvironmentProblem, ProgrammingError
from .limits import DEFAULT_MAX_BYTES, megabytes
from .sniff import (DELIMITER_NAMES, GZIP_MAGIC, PARQUET_MAGIC, SNIFF_BYTES, ZIP_MAGIC, fix_decimal_commas,
                    sniff_delimiter, sniff_format)

__all__ = ["FileInfo", "read_table"]


@dataclass(frozen=True)
class FileInfo:
    """What was read and how.

    Attributes
    ----------
    name : str
        File name (as uploaded, or the path's name).
    format : {"csv", "csv.gz", "parquet"}
    encoding : str or None
        ``"utf-8"``, ``"utf-8-sig"`` (UTF-8 with BOM), ``"utf-16-le"`` or
        ``"utf-16-be"`` (UTF-16 with BOM), or ``"latin-1"``; None for Parquet.
    delimiter : str or None
        ``","``, ``";"`` or ``"\\t"``; None for Parquet.
    n_bytes : int
        Size of the raw bytes (compressed size for .gz).
    sha256 : str
        Hex SHA-256 of the raw bytes.
    """

    name: str
    format: str
    encoding: str | None
    delimiter: str | None
    n_bytes: int
    sha256: str


#: How to read a file too large for an upload, for the messages that refuse one.
LARGE_DATA_HINT = ("large files are read through the large-data source: the server's operator sets "
                   "CALIBDASH_DATA_ROOT to the directory holding them, or run "
                   "`python -m calibdash evaluate PATH --engine duckdb`")


def _too_big(name: str, size: int, max_bytes: int) -> DataError:
    return DataError(f"{name} is {megabytes(size)}, over the {megabytes(max_bytes)} limit; "
                     f"sample it or save it as Parquet or .csv.gz; {LARGE_DATA_HINT}.")


def _path_bytes(path: Path, name: str, max_bytes: int) -> bytes:
    """The file's bytes; EnvironmentProblem when the path cannot be read."""
    if not path.is_file():
        raise EnvironmentProblem(f"file not found: {path}.")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_big(name, size, max_bytes)
        return path.read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read {path}: {exc.strerror or exc}.") from None


def _raw_bytes(source, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The source's bytes and a display name, refusing empty or oversized input."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        name = filename or path.name
        data = _path_bytes(path, name, max_bytes)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        name = filename or "data"
    elif hasattr(source, "getvalue") or hasattr(source, "read"):
        name = filename or Path(str(getattr(source, "name", "") or "uploaded file")).name
        if hasattr(source, "getvalue"):
            data = source.getvalue()
        else:
            data = source.read(max_bytes + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
        data = bytes(data)
    else:
        raise ProgrammingError(f"cannot read a {type(source).__name__}: give a path, bytes or an open file.")
    if len(data) > max_bytes:
        raise _too_big(name, len(data), max_bytes)
    if len(data) == 0:
        raise DataError(f"{name} is empty (0 bytes).")
    return data, name


def _too_big_unpacked(name: str, limit: int) -> DataError:
    return DataError(f"{name} decompresses to more than {megabytes(limit)}: its decompressed size exceeds "
                     f"the upload limit ({megabytes(limit)}); {LARGE_DATA_HINT}.")


def _gunzip(data: bytes, name: str, limit: int) -> bytes:
    """Decompress gzip ``data``, stopping as soon as the output passes ``limit`` bytes.

    The members are stream-decompressed by ``zlib`` with the output capped
    at ``limit + 1`` bytes, so an oversized archive costs at most ``limit``
    bytes of memory and the time to produce them (about 0.5 s for the
    default 200 MB), never its full decompressed size. The trailer's size
    field (RFC 1952 ``ISIZE``) is not used: it can only be trusted after the
    data is checked, and a damaged file would be refused as too large.
    Concatenated members (``cat a.gz b.gz``) are read in turn; trailing zero
    padding is ignored, as ``gzip`` does.

    Raises
    ------
    DataError
        The output would pass ``limit`` (pointing to the large-data source),
        or the bytes are not a whole gzip file.
    """
    pieces: list[bytes] = []
    n_out = 0
    rest = data
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            piece = d.decompress(rest, limit + 1 - n_out)
        except zlib.error as exc:
            raise DataError(f"{name} is not a valid gzip file ({exc}).") from None
        n_out += len(piece)
        if n_out > limit:
            raise _too_big_unpacked(name, limit)
        pieces.append(piece)
        if not d.eof:                 # all input consumed below the cap, yet the member is not over
            raise DataError(f"{name} is a truncated gzip file (it ends before its last member does).")
        rest = d.unused_data
        if not rest.strip(b"\x00"):
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if not rest.startswith(GZIP_MAGIC):
            raise DataError(f"{name} is not a valid gzip file (unexpected bytes after its end).")


def _not_text(name: str) -> DataError:
    return DataError(f"{name} holds NUL bytes: it looks like UTF-16 or a binary file; "
                     "save it as a UTF-8 CSV (UTF-16 is read only with its byte-order mark).")


#: Byte-order marks of UTF-16 (Excel's "Unicode text" export is UTF-16 LE with a BOM), and the codec of each.
_UTF16_BOMS = ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")


def _decode_utf16(data: bytes, codec: str, name: str) -> tuple[str, str]:
    """Text of UTF-16 ``data`` that starts with its BOM (the BOM dropped), and the codec name."""
    try:
        text = data[2:].decode(codec)
    except UnicodeDecodeError as exc:
        raise DataError(f"{name} starts with a UTF-16 byte-order mark but is not valid UTF-16 "
                        f"({exc.reason} at byte {exc.start + 2}); save it again as UTF-8 or "
                        "Unicode text.") from None
    if "\x00" in text:
        raise _not_text(name)
    return text, codec


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding name of CSV bytes; refuses binary content and UTF-16 without a BOM.

    A byte-order mark decides first: UTF-8 (``"utf-8-sig"``), UTF-16 LE or
    BE (``"utf-16-le"``, ``"utf-16-be"``; UTF-32 is refused). Without one,
    UTF-8 if the bytes are valid UTF-8, else Latin-1 (which decodes any
    bytes); NUL bytes, as UTF-16 without a BOM has, are refused.
    """
    head = data[:SNIFF_BYTES]
    if head.startswith(ZIP_MAGIC):
        raise DataError(f"{name} is a ZIP archive (an Excel .xlsx workbook?), not a CSV; "
                        "save the sheet as a UTF-8 CSV.")
    if head.startswith(_UTF32_BOMS):
        raise DataError(f"{name} is UTF-32 text; save it as a UTF-8 (or UTF-16) CSV.")
    for bom, codec in _UTF16_BOMS:
        if head.startswith(bom):
            return _decode_utf16(data, codec, name)
    if b"\x00" in head:
        raise _not_text(name)
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        pass
    if b"\x00" in data:
        raise _not_text(name)
    return data.decode("latin-1"), "latin-1"


def _read_csv_text(text: str, delim: str, name: str) -> pd.DataFrame:
    if not text.strip():
        raise DataError(f"{name} is empty (no header, no rows).")
    try:
        df = pd.read_csv(io.StringIO(text), sep=delim, engine="c", skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise DataError(f"{name} is empty (no header, no rows).") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(f"{name} could not be read as a {DELIMITER_NAMES[delim]}-separated CSV: "
                        f"{str(exc).strip()}") from None
    return df


def _read_parquet(data: bytes, name: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several types
        raise DataError(f"{name} could not be read as Parquet: {exc}") from None


def _read_csv(data: bytes, fmt: str, name: str, max_bytes: int) -> tuple[pd.DataFrame, str, str]:
    """A CSV's (gzipped when ``fmt == "csv.gz"``) table, encoding and delimiter."""
    if fmt == "csv.gz":
        data = _gunzip(data, name, max_bytes)
        if not data:
            raise DataError(f"{name} is empty (gzip archive of 0 bytes).")
        if data.startswith(PARQUET_MAGIC):
            raise DataError(f"{name} is a gzipped Parquet file; give the .parquet file itself.")
    text, encoding = _decode(data, name)
    delim = sniff_delimiter(text)
    df = _read_csv_text(text, delim, name)
    if delim != ",":
        df.attrs["decimal_comma_columns"] = fix_decimal_commas(df)
    return df, encoding, delim


def read_table(source, *, filename: str | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[pd.DataFrame, FileInfo]:
    """Read a CSV, gzipped CSV or Parquet table.

    Parameters
    ----------
    source : str, Path, bytes or file-like
        A path, the raw bytes, or an object with ``getvalue()`` or ``read()``
        (Streamlit's ``UploadedFile`` also gives ``.name``).
    filename : str, optional
        Name used for the format guess and in messages (default: the path's
        or upload's name).
    max_bytes : int
        Largest accepted size of the raw bytes, and of a .gz's decompressed
        content (decompression stops as soon as it passes ``max_bytes``).

    Returns
    -------
    (DataFrame, FileInfo)
        All rows and columns as read (column names stripped of spaces). When
        decimal commas were read as decimal points, ``df.attrs["decimal_comma_columns"]``
        lists the columns.

    Raises
    ------
    DataError
        Empty or oversized file (compressed or decompressed), binary content
        or UTF-16 without a byte-order mark, unreadable CSV or Parquet.
    EnvironmentProblem
        A path that does not exist or cannot be read.
    ProgrammingError
        ``source`` is none of the types above.
    """
    data, name = _raw_bytes(source, filename, max_bytes)
    fmt = sniff_format(data, name)
    if fmt == "parquet":
        df, encoding, delim = _read_parquet(data, name), None, None
    else:
        df, encoding, delim = _read_csv(data, fmt, name, max_bytes)
    df.columns = [str(c).strip() for c in df.columns]
    if df.shape[1] == 0:
        raise DataError(f"{name} has no columns.")
    info = FileInfo(name=name, format=fmt, encoding=encoding, delimiter=delim,
                    n_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    return df, info
