"""One calibrator's fitted state as a model-file entry, and back: the codec the model files
(:mod:`calibdash.io.export`, which writes the format around it) and the K-class composites (one nested state per
binary calibrator they hold) share."""
from __future__ import annotations

import math

import numpy as np

from ..core.errors import DataError, ProgrammingError, SettingsError
from .base import Calibrator

__all__ = ["State", "state_of", "calibrator_from", "kind_of", "check_exportable", "imported_state"]

#: Scores that every loaded binary calibrator must turn into probabilities without error.
PROBE = np.linspace(0.0, 1.0, 101)


class State(dict):
    """A calibrator's state as read from a file, with typed, checked access: ``_import_state`` methods read their
    entries through it, so that a damaged file is refused with a :class:`~calibdash.core.errors.DataError` naming the
    entry (``where`` says where it sits in the file, ``"the histogram state"``) instead of failing later inside
    ``predict``."""

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
        """Entries no reader asked for, here and in the objects read through :meth:`object` and :meth:`records`
        (``"trees[0], depth"``): what a file holds that its method does not know."""
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

    def _entry(self, key: str, ok, what: str, shown=repr):
        """Entry ``key``, or a DataError saying it must be ``what`` unless ``ok`` (the value shown by ``shown``)."""
        value = self[key]
        if not ok(value):
            raise self.error(f"{key!r} must be {what}, got {shown(value)}")
        return value

    def number(self, key: str) -> float:
        """Entry ``key`` as a finite float."""
        return float(self._entry(key, lambda v: not isinstance(v, bool) and isinstance(v, (int, float))
                                 and math.isfinite(v), "a finite number"))

    def integer(self, key: str) -> int:
        """Entry ``key`` as an int."""
        return self._entry(key, lambda v: not isinstance(v, bool) and isinstance(v, int), "an integer")

    def text(self, key: str) -> str:
        """Entry ``key`` as a string."""
        return self._entry(key, lambda v: isinstance(v, str), "a string")

    def list(self, key: str) -> list:
        """Entry ``key`` as a JSON array."""
        return self._entry(key, lambda v: isinstance(v, list), "a list", lambda v: type(v).__name__)

    def array(self, key: str, dtype=float, size: int | None = None, sorted: bool = False,
              unit: bool = False) -> np.ndarray:
        """Entry ``key`` as a 1-D array of finite numbers of ``dtype`` (an integer type: integers only), of length
        ``size`` if given, non-decreasing if ``sorted``, in [0, 1] if ``unit``."""
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
        if unit and np.any((arr < 0) | (arr > 1)):
            raise self.error(f"{key!r} must lie in [0, 1]")
        return arr

    def curve(self, x_key: str, y_key: str, steps: bool = False, unit: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Entries ``x_key`` (non-decreasing) and ``y_key``, as many numbers (in [0, 1] if ``unit``), or one more with
        ``steps``."""
        x = self.array(x_key, sorted=True)
        return x, self.array(y_key, size=x.size + steps, unit=unit)

    def object(self, key: str) -> "State":
        """Entry ``key`` as a JSON object, itself a :class:`State` (a nested calibrator's state)."""
        value = self._entry(key, lambda v: isinstance(v, dict), "an object", lambda v: type(v).__name__)
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


def kind_of(calibrator) -> str:
    """``"classes"`` for a K-class calibrator (a ``MulticlassCalibrator``), else ``"binary"``."""
    from .multiclass.base import MulticlassCalibrator
    return "classes" if isinstance(calibrator, MulticlassCalibrator) else "binary"


def check_exportable(cls: type, kind: str) -> None:
    """ProgrammingError unless ``cls`` is a registered calibrator class of ``kind`` that says what its state is."""
    from .. import calibrators as registry
    from .multiclass.base import MulticlassCalibrator
    base = Calibrator if kind == "binary" else MulticlassCalibrator
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ProgrammingError(f"only calibdash calibrators can be exported, not {cls.__name__}.")
    if registry.classes(kind).get(cls.name) is not cls:
        raise ProgrammingError(f"{cls.__name__} is not a registered calibrator; loading it back would fail.")
    missing = [m for m in ("_export_state", "_import_state") if not callable(getattr(cls, m, None))]
    if missing:
        raise ProgrammingError(f"{cls.__name__} has no {' or '.join(missing)}; a calibrator class says what "
                               "its fitted state is with _export_state and _import_state.")


def state_of(calibrator) -> dict:
    """The ``state`` entry of a fitted calibrator's file: ``{"n_train": ..., **its _export_state()}``, with
    ``"n_classes"`` after ``n_train`` for a K-class one. NotFittedError if it is not fitted, ProgrammingError if it is
    not a registered calibrator with ``_export_state`` and ``_import_state``."""
    kind = kind_of(calibrator)
    check_exportable(type(calibrator), kind)
    calibrator._check_fitted()
    k = {"n_classes": int(calibrator.n_classes_)} if kind == "classes" else {}
    return {"n_train": int(calibrator.n_train_), **k, **calibrator._export_state()}


#: Exceptions an ``_import_state`` or a first ``predict`` raises on a state that does not fit its method.
IMPORT_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError)


def calibrator_from(method: str, params: dict, state: State, whose: str = "the") -> Calibrator:
    """The fitted binary calibrator ``method`` with ``params`` whose file ``state`` (with its ``n_train``) is given:
    built, its state imported, and probed (it must give a finite probability for every score of a grid on [0, 1]).
    ``whose`` starts the messages (``"the calibrator file's"``).

    Raises DataError for an unknown method, params that do not fit it, or a state that is missing entries or does not
    fit the method (each message says which); ProgrammingError when the method is registered but its class cannot
    import a state.
    """
    from .. import calibrators as registry
    if method not in registry.classes():
        raise DataError(f"{whose} method {method!r} is unknown; this calibdash has: "
                        f"{', '.join(registry.available())}.")
    try:
        cal = registry.get(method, **params)
    except SettingsError as exc:
        raise DataError(f"{whose} params do not fit {method}: {exc}") from None
    check_exportable(type(cal), "binary")
    return imported_state(cal, state, {"n_train": state.integer("n_train")}, PROBE, cal.predict,
                     "does not give a probability for every score")


def imported_state(cal, state: State, counts: dict, probe: np.ndarray, predict, fails: str):
    """``cal`` with the file's ``counts`` set (``n_train`` as ``n_train_``, ...) and the rest of ``state`` imported,
    then probed: ``predict(probe)`` must give finite values of ``probe``'s shape (``fails`` says otherwise)."""
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
