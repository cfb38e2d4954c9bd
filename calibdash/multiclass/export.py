"""Save a fitted multi-class calibrator to a small JSON file and load it back, without the training data.

>>> import numpy as np
>>> from calibdash import multiclass
>>> from calibdash.multiclass import export
>>> P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.6, 0.3, 0.1]])
>>> cal = multiclass.get("ovr:histogram", n_bins=1).fit(P, [0, 1, 2, 1])
>>> print(export.dumps(cal), end="")                         # doctest: +NORMALIZE_WHITESPACE
{
"format":"calibdash-multiclass",
"version":1,
"method":"ovr:histogram",
"params":{"bin_size":100,"by":"bins","logits":false,"n_bins":1},
"state":{
 "n_train":4,
 "n_classes":3,
 "models":[
  {"state":{"n_train":4,"cuts":[],"estimates":[0.25]}},
  {"state":{"n_train":4,"cuts":[],"estimates":[0.5]}},
  {"state":{"n_train":4,"cuts":[],"estimates":[0.25]}}
 ]
}
}

The file
--------
One JSON object, like a binary calibrator's (:mod:`calibdash.export`)::

    {"format": "calibdash-multiclass", "version": 1, "method": NAME,
     "params": {...}, "state": {...}, "fitted_on": {...}}

``method`` is the name :func:`calibdash.multiclass.get` takes (``"temperature"``,
``"ovr:isotonic"``, ``"top_label:bbq"``) and ``params`` what it takes with it:
``get_params()``, except that a composite's binary method's hyperparameters and
its own are one dict (:meth:`~calibdash.multiclass.methods.ovr.BinaryComposite.spec`).
``state`` holds ``n_train`` (training rows), ``n_classes`` (K, the columns a
table must have) and what the class's ``_export_state()`` gives; loading builds
the calibrator with ``get(method, **params)``, sets ``n_train_`` and
``n_classes_``, then calls its ``_import_state(state)`` with the rest (a
:class:`calibdash.export.State`, which checks types and sizes). Composites
nest one binary calibrator's state per class, as :func:`calibdash.export.state_of`
writes it, and read it back with :func:`calibdash.export.calibrator_from`.

Predictions are reproduced exactly (floats are written as their shortest
``repr``). Files are deterministic (same calibrator, same bytes): the top level
and the state one entry a line, a state entry that is a list of objects (the
composites' per-class models) one object a line.

Errors: a damaged or foreign file is a :class:`~calibdash.errors.DataError`
(every loaded model must turn a probe table into finite rows); exporting what
is not a registered multi-class calibrator with ``_export_state`` and
``_import_state`` is a :class:`~calibdash.errors.ProgrammingError`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import export, model_checks
from ..errors import DataError, ProgrammingError, SettingsError
from . import available, classes, get
from .base import LOG_FLOOR, MulticlassCalibrator
from .methods.ovr import BinaryComposite

__all__ = ["FORMAT", "VERSION", "ExportedModel", "dumps", "loads", "read_model", "probe_table"]

FORMAT = "calibdash-multiclass"
VERSION = 1
WHAT = "multi-class calibrator file"


class ExportedModel(NamedTuple):
    """A loaded file: the calibrator and what it says about the data it was fitted on."""

    calibrator: MulticlassCalibrator
    fitted_on: dict


def probe_table(k: int) -> np.ndarray:
    """Rows every loaded K-class calibrator must turn into finite probabilities: the uniform row,
    each one-hot row (saturated: 1 and exact zeros), and rows with one class at 1 - 1e-12."""
    near = np.full((k, k), 1e-12 / (k - 1))
    np.fill_diagonal(near, 1.0 - 1e-12)
    return np.vstack([np.full((1, k), 1.0 / k), np.eye(k), near])


def _exportable(cls: type) -> None:
    if not (isinstance(cls, type) and issubclass(cls, MulticlassCalibrator)):
        raise ProgrammingError(f"only calibdash multi-class calibrators can be exported here, not {cls.__name__}.")
    if classes().get(cls.name) is not cls:
        raise ProgrammingError(f"{cls.__name__} is not a registered multi-class calibrator; loading it back "
                               "would fail.")
    missing = [m for m in ("_export_state", "_import_state") if not callable(getattr(cls, m, None))]
    if missing:
        raise ProgrammingError(f"{cls.__name__} has no {' or '.join(missing)}; a calibrator class says what its "
                               "fitted state is with _export_state and _import_state.")


def _spec(cal: MulticlassCalibrator) -> tuple[str, dict]:
    """The name and parameters :func:`calibdash.multiclass.get` builds ``cal`` again from."""
    if isinstance(cal, BinaryComposite):
        return cal.spec()
    return type(cal).name, cal.get_params(deep=False)


def _layout(doc: dict) -> str:
    """Top-level and state entries one a line; a state entry that is a list of objects one object a line."""
    c = export.compact
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


def dumps(cal: MulticlassCalibrator, *, fitted_on: dict | None = None) -> str:
    """The fitted multi-class calibrator ``cal`` as the text of a JSON file.

    Parameters
    ----------
    cal : MulticlassCalibrator
        A fitted calibrator of a registered class (a composite included).
    fitted_on : dict, optional
        What the table was (file, columns); written as the ``fitted_on`` entry.

    Returns
    -------
    str
        The JSON text (ends with a newline); the same calibrator always gives the same text.

    Raises
    ------
    NotFittedError
        If ``cal`` is not fitted.
    ProgrammingError
        Not a registered multi-class calibrator with ``_export_state`` and ``_import_state``, or
        ``fitted_on`` or the state holds values JSON cannot hold.
    SettingsError
        Its parameters hold values JSON cannot hold.
    """
    _exportable(type(cal))
    cal._check_fitted()
    method, params = _spec(cal)
    params = {k: export.plain(v, f"{method}'s parameter {k!r}", SettingsError) for k, v in sorted(params.items())}
    state = {"n_train": int(cal.n_train_), "n_classes": int(cal.n_classes_), **cal._export_state()}
    doc = {"format": FORMAT, "version": VERSION, "method": method, "params": params, "state": state}
    if fitted_on:
        doc["fitted_on"] = {k: export.plain(v, f"fitted_on[{k!r}]", ProgrammingError) for k, v in fitted_on.items()}
    try:
        return _layout(doc)
    except (TypeError, ValueError) as exc:
        raise ProgrammingError(f"{type(cal).__name__}._export_state gave values that cannot be written as JSON: "
                               f"{exc}") from None


def read_model(text) -> ExportedModel:
    """The multi-class calibrator in a file's text, and the file's ``fitted_on`` entry (``{}`` when absent).

    Raises
    ------
    DataError
        Malformed JSON, another format or version, an unknown method, parameters that do not fit
        it, or a state that is missing entries or does not fit the method (each message says
        which); a loaded model that does not give finite rows on :func:`probe_table`.
    ProgrammingError
        The file's method is registered but its class cannot import a state.
    """
    doc = export.document(text, FORMAT, VERSION, WHAT)
    method = doc.text("method")
    params = doc["params"]
    if not isinstance(params, dict):
        raise doc.error("'params' must be an object")
    try:
        cal = get(method, **params)
    except SettingsError as exc:
        raise DataError(f"the {WHAT}'s method and params do not give a calibrator ({exc}); this calibdash has: "
                        f"{', '.join(available())}.") from None
    _exportable(type(cal))
    state = doc.object("state")
    state.where = f"the {method} state"
    n_train, k = state.integer("n_train"), state.integer("n_classes")
    if n_train < 1 or k < 2:
        raise state.error(f"'n_train' must be at least 1 and 'n_classes' at least 2, got {n_train} and {k}")
    rest = export.State({key: v for key, v in state.items() if key not in ("n_train", "n_classes")}, state.where)
    probe = probe_table(k)
    try:
        cal.n_train_, cal.n_classes_ = n_train, k
        cal._import_state(rest)
        rest.refuse_unread()
        out = cal.predict_proba(np.log(np.maximum(probe, LOG_FLOOR)) if cal.logits else probe)
    except DataError:
        raise
    except export.IMPORT_ERRORS as exc:
        raise state.error(f"does not fit the method ({type(exc).__name__}: {exc})") from None
    if out.shape != probe.shape or not np.all(np.isfinite(out)):
        raise state.error("does not give finite probabilities for every row of the probe table")
    fitted_on = model_checks.check_fitted_on(doc.get("fitted_on", {}), model_checks.CLASS_FITTED_ON, WHAT)
    return ExportedModel(cal, fitted_on)


def loads(text) -> MulticlassCalibrator:
    """The fitted multi-class calibrator saved by :func:`dumps` (predictions identical to the saved one's).

    Raises
    ------
    DataError
        See :func:`read_model`.
    """
    return read_model(text).calibrator
