"""Reading user tables and turning them into validated score sets.

:func:`read_table` reads bytes (a path, raw bytes or an upload) into a ``pandas.DataFrame`` and a :class:`FileInfo`;
:func:`build_score_set` validates a binary table into a :class:`ScoreSet` (roles guessed by :func:`guess_roles`
unless given) with a :class:`ValidationReport`; :func:`load_scores` does both. Multi-class tables (a label of
K >= 3 classes, one probability or logit column per class) have their pair: :func:`is_multiclass`,
:func:`guess_class_columns`, :func:`build_class_set` into a :class:`ClassSet`, and :func:`load_classes`.

Every refusal of the data is a :class:`calibdash.DataError` whose message names the column, values or limit
involved; a path that cannot be read is an :class:`calibdash.EnvironmentProblem`. Scores outside [0, 1] (SVM
margins, logits) are mapped by the logistic function ``1 / (1 + exp(-s))``, never min-max scaled.
"""
from __future__ import annotations

from .large_source import LargeData
from ..core.limits import DEFAULT_MAX_BYTES, MIN_ROWS
from .read import FileInfo, read_table
from .roles import guess_class_columns, guess_roles, is_multiclass
from .scoreset import ScoreSet, ValidationReport, build_score_set
from .class_set import ClassSet, build_class_set, load_classes

__all__ = [
    "DEFAULT_MAX_BYTES", "FileInfo", "ValidationReport", "ScoreSet", "read_table", "guess_roles",
    "build_score_set", "load_scores", "LargeData", "ClassSet", "guess_class_columns", "is_multiclass",
    "build_class_set", "load_classes", "MIN_ROWS"
]


def load_scores(source, score=None, label=None, features=None, split=None, *, positive=None,
                filename: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> ScoreSet:
    """Read a table and validate it: :func:`read_table` then :func:`build_score_set`.

    >>> ss = load_scores("sample_data/circles_svm.csv", score="linear_svm")   # doctest: +SKIP
    >>> ss.scores, ss.labels                                                  # doctest: +SKIP

    Raises
    ------
    DataError, EnvironmentProblem, ProgrammingError
        As :func:`read_table` and :func:`build_score_set`.
    """
    df, info = read_table(source, filename=filename, max_bytes=max_bytes)
    return build_score_set(df, score=score, label=label, features=features, split=split,
                           positive=positive, info=info, name=info.name)
