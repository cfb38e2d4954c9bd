"""Warnings during a command: each distinct message of calibdash's own printed once, after the command, as
``note: <message>`` on stderr (stdout keeps only the result, so ``--json`` stays one record); the libraries' warnings
are not shown. ``PYTHONWARNINGS`` (any value) shows every warning as Python would, for a developer.
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
    scikit-learn's ``ConvergenceWarning``) raised from a file of the package (a numpy ``RuntimeWarning`` is noise)."""
    if not issubclass(record.category, UserWarning):
        return False
    try:
        return Path(record.filename).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def notes_on_stderr(stream=None):
    """Run the body collecting its warnings; then print calibdash's own, each distinct message once, as
    ``note: ...`` lines on ``stream`` (default stderr)."""
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
