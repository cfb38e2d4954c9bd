"""The two families of calibrators as the pages offer them: binary calibrators of a score, and K-class
calibrators of a table's class probabilities (among them the ``ovr:`` and ``top_label:`` bridges from a binary
method). A page that offers either asks its :class:`Family` which methods there are, what they are called and
which hyperparameters they declare, and never forks on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from calibdash import calibrators, multiclass
from pages.parts.class_methods import class_hyperparams, class_method_label, class_method_labels
from pages.parts.labels import method_label, method_labels

__all__ = ["Family", "BINARY", "CLASSES"]


@dataclass(frozen=True)
class Family:
    """A family of calibrators: ``available()`` their keys, ``label(key)`` one's name, ``labels(keys)`` a table's
    row names (``"Uncalibrated"`` for the raw scores), ``specs_of(key)`` one's HyperParam records (None: the
    binary calibrators', which :func:`pages.parts.widgets.hyperparam_widgets` finds itself)."""

    available: Callable[[], list]
    label: Callable[[str], str]
    labels: Callable
    specs_of: Callable | None = None


BINARY = Family(calibrators.available, method_label, method_labels)
CLASSES = Family(multiclass.available, class_method_label, class_method_labels, class_hyperparams)
