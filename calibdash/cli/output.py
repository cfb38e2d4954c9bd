"""The command line's shared output helpers: numbers as the tables and JSON show them, and text written to a
file or to stdout (:func:`write_text`, which reports a path it cannot write as an
:class:`~calibdash.errors.EnvironmentProblem`)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import EnvironmentProblem

__all__ = ["four_places", "write_text", "finite_or_none", "jsonable", "sentence", "validation_json"]


def four_places(v: float) -> str:
    return f"{v:.4f}"


def write_text(text: str, out: str | None) -> str:
    """Write ``text`` to the file ``out``, or to stdout; returns where it went.

    Raises
    ------
    EnvironmentProblem
        ``out`` cannot be written.
    """
    if not out:
        sys.stdout.write(text)
        return "stdout"
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {out}: {exc.strerror or exc}.") from None
    return out


def finite_or_none(v):
    """A float for JSON, None where it is NaN or infinite (JSON has no NaN)."""
    v = float(v)
    return v if math.isfinite(v) else None


def jsonable(v):
    """A label value as JSON holds it: a Python scalar (``1.0`` stays ``1.0``), else its text."""
    v = v.item() if hasattr(v, "item") else v
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def sentence(fragment: str) -> str:
    return fragment[:1].upper() + fragment[1:] + ("" if fragment.endswith(".") else ".")


def validation_json(rep, label: dict, mapped: dict | None = None) -> dict:
    """What loading found (a :class:`calibdash.data.ValidationReport` ``rep``) as JSON: rows read, used,
    dropped and why, ``label`` (the label column and its classes), the class counts, ``mapped`` (binary
    files: the score columns mapped to [0, 1]) and the report's messages."""
    out = {"rows_read": rep.n_read, "rows_used": rep.n_used, "rows_dropped": int(sum(rep.dropped.values())),
           "dropped": {reason: int(k) for reason, k in rep.dropped.items()},
           "dropped_examples": {reason: list(ex) for reason, ex in rep.dropped_examples.items()},
           "label": label, "class_counts": {k: int(v) for k, v in rep.class_counts.items()}}
    if mapped is not None:
        out["mapped"] = mapped
    out["messages"] = list(rep.messages)
    return out
