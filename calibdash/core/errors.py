"""Typed exceptions, one type per kind of problem. Every message is written for a person: it names the column,
value, setting or path involved and, where there is one, the fix. The dashboard shows them without a traceback;
the command line prints them and exits with status 2."""
from sklearn.exceptions import NotFittedError as _SklearnNotFitted

__all__ = ["CalibdashError", "DataError", "SettingsError", "EnvironmentProblem", "ProgrammingError",
           "NotFittedError"]


class CalibdashError(Exception):
    """Base class of calibdash's own exceptions."""


class DataError(CalibdashError, ValueError):
    """The user's data cannot be used as it is: files, columns, labels, scores, a damaged model file; also a
    valid setting the data cannot support (10 folds with 5 positives)."""


class SettingsError(CalibdashError, ValueError):
    """A choice calibdash does not offer: an unknown method, hyperparameter or option, a value out of range."""


class EnvironmentProblem(CalibdashError, RuntimeError):
    """The machine lacks or refuses something calibdash needs (a browser, a writable path)."""


class ProgrammingError(CalibdashError, TypeError):
    """calibdash's API was used in a way it does not allow (e.g. exporting a class that is not a registered
    calibrator): a bug in the calling code, not in the data."""


class NotFittedError(CalibdashError, _SklearnNotFitted):
    """A calibrator was used before ``fit``; scikit-learn's ``NotFittedError`` too, so its tools recognise it."""
