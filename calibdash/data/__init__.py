"""Reading user tables and turning them into validated score sets.

Two steps, usable separately, and :func:`load_scores` doing both:

:func:`read_table` (:mod:`~calibdash.data.read`)
    bytes (a path, raw bytes or an uploaded file) -> ``pandas.DataFrame`` plus a
    :class:`FileInfo` (format, encoding, delimiter, size, SHA-256). CSV (comma,
    semicolon or tab; UTF-8 with or without BOM, UTF-16 with BOM, else Latin-1), gzipped CSV and
    Parquet are accepted.
:func:`build_score_set` (:mod:`~calibdash.data.scoreset`)
    DataFrame -> :class:`ScoreSet`: the label, score, feature and split columns
    (guessed by :func:`guess_roles` unless given), the positive class, and the
    usable rows as numpy arrays, with a :class:`ValidationReport` saying what
    was dropped, mapped and found.

Multi-class tables (a label of K >= 3 classes and one probability or logit
column per class, ``p_<class>``, ``prob_<class>``, ``proba_<class>``,
``logit_<class>`` or named after the class) have their own pair:
:func:`is_multiclass` says whether a table is one, :func:`guess_class_columns`
finds its columns (:class:`ClassRoles`; :mod:`~calibdash.data.roles`),
:func:`build_class_set` validates it into a :class:`ClassSet` (class codes
0..K-1, the (n, K) probabilities or logits, the same :class:`ValidationReport`),
and :func:`load_classes` reads a file and validates it (:mod:`~calibdash.data.class_set`).

The modules, one job each:

- :mod:`~calibdash.data.read`: bytes from files and uploads, gzip, encodings, size limits;
- :mod:`~calibdash.data.sniff`: what the bytes are (Parquet/gzip magic, the
  CSV delimiter, decimal commas);
- :mod:`~calibdash.data.roles`: which column is the label, the scores (or the K class columns), the features, the split;
- :mod:`~calibdash.core.margins`: scores outside [0, 1] mapped by the logistic function;
- :mod:`~calibdash.data.scoreset`: the :class:`ScoreSet` and its validation;
- :mod:`~calibdash.data.class_set`: multi-class tables, the :class:`ClassSet` and its validation;
- :mod:`~calibdash.core.limits`: the limits a table must respect (bytes, columns, cells, unpacked bytes) and the fewest usable rows.

Every refusal of the data is a :class:`calibdash.DataError` whose message
names the column, values or limit involved; a path that cannot be read is an
:class:`calibdash.EnvironmentProblem`.

Scores outside [0, 1] (SVM margins, logits) are mapped by the logistic
function ``1 / (1 + exp(-s))``, never min-max scaled (see
:mod:`~calibdash.core.margins`).
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
