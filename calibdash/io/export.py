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
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import model_checks
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


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _layout(doc: dict) -> str:
    """Top-level and state entries one a line; a state entry that is a list of objects one object a line."""
    c = _compact
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
    2, or a version-1 file of either kind), and the kind it holds. DataError: not UTF-8, not JSON, not an object,
    another format or version, or an unknown ``kind``."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"the {_WHAT} is not UTF-8 text: {exc}") from None
    if not isinstance(text, str):
        raise DataError(f"a {_WHAT} is JSON text, not {type(text).__name__}.")
    doc = model_checks.parse_json(text, _WHAT)
    if not isinstance(doc, dict):
        raise DataError(f"the {_WHAT} must hold a JSON object, not a {type(doc).__name__}.")
    fmt, found = doc.get("format"), doc.get("version")
    if fmt not in {f for f, _ in _OLD}:
        raise DataError(f"not a calibdash {_WHAT}: 'format' is {fmt!r}, expected {FORMAT!r}.")
    current = fmt == FORMAT and found == VERSION
    if isinstance(found, bool) or not (current or (fmt, found) in _OLD):
        raise DataError(f"{_WHAT} version {found!r} is not supported; this calibdash reads versions 1 and "
                        f"{VERSION}.")
    model_checks.check_top(doc, _WHAT)
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
    params = doc["params"]
    if not isinstance(params, dict):
        raise doc.error("'params' must be an object")
    if not isinstance(doc["state"], dict):
        raise doc.error("'state' must be an object")
    method = doc.text("method")
    state = doc.object("state")
    state.where = f"the {method} state"
    if found == "binary":
        cal = calibrator_from(method, params, state, f"the {_WHAT}'s")
    else:
        cal = _class_calibrator(method, params, state)
    schema = model_checks.BINARY_FITTED_ON if found == "binary" else model_checks.CLASS_FITTED_ON
    return ExportedModel(cal, model_checks.check_fitted_on(doc.get("fitted_on", {}), schema, _WHAT))


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
