"""The in-memory engine, the reference the others are tested against: rows read into numpy, then
:func:`calibdash.evaluation.cells.aggregate` (with features: one sort by part, score code and feature codes).

CSV is read by pandas with correct decimal rounding, as DuckDB and Spark read it (``float_precision=
"round_trip"`` before pandas 3); DuckDB tables and queries through DuckDB. Rows are checked as the SQL engines
check them (:class:`~calibdash.engines.source.Stats`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...evaluation import cells as _cells
from ...evaluation.cells import MAX_EXACT, grid_code
from ...core.margins import to_probabilities
from ...core.errors import DataError, EnvironmentProblem
from ...evaluation.scheme import Scheme
from ..source import (SAMPLE_SALT, Source, Stats, assemble_cells, check_other_labels, check_stats, checked_scheme,
                      column_train_values, feature_frame, quantile_levels)

__all__ = []


def read_rows(source: Source, features: Sequence[str] = (), need_keys: bool = True) -> tuple:
    """The needed columns of every row, and the rows' keys (None when the keys are the positions 0..n-1)."""
    cols = source.columns(features)
    try:
        if source.kind == "files":
            files = source.files()
            if source.file_format() == "parquet":
                import pyarrow.parquet as pq

                parts = [pq.read_table(f, columns=cols).to_pandas() for f in files]
            else:
                delim = source.csv_delimiter()
                exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
                parts = [pd.read_csv(f, sep=delim, usecols=cols, **exact) for f in files]
            df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
            return df[cols], None
        import duckdb

        from ..duckdb.rows import attach, ident

        con = duckdb.connect()
        try:
            attach(con.execute, source)
            names = ", ".join(ident(c) for c in cols)
            if source.kind == "table":
                df = con.execute(f"SELECT rowid AS __key, {names} FROM {source.table} ORDER BY rowid").df()
                return df[cols], df["__key"].to_numpy(dtype=np.int64)
            order = f" ORDER BY {source.order_by}" if source.order_by and need_keys else ""
            df = con.execute(f"SELECT {names} FROM ({source.query}) AS __cd_q{order}").df()
            return df[cols], None
        finally:
            con.close()
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise EnvironmentProblem(f"could not read {source.describe()}: {exc}") from None


def parts(n_rows: int, keys: np.ndarray | None, scheme: Scheme, split: pd.Series | None) -> np.ndarray:
    """Each row's part under ``scheme`` (as the SQL engines compute it)."""
    if scheme.kind == "insample":
        return np.zeros(n_rows, dtype=np.int16)
    if scheme.kind == "column":
        if split is None:
            raise DataError("this data set has no split column; choose a random split or k-fold instead.")
        distinct = list(pd.unique(split))
        train = column_train_values(distinct, scheme)
        is_train = split.isin([v for v in train if v is not None and not (isinstance(v, float) and np.isnan(v))])
        if any(v is None or (isinstance(v, float) and np.isnan(v)) for v in train):
            is_train |= split.isna()
        return _cells.parts_for(n_rows, "column", split_train=is_train.to_numpy())
    if keys is None:
        return _cells.parts_for(n_rows, scheme.kind, seed=scheme.seed, k=scheme.n_folds, test_size=scheme.test_size)
    h = _cells.row_hash(keys, scheme.seed)
    if scheme.kind == "kfold":
        return (h % np.uint64(int(scheme.n_folds))).astype(np.int16)
    return (h < np.uint64(int(float(scheme.test_size) * 2 ** 32))).astype(np.int16)


def prepared_rows(source: Source, scheme: Scheme, columns: Sequence[str] = (), need_keys: bool = False):
    """The rows read and checked as every engine checks them: ``(frame, keys, scores, labels, parts)``: the
    source's columns and ``columns``, the keys (None: positions), probabilities, 0/1 labels, parts."""
    scheme = checked_scheme(source, scheme)
    df, keys = read_rows(source, list(columns), need_keys)
    raw = pd.to_numeric(df[source.score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    label = df[source.label]
    finite, lab_null = np.isfinite(raw), label.isna().to_numpy()
    labs, fin = label[~lab_null], raw[finite]
    st = Stats(n_rows=int(raw.size), n_bad=int((~finite).sum()), lo=float(fin.min()) if fin.size else None,
               hi=float(fin.max()) if fin.size else None, n_outside=int(((fin < 0) | (fin > 1)).sum()),
               n_label_null=int(lab_null.sum()), label_lo=labs.min() if labs.size else None,
               label_hi=labs.max() if labs.size else None)
    mapped, positive = check_stats(st, source)
    s = to_probabilities(raw, "logistic" if mapped else "identity", column=source.score)[0]
    check_other_labels(source.label, int((~label.isin([st.label_lo, st.label_hi])).sum()))
    y = (label == positive).to_numpy(dtype=bool).astype(np.int8)
    part = parts(s.size, keys, scheme, df[source.split] if source.split else None)
    return df, keys, s, y, part


def _grouped(part, s, y, exact, fcodes) -> tuple:
    """Group rows by (part, score code, feature codes): starts of groups in sorted order and the sums."""
    code = s if exact else grid_code(s)
    order = np.lexsort(tuple(reversed(fcodes)) + (code, part))
    keys = [part[order], code[order]] + [c[order] for c in fcodes]
    change = np.zeros(order.size, dtype=bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    start = np.flatnonzero(change)
    n = np.diff(np.r_[start, order.size])
    return (part[order][start], code[order][start], [c[order][start] for c in fcodes], n,
            np.add.reduceat(y[order].astype(np.int64), start), np.add.reduceat(s[order], start))


def aggregate(source: Source, scheme: Scheme | None = None, *, max_exact: int = MAX_EXACT,
              memory_limit: str = "1GB", threads: int | None = None, features: Sequence[str] | None = None,
              feature_bins: int = 16, sample_rows: int = 0, seed: int = 0, on_stage=None):
    """Aggregate a source's rows into score cells in memory (the signature of
    :func:`calibdash.engines.duckdb.rows.aggregate`; ``memory_limit`` and ``threads`` are not used)."""
    scheme = scheme or Scheme(kind="insample")
    feats = list(source.features if features is None else features)
    stage = on_stage or (lambda name: None)
    stage("reading rows")
    df, keys, s, y, part = prepared_rows(source, scheme, feats, source.needs_keys(scheme) or sample_rows > 0)
    stage("aggregation")
    if not feats:
        out = _cells.aggregate(s, y, part, max_exact=max_exact)
    else:
        levels = quantile_levels(feature_bins)
        kinds, edges, fcodes, uniques = {}, {}, [], {}
        for f in feats:
            col = df[f]
            numeric = pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype)
            kinds[f] = "numeric" if numeric else "categorical"
            if kinds[f] == "numeric":
                x = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                fin = x[~np.isnan(x)]
                edges[f] = np.unique(np.quantile(fin, levels)) if fin.size else np.empty(0)
                c = np.searchsorted(edges[f], x, side="right").astype(np.int64)
                c[np.isnan(x)] = -1
            else:
                c, uniques[f] = pd.factorize(col, sort=True)
                c = c.astype(np.int64)
            fcodes.append(np.where(c < 0, np.iinfo(np.int64).max, c))
        exact = np.unique(s).size <= int(max_exact)
        g_part, g_code, g_f, n, n_pos, ssum = _grouped(part.astype(np.int64), s, y, exact, fcodes)
        raw_f = {}
        for f, c in zip(feats, g_f):
            missing = c == np.iinfo(np.int64).max
            if kinds[f] == "numeric":
                raw_f[f] = np.where(missing, np.nan, c.astype(float))
            else:
                vals = np.asarray(uniques[f], dtype=object)
                raw_f[f] = np.array([None if m else vals[i] for i, m in zip(c, missing)], dtype=object)
        out = assemble_cells(g_part, g_code, n, n_pos, ssum, exact=exact, features=feature_frame(raw_f, kinds, edges))
    if sample_rows <= 0:
        return out
    k = np.arange(s.size, dtype=np.int64) if keys is None else keys
    h = _cells.row_hash(k, int(seed) + SAMPLE_SALT)
    take = np.lexsort((k, h))[:int(sample_rows)]
    take = take[np.argsort(k[take])]
    sample = pd.DataFrame({"key": k[take], "score": s[take], "part": part[take].astype(np.int16), "label": y[take],
                           **{f: df[f].to_numpy()[take] for f in feats}})
    return out, sample[["key", "score", "label", "part"] + feats]
