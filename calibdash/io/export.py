"""Save a fitted calibrator, binary or K-class, to a small JSON file and load it back, without the training data.

The file is one JSON object, one format for both kinds of calibrator (``python -m calibdash fit`` writes one)::

    {"format": "calibdash-calibrator", "version": 2, "kind": "binary" | "classes",
     "method": NAME, "params": {...}, "state": {...}, "fitted_on": {...}}

``kind`` says which registry family ``method`` is a name of: ``"binary"`` (:func:`calibdash.calibrators.get_class`) or
``"classes"`` (``family="classes"``: ``"temperature"``, ``"ovr:isotonic"``, ...). ``params``
is what the method is built again with: ``get_params()`` (a K-class composite's binary method's hyperparameters and
its own in one dict, :meth:`~calibdash.calibrators.multiclass.methods.ovr.BinaryComposite.spec`). ``state`` holds
what ``predict`` needs, never the training rows: ``n_train`` (training rows), for ``"classes"`` ``n_classes`` (K),
and what the class's ``_export_state(self) -> dict`` gives and its ``_import_state(self, state)`` reads back through
a :class:`State`, which checks types and sizes. The optional ``fitted_on`` says what the scores were (``fit`` writes
it, ``apply`` reads it). Version-1 files still load: ``{"format": "calibdash-calibrator", "version": 1}`` is a binary
model and ``{"format": "calibdash-multiclass", "version": 1}`` a K-class one, the same entries without ``kind``.

Predictions are reproduced exactly (a float is written as its shortest ``repr``, which reads back to the same float),
and every loaded model is probed: a binary one must give a finite probability on a grid of scores, a K-class one
finite rows on :func:`probe_table`. A damaged or foreign file is a :class:`~calibdash.core.errors.DataError`;
exporting what is not a registered calibrator class with those two methods a
:class:`~calibdash.core.errors.ProgrammingError`. Files are written deterministically: the top level and the state
one entry a line, arrays on one line, a state entry that is a list of objects one object a line. :func:`apply_model`
applies a model file to the rows of Parquet or CSV files with an engine.

A model file may come from anywhere, and its text reaches SQL (``export-sql``), file names and messages. So on read
its numbers must be finite (``NaN`` and ``Infinity``, which Python's reader accepts, are refused), its strings and
keys at most :data:`MAX_TEXT` characters, its nesting at most :data:`MAX_DEPTH` deep; the top level holds only the
format's keys (:data:`TOP_KEYS`), ``fitted_on`` only the keys calibdash writes, each of its type, lists at most
:data:`MAX_NAMES` long. A state's own entries are checked by its method's ``_import_state`` through :class:`State`.
Every refusal is a :class:`~calibdash.core.errors.DataError` saying where.
"""
from __future__ import annotations

import json
import math
import re
from functools import partial
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from ..calibrators.base import Calibrator
from ..calibrators.state import State, calibrator_from, check_exportable, imported_state, kind_of, state_of
from ..core.errors import DataError, EnvironmentProblem, ProgrammingError, SettingsError

__all__ = ["ExportedModel", "dumps", "loads", "read_model", "provenance", "apply_model"]

FORMAT = "calibdash-calibrator"
VERSION = 2
#: The kinds of model a file holds: a binary calibrator, or a K-class one.
KINDS = ("binary", "classes")
#: Files of version 1 (before ``kind``): their (format, version) -> the kind they hold.
_OLD = {(FORMAT, 1): "binary", ("calibdash-multiclass", 1): "classes"}
_WHAT = "calibrator file"
#: Longest string or key a model file may hold (column names, categories, file names).
MAX_TEXT = 4096
#: Deepest nesting of arrays and objects (a file's deepest is a composite's per-class state, about 6).
MAX_DEPTH = 32
#: Most names in one ``fitted_on`` list (features, classes, class columns).
MAX_NAMES = 100_000
#: The keys of a model file's top level.
TOP_KEYS = frozenset({"format", "version", "kind", "method", "params", "state", "fitted_on"})


def check_value(value: Any) -> None:
    """DataError unless every number under ``value`` is finite, every string and key at most :data:`MAX_TEXT`
    characters and the nesting at most :data:`MAX_DEPTH` deep (iterative: no recursion). The message names the
    entry (``the calibrator file: 'state', 'cuts' holds a non-finite number``), never its text."""
    stack: list = [(value, (), 0)]
    while stack:
        v, path, depth = stack.pop()
        where = f"the {_WHAT}" + (": " + ", ".join(map(repr, path)) if path else "")
        if depth > MAX_DEPTH:
            raise DataError(f"the {_WHAT} nests arrays or objects more than {MAX_DEPTH} deep.")
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


def _check(kind: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``test`` of a ``fitted_on`` entry, with what it accepts in words (``kind``) for the message."""
    test.kind = kind
    return test


def _list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and len(v) <= MAX_NAMES and all(test(x) for x in v)


_text = _check("a string", lambda v: isinstance(v, str))
_text_or_none = _check("a string or null", lambda v: v is None or isinstance(v, str))
_names = _check("a list of strings", _list_of(lambda x: isinstance(x, str)))
_scalars = _check("a list of class values", _list_of(lambda x: x is None or isinstance(x, (str, int, float))))
_count = _check("a count (an integer, at least 0)", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)
_flag = _check("true or false", lambda v: isinstance(v, bool))
_transform = _check("null or 'identity' or 'logistic'", lambda v: v is None or v in ("identity", "logistic"))
#: An engine's registry name, checked by its form only (an engine added to another install is still a name).
_engine_name = _check("an engine's name (lower-case letters, digits and _)",
                      lambda v: isinstance(v, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,31}", v) is not None)

#: What a binary model's ``fitted_on`` may hold (:func:`calibdash.io.export.provenance`, ``fit --engine``).
BINARY_FITTED_ON = {"file": _text, "score": _text, "score_transform": _transform,
                    "features": _names, "engine": _engine_name}
#: What a K-class model's ``fitted_on`` may hold (``fit`` on a K-class table writes it).
CLASS_FITTED_ON = {"file": _text, "label": _text, "classes": _scalars, "columns": _names, "prefix": _text_or_none,
                   "logits": _flag, "rows": _count, "sha256": _text_or_none}


def check_fitted_on(fitted_on: Any, schema: dict) -> dict:
    """``fitted_on`` checked against ``schema`` (key -> check): an object of known keys, each of its type
    (DataError naming the key, not the value)."""
    if not isinstance(fitted_on, dict):
        raise DataError(f"the {_WHAT}'s 'fitted_on' must be an object, not {type(fitted_on).__name__}.")
    extra = sorted(set(fitted_on) - set(schema))
    if extra:
        raise DataError(f"the {_WHAT}'s 'fitted_on' holds entries calibdash does not write: "
                        f"{', '.join(map(repr, extra[:5]))}; it knows {', '.join(sorted(schema))}.")
    for key, value in fitted_on.items():
        if not schema[key](value):
            raise DataError(f"the {_WHAT}'s 'fitted_on' entry {key!r} must be {schema[key].kind}.")
    return dict(fitted_on)


class ExportedModel(NamedTuple):
    """A loaded file: the calibrator and what it says about the data it was fitted on."""

    calibrator: Any
    fitted_on: dict

    @property
    def kind(self) -> str:
        """``"binary"`` or ``"classes"`` (:data:`KINDS`)."""
        return kind_of(self.calibrator)


def plain(value: Any, what: str, error: type[Exception]):
    """``value`` with numpy scalars as Python scalars (lists and tuples as lists of them); raises ``error`` naming
    ``what`` when a JSON file cannot hold it."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v, what, error) for v in value]
    raise error(f"{what} is a {type(value).__name__} ({value!r}), which a JSON file cannot hold.")


def _layout(doc: dict) -> str:
    """Top-level and state entries one a line; a state entry that is a list of objects one object a line."""
    c = partial(json.dumps, separators=(",", ":"))
    lines = []
    for key, value in doc.items():
        if key != "state":
            lines.append(f"{c(key)}:{c(value)}")
            continue
        inner = []
        for k, v in value.items():
            if isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
                items = ",\n".join(f"  {c(e)}" for e in v)
                inner.append(f" {c(k)}:[\n{items}\n ]")
            else:
                inner.append(f" {c(k)}:{c(v)}")
        lines.append('"state":{\n' + ",\n".join(inner) + "\n}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _spec(cal, kind: str) -> tuple[str, dict]:
    """The name and parameters the registry of ``kind`` builds ``cal`` again from."""
    if kind == "binary":
        return type(cal).name, cal.get_params()
    # a composite (ovr:, top_label:) names itself and its binary method's hyperparameters (BinaryComposite.spec)
    return cal.spec() if callable(getattr(cal, "spec", None)) else (type(cal).name, cal.get_params(deep=False))


def dumps(calibrator, *, fitted_on: dict | None = None) -> str:
    """The fitted ``calibrator``, binary or K-class (a registered class, composites included), as the text of a JSON
    file.

    ``fitted_on`` (optional) says what the scores were (``python -m calibdash fit`` writes a binary model's
    ``score``, ``score_transform`` and ``features``, a K-class model's label, classes and columns). Returns the JSON
    text (ending with a newline); the same calibrator always gives the same text.

    Raises
    ------
    NotFittedError
        If ``calibrator`` is not fitted.
    ProgrammingError
        If it is not a registered calibrator with ``_export_state`` and ``_import_state``, or ``fitted_on`` or the
        class's ``_export_state`` holds values JSON cannot hold.
    SettingsError
        If its parameters hold values JSON cannot hold.
    DataError
        If its state cannot be written for a reason in the data (MBCT features of a type the file cannot describe).
    """
    kind = kind_of(calibrator)
    state = state_of(calibrator)
    name, params = _spec(calibrator, kind)
    params = {k: plain(v, f"{name}'s parameter {k!r}", SettingsError) for k, v in sorted(params.items())}
    doc = {"format": FORMAT, "version": VERSION, "kind": kind, "method": name, "params": params, "state": state}
    if fitted_on:
        doc["fitted_on"] = {k: plain(v, f"fitted_on[{k!r}]", ProgrammingError) for k, v in fitted_on.items()}
    try:
        return _layout(doc)
    except (TypeError, ValueError) as exc:
        raise ProgrammingError(f"{type(calibrator).__name__}._export_state gave values that cannot be written "
                               f"as JSON: {exc}") from None


def document(text) -> tuple[State, str]:
    """The top-level object of a file's ``text`` (str or UTF-8 bytes), checked to be JSON of this format (version
    2, or a version-1 file of either kind), and the kind it holds. DataError: not UTF-8, not JSON, a value
    :func:`check_value` refuses, not an object, another format or version, a top-level key not in :data:`TOP_KEYS`,
    or an unknown ``kind``."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"the {_WHAT} is not UTF-8 text: {exc}") from None
    if not isinstance(text, str):
        raise DataError(f"a {_WHAT} is JSON text, not {type(text).__name__}.")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"the {_WHAT} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                        f"column {exc.colno}.") from None
    except RecursionError:
        raise DataError(f"the {_WHAT} nests arrays or objects more than {MAX_DEPTH} deep.") from None
    check_value(doc)
    if not isinstance(doc, dict):
        raise DataError(f"the {_WHAT} must hold a JSON object, not a {type(doc).__name__}.")
    fmt, found = doc.get("format"), doc.get("version")
    if fmt not in {f for f, _ in _OLD}:
        raise DataError(f"not a calibdash {_WHAT}: 'format' is {fmt!r}, expected {FORMAT!r}.")
    current = fmt == FORMAT and found == VERSION
    if isinstance(found, bool) or not (current or (fmt, found) in _OLD):
        raise DataError(f"{_WHAT} version {found!r} is not supported; this calibdash reads versions 1 and "
                        f"{VERSION}.")
    extra = sorted(set(doc) - TOP_KEYS)
    if extra:
        raise DataError(f"the {_WHAT} holds top-level entries the format does not have: "
                        f"{', '.join(map(repr, extra[:5]))}; it has {', '.join(sorted(TOP_KEYS))}.")
    kind = doc.get("kind") if current else _OLD[fmt, found]
    if kind not in KINDS:
        raise DataError(f"the {_WHAT}'s 'kind' is {kind!r}; it must be one of {', '.join(map(repr, KINDS))}.")
    if not current and "kind" in doc:
        raise DataError(f"the {_WHAT} of version 1 holds 'kind', which came with version {VERSION}.")
    state = State(doc, f"the {_WHAT}")
    state._read.update({"format", "version", "kind"})
    return state, kind


def probe_table(k: int) -> np.ndarray:
    """Rows every loaded K-class calibrator must turn into finite probabilities: the uniform row, each one-hot row
    (1 and exact zeros), and rows with one class at 1 - 1e-12."""
    near = np.full((k, k), 1e-12 / (k - 1))
    np.fill_diagonal(near, 1.0 - 1e-12)
    return np.vstack([np.full((1, k), 1.0 / k), np.eye(k), near])


def _class_calibrator(method: str, params: dict, state: State):
    """The fitted K-class calibrator of a file's ``method``, ``params`` and ``state``, probed on
    :func:`probe_table`."""
    from .. import calibrators
    from ..calibrators.multiclass.base import LOG_FLOOR

    try:
        cal = calibrators.get(method, "classes", **params)
    except SettingsError as exc:
        raise DataError(f"the {_WHAT}'s method and params do not give a calibrator ({exc}); this calibdash has: "
                        f"{', '.join(calibrators.available('classes'))}.") from None
    check_exportable(type(cal), "classes")
    n_train, k = state.integer("n_train"), state.integer("n_classes")
    if n_train < 1 or k < 2:
        raise state.error(f"'n_train' must be at least 1 and 'n_classes' at least 2, got {n_train} and {k}")
    probe = probe_table(k)
    return imported_state(cal, state, {"n_train": n_train, "n_classes": k},
                     np.log(np.maximum(probe, LOG_FLOOR)) if cal.logits else probe, cal.predict_proba,
                     "does not give finite probabilities for every row of the probe table")


def read_model(text, kind: str | None = None) -> ExportedModel:
    """The calibrator in a file's ``text`` (str or bytes, written by :func:`dumps` or a version-1 file of either kind),
    and the file's ``fitted_on`` entry (``{}`` when absent); ``kind`` (``"binary"`` or ``"classes"``, default
    either) refuses a model of the other kind.

    Raises
    ------
    DataError
        Malformed JSON, an unknown format, version, kind or method, unknown parameters, a state that is missing
        entries, holds entries its method does not know or does not fit the method, a ``fitted_on`` with unknown
        entries or values of the wrong type (each message says which), or a model of the other kind than ``kind``.
    ProgrammingError
        The file's method is registered but its class cannot import a state.
    """
    doc, found = document(text)
    if kind is not None and found != kind:
        want = {"binary": "a binary calibrator", "classes": "a K-class calibrator"}
        raise DataError(f"the {_WHAT} holds {want[found]}; {want[kind]} is needed here.")
    for entry in ("params", "state"):
        if not isinstance(doc[entry], dict):
            raise doc.error(f"{entry!r} must be an object")
    method, params = doc.text("method"), doc["params"]
    state = doc.object("state")
    state.where = f"the {method} state"
    if found == "binary":
        cal = calibrator_from(method, params, state, f"the {_WHAT}'s")
    else:
        cal = _class_calibrator(method, params, state)
    schema = BINARY_FITTED_ON if found == "binary" else CLASS_FITTED_ON
    return ExportedModel(cal, check_fitted_on(doc.get("fitted_on", {}), schema))


def loads(text, kind: str | None = None):
    """The fitted calibrator saved by :func:`dumps` (predictions identical to the saved one's); DataError: see
    :func:`read_model`."""
    return read_model(text, kind).calibrator


def load_model(model, who: str, error: type[Exception]) -> ExportedModel:
    """The binary model given to ``who``: a fitted calibrator (``fitted_on`` empty), a loaded model, or a model file's
    path or text (bytes, or a str starting with ``{``); anything else is an ``error``."""
    if isinstance(model, Calibrator):
        model._check_fitted()
        return ExportedModel(model, {})
    if isinstance(model, ExportedModel):
        return model
    if isinstance(model, Path) or (isinstance(model, str) and not model.lstrip().startswith("{")):
        try:
            model = Path(model).read_bytes()
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read the model file {model}: {exc.strerror or exc}.") from None
    if isinstance(model, (str, bytes, bytearray)):
        return read_model(model, "binary")
    raise error(f"{who} takes a fitted calibrator, an exported model or a model file, not {type(model).__name__}.")


def apply_model(model_path_or_calibrator, source, out_path, *args, **options):
    """:func:`calibdash.engines.apply.apply_model` (its other arguments, result and errors) on a model file written by
    ``python -m calibdash fit`` or :func:`dumps` (its path or text), a loaded model, or a fitted calibrator (its score
    transform then decided from the values, as for a file without ``fitted_on``); anything else is a SettingsError."""
    from ..engines import apply

    cal, fitted_on = load_model(model_path_or_calibrator, "apply_model", SettingsError)
    return apply.apply_model(cal, source, out_path, *args, fitted_on=fitted_on, **options)


def provenance(score_set, calibrator) -> dict:
    """The ``fitted_on`` entry for a calibrator fitted on ``score_set`` (a :class:`calibdash.data.ScoreSet`): the
    file, the score column, whether the scores were logistic-mapped, and the features used."""
    feats = list(score_set.feature_columns) if calibrator.uses_features and score_set.features is not None else []
    return {"file": score_set.name, "score": score_set.score,
            "score_transform": "logistic" if score_set.score in score_set.report.mapped else "identity",
            "features": feats}
