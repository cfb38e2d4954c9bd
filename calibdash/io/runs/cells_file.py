"""A run's score cells in one Parquet file (``cells.parquet``): what a run of a large source holds instead of rows.

Each entry (a :class:`~calibdash.evaluation.cells.ScoreCells` or a :class:`~calibdash.monitoring.keyed.KeyedCells`,
by a name) is a block of the file's rows, one per cell: ``entry``, ``score``, ``n``, ``n_pos``, ``score_sum``,
``part`` and ``key`` (the keyed cells' key; 0 for plain cells), in their own dtypes, so the arrays read back are the
ones written, bit for bit. What is not an array (exact or grid, rows aggregated, a keyed entry's key labels, period
starts, notes) is returned by :func:`write_cells` for ``run.json`` and given back to :func:`read_cells`.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.errors import DataError
from ...evaluation.cells import ScoreCells
from ...monitoring.keyed import Key, KeyedCells

__all__ = ["write_cells", "read_cells"]

_ARRAYS = {"score": np.float64, "n": np.int64, "n_pos": np.int64, "score_sum": np.float64, "part": np.int16}


def write_cells(path: Path, entries: dict) -> dict:
    """Write ``entries`` (name -> ScoreCells or KeyedCells) to the Parquet file ``path``; return each entry's
    description (its kind and what is not an array), JSON-ready."""
    frames, described = [], {}
    for name, value in entries.items():
        keyed = isinstance(value, KeyedCells)
        cells = value.cells if keyed else value
        if not isinstance(cells, ScoreCells) or cells.features is not None:
            raise DataError(f"a run keeps score cells without feature columns; {name!r} is not such cells.")
        frame = pd.DataFrame({col: getattr(cells, col).astype(dtype) for col, dtype in _ARRAYS.items()})
        frame["key"] = value.key.astype(np.int32) if keyed else np.zeros(len(cells), np.int32)
        frames.append(frame.assign(entry=str(name)))
        described[str(name)] = {"type": "keyed" if keyed else "cells", "exact": bool(cells.exact),
                                "n_rows": int(cells.n_rows)}
        if keyed:
            described[str(name)].update(
                labels=list(value.labels), spec=dataclasses.asdict(value.spec), notes=list(value.notes),
                starts=[pd.Timestamp(s).isoformat() for s in value.starts], pooled=list(value.pooled),
                n_left_out=int(value.n_left_out))
    pd.concat(frames, ignore_index=True).to_parquet(path, index=False)
    return described


def read_cells(path: Path, described: dict) -> dict:
    """The entries :func:`write_cells` wrote to ``path``, by name."""
    table = pd.read_parquet(path)
    out = {}
    for name, d in described.items():
        block = table[table["entry"] == name]
        cells = ScoreCells(**{col: block[col].to_numpy(dtype) for col, dtype in _ARRAYS.items()},
                           exact=d["exact"], n_rows=d["n_rows"])
        out[name] = cells if d["type"] == "cells" else KeyedCells(
            cells=cells, key=block["key"].to_numpy(np.int32), labels=tuple(d["labels"]), spec=Key(**d["spec"]),
            starts=tuple(pd.Timestamp(s) for s in d["starts"]), notes=tuple(d["notes"]), pooled=tuple(d["pooled"]),
            n_left_out=d["n_left_out"])
    return out
