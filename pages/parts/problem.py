"""The problem the pages work on: its kind, K, its data, its reductions, the calibrators it offers and its measures.

A page asks :func:`problem_or_stop` for the active :class:`Problem` and draws what it declares: the views of
:data:`Problem.views` (class-wise small multiples, the per-class table, the simplex for K = 3; the calibration
map, more measures, several score columns, the models side by side) and the methods of its :class:`Methods`
(names, labels, hyperparameters, papers, fitting and intervals). Binary is K = 2 with a score column (its
reduction, ``score``); a K-class table offers the top label (the confidence) and the K one-vs-rest columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from calibdash.evaluation import bootstrap as cboot
from calibdash import calibrators
from calibdash.core.errors import DataError
from calibdash.evaluation import bootstrap as mboot, holdout as mevaluation
from calibdash.measures import class_measures as mmetrics
from pages.parts import classes, fitting
from pages.parts.labels import menu_label, method_label, method_labels
from pages.parts.source import active_score_set, score_set_or_stop
from pages.parts.tables import best_of
from pages.parts.text import md

__all__ = ["Methods", "BINARY", "CLASSES", "Problem", "read_problem", "problem_or_stop", "FALLBACK"]

#: Added to the K-class Compare's defaults while fewer than two of them exist.
FALLBACK = "top_label:histogram"


def _binary_defaults(available, k: int) -> list[str]:
    return [m for m in ("platt", "histogram", "isotonic") if m in available]


def _class_defaults(available, k: int) -> list[str]:
    """The library's defaults for ``k`` classes (:func:`calibdash.evaluation.holdout.default_methods`) that
    are ``available``, with :data:`FALLBACK` while fewer than two are."""
    chosen = [m for m in mevaluation.default_methods(k) if m in available]
    if len(chosen) < 2 and FALLBACK in available:
        chosen.append(FALLBACK)
    return chosen


@dataclass(frozen=True)
class Methods:
    """A family of calibrators (the binary ones, or the K-class ones under one registry with ``ovr:`` and
    ``top_label:`` composites): what the pages call them, their hyperparameters and papers, how they are fitted
    and their intervals drawn (each fit cached: :mod:`pages.parts.fitting`, :mod:`pages.parts.classes`)."""
    infix: str                                     # inserted in the widget keys of this family ("" or "mc.")
    picker: str                                    # what Compare's picker is called
    picker_help: str
    available: Callable[[], list]
    record: Callable                               # method -> its class or instance (label, summary, paper, ...)
    label: Callable[[str], str]
    compare_defaults: Callable                     # (available, k) -> the methods Compare starts with
    explore_default: str
    evaluate: Callable             # (data, scheme, {method: params}) -> evaluation; looked up when called (a
    bootstrap: Callable            # test's stand-in is used); (evaluation, data, scheme, params) -> intervals
    verdict: Callable                              # (BootstrapResult, measure, labels) -> a sentence

    def labels(self, keys) -> dict:
        """Key -> label for a table's rows: "Uncalibrated" for the raw scores, a key naming no method as is."""
        return method_labels(keys, self.label)

    def menu_label(self, method: str) -> str:
        """Label and summary, for menus."""
        r = self.record(method)
        return menu_label(method, r.label, r.summary)

    def hyperparams(self, method: str) -> tuple:
        """The HyperParam records of ``method`` (a composite: its binary method's, then its own)."""
        return tuple(self.record(method).hyperparams)

    def paper(self, method: str) -> str:
        return self.record(method).paper


BINARY = Methods(
    "", "Calibrators", "Every method is fitted on the same rows and judged on the same held-out rows.",
    calibrators.available, calibrators.get_class, method_label, _binary_defaults, "histogram",
    lambda *a: fitting.evaluate_methods(*a), lambda *a: fitting.bootstrap(*a), cboot.verdict)
CLASSES = Methods(
    "mc.", "Multi-class calibrators", "Every method is fitted on the same rows and judged on the same held-out "
    "rows. ovr: one binary calibrator per class; top_label: the top class's probability.",
    lambda: calibrators.available("classes"), lambda m: calibrators.get(m, "classes"),
    lambda m: calibrators.get(m, "classes").label or m, _class_defaults, "temperature",
    lambda *a: classes.evaluate_chosen(*a), lambda *a: classes.bootstrap_chosen(*a), mboot.verdict)


@dataclass(frozen=True)
class Problem:
    """The active data as a calibration problem.

    ``data`` is a :class:`calibdash.data.ScoreSet` (or a large source's cells, which answer the same) for a
    binary problem, a :class:`calibdash.data.ClassSet` for K classes.
    """
    data: object
    methods: Methods

    @property
    def is_classes(self) -> bool:
        return self.methods is CLASSES

    @property
    def k(self) -> int:
        return self.data.k if self.is_classes else 2

    @property
    def reductions(self) -> tuple[str, ...]:
        """``("score",)`` for binary; the top label (confidence) and the one-vs-rest columns for K classes."""
        return ("top_label", "ovr") if self.is_classes else ("score",)

    @property
    def views(self) -> frozenset[str]:
        """The parts the pages draw for this problem beside the common ones: what its reductions offer (the
        one-vs-rest columns: class-wise panels and the per-class table; the simplex at K = 3; a score: its
        calibration map and the measures of a score), and several score columns side by side."""
        if "ovr" in self.reductions:
            return frozenset({"classwise", "per_class", "fit_notes"} | ({"simplex"} if self.k == 3 else set()))
        return frozenset({"calibration_map", "more_measures", "report"}
                         | ({"models"} if len(self.data.score_columns) > 1 else set()))

    def key(self, base: str) -> str:
        """A widget key of this problem's family: ``compare.methods`` or ``compare.mc.methods``."""
        page, _, rest = base.partition(".")
        return f"{page}.{self.methods.infix}{rest}".rstrip(".")

    def direction(self, name: str, values):
        """A measure's values turned lower-is-better (None: no value is best), for the tables' bold best."""
        return mmetrics.MEASURES[name].oriented(values) if self.is_classes else best_of(name, values)

    def what(self) -> str:
        """What the model gives, for a caption (Markdown, names escaped)."""
        if self.is_classes:
            return (f"**K = {self.k}** classes ("
                    + ("logits, softmaxed for the uncalibrated row" if self.data.logits else "probabilities") + ")")
        return f"score **{md(self.data.score)}**"


def read_problem() -> tuple[Problem | None, Methods, str]:
    """The active table read as the Data page's choice says (:func:`pages.parts.classes.using_classes`):
    ``(problem, family, "")``, or ``(None, family, why)`` when it cannot be read so."""
    family = CLASSES if classes.using_classes() else BINARY
    try:
        data = classes.active_class_set() if family is CLASSES else active_score_set()
    except DataError as exc:
        return None, family, str(exc)
    return Problem(data, family), family, ""


def problem_or_stop() -> Problem:
    """The active problem, or an error box, a link to the Data page and a stop (never a traceback)."""
    if classes.using_classes():
        return Problem(classes.class_set_or_stop(), CLASSES)
    return Problem(score_set_or_stop(), BINARY)

