"""Multi-class tables: which columns hold the K classes' probabilities or logits, and which is the label.

A multi-class file has a label column holding one of K >= 3 classes per row
and one column per class holding the model's probability (or logit) of that
class. The class columns are found by a shared prefix, case-insensitive,
followed by the class (:data:`PREFIXES`: ``p_``, ``prob_``, ``proba_`` for
probabilities, ``logit_`` for logits), or are named exactly after the
classes. A column's class is the text after the prefix matched to the label
values as text (label 3 matches ``p_3``, ``"cat"`` matches ``prob_cat``);
then case-insensitively, then as numbers (``p_3`` matches a label read as
3.0), each value matched at most once.

:func:`guess_class_columns` finds the label and the class columns
(:class:`ClassRoles`) and :func:`is_multiclass` says whether a table is one (the
Data page and the command line choose their mode with it). Features and the
split are guessed as for a binary file (:func:`~calibdash.data.roles.guess_roles`).
The search's building blocks (:class:`Layout`, :func:`search`, :func:`pair`, ...) are
public for :mod:`~calibdash.data.classes`, which validates the columns found or named
into a :class:`~calibdash.data.ClassSet`. This module is to multi-class tables what
:mod:`~calibdash.data.roles` is to binary files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..validation import plain_value
from .limits import MAX_COLUMNS
from .class_names import (PREFIXES, ScoreClasses, as_number, check_guessed_score, class_notes,  # noqa: F401
                          label_values, named_classes, pair, score_classes, split_prefix)
from .roles import guess_roles, reads_as_numbers

__all__ = ["PREFIXES", "ClassRoles", "guess_class_columns", "is_multiclass", "Layout", "search", "pair",
           "label_values", "name_rank", "prefix_groups", "other_roles", "ScoreClasses", "split_prefix", "named_classes",
           "score_classes", "check_guessed_score", "class_notes"]


#: Entries of a column checked before its label values are counted (a float column with a fraction among
#: them is no label).
_SCREEN = 1000
#: Names that say a column is (or is not) the true class, to choose between label columns whose values
#: match the class columns equally well (a model's predicted class matches them too).
_LABEL_WORDS = ("label", "class", "target", "truth", "ground_truth", "y_true", "actual", "outcome")
_PREDICTION_WORDS = ("pred", "argmax", "guess")


@dataclass
class ClassRoles:
    """Which columns make a multi-class table (see :func:`guess_class_columns`).

    Attributes
    ----------
    label : str
        The label column.
    columns : list of str
        One column per class, in the table's order.
    classes : list
        The class of each column: the label value it matched, or for a column whose class never
        occurs in the labels the text after its prefix (a number when the labels are numbers).
    prefix : str or None
        The prefix the columns share (as written in the first column), None when named after the classes.
    logits : bool
        Whether the columns hold logits (the ``logit_`` prefix) rather than probabilities.
    features : list of str
    split : str or None
    """

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
    """Quick refusal of columns that cannot be a class label: booleans, and floats with fractions among
    their first entries."""
    if pd.api.types.is_bool_dtype(s):
        return False
    if pd.api.types.is_float_dtype(s):
        head = s.iloc[:_SCREEN].to_numpy(dtype=float, na_value=np.nan)
        head = head[np.isfinite(head)]
        return bool(np.all(head == np.round(head)))
    return True


def name_rank(column) -> int:
    """How much a name says "label": 2 named like one (label, class, target, ...), 0 like a prediction, else 1."""
    n = re.sub(r"[\s\-.]+", "_", str(column).strip().lower())
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


def prefix_groups(columns: list) -> list[Layout]:
    """The columns of each prefix of :data:`PREFIXES` (with a class after it), one layout per prefix used."""
    groups = []
    for prefix, logits in PREFIXES:
        cols = [c for c in columns if str(c).lower().startswith(prefix) and len(str(c)) > len(prefix)]
        if cols:
            groups.append(Layout(None, cols, [str(c)[len(prefix):] for c in cols], str(cols[0])[:len(prefix)],
                                  logits))
    return groups


def _named_group(df: pd.DataFrame, label, values: list) -> Layout | None:
    """The columns of numbers named exactly after ``label``'s values, if any."""
    others = [c for c in df.columns if c != label]
    pairs = pair(values, [str(c) for c in others])
    cols = [others[j] for j in sorted(pairs) if reads_as_numbers(df[others[j]])]
    if not cols:
        return None
    return Layout(label, cols, [str(c) for c in cols], None, False)


def search(df: pd.DataFrame, label=None, groups: list[Layout] | None = None, *,
            by_name: bool = True, k_min: int = 3) -> Layout | None:
    """The best (label, class columns) pair: the label whose values most class columns name.

    ``groups`` are the candidate sets of class columns (default: the prefix groups, plus with
    ``by_name`` the columns named after each candidate label's values); ``label`` fixes the label.
    A pair counts when at least ``k_min`` columns and at least two label values pair up, and at least
    half the label's values have a column. Ties go to a label named like one (label, class, target,
    ...), then away from one named like a prediction, then to prefixed columns, then to the table's order.
    """
    groups = prefix_groups(list(df.columns)) if groups is None else groups
    in_groups = {c for g in groups for c in g.columns}
    if label is not None:
        candidates = [label]
    else:
        candidates = [c for c in df.columns if c not in in_groups and _could_be_label(df[c])]
    best, best_key = None, None
    for position, c in enumerate(candidates):
        found = label_values(df[c], limit=MAX_COLUMNS)
        if found is None or not 2 <= len(values := found[2]) <= MAX_COLUMNS:
            continue
        options = [g for g in groups if c not in g.columns]
        if by_name and (named := _named_group(df, c, values)) is not None:
            options.append(named)
        for kind, g in enumerate(options):
            pairs = pair(values, g.suffixes)
            matched = len(pairs)
            if matched < 2 or 2 * matched < len(values) or len(g.columns) < k_min:
                continue
            key = (matched, name_rank(c), g.prefix is not None, -position, -kind)
            if best_key is None or key > best_key:
                best_key = key
                best = Layout(c, g.columns, g.suffixes, g.prefix, g.logits, values, pairs)
    return best


def other_roles(df: pd.DataFrame, layout: Layout, split=None) -> tuple[list[str], str | None]:
    """Features and split as :func:`~calibdash.data.roles.guess_roles` guesses them for a binary file with
    the class columns as its scores (they are renamed ``p_...`` for the guess, so that they count as
    scores whatever their names, and the other columns are judged as in a binary file)."""
    names = {c: f"p_\x00{j}" for j, c in enumerate(layout.columns)}
    view = df.set_axis([names.get(c, c) for c in df.columns], axis=1)
    roles = guess_roles(view, label=layout.label, split=split)
    return [c for c in roles.features if c not in names.values()], roles.split


def guess_class_columns(df: pd.DataFrame, label: str | None = None, *, split: str | None = None
                        ) -> ClassRoles | None:
    """The label and the class columns of a multi-class table, or None when ``df`` is not one.

    Parameters
    ----------
    df : DataFrame
    label : str, optional
        The label column, when the user named it.
    split : str, optional
        The split column, when the user named it.

    Returns
    -------
    ClassRoles or None
        None unless some column (``label`` if given) has at least two distinct values, at least three
        class columns pair with its values (by a prefix of :data:`PREFIXES`, or named exactly after
        the values) and at least half its values have a column. Among several candidates, the label
        whose values most columns name wins; on a tie, a column named like a label (label, class,
        target, ...), then one not named like a prediction (pred, argmax), then prefixed columns, then
        the table's order. Features and split: as :func:`~calibdash.data.roles.guess_roles` guesses them.
    """
    layout = search(df, label)
    if layout is None:
        return None
    features, split = other_roles(df, layout, split)
    return ClassRoles(label=layout.label, columns=list(layout.columns), classes=layout.classes(),
                      prefix=layout.prefix, logits=layout.logits, features=features, split=split)


def is_multiclass(df: pd.DataFrame, label: str | None = None) -> bool:
    """Whether ``df`` is a multi-class table (:func:`guess_class_columns` finds its columns): one column
    per class, at least three, named after the label's values. A binary file is never one."""
    return search(df, label) is not None
