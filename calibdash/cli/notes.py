"""Warnings during a command, as the command line shows them: calibdash's own as ``note:`` lines, others not.

A fit that says something a user should know (a one-vs-rest map giving probability 0, a penalty search that
fell back to the given strengths, a solver that stopped on a cap) says it with a Python warning, which a
notebook shows as it is. On the command line a warning would print as ``/path/file.py:123: XWarning: ...``
twice over (once per place) among the results: here each distinct message of a warning raised from
calibdash's own code is printed once, after the command, as ``note: <message>`` on stderr (stdout keeps
only the result, so ``--json`` stays one record). Warnings raised inside the libraries (pandas, numpy,
scikit-learn, pyarrow) are implementation noise to a user and are not shown; ``PYTHONWARNINGS`` (any value)
shows every warning as Python would, for a developer.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

__all__ = []

#: The package's folder: a warning whose place is under it is calibdash's own.
PACKAGE = Path(__file__).resolve().parents[1]


def is_own(record: warnings.WarningMessage) -> bool:
    """Whether ``record`` is calibdash's own word to the user: a :class:`UserWarning` (its fits' warnings,
    scikit-learn's ``ConvergenceWarning`` that the solvers raise) raised from a file of the package. A numpy
    ``RuntimeWarning`` is attributed to the calibdash line that called numpy, and is noise all the same."""
    if not issubclass(record.category, UserWarning):
        return False
    try:
        return Path(record.filename).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def notes_on_stderr(stream=None):
    """Run the body collecting its warnings; then print calibdash's own, each distinct message once, as
    ``note: ...`` lines on ``stream`` (default stderr). With ``PYTHONWARNINGS`` set, warnings are left to
    Python."""
    if os.environ.get("PYTHONWARNINGS"):
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            seen: set[str] = set()
            out = sys.stderr if stream is None else stream
            for record in caught:
                text = " ".join(str(record.message).split())
                if is_own(record) and text not in seen:
                    seen.add(text)
                    print(f"note: {text}", file=out)
