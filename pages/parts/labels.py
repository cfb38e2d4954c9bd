"""What the pages call each method: its label, its menu entry, and the labels of a table's rows."""
from __future__ import annotations

from calibdash import calibrators
from calibdash.errors import SettingsError
from calibdash.methods import RAW

__all__ = ["method_label", "method_menu_label", "method_labels"]


def method_label(method: str) -> str:
    """"BBQ" for ``"bbq"``: the registered class's label, else its name."""
    return calibrators.get_class(method).label or method


def method_menu_label(method: str) -> str:
    """Label and summary, for menus: "BBQ — Bayesian binning into quantiles"."""
    cls = calibrators.get_class(method)
    return f"{cls.label} — {cls.summary}" if cls.summary and cls.summary not in cls.label else (cls.label or method)


def method_labels(keys) -> dict:
    """Key -> label for a table's rows: "Uncalibrated" for the raw scores, a key that names no method as is."""
    out = {}
    for k in keys:
        if k == RAW:
            out[k] = "Uncalibrated"
        else:
            try:
                out[k] = method_label(k)
            except SettingsError:
                out[k] = k
    return out
