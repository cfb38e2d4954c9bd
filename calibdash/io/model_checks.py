"""What a model file may hold, checked on read before anything uses it (:mod:`calibdash.io.export`).

A model file may come from anywhere, and its text reaches SQL (``export-sql``), file names and messages. So its
numbers must be finite (``NaN`` and ``Infinity``, which Python's reader accepts, are refused), its strings and keys
at most :data:`MAX_TEXT` characters, its nesting at most :data:`MAX_DEPTH` deep; the top level holds only the
format's keys (:data:`TOP_KEYS`), ``fitted_on`` only the keys calibdash writes, each of its type, lists at most
:data:`MAX_NAMES` long. A state's own entries are checked by its method's ``_import_state`` through
:class:`calibdash.calibrators.state.State`. Every refusal is a :class:`~calibdash.core.errors.DataError` saying
where.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

from ..core.errors import DataError

__all__ = []

#: Longest string or key a model file may hold (column names, categories, file names).
MAX_TEXT = 4096
#: Deepest nesting of arrays and objects (a file's deepest is a composite's per-class state, about 6).
MAX_DEPTH = 32
#: Most names in one ``fitted_on`` list (features, classes, class columns).
MAX_NAMES = 100_000
#: The keys of a model file's top level.
TOP_KEYS = frozenset({"format", "version", "kind", "method", "params", "state", "fitted_on"})


def parse_json(text: str, what: str) -> Any:
    """``text`` parsed as JSON, then checked by :func:`check_value` (DataError: not JSON, a non-finite number, too
    deep, or a string too long)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"the {what} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                        f"column {exc.colno}.") from None
    except RecursionError:
        raise DataError(f"the {what} nests arrays or objects more than {MAX_DEPTH} deep.") from None
    check_value(doc, what)
    return doc


def check_value(value: Any, what: str) -> None:
    """DataError unless every number under ``value`` is finite, every string and key at most :data:`MAX_TEXT`
    characters and the nesting at most :data:`MAX_DEPTH` deep (iterative: no recursion). The message names the
    entry (``the calibrator file: 'state', 'cuts' holds a non-finite number``), never its text."""
    stack: list = [(value, (), 0)]
    while stack:
        v, path, depth = stack.pop()
        where = f"the {what}" + (": " + ", ".join(map(repr, path)) if path else "")
        if depth > MAX_DEPTH:
            raise DataError(f"the {what} nests arrays or objects more than {MAX_DEPTH} deep.")
        if isinstance(v, str):
            if len(v) > MAX_TEXT:
                raise DataError(f"{where} holds a string of {len(v):,} characters; at most {MAX_TEXT:,} "
                                "are allowed.")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise DataError(f"{where} holds a non-finite number.")
        elif isinstance(v, dict):
            for k, x in v.items():
                if len(k) > MAX_TEXT:
                    raise DataError(f"{where} holds a key of {len(k):,} characters; at most {MAX_TEXT:,} "
                                    "are allowed.")
                stack.append((x, path + (k[:40],), depth + 1))
        elif isinstance(v, list):
            stack.extend((x, path, depth + 1) for x in v)


def check_top(doc: dict, what: str) -> None:
    """DataError if the top level holds a key the format does not have."""
    extra = sorted(set(doc) - TOP_KEYS)
    if extra:
        raise DataError(f"the {what} holds top-level entries the format does not have: "
                        f"{', '.join(map(repr, extra[:5]))}; it has {', '.join(sorted(TOP_KEYS))}.")


def _check(kind: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``test`` of a ``fitted_on`` entry, with what it accepts in words (``kind``) for the message."""
    test.kind = kind
    return test


def _list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and len(v) <= MAX_NAMES and all(test(x) for x in v)


def _one_of(*allowed) -> Callable[[Any], bool]:
    return _check(" or ".join("null" if a is None else repr(a) for a in allowed),
                  lambda v: v in allowed and (v is None or isinstance(v, str)))


_text = _check("a string", lambda v: isinstance(v, str))
_text_or_none = _check("a string or null", lambda v: v is None or isinstance(v, str))
_names = _check("a list of strings", _list_of(lambda x: isinstance(x, str)))
_scalars = _check("a list of class values", _list_of(lambda x: x is None or isinstance(x, (str, int, float))))
_count = _check("a count (an integer, at least 0)", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)
_flag = _check("true or false", lambda v: isinstance(v, bool))
#: An engine's registry name, checked by its form only (an engine added to another install is still a name).
_engine_name = _check("an engine's name (lower-case letters, digits and _)",
                      lambda v: isinstance(v, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,31}", v) is not None)

#: What a binary model's ``fitted_on`` may hold (:func:`calibdash.io.export.provenance`, ``fit --engine``).
BINARY_FITTED_ON = {"file": _text, "score": _text, "score_transform": _one_of(None, "identity", "logistic"),
                    "features": _names, "engine": _engine_name}
#: What a K-class model's ``fitted_on`` may hold (``fit`` on a K-class table writes it).
CLASS_FITTED_ON = {"file": _text, "label": _text, "classes": _scalars, "columns": _names, "prefix": _text_or_none,
                   "logits": _flag, "rows": _count, "sha256": _text_or_none}


def check_fitted_on(fitted_on: Any, schema: dict, what: str) -> dict:
    """``fitted_on`` checked against ``schema`` (key -> check): an object of known keys, each of its type
    (DataError naming the key, not the value)."""
    if not isinstance(fitted_on, dict):
        raise DataError(f"the {what}'s 'fitted_on' must be an object, not {type(fitted_on).__name__}.")
    extra = sorted(set(fitted_on) - set(schema))
    if extra:
        raise DataError(f"the {what}'s 'fitted_on' holds entries calibdash does not write: "
                        f"{', '.join(map(repr, extra[:5]))}; it knows {', '.join(sorted(schema))}.")
    for key, value in fitted_on.items():
        if not schema[key](value):
            raise DataError(f"the {what}'s 'fitted_on' entry {key!r} must be {schema[key].kind}.")
    return dict(fitted_on)
