"""Which column plays which role, guessed from names and values.

A binary file (:func:`guess_roles`) has a label of two values and score columns. A K-class file
(:func:`guess_class_columns`) has a label of K >= 3 classes and one probability (or logit) column per class: a
shared prefix (:data:`PREFIXES`, any case) followed by the class, or named exactly after the classes; a column's
class is matched to the label values as text, then case-insensitively, then as numbers (``p_3`` matches 3.0).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.limits import MAX_COLUMNS, MIN_ROWS
from .class_names import (PREFIXES, as_number, check_guessed_score, label_values, named_classes, pair, score_classes,
                          split_prefix)
from ..core.numbers import is_numeric, is_text, parse_numbers
from ..core.validation import NEGATIVE_TOKENS, POSITIVE_TOKENS, plain_value

__all__ = ["reads_as_numbers", "label_values", "split_prefix", "named_classes", "check_guessed_score"]

_LABEL_NAMES = ("label", "labels", "y", "target", "outcome", "class", "truth", "actual", "clicked", "click",
                "default", "y_true", "ytrue", "true_label", "ground_truth", "gt", "response", "converted",
                "conversion", "churn", "fraud", "event")
_SPLIT_NAMES = ("split", "set", "fold", "partition", "subset", "dataset", "data_split", "train_test", "sample_set")
_ID_NAMES = ("id", "index", "idx", "row", "row_id", "rowid", "key", "uuid", "record_id")
_SCORE_HINTS = ("score", "prob", "pred", "margin", "logit", "pctr", "svm", "confidence", "yhat", "y_hat", "output")
#: A text column counts as numbers when at least this share of its present, non-blank entries parse as numbers;
#: its other entries (``"abc"``, ``"#N/A"``) are then missing, their rows dropped and counted. A long column is
#: screened first on ``_SCREEN`` random entries (fixed seed): under half this share of numbers there, it is text.
NUMERIC_SHARE = 0.5
_SCREEN = 2000


@dataclass
class Roles:
    """Which column plays which part (see :func:`guess_roles`)."""

    label: str | None
    scores: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    split: str | None = None
    #: The score columns as their names tell (``p_0``, ``p_1``; :func:`score_classes`), or None.
    classes: object | None = None


def _norm(name) -> str:
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


def _label_tier(col) -> int | None:
    n = _norm(col)
    if n in _LABEL_NAMES:
        return 0
    if n.startswith(("is_", "has_")) or n.endswith(("_label", "_target", "_outcome")) or "label" in n:
        return 1
    return None


def _is_score_hint(col) -> bool:
    n = _norm(col)
    if n.startswith("true_"):          # true_prob: the oracle, not a model's score
        return False
    return n in ("p", "s") or n.startswith("p_") or any(h in n for h in _SCORE_HINTS)


def reads_as_numbers(s: pd.Series) -> bool:
    """Whether ``s`` is a column of numbers: numeric dtype, or text mostly of numbers (:data:`NUMERIC_SHARE`)."""
    if is_numeric(s):
        return True
    return is_text(s) and not _clearly_text(s) and _enough_numbers(*parse_numbers(s))


def _number_share(values: np.ndarray, not_number: np.ndarray) -> tuple[int, int]:
    n_numbers = int(np.count_nonzero(~np.isnan(values)))
    return n_numbers, n_numbers + int(np.count_nonzero(not_number))


def _enough_numbers(values: np.ndarray, not_number: np.ndarray) -> bool:
    n_numbers, n_present = _number_share(values, not_number)
    return n_numbers > 0 and n_numbers >= NUMERIC_SHARE * n_present


def _clearly_text(s: pd.Series) -> bool:
    """A long text column whose random sample (fixed seed) is under ``NUMERIC_SHARE / 2`` numbers: a millisecond
    where parsing it all takes seconds. Random rows, so periodic data cannot fool it: a column at the threshold shows
    under a quarter in 2,000 entries with probability below exp(-2000 KL(1/4 || 1/2)) ~ 1e-114 (Chernoff)."""
    n = len(s)
    if n <= 2 * _SCREEN:
        return False
    rows = np.sort(np.random.default_rng(0).integers(0, n, _SCREEN))
    n_numbers, n_present = _number_share(*parse_numbers(s.iloc[rows]))
    return n_present > 0 and n_numbers < 0.5 * NUMERIC_SHARE * n_present


def _is_id(col, s: pd.Series, n: int, numbers: np.ndarray | None = None) -> bool:
    nm = _norm(col)
    if nm in _ID_NAMES or nm.endswith("_id") or nm.startswith("unnamed:") or nm.startswith("unnamed_"):
        return True
    if n < MIN_ROWS or s.isna().any():
        return False
    if numbers is not None:          # text read as numbers: an id only if all are distinct whole numbers
        return bool(np.isfinite(numbers).all() and np.all(numbers == np.round(numbers))
                    and np.unique(numbers).size == n)
    if pd.api.types.is_integer_dtype(s) or pd.api.types.is_string_dtype(s) or s.dtype == object:
        return s.nunique() == n
    return False


def _guess_split(df: pd.DataFrame, label: str | None) -> str | None:
    n = len(df)
    for c in df.columns:
        if c == label or _norm(c) not in _SPLIT_NAMES and not _norm(c).endswith("_split"):
            continue
        k = df[c].nunique(dropna=True)
        if 1 <= k <= 20 and k < max(n / 2, 2):
            return c
    return None


def _guess_label(df: pd.DataFrame, split: str | None) -> str | None:
    cols = list(df.columns)
    named = sorted((t, i, c) for i, c in enumerate(cols)
                   if c != split and (t := _label_tier(c)) is not None)
    for _, _, c in named:
        if df[c].nunique(dropna=True) == 2:
            return c
    two_valued = [(0 if _known_label_encoding(df[c].dropna().unique()) else 1, i, c) for i, c in enumerate(cols)
                  if c != split and not _is_score_hint(c) and df[c].nunique(dropna=True) == 2]
    if two_valued:
        return min(two_valued)[2]
    return named[0][2] if named else None


def _known_label_encoding(values) -> bool:
    toks = {str(v).strip().lower() for v in values}
    return len(toks) == 2 and bool(toks & (POSITIVE_TOKENS | NEGATIVE_TOKENS))


def _looks_like_probabilities(values: np.ndarray) -> bool:
    """Entirely within [0, 1], with at least 10 distinct values, not all whole numbers."""
    fin = values[np.isfinite(values)]
    return bool(fin.size and fin.min() >= 0.0 and fin.max() <= 1.0
                and np.any(fin != np.round(fin)) and np.unique(fin).size >= 10)


def guess_roles(df: pd.DataFrame, *, label: str | None = None, split: str | None = None,
                positive=None) -> Roles:
    """Guess the label, score, feature and split columns of ``df``.

    ``label`` and ``split`` are columns the user chose (the other roles are guessed around them), ``positive`` the
    positive class's label value when chosen (for the order of the scores).

    Rules
    -----
    split
        A column named split/set/fold/partition/subset/dataset with at most 20 distinct values (and fewer than
        half the rows).
    label
        By name first (label, y, target, outcome, class, truth, actual, click(ed), default, ..., then
        is_*/has_*/*label*) with exactly two distinct values; then any other column with two distinct values,
        those encoded like a label (0/1, -1/1, True/False, yes/no, pos/neg) first. If only a named column with
        one or more than two values exists it is returned anyway, so that validation can say what is wrong with
        it. None if nothing fits.
    scores
        Columns of numbers (not boolean; text mostly of numbers counts, :func:`reads_as_numbers`) other than
        label, split and ids: those whose name hints a score (score, prob, proba, pred, p_, margin, logit, pctr,
        svm, ...) if any; else those within [0, 1] with >= 10 distinct non-integer values; else all. Columns
        named after a class of the label (``p_0``, ``p_1``, ``p_neg``, ``p_pos``, ...) are ordered by it
        (:func:`score_classes`): the positive class's first, the negative class's last.
    features
        The remaining columns, without ids (named id/index/*_id/Unnamed: 0, or integer/text columns whose values
        are all distinct; a text column of numbers is an id only when they are distinct whole numbers).

    Each column is looked at once, no copy of the table kept: the work grows with the table's cells.
    """
    n = len(df)
    cols = list(df.columns)
    if split is None:
        split = _guess_split(df, label)
    if label is None:
        label = _guess_label(df, split)
    taken = {label, split}
    numbers = {}                     # column that reads as numbers -> probability-like? (None: not yet known)
    ids = set()
    for c in cols:
        if c in taken:
            continue
        s = df[c]
        values = None
        if is_numeric(s):
            numbers[c] = None        # a numeric dtype: converted only if needed
        elif is_text(s) and not _clearly_text(s):
            values, not_number = parse_numbers(s)
            if _enough_numbers(values, not_number):
                numbers[c] = _looks_like_probabilities(values)
            else:
                values = None
        if _is_id(c, s, n, values):
            ids.add(c)
            numbers.pop(c, None)
    # hinted names, else probability-like columns (a numeric dtype converted one at a time, then let go), else all
    scores = [c for c in numbers if _is_score_hint(c)] or [
        c for c in numbers if numbers[c] or numbers[c] is None and _looks_like_probabilities(
            df[c].to_numpy(dtype=float, na_value=np.nan))] or list(numbers)
    classes = score_classes(df, label, scores, positive)
    if classes is not None:
        scores = classes.scores
    chosen = taken | ids | set(scores)
    features = [c for c in cols if c not in chosen and not df[c].isna().all()]
    return Roles(label=label, scores=scores, features=features, split=split, classes=classes)


# -- K-class tables: the label and one column per class -------------------------------------------
#: Entries of a column checked before its label values are counted (a float column with a fraction is no label).
_LABEL_SCREEN = 1000
#: Names that say a column is (or is not) the true class, to choose between label columns whose values match the
#: class columns equally well (a model's predicted class matches them too).
_LABEL_WORDS = ("label", "class", "target", "truth", "ground_truth", "y_true", "actual", "outcome")
_PREDICTION_WORDS = ("pred", "argmax", "guess")


@dataclass
class ClassRoles:
    """Which columns make a multi-class table (:func:`guess_class_columns`): the label, one column per class (table
    order), each one's class (the label value it matched, else its suffix: a number when the labels are), their
    prefix as written (None when named after the classes), whether they hold logits, the features and the split."""

    label: str
    columns: list[str]
    classes: list
    prefix: str | None
    logits: bool
    features: list[str] = field(default_factory=list)
    split: str | None = None


def _class_of(suffix: str, values: list):
    """The class of a column no label value matched: its suffix, as a number when the labels are numbers."""
    x = as_number(suffix)
    numeric = bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return plain_value(x) if numeric and x is not None else suffix.strip()


def _could_be_label(s: pd.Series) -> bool:
    """False for booleans and floats with fractions among their first entries: no class label."""
    if pd.api.types.is_bool_dtype(s):
        return False
    if pd.api.types.is_float_dtype(s):
        head = s.iloc[:_LABEL_SCREEN].to_numpy(dtype=float, na_value=np.nan)
        head = head[np.isfinite(head)]
        return bool(np.all(head == np.round(head)))
    return True


def name_rank(column) -> int:
    """How much a name says "label": 2 named like one (label, class, target, ...), 0 like a prediction, else 1."""
    n = _norm(column)
    if n == "y" or any(w in n for w in _LABEL_WORDS):
        return 2
    return 0 if any(w in n for w in _PREDICTION_WORDS) else 1


@dataclass
class Layout:
    """The class columns as found or named, before features and split (what :func:`search` returns)."""

    label: str | None
    columns: list
    suffixes: list[str]
    prefix: str | None
    logits: bool
    values: list = field(default_factory=list)
    pairs: dict = field(default_factory=dict)

    def classes(self) -> list:
        """The class of each column: the label value it pairs with, else its suffix."""
        return [self.values[self.pairs[j]] if j in self.pairs else _class_of(s, self.values)
                for j, s in enumerate(self.suffixes)]


def prefixed(columns, prefix: str, logits: bool) -> Layout | None:
    """The columns that start with ``prefix`` (any case) and go on, as a layout; None for none."""
    n = len(prefix)
    cols = [c for c in columns if str(c).lower().startswith(prefix.lower()) and len(str(c)) > n]
    return Layout(None, cols, [str(c)[n:] for c in cols], str(cols[0])[:n], logits) if cols else None


def prefix_groups(columns: list) -> list[Layout]:
    """One layout per prefix of :data:`PREFIXES` some columns use."""
    return [g for prefix, logits in PREFIXES if (g := prefixed(columns, prefix, logits)) is not None]


def search(df: pd.DataFrame, label=None, groups: list[Layout] | None = None, *,
            by_name: bool = True, k_min: int = 3) -> Layout | None:
    """The best (label, class columns) pair: the label whose values most class columns name.

    ``groups`` are the candidate sets of class columns (default: the prefix groups, plus with ``by_name`` the
    columns named after each candidate label's values); ``label`` fixes the label. A pair counts when at least
    ``k_min`` columns and two label values pair up, and at least half the label's values have a column. Ties go
    to a label named like one, then away from one named like a prediction, then to prefixed columns, then to the
    table's order.
    """
    if label is not None and label not in df.columns:
        return None                        # the binary reading then says the column is missing
    groups = prefix_groups(list(df.columns)) if groups is None else groups
    in_groups = {c for g in groups for c in g.columns}
    candidates = [label] if label is not None else [c for c in df.columns
                                                    if c not in in_groups and _could_be_label(df[c])]
    best, best_key = None, None
    for position, c in enumerate(candidates):
        found = label_values(df[c], limit=MAX_COLUMNS)
        if found is None or not 2 <= len(values := found[2]) <= MAX_COLUMNS:
            continue
        options = [g for g in groups if c not in g.columns]
        if by_name:                        # the columns of numbers named exactly after the label's values
            others = [o for o in df.columns if o != c]
            named = [others[j] for j in sorted(pair(values, [str(o) for o in others]))
                     if reads_as_numbers(df[others[j]])]
            options += [Layout(c, named, [str(o) for o in named], None, False)] if named else []
        for kind, g in enumerate(options):
            matched = len(pairs := pair(values, g.suffixes))
            if matched < 2 or 2 * matched < len(values) or len(g.columns) < k_min:
                continue
            key = (matched, name_rank(c), g.prefix is not None, -position, -kind)
            if best_key is None or key > best_key:
                best_key = key
                best = Layout(c, g.columns, g.suffixes, g.prefix, g.logits, values, pairs)
    return best


def other_roles(df: pd.DataFrame, layout: Layout, split=None) -> tuple[list[str], str | None]:
    """Features and split as :func:`guess_roles` guesses them with the class columns as scores (renamed ``p_...``)."""
    names = {c: f"p_\x00{j}" for j, c in enumerate(layout.columns)}
    view = df.set_axis([names.get(c, c) for c in df.columns], axis=1)
    roles = guess_roles(view, label=layout.label, split=split)
    return [c for c in roles.features if c not in names.values()], roles.split


def guess_class_columns(df: pd.DataFrame, label: str | None = None, *, split: str | None = None
                        ) -> ClassRoles | None:
    """The label and the class columns of a multi-class table, or None when ``df`` is not one.

    ``label`` and ``split`` are the columns the user named, if any. None unless some column (``label`` if given)
    has at least two distinct values, at least three class columns pair with its values (by a prefix of
    :data:`PREFIXES`, or named exactly after the values) and at least half its values have a column. Among several
    candidates the label whose values most columns name wins (ties as :func:`search` breaks them). Features and
    split: as :func:`guess_roles` guesses them.
    """
    layout = search(df, label)
    if layout is None:
        return None
    features, split = other_roles(df, layout, split)
    return ClassRoles(label=layout.label, columns=list(layout.columns), classes=layout.classes(),
                      prefix=layout.prefix, logits=layout.logits, features=features, split=split)


def is_multiclass(df: pd.DataFrame, label: str | None = None) -> bool:
    """Whether ``df`` is a multi-class table (:func:`guess_class_columns` finds its columns; never a binary file)."""
    return search(df, label) is not None
