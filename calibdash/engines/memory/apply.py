"""Apply a saved calibrator in memory: ``predict`` on the rows in pandas, the reference for the other engines."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.margins import to_probabilities
from ..apply import GUESS_ROWS, feature_names, predict_batch, score_column_of, where_of

__all__ = []


def apply(cal, fitted_on: dict, files: list, fmt: str, out_path, score_column, form: str, *, threads=None) -> tuple:
    """Read every row into pandas, call ``predict`` and write one Parquet file (``form`` and ``threads`` are not
    used). Returns what :func:`calibdash.engines.apply.apply_model` reports."""
    from ...data import read_table

    frames = [read_table(f)[0] for f in files]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    where = where_of(files)
    score = score_column_of(list(df.columns), score_column, fitted_on, lambda: df.head(GUESS_ROWS), where)
    values = pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    s, mapped = to_probabilities(values, transform=fitted_on.get("score_transform"), column=score)
    feats = feature_names(cal, fitted_on, list(df.columns), where)
    out = df.copy()
    replaced = "calibrated" in out.columns
    out["calibrated"] = predict_batch(cal, s, df[feats] if feats else None)
    out.to_parquet(out_path, index=False)
    return score, len(df), int(np.isfinite(s).sum()), "", "predict", mapped, replaced
