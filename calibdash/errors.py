"""Typed exceptions raised by calibdash.

Every problem with user-supplied data (files, columns, labels, scores) is a
:class:`DataError`, a ``ValueError`` whose message says what is wrong and what
to do about it, so the dashboard can show it as is.
"""


class DataError(ValueError):
    """The data given to calibdash cannot be used as it is.

    The message is written for a person: it names the column, the value or
    the limit involved and, where there is one, the fix.
    """


class NotFittedError(RuntimeError):
    """A calibrator was asked to predict or explain itself before ``fit``."""
