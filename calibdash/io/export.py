"""Save a fitted calibrator, binary or K-class, to a small JSON file and load it back, without the training data.

>>> from calibdash import calibrators, export
>>> cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
>>> text = export.dumps(cal)
>>> print(text)                                                   # doctest: +NORMALIZE_WHITESPACE
{
"format":"calibdash-calibrator",
"version":2,
"kind":"binary",
"method":"histogram",
"params":{"bin_size":100,"by":"bins","n_bins":2},
"state":{
 "n_train":4,
 "cuts":[0.25],
 "estimates":[0.0,1.0]
}
}
>>> export.loads(text).predict([0.0, 0.25, 1.0]).tolist()
[0.0, 1.0, 1.0]

The file
--------
One JSON object, one format for both kinds of calibrator::

    {"format": "calibdash-calibrator", "version": 2, "kind": "binary" | "classes",
     "method": NAME, "params": {...}, "state": {...}, "fitted_on": {...}}

``kind`` says which registry ``method`` is a name of: ``"binary"``, a binary calibrator
(:func:`calibdash.calibrators.get_class`), or ``"classes"``, a K-class one (the name
:func:`calibdash.calibrators.multiclass.get` takes: ``"temperature"``, ``"ovr:isotonic"``, ``"top_label:bbq"``). ``params``
is what the method is built again with: the calibrator's ``get_params()`` (a K-class composite's binary
method's hyperparameters and its own are one dict,
:meth:`~calibdash.calibrators.multiclass.methods.ovr.BinaryComposite.spec`). ``state`` holds what its ``predict`` needs
and nothing more: a lookup table (histogram, isotonic, BBQ, SBB), the knots of a piecewise-linear map
(isotonic with linear interpolation, ABB, ELiTE), the slope and intercept (Platt), the columns' coding and the
trees' routing tables (MBCT), a K-class model's matrices or one binary state per class; never the training
rows. ``state["n_train"]`` is the number of training rows and, for ``kind`` ``"classes"``,
``state["n_classes"]`` is K (the columns a table must have). A loaded calibrator can still be explained
(:func:`calibdash.explain.explain`) given the rows it was fitted on. The optional ``fitted_on`` says what the
scores were: for a binary model the score column and how it was mapped to [0, 1], for a K-class model the
label, the classes and their columns (``python -m calibdash fit`` writes it, ``apply`` reads it).

Files written before version 2 still load: ``{"format": "calibdash-calibrator", "version": 1}`` is a binary
model and ``{"format": "calibdash-multiclass", "version": 1}`` a K-class one, the same entries without
``kind``.

Predictions are reproduced exactly: arrays are written as JSON lists of
numbers and Python writes a float as its shortest ``repr``, which reads back
to the same float. Each calibrator class says what its state is with two
methods, ``_export_state(self) -> dict`` (JSON-ready values) and
``_import_state(self, state)`` (``state`` a :class:`State`, which checks
types and sizes); a class without them cannot be exported. Every loaded model
is probed: a binary one must give a finite probability on a grid of scores, a
K-class one finite rows on :func:`probe_table`.

Errors: a damaged or foreign file is a :class:`~calibdash.core.errors.DataError`;
exporting something that is not a registered calibrator class with those two
methods is a :class:`~calibdash.core.errors.ProgrammingError`.

Files are written deterministically (same calibrator, same bytes): the top
level and the state one entry a line, arrays on one line, a state entry that is
a list of objects (a composite's per-class models, MBCT's trees) one object a line.
"""
from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np

from .. import calibrators
from . import model_checks
from ..calibrators.base import Calibrator
from ..core.errors import DataError, ProgrammingError, SettingsError

__all__ = ["FORMAT", "VERSION", "KINDS", "State", "ExportedModel", "dumps", "loads", "read_model", "plain",
           "document", "state_of", "calibrator_from", "probe_table", "provenance", "IMPORT_ERRORS"]

FORMAT = "calibdash-calibrator"
VERSION = 2
#: The kinds of model a file holds: a binary calibrator, or a K-class one.
KINDS = ("binary", "classes")
#: Files of version 1 (before ``kind``): their (format, version) -> the kind they hold.
_OLD = {(FORMAT, 1): "binary", ("calibdash-multiclass", 1): "classes"}
_WHAT = "calibrator file"

#: Scores that every loaded binary calibrator must turn into probabilities without error.
_PROBE = np.linspace(0.0, 1.0, 101)


class ExportedModel(NamedTuple):
    """A loaded file: the calibrator and what it says about the data it was fitted on."""

    calibrator: Any
    fitted_on: dict

    @property
    def kind(self) -> str:
        """``"binary"`` or ``"classes"`` (:data:`KINDS`)."""
        return kind_of(self.calibrator)


class State(dict):
    """A calibrator's state as read from a file, with typed, checked access.

    ``_import_state`` methods read their entries through it, so that a
    damaged file is refused with a :class:`~calibdash.core.errors.DataError`
    naming the entry instead of failing later inside ``predict``.

    Parameters
    ----------
    data : dict
        The JSON object.
    where : str
        Where it sits in the file, for messages (``"the histogram state"``).
    """

    def __init__(self, data: dict, where: str):
        super().__init__(data)
        self.where = where
        self._read: set = set()
        self._children: list["State"] = []

    def __getitem__(self, key):
        self._read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._read.add(key)
        return super().get(key, default)

    def unread(self) -> list[str]:
        """Entries no reader asked for, here and in the objects read through :meth:`object` and
        :meth:`records` (``"trees[0], depth"``): what a file holds that its method does not know."""
        out = [str(k) for k in self if k not in self._read]
        for child in self._children:
            inner = child.where[len(self.where) + 2:] if child.where.startswith(self.where + ", ") else child.where
            out += [f"{inner}, {k}" for k in child.unread()]
        return out

    def refuse_unread(self) -> None:
        """A DataError naming the entries no reader asked for (a foreign or hand-edited file)."""
        extra = self.unread()
        if extra:
            shown = ", ".join(repr(k) for k in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            raise self.error(f"holds entries its method does not know: {shown}")

    def error(self, message: str) -> DataError:
        """A DataError saying ``message`` about this part of the file."""
        return DataError(f"{self.where}: {message}.")

    def __missing__(self, key):
        raise self.error(f"{key!r} is missing")

    def number(self, key: str) -> float:
        """Entry ``key`` as a finite float."""
        value = self[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(f"{key!r} must be a finite number, got {value!r}")
        return float(value)

    def integer(self, key: str) -> int:
        """Entry ``key`` as an int."""
        value = self[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{key!r} must be an integer, got {value!r}")
        return value

    def text(self, key: str) -> str:
        """Entry ``key`` as a string."""
        value = self[key]
        if not isinstance(value, str):
            raise self.error(f"{key!r} must be a string, got {value!r}")
        return value

    def list(self, key: str) -> list:
        """Entry ``key`` as a JSON array."""
        value = self[key]
        if not isinstance(value, list):
            raise self.error(f"{key!r} must be a list, got {type(value).__name__}")
        return value

    def array(self, key: str, dtype=float, size: int | None = None, sorted: bool = False) -> np.ndarray:
        """Entry ``key`` as a 1-D array of finite numbers.

        Parameters
        ----------
        dtype : numpy dtype, default float
            ``float`` or an integer type (then the numbers must be integers).
        size : int, optional
            Required length.
        sorted : bool, default False
            Require non-decreasing values (cut points, knots).
        """
        values = self.list(key)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise self.error(f"{key!r} must be a list of numbers")
        if np.dtype(dtype).kind in "iu" and not all(isinstance(v, int) for v in values):
            raise self.error(f"{key!r} must be a list of integers")
        arr = np.asarray(values, dtype=dtype).reshape(-1)
        if not np.all(np.isfinite(arr)):
            raise self.error(f"{key!r} holds a non-finite number")
        if size is not None and arr.size != size:
            raise self.error(f"{key!r} must hold {size} numbers, got {arr.size}")
        if sorted and np.any(np.diff(arr) < 0):
            raise self.error(f"{key!r} must be in increasing order")
        return arr

    def object(self, key: str) -> "State":
        """Entry ``key`` as a JSON object, itself a :class:`State` (a nested calibrator's state)."""
        value = self[key]
        if not isinstance(value, dict):
            raise self.error(f"{key!r} must be an object, got {type(value).__name__}")
        child = State(value, f"{self.where}, {key}")
        self._children.append(child)
        return child

    def records(self, key: str) -> list["State"]:
        """Entry ``key`` as a list of objects, each a :class:`State`."""
        items = self.list(key)
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.error(f"{key}[{i}] must be an object")
            out.append(State(item, f"{self.where}, {key}[{i}]"))
        self._children += out
        return out



# -- writing --------------------------------------------------------------------------------------
def plain(value: Any, what: str, error: type[Exception]):
    """``value`` with numpy scalars as Python scalars (lists and tuples as lists of them); raises
    ``error`` naming ``what`` when a JSON file cannot hold it."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v, what, error) for v in value]
    raise error(f"{what} is a {type(value).__name__} ({value!r}), which a JSON file cannot hold.")


def _registry(kind: str) -> dict:
    from ..calibrators import multiclass
    return calibrators.classes() if kind == "binary" else multiclass.classes()


def kind_of(calibrator) -> str:
    """``"classes"`` for a K-class calibrator (:class:`calibdash.calibrators.multiclass.base.MulticlassCalibrator`), else
    ``"binary"``."""
    from ..calibrators.multiclass.base import MulticlassCalibrator
    return "classes" if isinstance(calibrator, MulticlassCalibrator) else "binary"


def _exportable(cls: type, kind: str) -> None:
    """ProgrammingError unless ``cls`` is a registered calibrator class of ``kind`` that says what its state is."""
    from ..calibrators.multiclass.base import MulticlassCalibrator
    base = Calibrator if kind == "binary" else MulticlassCalibrator
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ProgrammingError(f"only calibdash calibrators can be exported, not {cls.__name__}.")
    if _registry(kind).get(cls.name) is not cls:
        raise ProgrammingError(f"{cls.__name__} is not a registered calibrator; loading it back would fail.")
    missing = [m for m in ("_export_state", "_import_state") if not callable(getattr(cls, m, None))]
    if missing:
        raise ProgrammingError(f"{cls.__name__} has no {' or '.join(missing)}; a calibrator class says what "
                               "its fitted state is with _export_state and _import_state.")


def _compact(value) -> str:
    """``value`` as JSON text without spaces: how a file writes each entry."""
    return json.dumps(value, separators=(",", ":"))


def _layout(doc: dict) -> str:
    """Top-level and state entries one a line (diff- and eye-friendly); a state entry that is a list of objects
    one object a line; the rest compact."""
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


def state_of(calibrator) -> dict:
    """The ``state`` entry of a fitted calibrator's file: ``{"n_train": ..., **its _export_state()}``, with
    ``"n_classes"`` after ``n_train`` for a K-class one.

    :func:`dumps` writes it; K-class composites (:mod:`calibdash.calibrators.multiclass`) nest one per binary calibrator
    they hold.

    Raises
    ------
    NotFittedError
        If ``calibrator`` is not fitted.
    ProgrammingError
        If it is not a registered calibrator with ``_export_state`` and ``_import_state``.
    """
    kind = kind_of(calibrator)
    _exportable(type(calibrator), kind)
    calibrator._check_fitted()
    k = {"n_classes": int(calibrator.n_classes_)} if kind == "classes" else {}
    return {"n_train": int(calibrator.n_train_), **k, **calibrator._export_state()}


def _spec(cal, kind: str) -> tuple[str, dict]:
    """The name and parameters the registry of ``kind`` builds ``cal`` again from."""
    if kind == "binary":
        return type(cal).name, cal.get_params()
    # a composite (ovr:, top_label:) names itself and its binary method's hyperparameters (BinaryComposite.spec)
    return cal.spec() if callable(getattr(cal, "spec", None)) else (type(cal).name, cal.get_params(deep=False))


def dumps(calibrator, *, fitted_on: dict | None = None) -> str:
    """The fitted ``calibrator``, binary or K-class, as the text of a JSON file.

    Parameters
    ----------
    calibrator : Calibrator or MulticlassCalibrator
        A fitted calibrator of a registered class (a K-class composite included).
    fitted_on : dict, optional
        What the scores were (``python -m calibdash fit`` writes a binary model's ``score``,
        ``score_transform`` and ``features``, a K-class model's label, classes and columns); written as the
        ``fitted_on`` entry.

    Returns
    -------
    str
        The JSON text (ends with a newline). The same calibrator always gives
        the same text.

    Raises
    ------
    NotFittedError
        If ``calibrator`` is not fitted.
    ProgrammingError
        If it is not a registered calibrator with ``_export_state`` and
        ``_import_state``, ``fitted_on`` holds values JSON cannot hold, or the
        class's ``_export_state`` returns such values.
    SettingsError
        If its parameters hold values JSON cannot hold.
    DataError
        If its state cannot be written for a reason in the data (for example
        MBCT features of a type the file cannot describe).
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


# -- reading --------------------------------------------------------------------------------------
def document(text) -> tuple[State, str]:
    """The top-level object of a file's ``text`` (str or UTF-8 bytes), checked to be JSON of this format
    (version 2, or a version-1 file of either kind), and the kind it holds.

    Raises
    ------
    DataError
        Not UTF-8, not JSON, not an object, another format or version, or an unknown ``kind``.
    """
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


#: Exceptions an ``_import_state`` or a first ``predict`` raises on a state that does not fit its method.
IMPORT_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError)


def calibrator_from(method: str, params: dict, state: State, whose: str = "the") -> Calibrator:
    """The fitted binary calibrator ``method`` with ``params`` whose file ``state`` (with its ``n_train``) is
    given: built, its state imported, and probed (it must give a finite probability for every score
    of a grid on [0, 1]). ``whose`` starts the messages (``"the calibrator file's"``).

    Raises
    ------
    DataError
        Unknown method, params that do not fit it, or a state that is missing entries or does not
        fit the method (each message says which).
    ProgrammingError
        The method is registered but its class cannot import a state.
    """
    if method not in calibrators.classes():
        raise DataError(f"{whose} method {method!r} is unknown; this calibdash has: "
                        f"{', '.join(calibrators.available())}.")
    try:
        cal = calibrators.get(method, **params)
    except SettingsError as exc:
        raise DataError(f"{whose} params do not fit {method}: {exc}") from None
    _exportable(type(cal), "binary")
    return _imported(cal, state, {"n_train": state.integer("n_train")}, _PROBE, cal.predict,
                     "does not give a probability for every score")


def _imported(cal, state: State, counts: dict, probe: np.ndarray, predict, fails: str):
    """``cal`` with the file's ``counts`` set (``n_train`` as ``n_train_``, ...) and the rest of ``state``
    imported, then probed: ``predict(probe)`` must give finite values of ``probe``'s shape (``fails`` says
    otherwise)."""
    rest = State({k: v for k, v in state.items() if k not in counts}, state.where)
    try:
        for key, value in counts.items():
            setattr(cal, f"{key}_", value)
        cal._import_state(rest)
        rest.refuse_unread()
        state._read.update(state)                   # every entry checked, through the copy
        out = predict(probe)
    except DataError:
        raise
    except IMPORT_ERRORS as exc:
        raise state.error(f"does not fit the method ({type(exc).__name__}: {exc})") from None
    if out.shape != probe.shape or not np.all(np.isfinite(out)):
        raise state.error(fails)
    return cal


def probe_table(k: int) -> np.ndarray:
    """Rows every loaded K-class calibrator must turn into finite probabilities: the uniform row,
    each one-hot row (saturated: 1 and exact zeros), and rows with one class at 1 - 1e-12."""
    near = np.full((k, k), 1e-12 / (k - 1))
    np.fill_diagonal(near, 1.0 - 1e-12)
    return np.vstack([np.full((1, k), 1.0 / k), np.eye(k), near])


def _class_calibrator(method: str, params: dict, state: State):
    """The fitted K-class calibrator of a file's ``method``, ``params`` and ``state`` (with ``n_train`` and
    ``n_classes``), probed on :func:`probe_table`."""
    from ..calibrators import multiclass
    from ..calibrators.multiclass.base import LOG_FLOOR

    try:
        cal = multiclass.get(method, **params)
    except SettingsError as exc:
        raise DataError(f"the {_WHAT}'s method and params do not give a calibrator ({exc}); this calibdash has: "
                        f"{', '.join(multiclass.available())}.") from None
    _exportable(type(cal), "classes")
    n_train, k = state.integer("n_train"), state.integer("n_classes")
    if n_train < 1 or k < 2:
        raise state.error(f"'n_train' must be at least 1 and 'n_classes' at least 2, got {n_train} and {k}")
    probe = probe_table(k)
    return _imported(cal, state, {"n_train": n_train, "n_classes": k},
                     np.log(np.maximum(probe, LOG_FLOOR)) if cal.logits else probe, cal.predict_proba,
                     "does not give finite probabilities for every row of the probe table")


def read_model(text, kind: str | None = None) -> ExportedModel:
    """The calibrator in a file's text, and the file's ``fitted_on`` entry (``{}`` when absent).

    Parameters
    ----------
    text : str or bytes
        A file written by :func:`dumps` (or a version-1 file of either kind).
    kind : {"binary", "classes"}, optional
        The kind of model wanted; another kind is refused. Default: either.

    Raises
    ------
    DataError
        Malformed JSON, an unknown format, version, kind or method, unknown
        parameters, a state that is missing entries, holds entries its method
        does not know or does not fit the method, a ``fitted_on`` with
        unknown entries or values of the wrong type (each message says which),
        or a model of the other kind than ``kind``.
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
    """The fitted calibrator saved by :func:`dumps` (predictions identical to the saved one's).

    Raises
    ------
    DataError
        See :func:`read_model`.
    """
    return read_model(text, kind).calibrator


def provenance(score_set, calibrator) -> dict:
    """The ``fitted_on`` entry for a calibrator fitted on ``score_set`` (a :class:`calibdash.data.ScoreSet`):
    the file, the score column, whether the scores were logistic-mapped, and the features used."""
    feats = list(score_set.feature_columns) if calibrator.uses_features and score_set.features is not None else []
    return {"file": score_set.name, "score": score_set.score,
            "score_transform": "logistic" if score_set.score in score_set.report.mapped else "identity",
            "features": feats}
