"""The two families of calibrators as the pages offer them: binary calibrators of a score, and K-class
calibrators of a table's class probabilities (among them the ``ovr:`` and ``top_label:`` bridges from a binary
method). A page that offers either asks its :class:`Family` which methods there are, what they are called and
which hyperparameters they declare, and never forks on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from calibdash import calibrators, multiclass
from pages.parts.class_methods import class_method_label
from pages.parts.labels import method_label, method_labels

__all__ = ["Family", "BINARY", "CLASSES"]


@dataclass(frozen=True)
class Family:
    """A family of calibrators: ``available()`` their keys, ``record(key)`` one's class or instance (its label,
    summary, paper, hyperparameters), ``label(key)`` its name."""

    available: Callable[[], list]
    record: Callable
    label: Callable[[str], str]

    def labels(self, keys) -> dict:
        """Key -> label for a table's rows: "Uncalibrated" for the raw scores, a key naming no method as is."""
        return method_labels(keys, self.label)

    def hyperparams(self, method: str) -> tuple:
        """The HyperParam records of ``method`` (a composite: its binary method's, then its own)."""
        return tuple(self.record(method).hyperparams)


BINARY = Family(calibrators.available, calibrators.get_class, method_label)
CLASSES = Family(multiclass.available, multiclass.get, class_method_label)
