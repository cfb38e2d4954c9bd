"""Reading user tables and turning them into validated score sets.

Two steps, usable separately:

:func:`read_table`
    bytes (a path, raw bytes or an uploaded file) -> ``pandas.DataFrame`` plus a
    :class:`FileInfo` (format, encoding, delimiter, size, SHA-256). CSV (comma,
    semicolon or tab; UTF-8 with or without BOM, else Latin-1), gzipped CSV and
    Parquet are accepted; the format is taken from the magic bytes when they
    say gzip (``1f 8b``) or Parquet (``PAR1``), else from the file name.
:func:`build_score_set`
    DataFrame -> :class:`ScoreSet`: the label, score, feature and split columns
    (guessed by :func:`guess_roles` unless given), the positive class, and the
    usable rows as numpy arrays, with a :class:`ValidationReport` saying what
    was dropped, mapped and found.

:func:`load_scores` does both. Every refusal is a :class:`calibdash.DataError`
whose message names the column, values or limit involved.

Scores outside [0, 1] (SVM margins, logits) are mapped by the logistic
function ``1 / (1 + exp(-s))``, never min-max scaled: min-max scaling would
change the calibration the dashboard is there to measure, while the logistic
map is what Platt's and the BBQ authors' code apply to SVM margins.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from .errors import DataError

__all__ = [
    "DEFAULT_MAX_BYTES", "MIN_ROWS", "FileInfo", "Roles", "ValidationReport", "ScoreSet",
    "read_table", "guess_roles", "build_score_set", "load_scores",
]

#: Largest file accepted, as ``server.maxUploadSize = 200`` (MB) in .streamlit/config.toml.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Fewest usable rows a score set may have.
MIN_ROWS = 20

_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_DELIMITERS = (",", ";", "\t")
_DELIM_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_SNIFF_BYTES = 64 * 1024


# ----------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------
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


@dataclass
class Roles:
    """Which column plays which part (see :func:`guess_roles`)."""

    label: str | None
    scores: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    split: str | None = None


@dataclass
class ValidationReport:
    """What validation found, for the user to read.

    ``dropped`` counts are disjoint: a row with both a bad score and a missing
    label counts under the score reason only, so
    ``n_read == n_used + sum(dropped.values())``.
    """

    n_read: int
    n_used: int
    dropped: dict[str, int] = field(default_factory=dict)
    mapped: dict[str, tuple[float, float]] = field(default_factory=dict)
    class_counts: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------
def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def _raw_bytes(source, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The source's bytes and a display name, refusing empty or oversized input."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        name = filename or path.name
        if not path.is_file():
            raise DataError(f"file not found: {path}.")
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(f"{name} is {_mb(size)}, over the {_mb(max_bytes)} limit; "
                            "sample it or save it as Parquet or .csv.gz.")
        data = path.read_bytes()
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
        raise DataError(f"cannot read a {type(source).__name__}: give a path, bytes or an open file.")
    if len(data) > max_bytes:
        raise DataError(f"{name} is {_mb(len(data))}, over the {_mb(max_bytes)} limit; "
                        "sample it or save it as Parquet or .csv.gz.")
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
        raise DataError(f"{name} decompresses to more than {_mb(limit)}, over the limit; "
                        "sample it first.")
    # multi-member gzip files: fall back to the gzip module (still bounded)
    if d.unused_data:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
        if len(out) > limit:
            raise DataError(f"{name} decompresses to more than {_mb(limit)}, over the limit.")
    return out


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding name of CSV bytes; refuses binary / UTF-16 content."""
    head = data[:_SNIFF_BYTES]
    if head.startswith(_ZIP_MAGIC):
        raise DataError(f"{name} is a ZIP archive (an Excel .xlsx workbook?), not a CSV; "
                        "save the sheet as a UTF-8 CSV.")
    if b"\x00" in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(f"{name} holds NUL bytes: it looks like UTF-16 or a binary file; "
                        "save it as a UTF-8 CSV.")
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data.decode("utf-8-sig"), "utf-8-sig"
        except UnicodeDecodeError:
            pass
    else:
        try:
            return data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
    if b"\x00" in data:
        raise DataError(f"{name} holds NUL bytes: it looks like UTF-16 or a binary file; "
                        "save it as a UTF-8 CSV.")
    return data.decode("latin-1"), "latin-1"


def _field_counts(lines: list[str], delim: str) -> list[int]:
    try:
        return [len(row) for row in csv.reader(lines, delimiter=delim) if row]
    except csv.Error:
        return []


def _consistent(counts: list[int]) -> bool:
    return bool(counts) and counts[0] > 1 and all(c == counts[0] for c in counts)


def _sniff_delimiter(text: str) -> str:
    """Comma, semicolon or tab: csv.Sniffer, checked by a field-count heuristic.

    The sniffer's answer is kept when every sample line splits into the same
    number (>1) of fields with it. Otherwise the delimiter that gives a
    constant field count with the most fields wins (this resolves e.g.
    semicolon files with decimal commas); a one-column file gets ``","``.
    """
    sample = text[:_SNIFF_BYTES]
    lines = sample.splitlines()
    if len(sample) == _SNIFF_BYTES and len(lines) > 1:
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


_DECIMAL_COMMA = re.compile(r"[-+]?(\d+,\d*|,\d+|\d+)([eE][-+]?\d+)?")


def _fix_decimal_commas(df: pd.DataFrame) -> list[str]:
    """Convert text columns holding decimal-comma numbers (``0,25``) to floats, in place."""
    fixed = []
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        vals = s.dropna()
        if vals.empty:
            continue
        vals = vals.astype(str).str.strip()
        if not vals.str.contains(",", regex=False).any():
            continue
        if not vals.str.fullmatch(_DECIMAL_COMMA).all():
            continue
        df[col] = pd.to_numeric(s.astype(str).str.strip().str.replace(",", ".", regex=False)
                                .where(s.notna()), errors="coerce")
        fixed.append(str(col))
    return fixed


def _read_csv_text(text: str, delim: str, name: str) -> pd.DataFrame:
    if not text.strip():
        raise DataError(f"{name} is empty (no header, no rows).")
    try:
        df = pd.read_csv(io.StringIO(text), sep=delim, engine="c", skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise DataError(f"{name} is empty (no header, no rows).") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(f"{name} could not be read as a {_DELIM_NAMES[delim]}-separated CSV: "
                        f"{str(exc).strip()}") from None
    return df


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
        All rows and columns as read (column names stripped of spaces).

    Raises
    ------
    DataError
        Empty or oversized file, binary or UTF-16 content, unreadable CSV or
        Parquet.
    """
    data, name = _raw_bytes(source, filename, max_bytes)
    sha = hashlib.sha256(data).hexdigest()
    n_bytes = len(data)
    lower = name.lower()
    if data.startswith(_PARQUET_MAGIC):
        fmt = "parquet"
    elif data.startswith(_GZIP_MAGIC):
        fmt = "csv.gz"
    elif lower.endswith((".parquet", ".pq")):
        raise DataError(f"{name} is named like a Parquet file but does not start with the "
                        "Parquet signature 'PAR1'; is it a CSV? rename it to .csv.")
    elif lower.endswith(".gz"):
        raise DataError(f"{name} is named .gz but is not gzip-compressed; rename it to .csv.")
    else:
        fmt = "csv"

    if fmt == "parquet":
        try:
            df = pd.read_parquet(io.BytesIO(data))
        except Exception as exc:  # pyarrow raises several types
            raise DataError(f"{name} could not be read as Parquet: {exc}") from None
        encoding = delim = None
    else:
        if fmt == "csv.gz":
            data = _gunzip(data, name, 4 * max_bytes)
            if not data:
                raise DataError(f"{name} is empty (gzip archive of 0 bytes).")
            if data.startswith(_PARQUET_MAGIC):
                raise DataError(f"{name} is a gzipped Parquet file; give the .parquet file itself.")
        text, encoding = _decode(data, name)
        delim = _sniff_delimiter(text)
        df = _read_csv_text(text, delim, name)
        if delim != ",":
            df.attrs["decimal_comma_columns"] = _fix_decimal_commas(df)
    df.columns = [str(c).strip() for c in df.columns]
    if df.shape[1] == 0:
        raise DataError(f"{name} has no columns.")
    info = FileInfo(name=name, format=fmt, encoding=encoding, delimiter=delim,
                    n_bytes=n_bytes, sha256=sha)
    return df, info


# ----------------------------------------------------------------------------
# Role guessing
# ----------------------------------------------------------------------------
def _norm(name) -> str:
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


_LABEL_NAMES = ("label", "labels", "y", "target", "outcome", "class", "truth", "actual",
                "clicked", "click", "default", "y_true", "ytrue", "true_label", "ground_truth",
                "gt", "response", "converted", "conversion", "churn", "fraud", "event")
_SPLIT_NAMES = ("split", "set", "fold", "partition", "subset", "dataset", "data_split",
                "train_test", "sample_set")
_ID_NAMES = ("id", "index", "idx", "row", "row_id", "rowid", "key", "uuid", "record_id")
_SCORE_HINTS = ("score", "prob", "pred", "margin", "logit", "pctr", "svm", "confidence",
                "yhat", "y_hat", "output")
_POSITIVE_TOKENS = {"1", "1.0", "+1", "+", "yes", "y", "true", "t", "pos", "positive"}
_NEGATIVE_TOKENS = {"0", "0.0", "-1", "-1.0", "-", "no", "n", "false", "f", "neg", "negative"}


def _label_tier(col) -> int | None:
    n = _norm(col)
    if n in _LABEL_NAMES:
        return 0
    if n.startswith(("is_", "has_")) or n.endswith(("_label", "_target", "_outcome")) or "label" in n:
        return 1
    return None


def _is_score_hint(col) -> bool:
    n = _norm(col)
    if n.startswith("true_"):          # e.g. true_prob: the oracle, not a model's score
        return False
    return n in ("p", "s") or n.startswith("p_") or any(h in n for h in _SCORE_HINTS)


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _is_id(col, s: pd.Series, n: int) -> bool:
    nm = _norm(col)
    if nm in _ID_NAMES or nm.endswith("_id") or nm.startswith("unnamed:") or nm.startswith("unnamed_"):
        return True
    if n < MIN_ROWS or s.isna().any():
        return False
    if pd.api.types.is_integer_dtype(s) or pd.api.types.is_string_dtype(s) or s.dtype == object:
        return s.nunique() == n
    return False


def _known_label_encoding(values) -> bool:
    toks = {str(v).strip().lower() for v in values}
    return len(toks) == 2 and bool(toks & (_POSITIVE_TOKENS | _NEGATIVE_TOKENS))


def guess_roles(df: pd.DataFrame, *, label: str | None = None, split: str | None = None) -> Roles:
    """Guess the label, score, feature and split columns of ``df``.

    Parameters
    ----------
    df : DataFrame
    label, split : str, optional
        Columns already chosen by the user; the other roles are guessed around them.

    Rules
    -----
    split
        A column named split/set/fold/partition/subset/dataset with at most 20
        distinct values (and fewer than half the rows).
    label
        By name first (label, y, target, outcome, class, truth, actual, click(ed),
        default, ..., then is_*/has_*/*label*) with exactly two distinct values;
        then any other column with two distinct values, those encoded like a label
        (0/1, -1/1, True/False, yes/no, pos/neg) first. If only a named column
        with one or more than two values exists it is returned anyway, so that
        validation can say what is wrong with it. None if nothing fits.
    scores
        Numeric (not boolean) columns other than label, split and ids: the ones
        whose name hints a score (score, prob, proba, pred, p_, margin, logit,
        pctr, svm, ...) if any; otherwise those entirely within [0, 1] with many
        (>= 10) distinct non-integer values; otherwise every numeric column.
    features
        The remaining columns, without ids (named id/index/*_id/Unnamed: 0, or
        integer/text columns whose values are all distinct).
    """
    n = len(df)
    cols = list(df.columns)
    if split is None:
        for c in cols:
            if c == label or _norm(c) not in _SPLIT_NAMES and not _norm(c).endswith("_split"):
                continue
            k = df[c].nunique(dropna=True)
            if 1 <= k <= 20 and k < max(n / 2, 2):
                split = c
                break

    if label is None:
        nunique = {}
        named = sorted((t, i, c) for i, c in enumerate(cols)
                       if c != split and (t := _label_tier(c)) is not None)
        for _, _, c in named:
            nunique[c] = df[c].nunique(dropna=True)
            if nunique[c] == 2:
                label = c
                break
        if label is None:
            two_valued = []
            for i, c in enumerate(cols):
                if c == split or _is_score_hint(c):
                    continue
                s = df[c]
                if s.nunique(dropna=True) == 2:
                    known = _known_label_encoding(s.dropna().unique())
                    two_valued.append((0 if known else 1, i, c))
            if two_valued:
                label = min(two_valued)[2]
            elif named:
                label = named[0][2]

    taken = {label, split}
    ids = {c for c in cols if c not in taken and _is_id(c, df[c], n)}
    numeric = [c for c in cols if c not in taken and c not in ids and _is_numeric(df[c])]
    hinted = [c for c in numeric if _is_score_hint(c)]
    if hinted:
        scores = hinted
    else:
        scores = []
        for c in numeric:
            s = df[c].to_numpy(dtype=float, na_value=np.nan)
            fin = s[np.isfinite(s)]
            if (fin.size and fin.min() >= 0.0 and fin.max() <= 1.0
                    and np.unique(fin).size >= 10 and np.any(fin != np.round(fin))):
                scores.append(c)
        if not scores:
            scores = numeric[:]
    features = [c for c in cols if c not in taken and c not in ids and c not in scores
                and not df[c].isna().all()]
    return Roles(label=label, scores=scores, features=features, split=split)


# ----------------------------------------------------------------------------
# Score set
# ----------------------------------------------------------------------------
@dataclass
class ScoreSet:
    """A validated table of one classifier's scores and the true labels.

    ``raw`` keeps the table as read; ``scores``, ``labels``, ``features`` and
    ``split`` hold the usable rows only (rows with a missing or non-finite
    active score, or a missing label, are dropped and counted in ``report``).
    ``scores`` are in [0, 1]: an active column that leaves [0, 1] is mapped by
    the logistic function. Build one with :func:`load_scores` or
    :func:`build_score_set`; switch the active model with :meth:`with_score`.
    """

    name: str
    raw: pd.DataFrame
    label_column: str
    positive_label: Any
    negative_label: Any
    score_columns: list[str]
    score: str
    feature_columns: list[str]
    split_column: str | None
    report: ValidationReport
    info: FileInfo | None
    scores: np.ndarray
    labels: np.ndarray
    features: pd.DataFrame | None
    split: np.ndarray | None

    __eq__ = object.__eq__          # arrays/DataFrames have no single truth value
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return (f"ScoreSet({self.name!r}, score={self.score!r}, label={self.label_column!r} "
                f"(positive={self.positive_label!r}), n_rows={self.n_rows}, "
                f"features={self.feature_columns!r}, split={self.split_column!r})")

    @property
    def n_rows(self) -> int:
        """Number of usable rows."""
        return int(self.scores.size)

    def with_score(self, column: str) -> "ScoreSet":
        """The same file with ``column`` as the active score (re-validated)."""
        cols = list(self.score_columns)
        if column not in cols:
            _check_columns(self.raw, [column], "score")
            cols.append(column)
        return _build(self.raw, label=self.label_column, score=column, score_columns=cols,
                      features=list(self.feature_columns), split=self.split_column,
                      positive=self.positive_label, info=self.info, name=self.name)

    def content_key(self) -> str:
        """Stable hex key of the data and the roles, for caches.

        Built from the file's SHA-256 (or a hash of ``raw`` when the table did
        not come from a file), the label/score/feature/split columns and the
        positive label.
        """
        h = hashlib.sha256()
        if self.info is not None:
            h.update(self.info.sha256.encode())
        else:
            h.update(pd.util.hash_pandas_object(self.raw, index=False).to_numpy().tobytes())
            h.update(repr(list(self.raw.columns)).encode())
        h.update(repr((self.label_column, self.score, self.feature_columns, self.split_column,
                       _plain(self.positive_label))).encode())
        return h.hexdigest()[:32]


def _scalar(v):
    """Python scalar from a numpy/pandas scalar, value unchanged (1.0 stays 1.0)."""
    return v.item() if hasattr(v, "item") else v


def _plain(v):
    """Python scalar from a numpy/pandas scalar (integral floats -> int)."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _check_columns(df: pd.DataFrame, names, role: str) -> None:
    missing = [c for c in names if c not in df.columns]
    if missing:
        listed = ", ".join(repr(str(c)) for c in df.columns[:40])
        more = f" (and {df.shape[1] - 40} more)" if df.shape[1] > 40 else ""
        what = "column" if len(missing) == 1 else "columns"
        raise DataError(f"{role} {what} {', '.join(repr(str(c)) for c in missing)} not found; "
                        f"the columns are: {listed}{more}.")


def _fmt_values(vals, k: int = 8) -> str:
    shown = ", ".join(repr(_plain(v)) for v in vals[:k])
    return shown + (f", ... ({len(vals)} in all)" if len(vals) > k else "")


def _choose_positive(values: list, positive, column: str):
    """(positive, negative) raw values from the two label values."""
    if positive is not None:
        for test in (lambda v: v == positive,
                     lambda v: str(_plain(v)) == str(_plain(positive)),
                     lambda v: str(_plain(v)).strip().lower() == str(_plain(positive)).strip().lower(),
                     lambda v: float(v) == float(positive)):
            hits = [v for v in values if _safe(test, v)]
            if len(hits) == 1:
                pos = hits[0]
                return pos, next(v for v in values if v is not pos)
        raise DataError(f"positive label {positive!r} is not one of the values of label column "
                        f"{column!r}: {_fmt_values(values)}.")
    toks = [str(_plain(v)).strip().lower() for v in values]
    for i, t in enumerate(toks):
        if t in _POSITIVE_TOKENS and toks[1 - i] not in _POSITIVE_TOKENS:
            return values[i], values[1 - i]
    for i, t in enumerate(toks):
        if t in _NEGATIVE_TOKENS and toks[1 - i] not in _NEGATIVE_TOKENS:
            return values[1 - i], values[i]
    return values[1], values[0]          # already sorted: the second in sorted order


def _safe(test, v) -> bool:
    try:
        return bool(test(v))
    except Exception:
        return False


def _sorted_values(vals) -> list:
    vals = list(vals)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: str(v))


def _as_numeric(s: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(s):
        raise DataError(f"score column {s.name!r} holds True/False values, not scores.")
    if _is_numeric(s):
        return s.to_numpy(dtype=float, na_value=np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _split_strings(s: pd.Series) -> np.ndarray:
    out = np.empty(len(s), dtype=object)
    for i, v in enumerate(s.tolist()):
        out[i] = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(_plain(v))
    return out


def _build(df: pd.DataFrame, *, label, score, score_columns, features, split, positive,
           info: FileInfo | None, name: str) -> ScoreSet:
    n_read = len(df)
    messages: list[str] = []
    if info is not None:
        if info.format == "parquet":
            messages.append(f"Read {info.name}: Parquet, {n_read:,} rows, {df.shape[1]} columns.")
        else:
            enc = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 with BOM",
                   "latin-1": "Latin-1 (the file is not valid UTF-8)"}.get(info.encoding, info.encoding)
            gz = " (gzip-compressed)" if info.format == "csv.gz" else ""
            messages.append(f"Read {info.name}{gz}: {n_read:,} rows, {df.shape[1]} columns, "
                            f"{_DELIM_NAMES.get(info.delimiter, info.delimiter)}-separated, {enc}.")
    fixed = df.attrs.get("decimal_comma_columns") or []
    if fixed:
        messages.append("Decimal commas read as decimal points in: " + ", ".join(fixed) + ".")
    # --- label -----------------------------------------------------------
    if label is None:
        raise DataError(f"no label column found in {name}: no column has two distinct values. "
                        "Name the column holding the true 0/1 outcome.")
    lab = df[label]
    lab_ok = np.array(lab.notna(), dtype=bool)
    if lab.dtype == object or pd.api.types.is_string_dtype(lab):
        lab_ok &= (lab.astype(str).str.strip() != "").to_numpy()
    values = _sorted_values(pd.unique(lab[lab_ok]))
    if len(values) > 2:
        raise DataError(f"label column {label!r} has {len(values)} distinct values "
                        f"({_fmt_values(values)}); a binary label has exactly two. "
                        "Pick another label column or recode this one.")
    if len(values) < 2:
        only = f" ({_fmt_values(values)})" if values else " (all missing)"
        raise DataError(f"label column {label!r} holds one class only{only}; calibration "
                        "needs both positive and negative rows.")
    pos, neg = _choose_positive(values, positive, label)

    # --- score -------------------------------------------------------------
    raw_s = _as_numeric(df[score])
    finite = np.isfinite(raw_s)
    if not finite.any():
        example = df[score].dropna()
        ex = f" (e.g. {example.iloc[0]!r})" if len(example) else " (all missing)"
        raise DataError(f"score column {score!r} holds no finite numbers{ex}; pick a numeric column.")
    s = raw_s.copy()
    mapped: dict[str, tuple[float, float]] = {}
    lo, hi = float(raw_s[finite].min()), float(raw_s[finite].max())
    if lo < 0.0 or hi > 1.0:
        mapped[score] = (lo, hi)
        s[finite] = expit(raw_s[finite])
        messages.append(f"Score column {score!r} ranges from {lo:.4g} to {hi:.4g}, outside [0, 1]: "
                        "read as a margin or logit and mapped by the logistic function "
                        "1/(1+exp(-s)) (not min-max scaled).")

    # --- rows ----------------------------------------------------------------
    bad_score = ~finite
    bad_label = ~lab_ok & finite
    dropped = {}
    if bad_score.any():
        dropped["missing or non-finite score"] = int(bad_score.sum())
    if bad_label.any():
        dropped["missing label"] = int(bad_label.sum())
    keep = finite & lab_ok
    n_used = int(keep.sum())
    for reason, k in dropped.items():
        messages.append(f"Dropped {k:,} row{'s' if k != 1 else ''} with a {reason}.")
    if n_used < MIN_ROWS:
        why = "; ".join(f"{k} with a {r}" for r, k in dropped.items())
        raise DataError(f"only {n_used} usable rows in {name} (of {n_read} read"
                        f"{'; dropped ' + why if why else ''}); at least {MIN_ROWS} are needed.")
    lab_kept = lab[keep]
    y = (lab_kept == pos).to_numpy(dtype=bool).astype(np.int8)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == n_used:
        only = pos if n_pos else neg
        raise DataError(f"after dropping rows with a missing score, label column {label!r} holds one "
                        f"class only ({_plain(only)!r}); calibration needs both.")
    class_counts = {f"positive ({_plain(pos)})": n_pos, f"negative ({_plain(neg)})": n_used - n_pos}
    messages.append(f"Label column {label!r}: {n_pos:,} positive ({_plain(pos)!r}), "
                    f"{n_used - n_pos:,} negative ({_plain(neg)!r}); {n_used:,} rows used.")
    messages.append(f"Active score column {score!r}"
                    + (f" (other candidates: {', '.join(c for c in score_columns if c != score)})"
                       if len(score_columns) > 1 else "") + ".")
    feats = None
    if features:
        feats = df.loc[keep, features].reset_index(drop=True)
        messages.append(f"Feature columns: {', '.join(features)}.")
    split_arr = None
    if split is not None:
        split_arr = _split_strings(df.loc[keep, split])
        messages.append(f"Split column {split!r}: " + ", ".join(
            f"{k} ({v:,})" for k, v in zip(*np.unique(split_arr.astype(str), return_counts=True))) + ".")

    report = ValidationReport(n_read=n_read, n_used=n_used, dropped=dropped, mapped=mapped,
                              class_counts=class_counts, messages=messages)
    return ScoreSet(name=name, raw=df, label_column=label, positive_label=_scalar(pos),
                    negative_label=_scalar(neg), score_columns=list(score_columns), score=score,
                    feature_columns=list(features), split_column=split, report=report, info=info,
                    scores=np.ascontiguousarray(s[keep], dtype=float), labels=y,
                    features=feats, split=split_arr)


def build_score_set(df: pd.DataFrame, *, score: str | None = None, label: str | None = None,
                    features=None, split=None, positive=None, info: FileInfo | None = None,
                    name: str | None = None) -> ScoreSet:
    """Validate ``df`` and build a :class:`ScoreSet`.

    Parameters
    ----------
    df : DataFrame
        The table as read (kept as ``ScoreSet.raw``).
    score, label : str, optional
        Active score column and label column; guessed when None.
    features : list of str, optional
        Feature columns; guessed when None, none when ``[]``.
    split : str, optional
        Split column (e.g. train/test); guessed when None, none when ``False`` or ``""``.
    positive : optional
        The label value taken as class 1 (matched exactly, then as text,
        then case-insensitively); default: 1, True, yes, pos/positive, else
        the second value in sorted order.
    info : FileInfo, optional
        From :func:`read_table`; used in messages and in ``content_key``.
    name : str, optional
        Display name (default: ``info.name`` or ``"data"``).

    Raises
    ------
    DataError
        A named column is missing; no numeric column; the label has one or
        more than two values; fewer than ``MIN_ROWS`` usable rows; the positive
        label is not a label value.
    """
    name = name or (info.name if info is not None else "data")
    if len(df) == 0:
        raise DataError(f"{name} has a header but no rows.")
    if isinstance(features, str):
        features = [features]
    for col, role in ((score, "score"), (label, "label"), (split or None, "split")):
        if col is not None:
            _check_columns(df, [col], role)
    if features:
        _check_columns(df, list(features), "feature")
    no_split = split is False or split == ""
    # a named score column is never guessed as the label (nor as the split)
    roles = guess_roles(df.drop(columns=[score]) if score is not None and label is None else df,
                        label=label, split=None if no_split else split)
    if no_split:
        roles.split = None
    label = roles.label
    if label is not None and score == label:
        raise DataError(f"column {score!r} cannot be both the score and the label.")
    score_columns = list(roles.scores)
    if score is not None:
        if score not in score_columns:
            score_columns = [c for c in score_columns if c != score]
            score_columns.insert(0, score)
    elif not score_columns:
        kinds = ", ".join(f"{c!r} ({df[c].dtype})" for c in df.columns[:20])
        raise DataError(f"no numeric column in {name} to use as a score (columns: {kinds}). "
                        "A score column must hold numbers: probabilities, margins or logits.")
    else:
        score = score_columns[0]
    if features is None:
        features = [c for c in roles.features if c != score]
    else:
        features = [c for c in features if c not in (score, label)]
    return _build(df, label=label, score=score, score_columns=score_columns, features=list(features),
                  split=roles.split, positive=positive, info=info, name=name)


def load_scores(source, score=None, label=None, features=None, split=None, *, positive=None,
                filename: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> ScoreSet:
    """Read a table and validate it: :func:`read_table` then :func:`build_score_set`.

    >>> ss = load_scores("sample_data/circles_svm.csv", score="linear_svm")   # doctest: +SKIP
    >>> ss.scores, ss.labels                                                  # doctest: +SKIP
    """
    df, info = read_table(source, filename=filename, max_bytes=max_bytes)
    return build_score_set(df, score=score, label=label, features=features, split=split,
                           positive=positive, info=info, name=info.name)
