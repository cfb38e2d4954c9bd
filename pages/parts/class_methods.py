"""What the pages call each multi-class method, and its hyperparameters, from :mod:`calibdash.multiclass`.

A composite's label and hyperparameters belong to an instance (``ovr:isotonic`` is "One-vs-rest isotonic
regression" with isotonic regression's hyperparameters), so they are read from a new, unfitted calibrator.
"""
from __future__ import annotations

from calibdash import multiclass
from pages.parts.labels import menu_label, method_labels

__all__ = ["class_method_label", "class_method_menu_label", "class_method_labels", "class_hyperparams",
           "class_paper"]


def class_method_label(method: str) -> str:
    """"One-vs-rest isotonic regression" for ``"ovr:isotonic"``; the method's label, else its name."""
    return multiclass.get(method).label or method


def class_method_menu_label(method: str) -> str:
    """Label and summary, for menus."""
    cal = multiclass.get(method)
    return menu_label(method, cal.label, cal.summary)


def class_method_labels(keys) -> dict:
    """Key -> label for a table's rows: "Uncalibrated" for the raw probabilities, a key naming no method as is."""
    return method_labels(keys, class_method_label)


def class_hyperparams(method: str) -> tuple:
    """The HyperParam records of ``method`` (a composite: its binary method's, then its own)."""
    return tuple(multiclass.get(method).hyperparams)


def class_paper(method: str) -> str:
    """The paper ``method`` follows."""
    return multiclass.get(method).paper
