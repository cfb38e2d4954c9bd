"""Input checks shared by metrics, calibrators and evaluation, and the one label convention.

A binary label is any two distinct values (0/1, -1/1, True/False, yes/no, two strings or numbers). Which is the
positive class is decided by :func:`choose_positive`, the rule the loader, the command line, the pages and the API
(``pos_label=``) share:

1. ``pos_label`` when given, matched exactly, then as text, then as text ignoring case and surrounding spaces,
   then as a number (``"1"`` or ``1.0`` find ``1``);
2. else the value written like a positive (:data:`POSITIVE_TOKENS`) when the other is not;
3. else the value opposite the one written like a negative (:data:`NEGATIVE_TOKENS`);
4. else the second of the two values in sorted order (``"spam"`` over ``"ham"``, ``5`` over ``3``).
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = [
    "check_scores", "check_labels", "check_weights", "choose_positive", "label_values", "format_values",
    "plain_value", "sorted_values", "short_text", "text_values", "POSITIVE_TOKENS", "NEGATIVE_TOKENS",
    "check_probabilities", "check_classes", "SUM_TOLERANCE", "class_matrix", "probability_rows"
]

#: Label values read as the positive class (their text, lower-cased and stripped).
POSITIVE_TOKENS = frozenset({"1", "1.0", "+1", "+", "yes", "y", "true", "t", "pos", "positive"})
#: Label values read as the negative class (their text, lower-cased and stripped).
NEGATIVE_TOKENS = frozenset({"0", "0.0", "-1", "-1.0", "-", "no", "n", "false", "f", "neg", "negative"})
#: How many distinct values a message shows before "... (N in all)".
N_SHOWN = 5


def check_scores(scores, name: str = "scores") -> np.ndarray:
    """Return ``scores`` as a 1-D float array of finite values in [0, 1], else a :class:`DataError` (empty, not
    1-D, NaN/inf, or outside [0, 1])."""
    s = _floats(scores, name)
    if s.ndim != 1:
        s = s.reshape(-1) if s.size == max(s.shape, default=0) else s
        if s.ndim != 1:
            raise DataError(f"{name} must be one-dimensional, got shape {np.shape(scores)}.")
    if s.size == 0:
        raise DataError(f"{name} is empty.")
    if not np.all(np.isfinite(s)):
        raise DataError(f"{name} holds {int((~np.isfinite(s)).sum())} missing or infinite values.")
    if s.min() < 0.0 or s.max() > 1.0:
        raise DataError(f"{name} must lie in [0, 1] (found {s.min():.4g} to {s.max():.4g}); map margins or "
                        "logits with the logistic function first (calibdash.load_scores does this).")
    return s


def _floats(values, name: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numbers: {exc}") from None


def plain_value(v):
    """A Python scalar from a numpy/pandas scalar, an integral float as an int (``1.0`` -> ``1``), for text."""
    if hasattr(v, "item"):
        with contextlib.suppress(TypeError, ValueError):
            v = v.item()
    return int(v) if isinstance(v, float) and v.is_integer() else v


def format_values(values, k: int = N_SHOWN) -> str:
    """``"'a', 'b', 'c'"``, or the first ``k`` and ``"... (12 in all)"``: what a message echoes."""
    values = list(values)
    shown = ", ".join(repr(plain_value(v)) for v in values[:k])
    return shown + (f", ... ({len(values)} in all)" if len(values) > k else "")


def short_text(value, limit: int = 40) -> str:
    """A name or value for a message: its words on one line, at most ``limit`` characters (a name is data too)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def text_values(s: pd.Series) -> np.ndarray:
    """A column's entries as text (object array): "" where missing, whole floats without ".0" (a split column)."""
    return np.array(["" if pd.isna(v) else str(plain_value(v)) for v in s.tolist()], dtype=object)


def sorted_values(values) -> list:
    """The values sorted (by their text when they do not compare, as mixed types)."""
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: str(v))


def _safe(test, v) -> bool:
    try:
        return bool(test(v))
    except Exception:  # noqa: BLE001 - a value a test cannot compare simply does not match
        return False


def _token(v) -> str:
    return str(plain_value(v)).strip().lower()


def _matches(pos_label) -> tuple:
    """The tests of rule 1, in order: exactly, as text, as text ignoring case and spaces, as a number."""
    return (lambda v: v == pos_label,
            lambda v: str(plain_value(v)) == str(plain_value(pos_label)),
            lambda v: _token(v) == _token(pos_label),
            lambda v: float(v) == float(pos_label))


def choose_positive(values, pos_label=None, *, column: str | None = None) -> tuple[Any, Any]:
    """``(positive, negative)``: which of a label's two distinct ``values`` (any order) is class 1, by the
    module docstring's rule (``pos_label``: rule 1; ``column``: the label column's name, for messages).

    Raises
    ------
    DataError
        ``values`` are not two, or ``pos_label`` is none of them.
    """
    values = sorted_values(values)
    if len(values) != 2:
        raise DataError(f"a binary label has two values; found {len(values)}"
                        + (f": {format_values(values)}." if values else "."))
    if pos_label is not None:
        for test in _matches(pos_label):
            hits = [i for i, v in enumerate(values) if _safe(test, v)]
            if len(hits) == 1:
                return values[hits[0]], values[1 - hits[0]]
        where = f"the values of label column {column!r}" if column is not None else "the labels' values"
        name = "positive label" if column is not None else "pos_label"
        raise DataError(f"{name} {pos_label!r} is not one of {where}: {format_values(values)}.")
    toks = [_token(v) for v in values]
    for i, t in enumerate(toks):
        if t in POSITIVE_TOKENS and toks[1 - i] not in POSITIVE_TOKENS:
            return values[i], values[1 - i]
    for i, t in enumerate(toks):
        if t in NEGATIVE_TOKENS and toks[1 - i] not in NEGATIVE_TOKENS:
            return values[1 - i], values[i]
    return values[1], values[0]          # sorted: the second in sorted order


def _codes(y: np.ndarray) -> tuple[np.ndarray, list]:
    """Each label's code into the distinct values (-1 where missing, blank or infinite), and those values."""
    codes, uniques = pd.factorize(pd.Series(y, dtype=object if y.dtype.kind in "OUS" else None),
                                  use_na_sentinel=True)
    uniques = list(uniques)
    bad = [isinstance(v, str) and not v.strip() or isinstance(v, float) and not np.isfinite(v) for v in uniques]
    if any(bad):
        keep = [i for i, b in enumerate(bad) if not b]
        remap = np.full(len(uniques) + 1, -1, dtype=np.int64)     # remap[-1] (the last entry) is -1 too
        remap[keep] = np.arange(len(keep))
        codes = remap[codes]
        uniques = [uniques[i] for i in keep]
    return codes, uniques


def label_values(labels) -> list:
    """The distinct non-missing values of ``labels``, sorted (what :func:`choose_positive` chooses from)."""
    return sorted_values(_codes(np.asarray(labels).reshape(-1))[1])


def check_labels(labels, n: int, require_both: bool = True, pos_label=None) -> np.ndarray:
    """Return ``labels`` as a 1-D int8 array of 0/1 (1 = the positive class, :func:`choose_positive`) of length ``n``.

    With ``require_both=False`` (metrics on a subset of rows) one value alone is accepted when it says its class
    (0, 1, yes, no, ... or ``pos_label``).

    Raises
    ------
    DataError
        Wrong length; missing values; more than two distinct values (the message lists them); one class only
        when ``require_both``; ``pos_label`` not a label value.
    """
    y = np.asarray(labels).reshape(-1)
    if y.shape[0] != n:
        raise DataError(f"labels has {y.shape[0]} values but scores has {n}.")
    if y.dtype.kind in "biu" and y.size and 0 <= y.min() and y.max() <= 1:    # 0/1 or booleans: no copy as floats
        return _from_ones(y.astype(bool, copy=False), y.dtype.kind == "b", n, require_both, pos_label)
    if y.dtype.kind in "biuf":               # the fast path: 0/1 and True/False as numbers
        yf = y.astype(float, copy=False)
        bad = ~np.isfinite(yf)
        if bad.any():
            k = int(bad.sum())
            raise DataError(f"labels hold {k:,} missing or infinite value{'s' if k != 1 else ''} (of {n:,}); drop "
                            "those rows first (calibdash.load_scores drops and counts them).")
        one = yf == 1.0
        if np.all(one | (yf == 0.0)):
            return _from_ones(one, y.dtype.kind == "b", n, require_both, pos_label)
    codes, values = _codes(y)
    if (codes < 0).any():          # never for numbers: their missing values were refused above
        k = int((codes < 0).sum())
        raise DataError(f"labels hold {k:,} missing, blank or infinite value{'s' if k != 1 else ''} (of {n:,}); "
                        "drop those rows first (calibdash.load_scores drops and counts them).")
    if len(values) > 2:
        raise DataError(f"labels must hold two classes; found {len(values)} distinct labels: "
                        f"{format_values(sorted_values(values))}. Recode them to two values (any two: 0/1, -1/1, "
                        "yes/no, two names), or keep the rows of two classes only.")
    if len(values) == 1:
        return _one_class(values[0], n, require_both, pos_label)
    pos, _ = choose_positive(values, pos_label)
    i_pos = next(i for i, v in enumerate(values) if v is pos)     # choose_positive returns the values given
    return (codes == i_pos).astype(np.int8)


def _from_ones(one: np.ndarray, booleans: bool, n: int, require_both: bool, pos_label) -> np.ndarray:
    """Labels given as 0/1 (or False/True): ``one`` marks the 1s; the positive class by the shared rule."""
    present = [v for v, there in ((0, not one.all()), (1, one.any())) if there]
    if booleans:
        present = [bool(v) for v in present]
    if len(present) == 2:
        pos, _ = choose_positive(present, pos_label)
        return (one if plain_value(pos) == 1 else ~one).astype(np.int8)
    return _one_class(present[0], n, require_both, pos_label, says_its_class=True)


def _one_class(value, n: int, require_both: bool, pos_label, says_its_class: bool = False) -> np.ndarray:
    """The 0/1 labels when all ``n`` rows have the one label ``value`` (a subset of the rows, for metrics):
    ``pos_label`` says its class, else the value when it is 0/1 or a bool (``says_its_class``) or a token."""
    if require_both:
        raise DataError(f"labels hold one class only ({format_values([value])}); calibration needs both.")
    tok = _token(value)
    if pos_label is not None:
        cls = int(any(_safe(t, value) for t in _matches(pos_label)))
    elif says_its_class:
        cls = int(plain_value(value) == 1)
    elif tok in POSITIVE_TOKENS or tok in NEGATIVE_TOKENS:
        cls = int(tok in POSITIVE_TOKENS)
    else:
        raise DataError(f"labels hold one value only ({format_values([value])}), which does not say its class; "
                        "pass pos_label= to say which value is the positive class.")
    return np.full(n, cls, dtype=np.int8)


def check_weights(sample_weight, n: int, labels: np.ndarray | None = None) -> np.ndarray | None:
    """Return ``sample_weight`` as a 1-D float array of ``n`` finite, non-negative weights, or None (every row
    weighs 1). With ``labels``, both classes must keep a positive total weight.

    Raises
    ------
    DataError
        Not numbers, the wrong length, NaN, inf or negative values, a zero sum, or a class without weight.
    """
    if sample_weight is None:
        return None
    w = _floats(sample_weight, "sample_weight").reshape(-1)
    if w.size != n:
        raise DataError(f"sample_weight has {w.size} values but scores has {n}.")
    if not np.all(np.isfinite(w)):
        raise DataError(f"sample_weight holds {int((~np.isfinite(w)).sum())} missing or infinite values.")
    if (w < 0).any():
        raise DataError(f"sample_weight holds {int((w < 0).sum())} negative values; weights count rows.")
    if w.sum() <= 0:
        raise DataError("sample_weight sums to zero: no row would count.")
    if labels is not None:
        for cls in (0, 1):
            if labels.size and w[labels == cls].sum() <= 0:
                raise DataError(f"the rows of class {cls} all have weight 0; calibration needs both classes.")
    return w


#: How far a row of probabilities may sum from 1 (what rounding each of 20 classes to 3 decimals,
#: or 100 classes to 4, can leave). Rows within it are divided by their sum; rows past it are refused.
SUM_TOLERANCE = 1e-2


def class_matrix(P, name: str) -> np.ndarray:
    """``P`` as a non-empty (n, K >= 2) float array of finite values (probabilities or logits), else a
    :class:`DataError` naming ``name``."""
    a = _floats(P, name)
    if a.ndim != 2:
        raise DataError(f"{name} must be a table of shape (rows, classes), got shape {a.shape}.")
    if a.shape[0] == 0:
        raise DataError(f"{name} is empty.")
    if a.shape[1] < 2:
        raise DataError(f"{name} has {a.shape[1]} column; a class probability table needs one per class.")
    bad = ~np.isfinite(a)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        raise DataError(f"{name} holds {int(bad.sum())} missing or infinite values "
                        f"(in {rows.size:,} rows, the first at row {int(rows[0])}).")
    return a


def check_probabilities(P, name: str = "probabilities") -> np.ndarray:
    """``P`` as an (n, K) float array of non-negative rows that sum to 1 (each divided by its sum).

    Raises
    ------
    DataError
        Not a 2-D table of numbers, empty, NaN, infinite or negative values, or a row whose sum is more than
        :data:`SUM_TOLERANCE` from 1 (the message gives the first such row).
    """
    return probability_rows(class_matrix(P, name), name)


def probability_rows(a: np.ndarray, name: str) -> np.ndarray:
    """The checks of :func:`check_probabilities` on a checked matrix ``a``, and its rows divided by their sums."""
    if (a < 0).any():
        rows = np.flatnonzero((a < 0).any(axis=1))
        raise DataError(f"{name} holds {int((a < 0).sum())} negative values (in {rows.size:,} rows, the "
                        f"first at row {int(rows[0])}); probabilities are non-negative. If these are logits, "
                        "say so (logits=True, --logits PREFIX, or the Data page's menu).")
    total = a.sum(axis=1)
    off = np.abs(total - 1.0) > SUM_TOLERANCE
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise DataError(f"{int(off.sum()):,} rows of {name} do not sum to 1 (within {SUM_TOLERANCE:g}); "
                        f"row {i} sums to {total[i]:.6g}. If these are logits or scores, say so "
                        "(logits=True, --logits PREFIX, or the Data page's menu).")
    return a / total[:, None]


def check_classes(y, n: int, k: int, name: str = "labels") -> np.ndarray:
    """``y`` as an int64 array of ``n`` class indices in ``0..k-1``, else a :class:`DataError` (wrong length, not
    integers, or an index outside ``0..k-1``: the message names it)."""
    try:
        a = np.asarray(y).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be class indices: {exc}") from None
    if a.size != n:
        raise DataError(f"{name} has {a.size} values but the probability table has {n} rows.")
    if a.dtype.kind == "b" or a.dtype.kind not in "iuf":
        raise DataError(f"{name} must be class indices 0..{k - 1} (the columns' order), got {a.dtype} values; "
                        "map class names to indices first (calibdash.data.load_classes does).")
    if a.dtype.kind == "f" and (not np.all(np.isfinite(a)) or np.any(a != np.round(a))):
        raise DataError(f"{name} must be whole class indices 0..{k - 1}.")
    a = a.astype(np.int64)
    bad = (a < 0) | (a >= k)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{name} must be class indices 0..{k - 1} (one per column); row {i} has {a[i]}.")
    return a
