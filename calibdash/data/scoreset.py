"""A data set is a calibration problem with K classes; :class:`Problem` says which binary reductions it has.

Binary data (K = 2, :class:`ScoreSet`, built here: roles, positive class, usable rows, and what validation found in
a :class:`ValidationReport`) has one reduction, the **score**: the positive class's score against the 0/1 label;
scores outside [0, 1] are mapped by :func:`~calibdash.core.margins.to_probabilities`. K-class data
(:class:`~calibdash.data.ClassSet`) has the reductions of Gupta & Ramdas (2022, "Top-label calibration and
multiclass-to-binary reductions"): the **top label**, the confidence ``max_k P_k`` against ``1[argmax_k P_k = y]``,
and the K **one-vs-rest** columns ``P_k`` against ``1[y = k]``. Every binary tool reads a K-class problem through
one of them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..core.errors import DataError, SettingsError
from ..core.validation import choose_positive, format_values, plain_value, short_text, sorted_values, text_values
from ..core.limits import MIN_ROWS
from ..core.margins import to_probabilities
from .read import FileInfo
from ..measures.class_measures import top_label
from .class_names import class_notes
from .roles import NUMERIC_SHARE, check_guessed_score, guess_roles, parse_numbers
from .sniff import DELIMITER_NAMES

__all__ = []

_ENCODING_NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 with BOM",
                   "utf-16-le": "UTF-16 LE with BOM (Unicode text)", "utf-16-be": "UTF-16 BE with BOM",
                   "latin-1": "Latin-1 (the file is not valid UTF-8)"}
#: The reason a row whose score is text, not a number (``"abc"``), is dropped for.
NOT_A_NUMBER = "score not a number"
#: How many distinct dropped entries a report shows.
N_EXAMPLES = 5


#: The reductions' names.
SCORE, TOP_LABEL, ONE_VS_REST = "score", "top_label", "ovr"


class Problem:
    """What :class:`ScoreSet` and :class:`~calibdash.data.ClassSet` share: K, the usable rows and the
    ``REDUCTIONS`` (the binary reductions the problem has)."""

    REDUCTIONS: ClassVar[tuple[str, ...]] = (SCORE,)

    @property
    def k(self) -> int:
        """Number of classes (2 for a score column)."""
        return 2

    @property
    def n_rows(self) -> int:
        """Number of usable rows."""
        return int(self.labels.size)

    def reduce(self, reduction: str, cls: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, 0/1 labels)`` of one binary reduction (one of :attr:`REDUCTIONS`: ``"score"``,
        ``"top_label"``, ``"ovr"`` with ``cls`` the class index 0..K-1) of the usable rows, in their order;
        SettingsError for a reduction the problem does not have, or ``"ovr"`` without a class index in range."""
        if reduction not in self.REDUCTIONS:
            raise SettingsError(f"this problem's reductions are {self.REDUCTIONS}, not {reduction!r}.")
        if reduction == SCORE:
            return self.scores, self.labels
        P = self.scores().probabilities
        if reduction == TOP_LABEL:
            confidence, correct = top_label(P, self.labels)
            return confidence, correct.astype(np.int8)
        if cls is None or not 0 <= int(cls) < self.k:
            raise SettingsError(f"a one-vs-rest reduction needs a class index 0..{self.k - 1}, got {cls!r}.")
        return P[:, int(cls)], (self.labels == int(cls)).astype(np.int8)


@dataclass
class ValidationReport:
    """What validation found, for the user to read. ``dropped`` counts are disjoint (a bad score counts under the
    score reason only), so ``n_read == n_used + sum(dropped.values())``; the reasons are ``"missing or non-finite
    score"``, ``"score not a number"`` (text such as ``"abc"`` in a column mostly of numbers) and ``"missing label"``.
    ``dropped_examples`` gives, for ``"score not a number"``, up to five distinct entries, first occurrences first."""

    n_read: int
    n_used: int
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_examples: dict[str, list[str]] = field(default_factory=dict)
    mapped: dict[str, tuple[float, float]] = field(default_factory=dict)
    class_counts: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)


@dataclass(eq=False)            # arrays/DataFrames have no single truth value: equal when the same object
class ScoreSet(Problem):
    """A validated table of one classifier's scores and the true labels: a :class:`Problem` of 2 classes.

    ``raw`` keeps the table as read; ``scores`` (in [0, 1]: a column leaving it is mapped by the logistic function),
    ``labels``, ``features`` and ``split`` hold the usable rows only (rows with a missing or non-finite active score,
    or a missing label, are dropped and counted in ``report``). Build one with :func:`~calibdash.data.load_scores`
    or :func:`build_score_set`; switch the active model with :meth:`with_score`.
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

    def __repr__(self) -> str:
        return (f"ScoreSet({self.name!r}, score={self.score!r}, label={self.label_column!r} "
                f"(positive={self.positive_label!r}), n_rows={self.n_rows}, "
                f"features={self.feature_columns!r}, split={self.split_column!r})")

    def with_score(self, column: str) -> "ScoreSet":
        """The same file with ``column`` as the active score (re-validated)."""
        cols = list(self.score_columns)
        if column not in cols:
            check_columns(self.raw, [column], "score")
            cols.append(column)
        return _build(self.raw, label=self.label_column, score=column, score_columns=cols,
                      features=list(self.feature_columns), split=self.split_column,
                      positive=self.positive_label, info=self.info, name=self.name)

    def content_key(self) -> str:
        """Stable hex key for caches: the file's SHA-256 (or a hash of ``raw``) and the roles."""
        h = hashlib.sha256()
        if self.info is not None:
            h.update(self.info.sha256.encode())
        else:
            h.update(pd.util.hash_pandas_object(self.raw, index=False).to_numpy().tobytes())
            h.update(repr(list(self.raw.columns)).encode())
        h.update(repr((self.label_column, self.score, self.feature_columns, self.split_column,
                       plain_value(self.positive_label))).encode())
        return h.hexdigest()[:32]


def _scalar(v):
    return v.item() if hasattr(v, "item") else v      # a Python scalar, value unchanged (1.0 stays 1.0)


def check_columns(df: pd.DataFrame, names, role: str) -> None:
    present = set(df.columns)
    if missing := [c for c in names if c not in present]:
        listed = ", ".join(repr(short_text(c)) for c in df.columns[:40])
        more = f" (and {df.shape[1] - 40} more)" if df.shape[1] > 40 else ""
        what = "column" if len(missing) == 1 else "columns"
        asked = ", ".join(repr(short_text(c)) for c in missing[:10]) + (f" (and {len(missing) - 10} more)"
                                                                 if len(missing) > 10 else "")
        raise DataError(f"{role} {what} {asked} not found; the columns are: {listed}{more}.")


def _label_values(df: pd.DataFrame, label: str | None, name: str) -> tuple[np.ndarray, list]:
    """Which rows have a label, and the label's two values (sorted); DataError unless exactly two."""
    if label is None:
        raise DataError(f"no label column found in {name}: no column has two distinct values. "
                        "Name the column holding the true 0/1 outcome.")
    lab = df[label]
    lab_ok = np.array(lab.notna(), dtype=bool)
    if lab.dtype == object or pd.api.types.is_string_dtype(lab):
        lab_ok &= (lab.astype(str).str.strip() != "").to_numpy()
    values = sorted_values(pd.unique(lab[lab_ok]))
    if len(values) > 2:
        raise DataError(f"label column {label!r} has {len(values)} distinct values "
                        f"({format_values(values, 8)}); a binary label has exactly two. "
                        "Pick another label column or recode this one.")
    if len(values) < 2:
        only = f" ({format_values(values, 8)})" if values else " (all missing)"
        raise DataError(f"label column {label!r} holds one class only{only}; calibration "
                        "needs both positive and negative rows.")
    return lab_ok, values


def _examples(s: pd.Series, rows: np.ndarray, k: int = N_EXAMPLES) -> list[str]:
    """Up to ``k`` distinct entries of ``s`` at ``rows`` (first occurrences first), as short text."""
    shown: dict[str, None] = {}
    for v in pd.unique(s.iloc[np.flatnonzero(rows)].astype(object)):   # in order of first appearance
        t = " ".join(str(v).split())
        shown[t if len(t) <= 40 else t[:37] + "..."] = None
        if len(shown) == k:
            break
    return list(shown)


def _quoted(examples: list[str]) -> str:
    return ", ".join(f'"{e}"' for e in examples)


def _dropped_phrase(reason: str) -> str:
    return "whose score is not a number" if reason == NOT_A_NUMBER else f"with a {reason}"


def note_dropped(messages: list[str], dropped: dict[str, int], examples: dict[str, list[str]], *, n_used: int,
                 n_read: int, name: str, phrase=_dropped_phrase) -> None:
    """Note the rows dropped for each reason (``phrase(reason)`` words it) in ``messages``; DataError for fewer
    than :data:`~calibdash.core.limits.MIN_ROWS` usable rows."""
    for reason, k in dropped.items():
        such = f", such as {_quoted(examples[reason])}" if reason in examples else ""
        messages.append(f"Dropped {k:,} row{'s' if k != 1 else ''} {phrase(reason)}{such}.")
    if n_used < MIN_ROWS:
        why = "; ".join(f"{k} {phrase(r)}" for r, k in dropped.items())
        raise DataError(f"only {n_used} usable rows in {name} (of {n_read} read"
                        f"{'; dropped ' + why if why else ''}); at least {MIN_ROWS} are needed.")


def split_rows(df: pd.DataFrame, keep: np.ndarray, split, shown) -> tuple[np.ndarray, str]:
    """The split column's values (as text) at the usable rows, and the report's line counting each value."""
    values = text_values(df.loc[keep, split])
    kinds, counts = np.unique(values.astype(str), return_counts=True)
    return values, f"Split column {shown!r}: " + ", ".join(f"{a} ({b:,})" for a, b in zip(kinds, counts)) + "."


def _build(df: pd.DataFrame, *, label, score, score_columns, features, split, positive,
           info: FileInfo | None, name: str) -> ScoreSet:
    n_read = len(df)
    messages = []
    if info is not None:
        if info.format == "parquet":
            messages.append(f"Read {info.name}: Parquet, {n_read:,} rows, {df.shape[1]} columns.")
        else:
            enc = _ENCODING_NAMES.get(info.encoding, info.encoding)
            gz = " (gzip-compressed)" if info.format == "csv.gz" else ""
            messages.append(f"Read {info.name}{gz}: {n_read:,} rows, {df.shape[1]} columns, "
                            f"{DELIMITER_NAMES.get(info.delimiter, info.delimiter)}-separated, {enc}.")
    if fixed := df.attrs.get("decimal_comma_columns"):
        messages.append("Decimal commas read as decimal points in: " + ", ".join(fixed) + ".")
    lab_ok, values = _label_values(df, label, name)
    pos, neg = choose_positive(values, positive, column=label)
    if pd.api.types.is_bool_dtype(df[score]):
        raise DataError(f"score column {score!r} holds True/False values, not scores.")
    raw_s, not_number = parse_numbers(df[score])
    finite = np.isfinite(raw_s)
    if not finite.any():
        example = df[score].dropna()
        ex = f" (e.g. {example.iloc[0]!r})" if len(example) else " (all missing)"
        raise DataError(f"score column {score!r} holds no finite numbers{ex}; pick a numeric column.")
    n_text = int(not_number.sum())
    n_numbers = int((~np.isnan(raw_s)).sum())
    if n_text and n_numbers < NUMERIC_SHARE * (n_numbers + n_text):
        raise DataError(f"score column {score!r} is mostly text: {n_text:,} of its {n_numbers + n_text:,} "
                        f"entries are not numbers (such as {_quoted(_examples(df[score], not_number))}); "
                        f"a score column is read when at least {NUMERIC_SHARE:.0%} of its entries are "
                        "numbers. Pick a numeric column.")
    if finite.all() and 0.0 <= raw_s.min() and raw_s.max() <= 1.0:
        s, was_mapped = raw_s, False              # probabilities already: the column's own numbers, no copy
    else:
        s, was_mapped = to_probabilities(raw_s, column=score)
    mapped: dict[str, tuple[float, float]] = {}
    if was_mapped:
        lo, hi = float(raw_s[finite].min()), float(raw_s[finite].max())
        mapped[score] = (lo, hi)
        messages.append(f"Score column {score!r} ranges from {lo:.4g} to {hi:.4g}, outside [0, 1]: "
                        "read as a margin or logit and mapped by the logistic function "
                        "1/(1+exp(-s)) (not min-max scaled).")
    # disjoint: a row with a bad score counts under the score reason only
    counts = {"missing or non-finite score": int((~finite & ~not_number).sum()), NOT_A_NUMBER: n_text,
              "missing label": int((~lab_ok & finite).sum())}
    dropped = {reason: k for reason, k in counts.items() if k}
    examples = {NOT_A_NUMBER: _examples(df[score], not_number)} if n_text else {}
    keep = finite & lab_ok
    n_used = int(keep.sum())
    note_dropped(messages, dropped, examples, n_used=n_used, n_read=n_read, name=name)
    lab_kept = df[label][keep]
    y = (lab_kept == pos).to_numpy(dtype=bool).astype(np.int8)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == n_used:
        only = pos if n_pos else neg
        raise DataError(f"after dropping rows with a missing score, label column {label!r} holds one "
                        f"class only ({plain_value(only)!r}); calibration needs both.")
    class_counts = {f"positive ({plain_value(pos)})": n_pos, f"negative ({plain_value(neg)})": n_used - n_pos}
    messages.append(f"Label column {label!r}: {n_pos:,} positive ({plain_value(pos)!r}), "
                    f"{n_used - n_pos:,} negative ({plain_value(neg)!r}); {n_used:,} rows used.")
    messages.append(f"Active score column {score!r}"
                    + (f" (other candidates: {', '.join(c for c in score_columns if c != score)})"
                       if len(score_columns) > 1 else "") + ".")
    messages += class_notes(df, score, score_columns, values, pos, neg)
    feats = None
    every_row = bool(keep.all())      # then the features are the table's own columns (copy-on-write), no copy
    if features:
        feats = (df[features] if every_row else df.loc[keep, features]).reset_index(drop=True)
        messages.append(f"Feature columns: {', '.join(features)}.")
    split_arr = None
    if split is not None:
        split_arr, note = split_rows(df, keep, split, split)
        messages.append(note)

    report = ValidationReport(n_read=n_read, n_used=n_used, dropped=dropped, dropped_examples=examples,
                              mapped=mapped, class_counts=class_counts, messages=messages)
    return ScoreSet(name=name, raw=df, label_column=label, positive_label=_scalar(pos),
                    negative_label=_scalar(neg), score_columns=list(score_columns), score=score,
                    feature_columns=list(features), split_column=split, report=report, info=info,
                    # every row kept: the score column's own array (read-only under copy-on-write), no copy
                    scores=np.ascontiguousarray(s if every_row else s[keep], dtype=float), labels=y,
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
        The label value taken as class 1 (matched exactly, then as text, then case-insensitively, then as a
        number); default: :func:`calibdash.core.validation.choose_positive`'s rule (1, True, yes, pos/positive;
        else the value opposite 0, -1, no, neg/negative; else the second value in sorted order).
    info : FileInfo, optional
        From :func:`~calibdash.data.read_table`; used in messages and in ``content_key``.
    name : str, optional
        Display name (default: ``info.name`` or ``"data"``).

    Raises
    ------
    DataError
        A named column is missing; no numeric column; the score column is mostly text (under
        :data:`~calibdash.data.roles.NUMERIC_SHARE` of its entries are numbers; with fewer, the text entries'
        rows are dropped and counted under ``"score not a number"``); the label has one or more than two
        values; fewer than ``MIN_ROWS`` usable rows; the positive label is not a label value.
    """
    name = name or (info.name if info is not None else "data")
    if len(df) == 0:
        raise DataError(f"{name} has a header but no rows.")
    if isinstance(features, str):
        features = [features]
    for col, role in ((score, "score"), (label, "label"), (split or None, "split")):
        if col is not None:
            check_columns(df, [col], role)
    if features:
        check_columns(df, list(features), "feature")
    no_split = split is False or split == ""
    # a named score column is never guessed as the label (nor as the split)
    roles = guess_roles(df.drop(columns=[score]) if score is not None and label is None else df,
                        label=label, split=None if no_split else split, positive=positive)
    if no_split:
        roles.split = None
    label = roles.label
    if label is not None and score == label:
        raise DataError(f"column {score!r} cannot be both the score and the label.")
    score_columns = list(roles.scores)
    if score is not None:
        if score not in score_columns:
            score_columns.insert(0, score)
    elif not score_columns:
        kinds = ", ".join(f"{c!r} ({df[c].dtype})" for c in df.columns[:20])
        raise DataError(f"no numeric column in {name} to use as a score (columns: {kinds}). "
                        "A score column must hold numbers: probabilities, margins or logits "
                        f"(a text column is read as numbers when at least {NUMERIC_SHARE:.0%} of its "
                        "entries are numbers).")
    else:
        score = score_columns[0]
        check_guessed_score(roles.classes, score, name)      # never the other class's column, silently
    if features is None:
        features = [c for c in roles.features if c != score]
    else:
        features = [c for c in features if c not in (score, label)]
    return _build(df, label=label, score=score, score_columns=score_columns, features=list(features),
                  split=roles.split, positive=positive, info=info, name=name)
