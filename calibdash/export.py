"""Save a fitted calibrator to a small JSON file and load it back, without the training data.

>>> from calibdash import calibrators, export
>>> cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
>>> text = export.dumps(cal)
>>> print(text)                                                   # doctest: +NORMALIZE_WHITESPACE
{
"format":"calibdash-calibrator",
"version":1,
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
One JSON object::

    {"format": "calibdash-calibrator", "version": 1, "method": NAME,
     "params": {...}, "state": {...}, "fitted_on": {...}}

``method`` is the registry name (:func:`calibdash.calibrators.get_class`),
``params`` the calibrator's ``get_params()``, ``state`` what its ``predict``
needs and nothing more: a lookup table (histogram, isotonic, BBQ, SBB), the
knots of a piecewise-linear map (isotonic with linear interpolation, ABB,
ELiTE), the slope and intercept (Platt), the columns' coding and the trees'
routing tables (MBCT); never the training rows. A loaded calibrator can
still be explained (:func:`calibdash.explain.explain`) given the rows it was
fitted on, since explanations recompute what they show from those rows.
``state["n_train"]`` is the number of training rows. The optional
``fitted_on`` says which column the scores came from and how they were
mapped to [0, 1] (``python -m calibdash fit`` writes it, ``apply`` reads it).

Predictions are reproduced exactly: arrays are written as JSON lists of
numbers and Python writes a float as its shortest ``repr``, which reads back
to the same float. Each calibrator class says what its state is with two
methods, ``_export_state(self) -> dict`` (JSON-ready values) and
``_import_state(self, state)`` (``state`` a :class:`State`, which checks
types and sizes); a class without them cannot be exported.

Errors: a damaged or foreign file is a :class:`~calibdash.errors.DataError`;
exporting something that is not a registered calibrator class with those two
methods is a :class:`~calibdash.errors.ProgrammingError`.

Files are written deterministically (same calibrator, same bytes): the top
level and the state one entry a line, arrays on one line.
"""
from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np

from . import calibrators, model_checks
from .calibrators.base import Calibrator
from .errors import DataError, ProgrammingError, SettingsError

__all__ = ["FORMAT", "VERSION", "State", "ExportedModel", "dumps", "loads", "read_model", "plain", "compact",
           "document", "state_of", "calibrator_from", "IMPORT_ERRORS"]

FORMAT = "calibdash-calibrator"
VERSION = 1

#: Scores that every loaded calibrator must turn into probabilities without error.
_PROBE = np.linspace(0.0, 1.0, 101)


class ExportedModel(NamedTuple):
    """A loaded file: the calibrator and what it says about the data it was fitted on."""

    calibrator: Calibrator
    fitted_on: dict


class State(dict):
    """A calibrator's state as read from a file, with typed, checked access.

    ``_import_state`` methods read their entries through it, so that a
    damaged file is refused with a :class:`~calibdash.errors.DataError`
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
    ``error`` naming ``what`` when a JSON file cannot hold it (shared with :mod:`calibdash.multiclass.export`)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v, what, error) for v in value]
    raise error(f"{what} is a {type(value).__name__} ({value!r}), which a JSON file cannot hold.")


def _exportable(cls: type) -> None:
    """ProgrammingError unless ``cls`` is a registered calibrator class that says what its state is."""
    if not (isinstance(cls, type) and issubclass(cls, Calibrator)):
        raise ProgrammingError(f"only calibdash calibrators can be exported, not {cls.__name__}.")
    if calibrators.classes().get(cls.name) is not cls:
        raise ProgrammingError(f"{cls.__name__} is not a registered calibrator; loading it back would fail.")
    missing = [m for m in ("_export_state", "_import_state") if not callable(getattr(cls, m, None))]
    if missing:
        raise ProgrammingError(f"{cls.__name__} has no {' or '.join(missing)}; a calibrator class says what "
                               "its fitted state is with _export_state and _import_state.")


def compact(value) -> str:
    """``value`` as JSON text without spaces: how a file writes each entry."""
    return json.dumps(value, separators=(",", ":"))


def _layout(doc: dict) -> str:
    """The document, top-level and state entries one a line (diff- and eye-friendly), the rest compact."""
    lines = []
    for key, value in doc.items():
        if key == "state":
            inner = ",\n".join(f" {compact(k)}:{compact(v)}" for k, v in value.items())
            lines.append(f'"state":{{\n{inner}\n}}')
        else:
            lines.append(f"{compact(key)}:{compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def state_of(calibrator: Calibrator) -> dict:
    """The ``state`` entry of a fitted calibrator's file: ``{"n_train": ..., **its _export_state()}``.

    :func:`dumps` writes it; multi-class composites (:mod:`calibdash.multiclass`) nest one per
    binary calibrator they hold.

    Raises
    ------
    NotFittedError
        If ``calibrator`` is not fitted.
    ProgrammingError
        If it is not a registered calibrator with ``_export_state`` and ``_import_state``.
    """
    _exportable(type(calibrator))
    calibrator._check_fitted()
    return {"n_train": int(calibrator.n_train_), **calibrator._export_state()}


def dumps(calibrator: Calibrator, *, fitted_on: dict | None = None) -> str:
    """The fitted ``calibrator`` as the text of a JSON file.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator of a registered class.
    fitted_on : dict, optional
        What the scores were (``python -m calibdash fit`` writes ``score``,
        ``score_transform`` and ``features``); written as the ``fitted_on`` entry.

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
    state = state_of(calibrator)
    name = type(calibrator).name
    params = {k: plain(v, f"{name}'s parameter {k!r}", SettingsError)
              for k, v in sorted(calibrator.get_params().items())}
    doc = {"format": FORMAT, "version": VERSION, "method": name, "params": params, "state": state}
    if fitted_on:
        doc["fitted_on"] = {k: plain(v, f"fitted_on[{k!r}]", ProgrammingError) for k, v in fitted_on.items()}
    try:
        return _layout(doc)
    except (TypeError, ValueError) as exc:
        raise ProgrammingError(f"{type(calibrator).__name__}._export_state gave values that cannot be written "
                               f"as JSON: {exc}") from None


# -- reading --------------------------------------------------------------------------------------
def document(text, format: str = FORMAT, version: int = VERSION, what: str = "calibrator file") -> State:
    """The top-level object of a file's ``text`` (str or UTF-8 bytes), checked to be JSON of ``format``
    and ``version``; ``what`` names the file in messages (``"multi-class calibrator file"``).

    Raises
    ------
    DataError
        Not UTF-8, not JSON, not an object, another format or another version.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"the {what} is not UTF-8 text: {exc}") from None
    if not isinstance(text, str):
        raise DataError(f"a {what} is JSON text, not {type(text).__name__}.")
    doc = model_checks.parse_json(text, what)
    if not isinstance(doc, dict):
        raise DataError(f"the {what} must hold a JSON object, not a {type(doc).__name__}.")
    if doc.get("format") != format:
        raise DataError(f"not a calibdash {what}: 'format' is {doc.get('format')!r}, expected {format!r}.")
    found = doc.get("version")
    if isinstance(found, bool) or found != version:
        raise DataError(f"{what} version {found!r} is not supported; this calibdash reads version {version}.")
    model_checks.check_top(doc, what)
    return State(doc, f"the {what}")


#: Exceptions an ``_import_state`` or a first ``predict`` raises on a state that does not fit its method.
IMPORT_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError)


def calibrator_from(method: str, params: dict, state: State, whose: str = "the") -> Calibrator:
    """The fitted calibrator ``method`` with ``params`` whose file ``state`` (with its ``n_train``) is
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
    _exportable(type(cal))
    n_train = state.integer("n_train")
    outer, state = state, State({k: v for k, v in state.items() if k != "n_train"}, state.where)
    try:
        cal._import_state(state)
        state.refuse_unread()
        outer._read.update(outer)                   # every entry checked, through the copy
        cal.n_train_ = n_train
        probe = cal.predict(_PROBE)
    except DataError:
        raise
    except IMPORT_ERRORS as exc:
        raise state.error(f"does not fit the method ({type(exc).__name__}: {exc})") from None
    if probe.shape != _PROBE.shape or not np.all(np.isfinite(probe)):
        raise state.error("does not give a probability for every score")
    return cal


def read_model(text) -> ExportedModel:
    """The calibrator in a file's text, and the file's ``fitted_on`` entry (``{}`` when absent).

    Raises
    ------
    DataError
        Malformed JSON, an unknown format, version or method, unknown
        parameters, a state that is missing entries, holds entries its method
        does not know or does not fit the method, or a ``fitted_on`` with
        unknown entries or values of the wrong type (each message says which).
    ProgrammingError
        The file's method is registered but its class cannot import a state.
    """
    doc = document(text)
    params = doc["params"]
    if not isinstance(params, dict):
        raise doc.error("'params' must be an object")
    if not isinstance(doc["state"], dict):
        raise doc.error("'state' must be an object")
    method = doc.text("method")
    cal = calibrator_from(method, params, State(doc["state"], f"the {method} state"), "the calibrator file's")
    fitted_on = model_checks.check_fitted_on(doc.get("fitted_on", {}), model_checks.BINARY_FITTED_ON,
                                             "calibrator file")
    return ExportedModel(cal, fitted_on)


def loads(text) -> Calibrator:
    """The fitted calibrator saved by :func:`dumps` (predictions identical to the saved one's).

    Raises
    ------
    DataError
        See :func:`read_model`.
    """
    return read_model(text).calibrator


def provenance(score_set, calibrator) -> dict:
    """The ``fitted_on`` entry for a calibrator fitted on ``score_set`` (a :class:`calibdash.data.ScoreSet`):
    the file, the score column, whether the scores were logistic-mapped, and the features used."""
    feats = list(score_set.feature_columns) if calibrator.uses_features and score_set.features is not None else []
    return {"file": score_set.name, "score": score_set.score,
            "score_transform": "logistic" if score_set.score in score_set.report.mapped else "identity",
            "features": feats}
