"""Typed exceptions raised by calibdash, one type per kind of problem.

The dashboard shows each kind plainly and never a traceback; the command line
prints it and exits with status 2. Every message is written for a person: it
names the column, value, setting or path involved and, where there is one,
the fix.

``CalibdashError``
    Base of all of them.
``DataError`` (a ``ValueError``)
    The user's data cannot be used as it is: files, columns, labels, scores,
    a damaged model file.
``SettingsError`` (a ``ValueError``)
    A choice the user made is not one calibdash offers: an unknown method
    or hyperparameter, a value outside its range, an unknown option. (A
    valid choice that the data cannot support, such as 10 folds with 5
    positives, is a ``DataError``.)
``EnvironmentProblem`` (a ``RuntimeError``)
    The machine lacks or refuses something: a browser for image export, a
    path that cannot be written or read.
``ProgrammingError`` (a ``TypeError``)
    calibdash was called in a way its API does not allow (for example
    exporting a class that is not a registered calibrator). A bug in the
    calling code, not in the data.
``NotFittedError``
    A calibrator was used before ``fit``; it is scikit-learn's
    ``NotFittedError`` too, so scikit-learn's tools recognise it.
"""
from sklearn.exceptions import NotFittedError as _SklearnNotFitted

__all__ = ["CalibdashError", "DataError", "SettingsError", "EnvironmentProblem", "ProgrammingError",
           "NotFittedError"]


class CalibdashError(Exception):
    """Base class of calibdash's own exceptions."""


class DataError(CalibdashError, ValueError):
    """The data given to calibdash cannot be used as it is.

    The message names the column, the value or the limit involved and, where
    there is one, the fix.
    """


class SettingsError(CalibdashError, ValueError):
    """A setting (method name, hyperparameter, option) is unknown or out of its range."""


class EnvironmentProblem(CalibdashError, RuntimeError):
    """The machine lacks or refuses something calibdash needs (a browser, a writable path)."""


class ProgrammingError(CalibdashError, TypeError):
    """calibdash's API was used in a way it does not allow; a bug in the calling code."""


class NotFittedError(CalibdashError, _SklearnNotFitted):
    """A calibrator was asked to predict or be explained before ``fit``."""
