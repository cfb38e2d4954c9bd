"""A benchmark's data sets from tables and files: one data set per score column.

Several models scored in one file are several data sets; a folder stands
for its .csv, .csv.gz and .parquet files. Reading and building each table
is :mod:`calibdash.data`'s job; this module only decides what a data set
is for a benchmark.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..data import ScoreSet, build_score_set, read_table
from ..data.roles import named_classes
from ..errors import DataError

__all__ = ["datasets_from_table", "load_datasets", "expand_paths", "unique_name", "file_datasets"]

_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".gz", ".parquet", ".pq")


def datasets_from_table(df: pd.DataFrame, info=None, *, name: str | None = None, label: str | None = None,
                        scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """One ScoreSet per score column of a table (several models in one file are several data sets).

    Parameters
    ----------
    df : DataFrame
        A table as :func:`calibdash.data.read_table` returns it.
    info : FileInfo, optional
    name : str, optional
        Base name (default: the file's name); with several score columns the
        data sets are named ``"<name> · <column>"``.
    label : str, optional
        Label column (default: guessed).
    scores : sequence of str, optional
        Score columns to use (default: all guessed score columns but those named after the negative
        class, :func:`calibdash.data.roles.named_classes`).

    Raises
    ------
    DataError
        As :func:`calibdash.data.build_score_set`.
    """
    base = name or (info.name if info is not None else "data")
    cols = list(scores) if scores else None
    if cols is None:
        first = build_score_set(df, label=label, info=info, name=base)
        pos = first.positive_label          # a negative class's column (p_0 beside p_1) is no model's score
        named = named_classes(first.score_columns, [pos, first.negative_label])
        cols = [c for c in first.score_columns if named.get(c, pos) == pos]
        label = first.label_column
    out = {}
    for col in cols:
        key = base if len(cols) == 1 else f"{base} · {col}"
        out[key] = build_score_set(df, score=col, label=label, info=info, name=base)
    return out


def expand_paths(paths: Sequence[str]) -> list[Path]:
    """The files ``paths`` name: each file as is, each folder's .csv/.tsv/.txt/.csv.gz/.parquet files (sorted).

    Raises
    ------
    DataError
        A folder without such a file.
    """
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(f for f in path.iterdir() if f.is_file() and f.name.lower().endswith(_FILE_SUFFIXES))
            if not found:
                raise DataError(f"folder {path} holds no .csv, .csv.gz or .parquet file.")
            files.extend(found)
        else:
            files.append(path)
    return files


def load_datasets(paths: Sequence[str], label: str | None = None,
                  scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """Data sets from files and folders (each folder's .csv/.csv.gz/.parquet files), one per score column.

    Parameters
    ----------
    paths : sequence of str
        Files and folders.
    label : str, optional
        Label column of every file (default: guessed per file).
    scores : sequence of str, optional
        Score columns to use where a file has them (default: every guessed
        score column).

    Returns
    -------
    dict
        Data set name -> ScoreSet; a name met twice gets " (2)", " (3)", ...

    Raises
    ------
    DataError
        A folder without tables, a file without any of ``scores``, or a file
        :func:`calibdash.data.read_table` or
        :func:`calibdash.data.build_score_set` refuses.
    """
    out: dict[str, ScoreSet] = {}
    for path in expand_paths(paths):
        df, info = read_table(path)
        for key, ss in file_datasets(df, info, label, scores).items():
            out[unique_name(key, out)] = ss
    return out


def file_datasets(df: pd.DataFrame, info, label: str | None = None,
                  scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """A read file's data sets: those of ``scores`` it has (DataError when none), else every guessed one."""
    use = None
    if scores:
        use = [c for c in scores if c in df.columns]
        if not use:
            raise DataError(f"{info.name} has none of the score columns {', '.join(scores)}.")
    return datasets_from_table(df, info, label=label, scores=use)


def unique_name(key: str, taken) -> str:
    """``key``, or ``"key (2)"``, ``"key (3)"``, ... the first not in ``taken``."""
    unique, i = key, 2
    while unique in taken:
        unique, i = f"{key} ({i})", i + 1
    return unique
