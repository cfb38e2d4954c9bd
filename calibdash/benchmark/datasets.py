"""A benchmark's data sets from tables and files: one per score column of a binary table (several models scored
in one file are several data sets), one per K-class table; a folder stands for its .csv, .csv.gz and .parquet
files."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..data import ClassSet, ScoreSet, build_class_set, build_score_set, is_multiclass, read_table
from ..data.roles import named_classes
from ..core.errors import DataError, SettingsError

__all__ = ["unique_name"]

_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".gz", ".parquet", ".pq")


def datasets_from_table(df: pd.DataFrame, info=None, *, name: str | None = None, label: str | None = None,
                        scores: Sequence[str] | None = None) -> dict[str, ScoreSet]:
    """One ScoreSet per score column of a table (as :func:`calibdash.data.read_table` returns it; DataError as
    :func:`calibdash.data.build_score_set`).

    ``name``: the base name (default: the file's); with several score columns the data sets are named
    ``"<name> · <column>"``. ``label``: the label column (default: guessed). ``scores``: the score columns (default:
    every guessed one but those named after the negative class, :func:`calibdash.data.roles.named_classes`).
    """
    base = name or (info.name if info is not None else "data")
    cols = list(scores) if scores else None
    if cols is None:
        first = build_score_set(df, label=label, info=info, name=base)
        pos = first.positive_label          # a negative class's column (p_0 beside p_1) is no model's score
        named = named_classes(first.score_columns, [pos, first.negative_label])
        cols = [c for c in first.score_columns if named.get(c, pos) == pos]
        label = first.label_column
    return {(base if len(cols) == 1 else f"{base} · {col}"):
            build_score_set(df, score=col, label=label, info=info, name=base) for col in cols}


def expand_paths(paths: Sequence[str]) -> list[Path]:
    """The files ``paths`` name: each file as is, each folder's table files, sorted (DataError: a folder without
    one)."""
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


def unique_name(key: str, taken) -> str:
    """``key``, or ``"key (2)"``, ``"key (3)"``, ... the first not in ``taken``."""
    unique, i = key, 2
    while unique in taken:
        unique, i = f"{key} ({i})", i + 1
    return unique


def class_datasets_from_table(df: pd.DataFrame, info=None, *, name: str | None = None,
                              label: str | None = None) -> dict[str, ClassSet]:
    """The K-class data set of a table, as ``{name: ClassSet}`` (:func:`calibdash.data.build_class_set`, whose
    DataError it raises)."""
    base = name or (info.name if info is not None else "data")
    return {base: build_class_set(df, label=label, info=info, name=base)}


def load_benchmark_datasets(paths: Sequence[str], label: str | None = None,
                            scores: Sequence[str] | None = None) -> tuple[str, dict]:
    """Data sets from files and folders (each folder's .csv/.csv.gz/.parquet files), binary or K-class
    (:func:`calibdash.data.is_multiclass`): one :class:`~calibdash.data.ClassSet` per K-class table, one ScoreSet
    per score column (of ``scores`` where given) of a binary one (:func:`datasets_from_table`).

    Returns
    -------
    (kind, datasets)
        ``"multiclass"`` or ``"binary"``, and name -> data set (a name met twice gets " (2)", ...).

    Raises
    ------
    DataError
        A folder without tables, an unreadable table, or binary and K-class tables mixed (named).
    SettingsError
        ``scores`` given for K-class tables (their class columns are found, not named).
    """
    tables = []
    for path in expand_paths(paths):
        df, info = read_table(path)
        tables.append((df, info, is_multiclass(df, label)))
    kinds = {multi for *_, multi in tables}
    if len(kinds) > 1:
        multi = next(info.name for _, info, m in tables if m)
        binary = next(info.name for _, info, m in tables if not m)
        raise DataError(f"binary and K-class tables cannot be benchmarked together ({binary} is binary, {multi} "
                        "has K >= 3 classes): give one kind.")
    kind = "multiclass" if kinds == {True} else "binary"
    if kind == "multiclass" and scores:
        raise SettingsError("--score names a binary score column; K-class tables have one column per class, "
                            "found by their prefix.")
    out: dict = {}
    for df, info, _ in tables:
        use = [c for c in scores if c in df.columns] if scores else None     # a file's data sets: those it has
        if scores and not use:
            raise DataError(f"{info.name} has none of the score columns {', '.join(scores)}.")
        found = (class_datasets_from_table(df, info, label=label) if kind == "multiclass"
                 else datasets_from_table(df, info, label=label, scores=use))
        for key, data in found.items():
            out[unique_name(key, out)] = data
    return kind, out

