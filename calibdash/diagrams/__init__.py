"""Diagrams: one module per kind, holding its data (computed without plotly) and its figure.

Each module holds a frozen dataclass extending :class:`~calibdash.diagrams.common.Diagram` that declares its ``kind``,
``title``, ``problem`` and ``position``, computes its data (the classmethod ``prepare``, as relplot's
``prepare_rel_diagram``), says its caption and draws itself (``figure``, importing plotly only there). This package
finds them by scanning its modules, so adding a diagram is adding its module. Binary (one column of scores per
method): :mod:`.binned`, :mod:`.smooth` (SmoothECE, Błasiok & Nakkiran 2024), :mod:`.corp` (Dimitriadis, Gneiting &
Jordan 2021); K-class (each method's (n, K) probabilities): :mod:`.confidence`, :mod:`.classwise` (small multiples,
and the per-class table), :mod:`.simplex` (K = 3).

Weights (binary ``weights``, K-class ``sample_weight``), such as
:attr:`calibdash.evaluation.holdout.Evaluation.weights` on score cells: a row of weight ``w`` counts as ``w`` rows
(the auto rule counts the weights' sum, the bins hold equal weight, the bands resample the rows the cells stand for),
so on exact score cells every diagram is the rows' diagram.

>>> from calibdash import diagrams
>>> data = diagrams.prepare("corp", predictions, labels)          # doctest: +SKIP
>>> fig, caption = data.figure(names={"platt": "Platt"}), data.caption({"platt": "Platt"})  # doctest: +SKIP
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pandas as pd

from ..core.errors import SettingsError
from ..measures.binning import DEFAULT_N_BINS, DEFAULT_STRATEGY
from .binned import BINNED, BinnedData, plot_binned, prepare_binned, reliability_tables
from .classwise import MAX_PANELS, ORDERS, class_table, classwise_bin_count, plot_classwise, prepare_classwise
from .common import (AUTO, AUTO_RULE, BIN_RULES, BINNINGS, MAX_BINS, MIN_BINS, N_BOOT, RULE_SENTENCE, RULE_SHORT,
                     RULE_TEXT, Diagram, auto_bin_count, bin_count, class_labels, describe_rule, display_names)
from .confidence import plot_confidence, prepare_confidence
from .corp import CORP, CorpData, corp_column, prepare_corp
from .simplex import SimplexMapData, plot_simplex_map, prepare_simplex_map, simplex_grid
from .smooth import SMOOTH, SmoothData, prepare_smooth, smooth_column

# The package's own names; the names of its modules imported above (prepare_binned, plot_confidence, AUTO, ...)
# are reachable here too, each listed once, in its module's __all__.
__all__ = [
    "KINDS", "TITLES", "check_kind", "prepare", "plot", "BINNED", "BinnedData", "plot_binned", "prepare_binned",
    "reliability_tables", "MAX_PANELS", "ORDERS", "class_table", "classwise_bin_count", "plot_classwise",
    "prepare_classwise", "AUTO", "AUTO_RULE", "BIN_RULES", "BINNINGS", "MAX_BINS", "MIN_BINS", "RULE_SENTENCE",
    "RULE_SHORT", "RULE_TEXT", "auto_bin_count", "bin_count", "class_labels", "describe_rule", "display_names",
    "plot_confidence", "prepare_confidence", "CORP", "CorpData", "corp_column", "prepare_corp", "SimplexMapData",
    "plot_simplex_map", "prepare_simplex_map", "simplex_grid", "SMOOTH", "SmoothData", "prepare_smooth",
    "smooth_column", "N_BOOT"
]


def registry(problem: str | None = None) -> dict[str, type[Diagram]]:
    """Kind -> data class of every diagram the modules of this package declare (of ``problem``, ``"binary"`` or
    ``"classes"``, when given), by problem, then declared order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Diagram) and c.kind
                  and c.__module__ == module.__name__]
    found.sort(key=lambda c: (c.problem, c.position, c.kind))
    return {c.kind: c for c in found if problem in (None, c.problem)}


#: The diagrams of a binary problem, in the order the dashboard offers them, and each one's default title.
KINDS = tuple(registry("binary"))
TITLES = {kind: cls.title for kind, cls in registry("binary").items()}


def check_kind(kind: str) -> str:
    """``kind`` as one of :data:`KINDS` (any letter case: ``"corp"`` is ``"CORP"``); SettingsError otherwise."""
    by_lower = {k.lower(): k for k in KINDS}
    if not isinstance(kind, str) or kind.lower() not in by_lower:
        raise SettingsError(f"kind must be one of {KINDS}, got {kind!r}.")
    return by_lower[kind.lower()]


def prepare(kind: str, predictions: pd.DataFrame, labels, sample_weight=None, *, band: bool = False,
            n_bins=DEFAULT_N_BINS, strategy: str = DEFAULT_STRATEGY, n_boot: int = N_BOOT) -> Diagram:
    """The data of the binary diagram ``kind`` (one of :data:`KINDS`, any case). Each kind takes the options its
    ``prepare`` names: ``n_bins`` and ``strategy`` the binned diagram's, ``band`` and ``n_boot`` the others' (the
    binned one draws each bin's 95% interval)."""
    cls = registry("binary")[check_kind(kind)]
    options = dict(band=band, n_bins=n_bins, strategy=strategy, n_boot=n_boot)
    takes = inspect.signature(cls.prepare).parameters
    return cls.prepare(predictions, labels, sample_weight, **{k: v for k, v in options.items() if k in takes})


def plot(data: Diagram, **kw):
    """The figure of any diagram's data (``names``, ``title``, ``height``, ... as its ``figure``)."""
    return data.figure(**kw)
