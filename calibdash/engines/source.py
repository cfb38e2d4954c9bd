"""Where rows live, what their columns mean, and the checks every engine applies to them alike.

A :class:`Source` names Parquet or CSV files, a DuckDB table or query (or a Spark one) and its columns' roles.
Hashed schemes need each row's *position* (its key), so every engine puts a row in the part
:func:`calibdash.evaluation.cells.parts_for` gives in memory: files sorted by path, rows in file order
(``offset[i] + r``); a DuckDB table's ``rowid``; a query's position in ``order_by`` (without it only the
``"column"`` and ``"insample"`` schemes). Every engine gathers :class:`Stats` for :func:`check_stats`, so all
refuse the same rows with the same message. Unlike :func:`calibdash.data.load_scores`, bad rows are not dropped:
that would shift the positions, and so the parts, of the rows after them."""
from __future__ import annotations

import contextlib
import glob as _glob
import gzip
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..evaluation.cells import ScoreCells
from ..core.margins import TRANSFORMS
from ..core.validation import choose_positive, plain_value
from ..core.errors import DataError, SettingsError
from ..evaluation.scheme import Scheme, column_parts

__all__ = []

#: ``transform`` spellings: the probability / margin names map to :data:`calibdash.core.margins.TRANSFORMS`.
TRANSFORM_ALIASES = {None: None, "auto": None, "identity": "identity", "probability": "identity",
                     "logistic": "logistic", "margin": "logistic", "logit": "logistic"}
#: Added to the scheme's seed for the row sample's hash, so the sample is not the held-out part.
SAMPLE_SALT = 0x5A3C


@dataclass(frozen=True)
class Source:
    """Rows where they live, and the roles of their columns.

    Parameters
    ----------
    path : str, Path or sequence of them, optional
        A Parquet or CSV file, a glob or a list of files and globs; files are taken in sorted path order.
    format : {"parquet", "csv"}, optional
        Default: from the files' suffix (``.parquet``/``.pq`` or ``.csv``).
    database, table, query, order_by : str, optional
        A DuckDB database file holding ``table`` (or queried by ``query``); a DuckDB or Spark catalog table; a SQL
        query (DuckDB, or Spark SQL); for ``query`` (and Spark tables) the ORDER BY list that defines positions.
    score, label, split : str
        The score and label columns; the split column, for ``Scheme(kind="column")`` (optional).
    features : sequence of str
        Feature columns (coded into the cells on request, kept in a row sample).
    positive : optional
        The positive class's label value; default as :func:`calibdash.data.load_scores` (1, True, yes, pos, ...
        else the second value in sorted order).
    transform : {None, "probability", "margin"}, default None
        None: map scores by the logistic function iff a finite score lies outside [0, 1]; ``"margin"`` (or
        ``"logistic"``): always; ``"probability"`` (or ``"identity"``): never, a score outside [0, 1] is an error.
    delimiter : str, optional
        CSV delimiter; default sniffed from the first file's first 64 KB and passed to every engine.
    exact_paths : bool, default False
        ``path`` names existing files read as named, never expanded as patterns (files already resolved by
        :meth:`calibdash.data.guard.DataRoot.resolve_glob`).
    """

    path: Any = None
    format: str | None = None
    database: str | None = None
    table: str | None = None
    query: str | None = None
    order_by: str | None = None
    score: str = "score"
    label: str = "label"
    split: str | None = None
    features: tuple = field(default=())
    positive: Any = None
    transform: str | None = None
    delimiter: str | None = None
    exact_paths: bool = False

    def __post_init__(self):
        given = [k for k in ("path", "table", "query") if getattr(self, k) not in (None, "", ())]
        if self.path not in (None, "", ()) and len(given) > 1:
            raise SettingsError(f"a source is files, a table or a query, not several ({', '.join(given)}).")
        if not given:
            raise SettingsError("a source needs a path (files), a table or a query.")
        if self.table and self.query:
            raise SettingsError("a source is a table or a query, not both.")
        if self.transform not in TRANSFORM_ALIASES:
            raise SettingsError(f"transform must be one of probability, margin (or {', '.join(TRANSFORMS)}); "
                                f"got {self.transform!r}.")
        feats = (self.features,) if isinstance(self.features, str) else tuple(self.features or ())
        object.__setattr__(self, "features", tuple(str(f) for f in feats))
        if self.format is not None and self.format not in ("parquet", "csv"):
            raise SettingsError(f"format must be 'parquet' or 'csv', got {self.format!r}.")
        roles = [self.score, self.label] + ([self.split] if self.split else []) + list(self.features)
        if len(set(roles)) != len(roles):
            raise SettingsError(f"a column plays two roles: score {self.score!r}, label {self.label!r}, "
                                f"split {self.split!r}, features {list(self.features)}.")

    @property
    def kind(self) -> str:
        """``"files"``, ``"table"`` or ``"query"``."""
        if self.path not in (None, "", ()):
            return "files"
        return "table" if self.table else "query"

    @property
    def transform_name(self) -> str | None:
        """The transform as :func:`calibdash.core.margins.to_probabilities` names it (None: decide)."""
        return TRANSFORM_ALIASES[self.transform]

    def columns(self, features: Sequence[str] | None = None) -> list[str]:
        """The columns the engines read: score, label, split (if any) and features."""
        feats = self.features if features is None else tuple(features)
        cols = [self.score, self.label] + ([self.split] if self.split else [])
        return cols + [f for f in feats if f not in cols]

    def files(self) -> list[str]:
        """The files, absolute and sorted by path (the order of the row keys): patterns expanded once, here
        (never with ``exact_paths``); the engines read these names literally. DataError when none matches."""
        if self.kind != "files":
            return []
        items = [self.path] if isinstance(self.path, (str, Path)) else list(self.path)
        found: set[str] = set()
        for item in items:
            item = str(item) if self.exact_paths else os.path.expanduser(str(item))
            hits = _glob.glob(item, recursive=True) if _glob.has_magic(item) and not self.exact_paths else (
                [item] if os.path.isfile(item) else [])
            if not hits:
                raise DataError(f"no file matches {item!r}.")
            found.update(os.path.abspath(h) for h in hits if os.path.isfile(h))
        if not found:
            raise DataError(f"no file matches {self.path!r}.")
        return sorted(found)

    def file_format(self) -> str:
        """``"parquet"`` or ``"csv"`` (the ``format`` given, else the first file's suffix)."""
        if self.format:
            return self.format
        first = self.files()[0].lower()
        if first.endswith((".parquet", ".pq", ".parq")):
            return "parquet"
        if first.endswith((".csv", ".tsv", ".txt", ".csv.gz")):
            return "csv"
        raise SettingsError(f"cannot tell the format of {first!r} from its name; give format='parquet' or 'csv'.")

    def csv_delimiter(self) -> str:
        """The CSV delimiter: given, or sniffed from the first file."""
        if self.delimiter:
            return self.delimiter
        from ..data.sniff import sniff_delimiter

        first = self.files()[0]
        with (gzip.open if first.lower().endswith(".gz") else open)(first, "rb") as fh:
            head = fh.read(64 * 1024)
        return sniff_delimiter(head.decode("utf-8", errors="replace"))

    def file_offsets(self) -> list[int]:
        """Key of each Parquet file's first row: the rows of the files before it (from the files' metadata)."""
        import pyarrow.parquet as pq

        counts = [int(pq.ParquetFile(f).metadata.num_rows) for f in self.files()]
        return [0] + list(np.cumsum(counts[:-1]).astype(int).tolist()) if counts else []

    def needs_keys(self, scheme: Scheme | None) -> bool:
        """Whether ``scheme`` hashes row keys (k-fold or split)."""
        return scheme is not None and scheme.kind in ("kfold", "split")

    def check_keys(self, scheme: Scheme | None, table_positions: bool = True, engine: str = "") -> None:
        """Refuse a hashed scheme on rows without positions: a query, or a table of an engine whose tables have
        none (``table_positions`` False; ``engine`` its label), without ``order_by``."""
        no_position = self.kind == "query" or (not table_positions and self.kind == "table")
        if self.needs_keys(scheme) and no_position and not self.order_by:
            what = "a query's" if self.kind == "query" else f"a {engine} table's"
            raise SettingsError(f"{what} rows have no position to hash for a {scheme.kind} scheme: give "
                                "order_by (columns making the order unique), or use the split column.")

    def describe(self) -> str:
        """One line naming the rows."""
        if self.kind == "files":
            files = self.files()
            return files[0] if len(files) == 1 else f"{len(files)} files ({files[0]}, ...)"
        if self.kind == "table":
            return f"table {self.table}" + (f" of {self.database}" if self.database else "")
        return "query " + " ".join(self.query.split())[:60]


def checked_scheme(source: Source, scheme: Scheme | None, table_positions: bool = True, engine: str = "") -> Scheme:
    """``scheme`` (default every row in part 0) after the setting checks of
    :func:`calibdash.evaluation.cells.parts_for` and :meth:`Source.check_keys`."""
    scheme = scheme or Scheme(kind="insample")
    if scheme.kind not in ("kfold", "split", "column", "insample"):
        raise SettingsError(f"unknown scheme kind {scheme.kind!r}.")
    if scheme.kind == "kfold" and int(scheme.n_folds) < 2:
        raise SettingsError(f"k-fold needs at least 2 folds, got {scheme.n_folds}.")
    if scheme.kind == "split" and not 0 < float(scheme.test_size) < 1:
        raise SettingsError(f"test_size must lie strictly between 0 and 1, got {scheme.test_size}.")
    source.check_keys(scheme, table_positions, engine)
    return scheme


def column_train_values(values: Sequence, scheme: Scheme) -> list:
    """Of a split column's distinct raw ``values``, those that mark training rows (part 0): the rule of
    :func:`calibdash.evaluation.scheme.column_parts`, applied to distinct values for ``split IN (...)``, each read
    as text as :class:`calibdash.data.ScoreSet` holds it (missing: ``""``).

    Raises
    ------
    DataError
        As :func:`calibdash.evaluation.holdout.split_indices` (values naming no part, no training value).
    """
    vals = list(values)
    missing = [v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA for v in vals]
    texts = np.array(["" if m else str(plain_value(v)) for v, m in zip(vals, missing)], dtype=object)
    mask = column_parts(texts, scheme.train_value)
    train = [v for v, m in zip(vals, mask) if m]
    if not train:
        raise DataError("no row of the split column marks a training part.")
    if len(train) == len(vals):
        raise DataError("every row of the split column marks a training part; nothing is held out.")
    return train


@dataclass
class Stats:
    """What an engine's first pass over the rows finds (the input of :func:`check_stats`).

    ``n_bad`` counts missing or non-finite scores; ``lo``/``hi`` are the finite scores' extremes and
    ``n_outside`` how many lie outside [0, 1]; ``label_lo``/``label_hi`` the smallest and largest label values
    and ``n_label_null`` the missing labels; ``distinct`` an estimate (or count) of distinct scores.
    """

    n_rows: int
    n_bad: int
    lo: float | None
    hi: float | None
    n_outside: int
    n_label_null: int
    label_lo: Any
    label_hi: Any
    distinct: float = 0.0

    @classmethod
    def of(cls, got) -> "Stats":
        """The statistics of a SQL engine's first scan, its first nine values in the order of the fields."""
        return cls(n_rows=int(got[0]), n_bad=int(got[1]), lo=got[2], hi=got[3], n_outside=int(got[4]),
                   n_label_null=int(got[5]), label_lo=got[6], label_hi=got[7], distinct=float(got[8] or 0))


def check_stats(st: Stats, source: Source) -> tuple[bool, Any]:
    """Refuse the rows as the in-memory path would, and decide the transform and the positive label.

    Returns
    -------
    (mapped, positive)
        Whether scores are mapped by the logistic function, and the raw label value of the positive class.

    Raises
    ------
    DataError
        No rows; missing or non-finite scores; scores outside [0, 1] with ``transform="probability"``; missing
        labels; one label value.
    """
    name, score, label = source.describe(), source.score, source.label
    if st.n_rows == 0:
        raise DataError(f"{name} holds no rows.")
    if st.n_bad:
        raise DataError(f"score column {score!r} has {st.n_bad:,} missing or non-finite values among "
                        f"{st.n_rows:,} rows; filter them out first (rows where they live are not dropped, "
                        "which would move the rows after them to other folds).")
    if st.n_label_null:
        raise DataError(f"label column {label!r} has {st.n_label_null:,} missing values among {st.n_rows:,} rows; "
                        "filter them out first.")
    transform = source.transform_name
    if transform == "identity" and st.n_outside:
        raise DataError(f"score column {score!r} has {st.n_outside:,} of {st.n_rows:,} values outside [0, 1] "
                        "but the source says they are probabilities; "
                        "say transform='margin' to map them by the logistic function.")
    mapped = transform == "logistic" or (transform is None and st.n_outside > 0)
    lo, hi = plain_value(st.label_lo), plain_value(st.label_hi)
    if lo == hi:
        raise DataError(f"label column {label!r} holds one class only; calibration needs both.")
    positive, _ = choose_positive([st.label_lo, st.label_hi], source.positive, column=label)
    return mapped, positive


def check_other_labels(label: str, n_other: int) -> None:
    """Refuse a label column with more than two values. Like every message about a source's rows (which a
    query may compute from anything), it names the column and counts rows but shows no value."""
    if n_other:
        raise DataError(f"label column {label!r} has more than two values: {n_other:,} rows hold values other "
                        "than its smallest and its largest; a binary label has exactly two.")


def unsure(estimate, limit: int) -> bool:
    """Whether a distinct-value ``estimate`` lies within a factor 4 of ``limit``, so that an exact count decides
    (HyperLogLog errs by a few per cent, far from a factor 4)."""
    return limit / 4 < estimate <= 4 * limit


def _code_order(col: pd.Series) -> np.ndarray:
    """Sort codes of a feature column of the cells: categories' codes (missing last) or bin codes."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        c = col.cat.codes.to_numpy().astype(np.int64)
        return np.where(c < 0, np.iinfo(np.int64).max, c)
    x = col.to_numpy(dtype=float, na_value=np.nan)
    return np.where(np.isnan(x), np.inf, x)


def feature_frame(raw: dict, kinds: dict, edges: dict) -> pd.DataFrame:
    """The cells' feature columns from each cell's raw value (categorical) or bin code (numeric).

    A categorical column becomes a ``category`` whose categories are its distinct values sorted (codes are the
    values' dense ranks, missing -1); a numeric one holds the bin code (float, NaN where missing) and
    ``attrs["edges"][name]`` the inner bin edges.
    """
    out = {}
    for name, values in raw.items():
        if kinds[name] == "categorical":
            s = pd.Series(values)
            if s.dtype == object:
                s = s.where(s.notna(), None)
            cats = pd.Index(pd.unique(s.dropna()))
            with contextlib.suppress(TypeError):          # values of mixed types stay in order of appearance
                cats = cats.sort_values()
            out[name] = pd.Categorical(s, categories=cats)
        else:
            out[name] = pd.to_numeric(pd.Series(values), errors="coerce").astype(float).to_numpy()
    df = pd.DataFrame(out)
    df.attrs["edges"] = {k: np.asarray(v, dtype=float) for k, v in edges.items()}
    df.attrs["kinds"] = dict(kinds)
    return df


def assemble_cells(part, code, n, n_pos, score_sum, *, exact: bool, features: pd.DataFrame | None = None
                   ) -> ScoreCells:
    """A :class:`~calibdash.evaluation.cells.ScoreCells` from grouped rows, in the order the in-memory path gives.

    ``code`` is the exact score (``exact``) or the grid step; cells are sorted by part, code, then the features'
    codes (missing last). The cell's score is the code (exact) or ``score_sum / n`` (grid), as
    :meth:`calibdash.evaluation.cells.CellAccumulator.result`.
    """
    part = np.asarray(part, dtype=np.int64)
    code = np.asarray(code, dtype=float)
    keys = [] if features is None else [_code_order(features[c]) for c in reversed(list(features.columns))]
    order = np.lexsort(tuple(keys) + (code, part))
    n = np.asarray(n, dtype=np.int64)[order]
    ssum = np.asarray(score_sum, dtype=float)[order]
    code = code[order]
    feats = None if features is None else features.iloc[order].reset_index(drop=True)
    if feats is not None:
        feats.attrs = dict(features.attrs)
    score = code.copy() if exact else ssum / n
    return ScoreCells(score=score, n=n, n_pos=np.asarray(n_pos, dtype=np.int64)[order], score_sum=ssum,
                      part=part[order].astype(np.int16), exact=bool(exact), n_rows=int(n.sum()), features=feats)


def quantile_levels(bins: int) -> list[float]:
    """Inner quantile levels ``1/B, ..., (B-1)/B`` of ``B`` bins (as :mod:`calibdash.calibrators.mbct`)."""
    if int(bins) < 2:
        raise SettingsError(f"feature_bins must be at least 2, got {bins}.")
    return np.linspace(0.0, 1.0, int(bins) + 1)[1:-1].tolist()
