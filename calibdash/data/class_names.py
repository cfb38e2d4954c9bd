"""Which class a column is named after: the class-column prefixes, matching a column's suffix to the label's
values, and a binary file's score columns named after a class (``p_0``/``p_1``: the positive class's column is
the score, never the negative class's).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import DataError
from ..core.validation import NEGATIVE_TOKENS, POSITIVE_TOKENS, choose_positive, plain_value
from ..core.numbers import parse_numbers

__all__ = []

#: Prefixes of class columns (case-insensitive), each with whether its columns hold logits (else probabilities).
PREFIXES: tuple[tuple[str, bool], ...] = (("p_", False), ("prob_", False), ("proba_", False), ("logit_", True))


def class_text(v) -> str:
    """A label value or a column's class as text: ``3.0`` -> ``"3"``, spaces stripped."""
    return str(plain_value(v)).strip()


def as_number(t: str) -> float | None:
    try:
        x = float(t)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def pair(values: list, suffixes: list[str]) -> dict[int, int]:
    """Column index -> index of the label value it names: by exact text, then case-insensitively, then as
    numbers; each value and each column paired at most once, an ambiguous match left unpaired."""
    texts = [class_text(v) for v in values]
    pairs: dict[int, int] = {}
    for key in (lambda t: t, str.casefold, as_number):
        free: dict = {}
        taken = set(pairs.values())
        for i, t in enumerate(texts):
            k = key(t)
            if i not in taken and k is not None:
                free.setdefault(k, []).append(i)
        for j, s in enumerate(suffixes):
            k = key(s.strip())
            if j in pairs or k is None or len(free.get(k, ())) != 1:
                continue
            pairs[j] = free.pop(k)[0]
    return pairs


def label_values(s: pd.Series, limit: int | None = None) -> tuple[np.ndarray, np.ndarray, list] | None:
    """Where a label is present (not missing, not blank), each present row's index into the values, and the
    distinct present values in order of first appearance; None when there are more than ``limit`` (a column of
    ids is let go after one pass)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    if limit is not None and len(uniques) > limit + 1:         # + 1: a blank value does not count
        return None
    keep = np.array([not (isinstance(u, str) and not u.strip()) for u in uniques], dtype=bool)
    present = codes >= 0
    present[present] = keep[codes[present]]
    index = np.cumsum(keep) - 1                                # a kept value's place among the kept ones
    return present, index[codes[present]], [plain_value(u) for u, k in zip(uniques, keep) if k]


@dataclass
class ScoreClasses:
    """A binary file's score columns as their names tell (see :func:`score_classes`).

    ``scores`` are the candidates in the order to choose from: the positive class's columns, then those named
    after no class, then the two ``unclear`` ones (of one prefix, adding up to 1 on every row, their names saying
    no class), then the negative class's. ``classes`` maps a column to the label value its name says it is about.
    """

    scores: list
    classes: dict
    positive: object
    negative: object
    unclear: list = field(default_factory=list)


def split_prefix(column) -> tuple[str, str] | None:
    """(prefix as written, class text after it) of a column named ``p_<class>``, ``prob_<class>``,
    ``proba_<class>`` or ``logit_<class>`` (any case); None for any other name."""
    text = str(column)
    for prefix, _ in PREFIXES:
        if text.lower().startswith(prefix) and len(text) > len(prefix):
            return text[:len(prefix)], text[len(prefix):]
    return None


def _by_prefix(columns) -> dict[str, list]:
    """The columns named with a class prefix, by prefix (lower case): prefix -> [(column, class text), ...]."""
    groups: dict[str, list] = {}
    for c in columns:
        if (parts := split_prefix(c)) is not None:
            groups.setdefault(parts[0].lower(), []).append((c, parts[1]))
    return groups


def named_classes(columns, values: list) -> dict:
    """Column -> the value of a two-valued label its name is about: ``p_1`` and ``prob_1`` are about label 1,
    ``logit_cat`` about ``"cat"`` (as :func:`pair` matches, within each prefix); when the label is written like
    0/1, yes/no or pos/neg, ``p_pos``, ``p_yes``, ``p_true`` are about its positive value (``choose_positive``'s
    default) and ``p_neg``, ``p_no`` about the other (one-letter words such as ``p_y`` say too little)."""
    if len(values) != 2:
        return {}
    tokens = POSITIVE_TOKENS | NEGATIVE_TOKENS
    coded = any(class_text(v).lower() in tokens for v in values)     # the label itself is written like 0/1, yes/no
    default_pos, default_neg = choose_positive(values) if coded else (None, None)
    out = {}

    def word(tok: str) -> bool:                  # not p_y, p_t, p_n, p_f
        return len(tok) > 1 or not tok.isalpha()

    for group in _by_prefix(columns).values():
        pairs = pair(values, [s for _, s in group])
        for j, (c, s) in enumerate(group):
            tok = s.strip().lower()
            if j in pairs:
                out[c] = values[pairs[j]]
            elif coded and word(tok) and tok in POSITIVE_TOKENS:
                out[c] = default_pos
            elif coded and word(tok) and tok in NEGATIVE_TOKENS:
                out[c] = default_neg
    return out


def _add_to_one(df: pd.DataFrame, a, b) -> bool:
    """Whether columns ``a`` and ``b`` hold numbers in [0, 1] adding up to 1 (to 1e-6) where both are present."""
    x, y = parse_numbers(df[a])[0], parse_numbers(df[b])[0]
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    return bool(ok.any() and x.min() >= 0 and y.min() >= 0 and np.all(np.abs(x + y - 1.0) <= 1e-6))


def score_classes(df: pd.DataFrame, label, scores: list, positive=None) -> ScoreClasses | None:
    """The candidate ``scores`` of a binary file ordered by the class their names are about, so that a file holding
    ``p_0`` and ``p_1`` is read through the positive class's column; ``positive`` as the user chose it, default
    as :func:`calibdash.core.validation.choose_positive` chooses.

    None when no candidate is named with a class prefix, or the label has not exactly two values, or ``positive``
    is not one of them (validation says so later).
    """
    if label is None or label not in df.columns or not any(split_prefix(c) for c in scores):
        return None
    found = label_values(df[label], limit=2)
    if found is None or len(found[2]) != 2:
        return None
    values = found[2]
    try:
        pos, neg = choose_positive(values, positive, column=label)
    except DataError:
        return None
    classes = named_classes(scores, values)
    unclear: list = []
    if not classes:
        groups = [[c for c, _ in g] for g in _by_prefix(scores).values()]
        unclear = next((g for g in groups if len(g) == 2 and _add_to_one(df, *g)), [])

    def rank(c) -> int:
        if c in classes:
            return 0 if classes[c] == pos else 3
        return 2 if c in unclear else 1

    return ScoreClasses(sorted(scores, key=rank), classes, pos, neg, list(unclear))


def check_guessed_score(sc: ScoreClasses | None, score, name: str) -> None:
    """Refuse a guessed score column whose name does not say it is the positive class's.

    Raises
    ------
    DataError
        ``score`` is one of two unclear columns (which is the positive class's cannot be told), or it is named
        after the negative class (no candidate is named after the positive one, nor after no class).
    """
    if sc is None:
        return
    pos, neg = plain_value(sc.positive), plain_value(sc.negative)
    if score in sc.unclear:
        a, b = sc.unclear
        raise DataError(f"columns {a!r} and {b!r} of {name} add up to 1 on every row, as one model's "
                        f"probabilities of two classes do, but their names do not say which is the positive "
                        f"class's (the label holds {pos!r}, the positive class, and {neg!r}). Name the "
                        "positive class's column as the score (--score on the command line, score= in the API).")
    if sc.classes.get(score, pos) == neg:
        cols = [c for c in sc.scores if sc.classes.get(c, pos) == neg]
        listed = ", ".join(map(repr, cols))
        raise DataError(f"the score column{'s' if len(cols) > 1 else ''} of {name} ({listed}) "
                        f"{'are' if len(cols) > 1 else 'is'} named after the negative class {neg!r}, not the "
                        f"positive class {pos!r}: read as the positive class's scores, every number would be "
                        f"inverted. Make {neg!r} the positive class (--positive on the command line, positive= in "
                        "the API), or name the score column (--score, score=) to read it as it is.")


def class_notes(df: pd.DataFrame, score, others, values: list, pos, neg) -> list[str]:
    """What the validation report says of a score column named after a class: which class, and for
    ``logit_<class>`` columns that the logistic function of one class's logit is its probability only when the
    other's is 0."""
    classes = named_classes([score, *[c for c in others if c != score]], values)
    if score not in classes:
        return []
    p, n = plain_value(pos), plain_value(neg)
    negatives = [c for c, v in classes.items() if v == neg and c != score]
    if classes[score] == pos:
        aside = f"; {', '.join(map(repr, negatives))}, the negative class's, left aside" if negatives else ""
        notes = [f"Score column {score!r} is named after the positive class {p!r}{aside}."]
    else:
        notes = [f"Score column {score!r} is named after the negative class {n!r}, yet it is read as the "
                 f"positive class {p!r}'s score: check the score column and the positive class."]
    if split_prefix(score)[0].lower() == "logit_":
        other = next((c for c, v in classes.items() if v != classes[score] and split_prefix(c)[0].lower() == "logit_"),
                     None)
        if other is not None and np.nanmax(np.abs(parse_numbers(df[other])[0]), initial=0.0) > 0:
            notes.append(f"{score!r} and {other!r} look like two classes' logits: the logistic function of "
                         f"{score!r} alone is its class's probability only when {other!r} is 0; for two "
                         "softmax logits, give their difference as the score.")
    return notes
