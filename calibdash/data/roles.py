"""Which column is the label, which are scores, features and the split: guessed from names and values."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .limits import MIN_ROWS

__all__ = ["Roles", "guess_roles"]

_LABEL_NAMES = ("label", "labels", "y", "target", "outcome", "class", "truth", "actual",
                "clicked", "click", "default", "y_true", "ytrue", "true_label", "ground_truth",
                "gt", "response", "converted", "conversion", "churn", "fraud", "event")
_SPLIT_NAMES = ("split", "set", "fold", "partition", "subset", "dataset", "data_split",
                "train_test", "sample_set")
_ID_NAMES = ("id", "index", "idx", "row", "row_id", "rowid", "key", "uuid", "record_id")
_SCORE_HINTS = ("score", "prob", "pred", "margin", "logit", "pctr", "svm", "confidence",
                "yhat", "y_hat", "output")
#: Label values read as the positive class (lower-cased text).
POSITIVE_TOKENS = frozenset({"1", "1.0", "+1", "+", "yes", "y", "true", "t", "pos", "positive"})
#: Label values read as the negative class (lower-cased text).
NEGATIVE_TOKENS = frozenset({"0", "0.0", "-1", "-1.0", "-", "no", "n", "false", "f", "neg", "negative"})


@dataclass
class Roles:
    """Which column plays which part (see :func:`guess_roles`)."""

    label: str | None
    scores: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    split: str | None = None


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
    if n.startswith("true_"):          # e.g. true_prob: the oracle, not a model's score
        return False
    return n in ("p", "s") or n.startswith("p_") or any(h in n for h in _SCORE_HINTS)


def is_numeric(s: pd.Series) -> bool:
    """Whether ``s`` holds numbers (booleans are not numbers here)."""
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _is_id(col, s: pd.Series, n: int) -> bool:
    nm = _norm(col)
    if nm in _ID_NAMES or nm.endswith("_id") or nm.startswith("unnamed:") or nm.startswith("unnamed_"):
        return True
    if n < MIN_ROWS or s.isna().any():
        return False
    if pd.api.types.is_integer_dtype(s) or pd.api.types.is_string_dtype(s) or s.dtype == object:
        return s.nunique() == n
    return False


def _known_label_encoding(values) -> bool:
    toks = {str(v).strip().lower() for v in values}
    return len(toks) == 2 and bool(toks & (POSITIVE_TOKENS | NEGATIVE_TOKENS))


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
    two_valued = []
    for i, c in enumerate(cols):
        if c == split or _is_score_hint(c):
            continue
        s = df[c]
        if s.nunique(dropna=True) == 2:
            known = _known_label_encoding(s.dropna().unique())
            two_valued.append((0 if known else 1, i, c))
    if two_valued:
        return min(two_valued)[2]
    return named[0][2] if named else None


def _guess_scores(df: pd.DataFrame, numeric: list) -> list:
    hinted = [c for c in numeric if _is_score_hint(c)]
    if hinted:
        return hinted
    scores = []
    for c in numeric:
        s = df[c].to_numpy(dtype=float, na_value=np.nan)
        fin = s[np.isfinite(s)]
        if (fin.size and fin.min() >= 0.0 and fin.max() <= 1.0
                and np.unique(fin).size >= 10 and np.any(fin != np.round(fin))):
            scores.append(c)
    return scores or numeric[:]


def guess_roles(df: pd.DataFrame, *, label: str | None = None, split: str | None = None) -> Roles:
    """Guess the label, score, feature and split columns of ``df``.

    Parameters
    ----------
    df : DataFrame
    label, split : str, optional
        Columns already chosen by the user; the other roles are guessed around them.

    Rules
    -----
    split
        A column named split/set/fold/partition/subset/dataset with at most 20
        distinct values (and fewer than half the rows).
    label
        By name first (label, y, target, outcome, class, truth, actual, click(ed),
        default, ..., then is_*/has_*/*label*) with exactly two distinct values;
        then any other column with two distinct values, those encoded like a label
        (0/1, -1/1, True/False, yes/no, pos/neg) first. If only a named column
        with one or more than two values exists it is returned anyway, so that
        validation can say what is wrong with it. None if nothing fits.
    scores
        Numeric (not boolean) columns other than label, split and ids: the ones
        whose name hints a score (score, prob, proba, pred, p_, margin, logit,
        pctr, svm, ...) if any; otherwise those entirely within [0, 1] with many
        (>= 10) distinct non-integer values; otherwise every numeric column.
    features
        The remaining columns, without ids (named id/index/*_id/Unnamed: 0, or
        integer/text columns whose values are all distinct).
    """
    n = len(df)
    cols = list(df.columns)
    if split is None:
        split = _guess_split(df, label)
    if label is None:
        label = _guess_label(df, split)
    taken = {label, split}
    ids = {c for c in cols if c not in taken and _is_id(c, df[c], n)}
    numeric = [c for c in cols if c not in taken and c not in ids and is_numeric(df[c])]
    scores = _guess_scores(df, numeric)
    features = [c for c in cols if c not in taken and c not in ids and c not in scores
                and not df[c].isna().all()]
    return Roles(label=label, scores=scores, features=features, split=split)
