"""Reading a table: bytes from a path, raw bytes or an upload, decompressed, decoded and parsed.

:func:`read_table` gives a ``pandas.DataFrame`` and a :class:`FileInfo`
(format, encoding, delimiter, size, SHA-256). CSV (comma, semicolon or tab;
UTF-8 with or without BOM, else Latin-1), gzipped CSV and Parquet are
accepted; what the bytes are is :mod:`calibdash.data.sniff`'s job. Sizes are
bounded (:data:`~calibdash.data.limits.DEFAULT_MAX_BYTES`), before and after
decompression.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import DataError, EnvironmentProblem, ProgrammingError
from .limits import DEFAULT_MAX_BYTES, megabytes
from .sniff import (DELIMITER_NAMES, PARQUET_MAGIC, SNIFF_BYTES, ZIP_MAGIC, fix_decimal_commas,
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
        ``"utf-8"``, ``"utf-8-sig"`` (UTF-8 with BOM) or ``"latin-1"``; None for Parquet.
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


def _too_big(name: str, size: int, max_bytes: int) -> DataError:
    return DataError(f"{name} is {megabytes(size)}, over the {megabytes(max_bytes)} limit; "
                     "sample it or save it as Parquet or .csv.gz.")


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


def _gunzip(data: bytes, name: str, limit: int) -> bytes:
    """Decompress gzip ``data``, refusing more than ``limit`` bytes of output."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise DataError(f"{name} is not a valid gzip file ({exc}).") from None
    if len(out) > limit:
        raise DataError(f"{name} decompresses to more than {megabytes(limit)}, over the limit; "
                        "sample it first.")
    # multi-member gzip files: fall back to the gzip module (still bounded)
    if d.unused_data:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
        if len(out) > limit:
            raise DataError(f"{name} decompresses to more than {megabytes(limit)}, over the limit.")
    return out


def _not_text(name: str) -> DataError:
    return DataError(f"{name} holds NUL bytes: it looks like UTF-16 or a binary file; "
                     "save it as a UTF-8 CSV.")


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding name of CSV bytes; refuses binary / UTF-16 content."""
    head = data[:SNIFF_BYTES]
    if head.startswith(ZIP_MAGIC):
        raise DataError(f"{name} is a ZIP archive (an Excel .xlsx workbook?), not a CSV; "
                        "save the sheet as a UTF-8 CSV.")
    if b"\x00" in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
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
        data = _gunzip(data, name, 4 * max_bytes)
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
        Largest accepted size of the raw bytes (and of a .gz's decompressed
        content: ``4 * max_bytes``).

    Returns
    -------
    (DataFrame, FileInfo)
        All rows and columns as read (column names stripped of spaces). When
        decimal commas were read as decimal points, ``df.attrs["decimal_comma_columns"]``
        lists the columns.

    Raises
    ------
    DataError
        Empty or oversized file, binary or UTF-16 content, unreadable CSV or
        Parquet.
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
