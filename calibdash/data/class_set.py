"""Multi-class tables validated into a :class:`ClassSet`, as binary files are: rows with a missing label, a missing
or non-finite class value, or text in a class column mostly of numbers are dropped and counted; anything else wrong
refuses the table (DataError naming the columns and a few values; a probability refusal points to the logits). A
class absent from the labels is kept, with a note: a rare class can be absent from a test file.
"""
from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from ..calibrators.multiclass.base import Scores, as_scores
from ..core.validation import SUM_TOLERANCE, format_values, short_text, sorted_values
from .roles import (NUMERIC_SHARE, PREFIXES, Layout, guess_roles, label_values, name_rank, other_roles, pair,
                    parse_numbers, prefix_groups, prefixed, search)
from ..core.limits import DEFAULT_MAX_BYTES, MAX_CLASSES, limit_name
from .read import FileInfo, read_table
from .scoreset import (ONE_VS_REST, TOP_LABEL, Problem, ScoreSet, ValidationReport, check_columns, note_dropped,
                       split_rows)

__all__ = ["build_class_set"]

#: Reasons rows are dropped, as :class:`~calibdash.data.ValidationReport` counts them.
MISSING_VALUE = "missing or non-finite class value"
NOT_A_NUMBER = "class value not a number"
MISSING_LABEL = "missing label"

#: Distinct values shown in a message.
_SHOWN = 5


@dataclass(eq=False)            # arrays/DataFrames have no single truth value: equal when the same object
class ClassSet(Problem):
    """A validated multi-class table: a :class:`~calibdash.data.scoreset.Problem` whose reductions are the top
    label and the K one-vs-rest columns. Build one with :func:`build_class_set` or :func:`load_classes`.

    ``given``, ``labels``, ``features`` and ``split`` hold the usable rows only, in the table's order (rows dropped
    are counted in ``report``). ``given`` (n, K) holds probabilities (rows divided by their sums, which were within
    :data:`~calibdash.core.validation.SUM_TOLERANCE` of 1) or logits, as ``logits`` says; ``labels`` the class
    codes 0..K-1 (``classes[labels[i]]`` is row i's label; ``classes`` and ``columns`` in the table's order);
    ``prefix`` the class columns' shared prefix (None when named after the classes); ``raw`` the table as read;
    ``rows`` the position in ``raw`` of each usable row (None only for a ClassSet built by hand without it).
    """

    name: str
    raw: pd.DataFrame
    label_column: str
    classes: list
    columns: list[str]
    prefix: str | None
    logits: bool
    given: np.ndarray
    labels: np.ndarray
    feature_columns: list[str]
    features: pd.DataFrame | None
    split_column: str | None
    split: np.ndarray | None
    report: ValidationReport
    info: FileInfo | None
    rows: np.ndarray | None = None
    REDUCTIONS = (TOP_LABEL, ONE_VS_REST)

    def __repr__(self) -> str:
        what = "logits" if self.logits else "probabilities"
        return (f"ClassSet({self.name!r}, label={self.label_column!r}, K={self.k} ({what} in "
                f"{self.columns[0]!r}...), n_rows={self.n_rows})")

    @property
    def k(self) -> int:
        """Number of classes (class columns)."""
        return len(self.columns)

    def top_label(self) -> "ScoreSet":
        """The top-label reduction as a :class:`~calibdash.data.ScoreSet` (:func:`~.top_label.top_label_set`)."""
        from .top_label import top_label_set

        return top_label_set(self)

    def scores(self) -> Scores:
        """The output as multi-class calibrators take it."""
        return Scores(self.given, self.logits)

    def content_key(self) -> str:
        """Stable hex key for caches: the file's SHA-256 (or a hash of ``given`` and ``labels``) and the roles."""
        h = hashlib.sha256((self.info.sha256 if self.info is not None else "").encode())
        if self.info is None:
            h.update(np.ascontiguousarray(self.given).tobytes())
            h.update(np.ascontiguousarray(self.labels).tobytes())
        h.update(repr((self.label_column, self.columns, self.logits, self.feature_columns,
                       self.split_column)).encode())
        return h.hexdigest()[:32]


def _names(columns, k: int = 6) -> str:
    shown = ", ".join(short_text(c) for c in list(columns)[:k])
    return shown + (f", ... ({len(columns)} in all)" if len(columns) > k else "")


def _given_layout(df: pd.DataFrame, given, logits: bool) -> Layout:
    """The class columns the user named: a prefix (case-insensitive) or a list of columns."""
    if isinstance(given, str):
        if not given.strip():
            raise SettingsError("an empty prefix names no class columns; for columns named exactly after the "
                                "classes give their list (probs=[...] or logits=[...]).")
        if (layout := prefixed(df.columns, given, logits)) is None:
            raise DataError(f"no column starts with {given!r} (case-insensitive) followed by a class; "
                            f"the columns are: {_names(df.columns, 20)}.")
        return layout
    cols = list(given)
    check_columns(df, cols, "class")
    if len(set(cols)) != len(cols):
        raise DataError(f"the class columns are named more than once: {_names(cols)}.")
    names = [str(c) for c in cols]
    known = next((p for p, _ in PREFIXES if all(n.lower().startswith(p) and len(n) > len(p) for n in names)), None)
    if known:
        prefix = names[0][:len(known)]
    else:                                   # the longest prefix shared, leaving every name something after it
        stem, shortest = os.path.commonprefix(names), min(len(n) for n in names)
        prefix = stem[:shortest - 1] if len(stem) >= shortest else stem
    return Layout(None, cols, [n[len(prefix):] for n in names], prefix or None, logits)


def _with_label(df: pd.DataFrame, layout: Layout, label, name: str) -> Layout:
    """``layout`` with its label: ``label``, else the column whose values its columns (or whole names) best name."""
    variants = [layout]
    if layout.prefix is not None:
        variants.append(Layout(None, layout.columns, [str(c) for c in layout.columns], None, layout.logits))
    found = search(df, label, variants, by_name=False, k_min=1)
    if found is not None:
        return found
    if label is None:
        cols = set(layout.columns)
        named = [c for c in df.columns if c not in cols and name_rank(c) == 2]
        if not named:
            raise DataError(f"no label column found in {name}: no column's values name the class columns "
                            f"({_names(layout.columns)}). Name the label column (--label COLUMN).")
        label = named[0]
    if label in layout.columns:
        raise DataError(f"column {short_text(label)!r} cannot be both the label and a class column.")
    _, _, values = _label_values(df, label, name)
    return Layout(label, layout.columns, layout.suffixes, layout.prefix, layout.logits, values,
                   pair(values, layout.suffixes))


def _too_many_classes(what: str) -> DataError:
    return DataError(f"{what}, more than the {MAX_CLASSES:,} classes a K-class table may have "
                     f"{limit_name('MAX_CLASSES')}; keep the classes you need, or pool the rare ones into one.")


def _label_values(df: pd.DataFrame, label, name: str) -> tuple:
    """:func:`label_values` of the label column, refused past :data:`MAX_CLASSES` values."""
    found = label_values(df[label], limit=MAX_CLASSES)
    if found is None:
        raise _too_many_classes(f"label column {short_text(label)!r} of {name} holds more than {MAX_CLASSES:,} "
                                "distinct values")
    return found


def _not_multiclass(df: pd.DataFrame, label, name: str) -> DataError:
    """Why ``df``, where no class columns were named or found, is not a multi-class table."""
    label = label if label is not None else guess_roles(df).label
    if label is not None:
        found = label_values(df[label], limit=2)                 # two classes or not: one pass at most
        if found is not None and len(values := found[2]) == 2:
            return _binary(f"label column {short_text(label)!r} holds two classes "
                           f"({format_values(sorted_values(values))})")
    return DataError(f"no multi-class columns found in {name}: a multi-class table has a label column and one "
                     "column per class, named after the label's values with a prefix "
                     f"({', '.join(p + '<class>' for p, _ in PREFIXES)}; logit_ for logits) or exactly as the "
                     "values. Name them with --probs PREFIX or --logits PREFIX (the Data page: the class "
                     "columns' menu).")


def _binary(what: str) -> DataError:
    return DataError(f"{what}: this is a binary file; open it as one (one score column, the positive class's "
                     "probability: `python -m calibdash evaluate FILE --score COLUMN`, or the Data page's "
                     "binary mode).")


def _numbers(df: pd.DataFrame, columns: list, what: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """The class columns as (n, K) floats (NaN where missing or text), where a row holds text, and up to five text
    entries; refuses boolean columns and columns mostly of text."""
    n = len(df)
    values = np.empty((n, len(columns)))
    text = np.zeros(n, dtype=bool)
    shown: list[str] = []
    for j, c in enumerate(columns):
        s = df[c]
        if pd.api.types.is_bool_dtype(s):
            raise DataError(f"class column {short_text(c)!r} holds True/False values, not {what}.")
        col, not_number = parse_numbers(s)
        n_text, n_num = int(not_number.sum()), int(np.count_nonzero(~np.isnan(col)))
        if n_text and n_num < NUMERIC_SHARE * (n_text + n_num):
            raise DataError(f"class column {short_text(c)!r} is mostly text: {n_text:,} of its {n_text + n_num:,} "
                            f"entries are not numbers (such as {format_values(_first_distinct(s, not_number), 3)}); "
                            f"a class column holds {what}.")
        if n_text and len(shown) < _SHOWN:
            shown += [v for v in _first_distinct(s, not_number) if v not in shown][:_SHOWN - len(shown)]
        values[:, j] = col
        text |= not_number
    return values, text, ({NOT_A_NUMBER: shown} if shown else {})


def _first_distinct(s: pd.Series, rows: np.ndarray, k: int = _SHOWN) -> list[str]:
    return [short_text(v) for v in pd.unique(s[rows].astype(str))[:k]]


def _check_probabilities(P: np.ndarray, rows: np.ndarray, layout: Layout, name: str) -> None:
    arg = shlex.quote(layout.prefix) if layout.prefix else "COLUMNS"
    hint = (f"If the columns hold logits, read them as logits (--logits {arg}, or "
            "logits in the Data page's class-columns menu).")
    cols = _names(layout.columns)
    for bad, kind, extreme, rule in ((P < 0, "negative values", f"lowest {P.min():.4g}", "are never negative"),
                                     (P > 1 + SUM_TOLERANCE, "values above 1", f"highest {P.max():.4g}",
                                      "lie in [0, 1]")):
        if (bad := bad.any(axis=1)).any():
            raise DataError(f"class columns {cols} of {name} hold {kind} ({int(bad.sum()):,} rows, the {extreme}, "
                            f"the first in data row {int(rows[np.argmax(bad)]) + 1}); probabilities {rule}. {hint}")
    total = P.sum(axis=1)
    off = np.abs(total - 1.0) > SUM_TOLERANCE
    if off.any():
        i = int(np.argmax(off))
        raise DataError(f"{int(off.sum()):,} of {P.shape[0]:,} rows of {name}'s class columns ({cols}) do not "
                        f"sum to 1 within {SUM_TOLERANCE:g}; data row {int(rows[i]) + 1} sums to {total[i]:.6g}. "
                        f"A probability column is needed for every class. {hint}")


def _validate(df: pd.DataFrame, layout: Layout, *, features: list, split, info, name: str) -> ClassSet:
    label, cols, k = layout.label, list(layout.columns), len(layout.columns)
    what = "logits" if layout.logits else "probabilities"
    if k < 3:
        raise _binary(f"{name} has {k} class column{'s' if k != 1 else ''} ({_names(cols)}), and a multi-class "
                      "table has at least three")
    if k > MAX_CLASSES:
        raise _too_many_classes(f"{name} has {k:,} class columns")
    present, codes, values = _label_values(df, label, name)
    pairs = pair(values, layout.suffixes)
    layout = replace(layout, values=values, pairs=pairs)
    unnamed = sorted_values(values[i] for i in range(len(values)) if i not in set(pairs.values()))
    if unnamed:
        raise DataError(f"labels hold classes with no {'logit' if layout.logits else 'probability'} column: "
                        f"{format_values(unnamed, _SHOWN)} (label column {short_text(label)!r}; the class columns "
                        f"are {_names(cols)}). Every class needs a column, named after it.")
    code_of = np.empty(len(values), dtype=np.int64)
    code_of[list(pairs.values())] = list(pairs)
    row_code = np.full(len(df), -1, dtype=np.int64)
    row_code[present] = code_of[codes]
    raw, text, examples = _numbers(df, cols, what)
    finite = np.isfinite(raw).all(axis=1)
    rows_of = {MISSING_VALUE: ~finite & ~text, NOT_A_NUMBER: text, MISSING_LABEL: finite & ~present}
    dropped = {reason: int(m.sum()) for reason, m in rows_of.items() if m.any()}
    keep = finite & present
    n_used = int(keep.sum())
    messages = [f"Read {name}: {len(df):,} rows, {df.shape[1]} columns."]
    note_dropped(messages, dropped, examples, n_used=n_used, n_read=len(df), name=name,
                 phrase=lambda r: f"with a {r}")
    rows = np.flatnonzero(keep)
    y = row_code[keep]
    counts = np.bincount(y, minlength=k)
    classes = layout.classes()
    if np.count_nonzero(counts) < 2:
        raise DataError(f"label column {short_text(label)!r} holds one class only "
                        f"({format_values([classes[int(y[0])]])}) in the usable rows; calibration needs at least two.")
    P = raw[keep]
    if not layout.logits:
        _check_probabilities(P, rows, layout, name)
    given = as_scores(P, layout.logits).given
    messages.append(f"Label column {short_text(label)!r}: {k} classes, {n_used:,} rows used.")
    messages.append(f"Class columns ({what}): {_names(cols, k)}.")
    absent = [c for c, m in zip(cols, counts) if m == 0]
    if absent:
        messages.append(f"No usable row has the class of {_names(absent)}: kept as a class (a rare class can be "
                        "absent from a test file), with no row to calibrate it on.")
    feats = df.loc[keep, features].reset_index(drop=True) if features else None
    if features:
        messages.append(f"Feature columns: {_names(features, 20)}.")
    split_arr = None
    if split is not None:
        split_arr, note = split_rows(df, keep, split, short_text(split))
        messages.append(note)
    report = ValidationReport(n_read=len(df), n_used=n_used, dropped=dropped, dropped_examples=examples,
                              class_counts={str(c): int(m) for c, m in zip(classes, counts)}, messages=messages)
    return ClassSet(name=name, raw=df, label_column=label, columns=cols, classes=classes, prefix=layout.prefix,
                    logits=layout.logits, feature_columns=list(features), split_column=split, report=report,
                    info=info, given=given, labels=y, features=feats, split=split_arr, rows=rows)


def build_class_set(df: pd.DataFrame, label: str | None = None, probs=None, logits=None, *, features=None,
                    split=None, info: FileInfo | None = None, name: str | None = None) -> ClassSet:
    """Validate a multi-class table into a :class:`ClassSet`.

    Parameters
    ----------
    df, features, split, info, name
        As :func:`~calibdash.data.build_score_set`.
    label : str, optional
        The label column; default: the column whose values the class columns name.
    probs, logits : str or list of str, optional
        The class columns, holding probabilities or logits: a prefix (case-insensitive; every column that starts
        with it and goes on is a class column, its class the rest of its name), or a list of columns (their
        class: the rest after a prefix of :data:`PREFIXES` or the longest prefix they share, or their whole
        names, whichever names more label values). At most one of the two; default: found by
        :func:`guess_class_columns` (``logit_`` columns read as logits).

    Raises
    ------
    SettingsError
        Both ``probs`` and ``logits`` given.
    DataError
        A named column is missing; no class columns found or named; fewer than three class columns (a binary
        file); a label value with no class column; fewer than two classes among the usable rows; fewer than
        :data:`~calibdash.data.MIN_ROWS` usable rows; a class column of booleans or mostly text; probabilities
        that are negative, above 1, or in rows that do not sum to 1 within
        :data:`~calibdash.core.validation.SUM_TOLERANCE`; more than :data:`~calibdash.core.limits.MAX_CLASSES`
        class columns or label values (refused before any work per class).
    """
    name = name or (info.name if info is not None else "data")
    if len(df) == 0:
        raise DataError(f"{name} has a header but no rows.")
    if probs is not None and logits is not None:
        raise SettingsError("name the class columns once: as probabilities (--probs) or as logits (--logits), "
                            "not both.")
    if isinstance(features, str):
        features = [features]
    no_split = split is False or split == ""
    for col, role in ((label, "label"), (None if no_split else split, "split")):
        if col is not None:
            check_columns(df, [col], role)
    if features:
        check_columns(df, list(features), "feature")
    given = probs if probs is not None else logits
    if given is None:
        layout = search(df, label)
        groups = prefix_groups([c for c in df.columns if c != label])
        if layout is None and label is not None and groups:     # the user's label: say what its columns lack
            layout = _with_label(df, max(groups, key=lambda g: len(g.columns)), label, name)
        if layout is None:
            raise _not_multiclass(df, label, name)
    else:
        layout = _with_label(df, _given_layout(df, given, logits is not None), label, name)
    guessed_features, guessed_split = other_roles(df, layout, None if no_split else split)
    if features is None:
        features = guessed_features
    features = [c for c in features if c != layout.label and c not in set(layout.columns)]
    return _validate(df, layout, features=features, split=None if no_split else guessed_split, info=info,
                     name=name)


def load_classes(source, label: str | None = None, probs=None, logits=None, *, features=None, split=None,
                 filename: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> ClassSet:
    """Read a table and validate it as multi-class: :func:`~calibdash.data.read_table` then :func:`build_class_set`.

    >>> cs = load_classes("sample_data/cifar10_lenet5.csv")        # doctest: +SKIP
    >>> cs.scores().probabilities, cs.labels                        # doctest: +SKIP

    Raises
    ------
    DataError, EnvironmentProblem, SettingsError
        As :func:`~calibdash.data.read_table` and :func:`build_class_set`.
    """
    df, info = read_table(source, filename=filename, max_bytes=max_bytes)
    return build_class_set(df, label=label, probs=probs, logits=logits, features=features, split=split,
                           info=info, name=info.name)
