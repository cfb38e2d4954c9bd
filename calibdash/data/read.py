"""Reading a table: bytes from a path, raw bytes or an upload, decompressed, decoded and parsed (:func:`read_table`).

Sizes are bounded (:mod:`calibdash.core.limits`) before and after decompression, and the shape before the rows are
read: a Parquet file's from its metadata, a CSV's columns from its header (a gzip inflated only that far first) and
its rows from its line breaks (counted while a gzip inflates). So a small file that would unpack into gigabytes is
refused in well under a second with little memory, pointing to the large-data source (:mod:`calibdash.data.guard`),
and its contents never appear in the message. Repeated column names are numbered in linear time.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import DataError, EnvironmentProblem, ProgrammingError
from ..core.limits import (DEFAULT_MAX_BYTES, MAX_CELLS, MAX_COLUMNS, MAX_HEADER_BYTES, MAX_METADATA_ITEMS,
                     MAX_UNPACKED_BYTES, limit_name, megabytes)
from .sniff import (DELIMITER_NAMES, GZIP_MAGIC, PARQUET_MAGIC, SNIFF_BYTES, ZIP_MAGIC, fix_decimal_commas,
                    read_header, sniff_delimiter, sniff_format, unique_names)

__all__ = []


@dataclass(frozen=True)
class FileInfo:
    """What was read and how: the file ``name`` (as uploaded, or the path's name), its ``format`` (``"csv"``,
    ``"csv.gz"``, ``"parquet"``), ``encoding`` (``"utf-8"``, ``"utf-8-sig"``, ``"utf-16-le"``, ``"utf-16-be"``,
    ``"latin-1"``) and ``delimiter`` (``","``, ``";"``, ``"\\t"``), both None for Parquet, and the raw bytes'
    size ``n_bytes`` (compressed for .gz) and hex ``sha256``."""

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


def _raw_bytes(source, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The source's bytes and a display name, refusing empty or oversized input."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        name = filename or path.name
        if not path.is_file():
            raise EnvironmentProblem(f"file not found: {path}.")
        try:
            if (size := path.stat().st_size) > max_bytes:
                raise _too_big(name, size, max_bytes)
            data = path.read_bytes()
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read {path}: {exc.strerror or exc}.") from None
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        name = filename or "data"
    elif hasattr(source, "getvalue") or hasattr(source, "read"):
        name = filename or Path(str(getattr(source, "name", "") or "uploaded file")).name
        data = source.getvalue() if hasattr(source, "getvalue") else source.read(max_bytes + 1)
        data = bytes(data.encode("utf-8") if isinstance(data, str) else data)
    else:
        raise ProgrammingError(f"cannot read a {type(source).__name__}: give a path, bytes or an open file.")
    if len(data) > max_bytes:
        raise _too_big(name, len(data), max_bytes)
    if len(data) == 0:
        raise DataError(f"{name} is empty (0 bytes).")
    return data, name


#: Output of one step of gzip decompression.
_INFLATE_STEP = 8 * 1024 * 1024


def _gunzip(data: bytes, name: str, limit: int, *, head: int | None = None, watch=None) -> bytes:
    """Decompress gzip ``data`` in steps of ``_INFLATE_STEP`` bytes, refusing it (DataError) as soon as the output
    passes ``limit`` bytes or when it is not a whole gzip file; ``watch`` sees each step's output and may raise;
    with ``head``, only the first ``head`` bytes are made. The trailer's ``ISIZE`` (RFC 1952) is not trusted.
    Concatenated members are read in turn; trailing zero padding is ignored, as ``gzip`` does."""
    pieces: list[bytes] = []
    n_out = 0
    want = limit + 1 if head is None else min(head, limit + 1)
    rest = data
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        buf = rest
        while not d.eof:
            try:
                piece = d.decompress(buf, min(_INFLATE_STEP, want - n_out))
            except zlib.error as exc:
                raise DataError(f"{name} is not a valid gzip file ({exc}).") from None
            progress = piece or len(d.unconsumed_tail) < len(buf)
            buf = d.unconsumed_tail
            if piece:
                n_out += len(piece)
                if n_out > limit:
                    raise DataError(f"{name} decompresses to more than {megabytes(limit)}: its decompressed size "
                                    f"exceeds the upload limit ({megabytes(limit)}); {LARGE_DATA_HINT}.")
                pieces.append(piece)
                if watch is not None:
                    watch(piece)
                if n_out >= want:                     # head: the first bytes are made
                    return b"".join(pieces)
            elif not buf or not progress:             # all input consumed, yet the member is not over
                raise DataError(f"{name} is a truncated gzip file (it ends before its last member does).")
        rest = d.unused_data
        if not rest.strip(b"\x00"):
            return b"".join(pieces)
        if not rest.startswith(GZIP_MAGIC):
            raise DataError(f"{name} is not a valid gzip file (unexpected bytes after its end).")


def _not_text(name: str) -> DataError:
    return DataError(f"{name} holds NUL bytes: it looks like UTF-16 or a binary file; "
                     "save it as a UTF-8 CSV (UTF-16 is read only with its byte-order mark).")


#: Byte-order marks of UTF-16 (Excel's "Unicode text" export is UTF-16 LE with a BOM), and the codec of each.
_UTF16_BOMS = ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")


def _decode(data: bytes, name: str, *, head: bool = False) -> tuple[str, str]:
    """Text and encoding of CSV bytes: a byte-order mark decides (UTF-8, UTF-16 LE/BE; UTF-32 refused), else UTF-8
    if valid, else Latin-1; NUL bytes are refused. With ``head``, ``data`` begin a longer CSV: a character cut at the
    end is left out, a bad UTF-16 byte read as U+FFFD."""
    if data.startswith(ZIP_MAGIC):
        raise DataError(f"{name} is a ZIP archive (an Excel .xlsx workbook?), not a CSV; "
                        "save the sheet as a UTF-8 CSV.")
    if data.startswith(_UTF32_BOMS):
        raise DataError(f"{name} is UTF-32 text; save it as a UTF-8 (or UTF-16) CSV.")
    for bom, codec in _UTF16_BOMS:
        if not data.startswith(bom):
            continue
        if head:
            return codecs.getincrementaldecoder(codec)("replace").decode(data[2:], final=False), codec
        try:
            text = data[2:].decode(codec)
        except UnicodeDecodeError as exc:
            raise DataError(f"{name} starts with a UTF-16 byte-order mark but is not valid UTF-16 "
                            f"({exc.reason} at byte {exc.start + 2}); save it again as UTF-8 or "
                            "Unicode text.") from None
        if "\x00" in text:
            raise _not_text(name)
        return text, codec
    if b"\x00" in data[:SNIFF_BYTES]:
        raise _not_text(name)
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        if head:
            return codecs.getincrementaldecoder(encoding)().decode(data, final=False), encoding
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        pass
    if not head and b"\x00" in data:
        raise _not_text(name)
    return data.decode("latin-1"), "latin-1"


def _too_many_columns(name: str, n: int, limit: int, *, at_least: bool = False) -> DataError:
    has = f"more than {limit:,} columns, the most" if at_least else f"{n:,} columns, over the limit of {limit:,}"
    return DataError(f"{name} has {has} a table may have; keep the label, the score columns and the features you "
                     "need, and save the file again without the others.")


def _too_many_cells(name: str, what: str, cells: str, limit: int) -> DataError:
    why = f" (twice the {megabytes(DEFAULT_MAX_BYTES)} upload limit in 8-byte numbers)" if limit == MAX_CELLS else ""
    return DataError(f"{name} has {what}: {cells} cells, over the limit of {limit:,} a table may have{why}; "
                     f"upload a sample of the rows or fewer columns; {LARGE_DATA_HINT}.")


def _line_watch(name: str, columns: int, max_cells: int):
    """A :func:`_gunzip` watch refusing the file once its line breaks times its header's ``columns`` pass
    ``max_cells``. It counts the larger of the ``\\n`` and ``\\r`` bytes, a lower bound of the line breaks (UTF-8,
    Latin-1): it never refuses a file the exact count after decoding accepts."""
    columns, seen = max(columns, 1), {b"\n": 0, b"\r": 0}

    def watch(piece: bytes) -> None:
        for byte in seen:
            seen[byte] += piece.count(byte)
        lines = max(seen.values())
        if lines * columns > max_cells:
            raise _too_many_cells(name, f"at least {lines:,} lines of {columns:,} columns (its header's)",
                                  f"at least {lines * columns:,}", max_cells)
    return watch


def _header(text: str, delim: str, name: str, max_columns: int, *, more: bool = False):
    """The header record of CSV ``text``, read from its first ``MAX_HEADER_BYTES``; DataError for more than
    ``max_columns`` fields, a header not complete there, or a name over the csv module's field limit."""
    try:
        header = read_header(text, delim, MAX_HEADER_BYTES, more=more)
    except csv.Error:
        raise DataError(f"{name}'s header (its first line) holds a column name longer than "
                        f"{csv.field_size_limit():,} characters; check that the file is a CSV with one line of "
                        "column names, or shorten the names.") from None
    if len(header.fields) > max_columns:
        raise _too_many_columns(name, len(header.fields), max_columns, at_least=not header.complete)
    if not header.complete:
        raise DataError(f"{name}'s header (its first line, the column names) does not end within its first "
                        f"{megabytes(MAX_HEADER_BYTES)}; check that the file is a CSV with one line of column "
                        "names, then one line per row, or shorten the column names.")
    return header


def _check_csv_shape(text: str, delim: str, name: str, max_cells: int, max_columns: int) -> str:
    """The CSV ``text`` ready for pandas once its columns (the header's, or one more when the first row has one
    more: pandas' index) and line breaks are within the limits; repeated header names made unique."""
    header = _header(text, delim, name, max_columns)
    try:
        first_row = read_header(text[header.end:header.end + MAX_HEADER_BYTES], delim, MAX_HEADER_BYTES).fields
    except csv.Error:                              # a huge field: pandas will say what is wrong with the row
        first_row = []
    n_cols = max(len(header.fields), min(len(first_row), len(header.fields) + 1), 1)
    if n_cols > max_columns:
        raise _too_many_columns(name, n_cols, max_columns)
    lines = text.count("\n") + text.count("\r") - text.count("\r\n")    # \n, \r\n or \r, as pandas reads them
    if lines * n_cols > max_cells:
        raise _too_many_cells(name, f"{lines:,} lines of {n_cols:,} columns", f"{lines * n_cols:,}", max_cells)
    names = [f if f != "" else f"Unnamed: {i}" for i, f in enumerate(header.fields)]
    if len(set(names)) == len(names):
        return text
    unnamed = [i for i, f in enumerate(header.fields) if f == ""]
    line = io.StringIO()
    csv.writer(line, delimiter=delim, quoting=csv.QUOTE_ALL, lineterminator="").writerow(unique_names(names, unnamed))
    line_break = header.start + len(text[header.start:header.end].rstrip("\r\n"))   # the header's own line break
    return text[:header.start] + line.getvalue() + text[line_break:]


def _check_parquet(data: bytes, name: str, max_cells: int, max_columns: int) -> None:
    """Refuse a Parquet file whose footer (read up to ``MAX_METADATA_ITEMS`` entries a list) says it unpacks into
    too many columns, cells or bytes, or that has nested columns (many values a cell, no role reads them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data), thrift_container_size_limit=MAX_METADATA_ITEMS)
        meta = pf.metadata
        n_cols = meta.num_columns
        if n_cols > max_columns:
            raise _too_many_columns(name, n_cols, max_columns)
        schema = pf.schema_arrow
    except DataError:
        raise
    except Exception as exc:  # pyarrow raises several types
        if "Exceeded size limit" in str(exc):
            raise DataError(f"{name}'s Parquet metadata lists more than {MAX_METADATA_ITEMS:,} columns or row "
                            f"groups, far over the limit of {max_columns:,} columns a table may have; keep the "
                            "label, the score columns and the features you need, in fewer row groups.") from None
        raise DataError(f"{name} could not be read as Parquet: {exc}") from None
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        first = " ".join(str(nested[0]).split())            # on one line, its first 40 characters
        first = first if len(first) <= 40 else first[:37] + "..."
        raise DataError(f"{name} has {len(nested):,} nested column{'s' if len(nested) > 1 else ''} (lists, structs "
                        f"or maps), such as {first!r}; calibdash reads flat columns of numbers, text, "
                        "booleans or dates: flatten or drop them.")
    rows = meta.num_rows
    if rows * n_cols > max_cells:
        raise _too_many_cells(name, f"{rows:,} rows of {n_cols:,} columns (its Parquet metadata says)",
                              f"{rows * n_cols:,}", max_cells)
    decoded = _decoded_bytes(meta, schema)
    if decoded > MAX_UNPACKED_BYTES:
        raise DataError(f"{name}'s columns take {megabytes(decoded)} once decoded (its Parquet metadata says: "
                        f"{rows:,} rows of {n_cols:,} columns), more than the {megabytes(MAX_UNPACKED_BYTES)} a "
                        f"table may take {limit_name('MAX_UNPACKED_BYTES')}, twice the "
                        f"{megabytes(DEFAULT_MAX_BYTES)} upload limit; upload a sample of the rows or fewer "
                        f"columns; {LARGE_DATA_HINT}.")


def _decoded_bytes(meta, schema) -> int:
    """Bytes a Parquet file's columns take once decoded: 8 a row a column whatever the encoding, plus for text or
    bytes the chunks' uncompressed size; stops adding once past :data:`MAX_UNPACKED_BYTES`."""
    import pyarrow as pa

    rows = meta.num_rows
    text = [j for j, f in enumerate(schema) if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    total = 8 * rows * meta.num_columns
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        total += sum(group.column(j).total_uncompressed_size for j in text)
        if total > MAX_UNPACKED_BYTES:
            break
    return total


def _gunzip_csv(data: bytes, name: str, max_bytes: int, max_cells: int, max_columns: int) -> bytes:
    """A gzipped CSV's bytes: its header checked before it is inflated in full, its cells while it is."""
    head = _gunzip(data, name, max_bytes, head=MAX_HEADER_BYTES + 1)
    if not head:
        raise DataError(f"{name} is empty (gzip archive of 0 bytes).")
    if head.startswith(PARQUET_MAGIC):
        raise DataError(f"{name} is a gzipped Parquet file; give the .parquet file itself.")
    if len(head) <= MAX_HEADER_BYTES:             # the whole file: checked as it is, after decoding
        return head
    text = _decode(head[:MAX_HEADER_BYTES], name, head=True)[0]
    n_cols = len(_header(text, sniff_delimiter(text), name, max_columns, more=True).fields)
    del head, text
    return _gunzip(data, name, max_bytes, watch=_line_watch(name, n_cols, max_cells))


# -- text columns of few values held as sorted categories (10^7 ten-character dates: 180 MB as strings, 10 MB so);
# sorted, so grouping lists the values as for strings and the same rows in another order give the same column.
#: Largest share of distinct values among a text column's non-missing entries for it to be held as categories.
MAX_SHARE = 0.5


def keep_as_categories(n_distinct: int, n_present: int) -> bool:
    """Whether a text column of ``n_present`` entries, ``n_distinct`` distinct, is held as categories."""
    return n_present > 1 and n_distinct <= MAX_SHARE * n_present


def _sorted_categories(s: pd.Series) -> pd.Series:
    """``s`` (categorical) with its categories sorted, codes renumbered by one lookup (``reorder_categories``/2)."""
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


def parquet_to_frame(source, columns=None) -> pd.DataFrame:
    """A Parquet file (path or file-like) as a DataFrame: text columns read as dictionaries, kept as sorted
    categories where :func:`keep_as_categories` says so (else strings); DATE columns as datetime64, not ``date``s."""
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


def read_table(source, *, filename: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
               max_cells: int = MAX_CELLS, max_columns: int = MAX_COLUMNS) -> tuple[pd.DataFrame, FileInfo]:
    """Read a CSV, gzipped CSV or Parquet table.

    CSV (comma, semicolon or tab; UTF-8 with or without BOM, UTF-16 LE or BE with BOM as Excel's "Unicode text"
    export writes it, else Latin-1), gzipped CSV and Parquet; what the bytes are is :mod:`calibdash.data.sniff`'s job.

    Parameters
    ----------
    source : str, Path, bytes or file-like
        A path, the raw bytes, or an object with ``getvalue()`` or ``read()`` (Streamlit's ``UploadedFile``
        also gives ``.name``).
    filename : str, optional
        Name used for the format guess and in messages (default: the path's or upload's name).
    max_bytes : int
        Largest accepted size of the raw bytes, and of a .gz's decompressed content.
    max_cells, max_columns : int
        Most cells (rows x columns) and columns the table may have (:data:`~calibdash.core.limits.MAX_CELLS`,
        :data:`~calibdash.core.limits.MAX_COLUMNS`), checked before the rows are read.

    Returns
    -------
    (DataFrame, FileInfo)
        All rows and columns as read (names stripped of spaces, and numbered ``name.1``, ``name.2``, ... where
        they repeat, as pandas numbers them). ``df.attrs["decimal_comma_columns"]`` lists the columns whose
        decimal commas were read as decimal points.

    Raises
    ------
    DataError
        Empty or oversized file (compressed or decompressed), binary content or UTF-16 without a byte-order mark,
        unreadable CSV or Parquet; more columns or cells than the limits, a CSV header longer than
        :data:`~calibdash.core.limits.MAX_HEADER_BYTES`, a Parquet file whose column data decompresses past
        :data:`~calibdash.core.limits.MAX_UNPACKED_BYTES` or that has nested columns. These messages name the
        limit and never quote the file's contents.
    EnvironmentProblem
        A path that does not exist or cannot be read.
    ProgrammingError
        ``source`` is none of the types above.
    """
    data, name = _raw_bytes(source, filename, max_bytes)
    fmt = sniff_format(data, name)
    if fmt == "parquet":
        import pyarrow as pa

        _check_parquet(data, name, max_cells, max_columns)
        try:
            # pa.BufferReader reads the bytes in place (io.BytesIO made pyarrow copy them)
            df, encoding, delim = parquet_to_frame(pa.BufferReader(data)), None, None
        except Exception as exc:  # pyarrow raises several types
            raise DataError(f"{name} could not be read as Parquet: {exc}") from None
    else:
        unpacked = _gunzip_csv(data, name, max_bytes, max_cells, max_columns) if fmt == "csv.gz" else data
        text, encoding = _decode(unpacked, name)
        del unpacked
        delim = sniff_delimiter(text)
        text = _check_csv_shape(text, delim, name, max_cells, max_columns)
        if not text.strip():
            raise DataError(f"{name} is empty (no header, no rows).")
        try:
            df = pd.read_csv(io.StringIO(text), sep=delim, engine="c", skipinitialspace=True)
        except pd.errors.EmptyDataError:
            raise DataError(f"{name} is empty (no header, no rows).") from None
        except (pd.errors.ParserError, ValueError) as exc:
            raise DataError(f"{name} could not be read as a {DELIMITER_NAMES[delim]}-separated CSV: "
                            f"{str(exc).strip()}") from None
        if delim != ",":
            df.attrs["decimal_comma_columns"] = fix_decimal_commas(df)
        df = compact_text(df)
    df.columns = unique_names([str(c).strip() for c in df.columns])
    if df.shape[1] == 0:
        raise DataError(f"{name} has no columns.")
    if df.shape[1] > max_columns:             # the header's count is the check; this only backs it up
        raise _too_many_columns(name, df.shape[1], max_columns)
    info = FileInfo(name=name, format=fmt, encoding=encoding, delimiter=delim,
                    n_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    return df, info
