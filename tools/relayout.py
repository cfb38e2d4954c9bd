"""Rewrite a checkout's imports of calibdash from the layout before issue 27 to today's package.

Issue 27 regrouped calibdash into layers (``calibdash.export`` -> ``calibdash.io.export``, ``calibdash.groups`` ->
``calibdash.monitoring.groups``, ``calibdash.multiclass`` -> ``calibdash.calibrators.multiclass``, ...) and, before
and after that, merged modules (``calibdash.multiclass.evaluation`` into ``calibdash.evaluation.holdout``,
``calibdash.benchmark.large`` into ``calibdash.benchmark.engine``, ...). The old paths have no alias. Run::

    python tools/relayout.py PATH...            # rewrite every .py, .md, .rst and .txt file under PATH
    python tools/relayout.py --dry-run PATH...  # print the changes as a diff, write nothing

with today's calibdash importable (the tool asks it what exists). What it rewrites:

* ``from calibdash.OLD import a, b as c``: each name goes to the module that holds it today (:data:`MODULES` for the
  module, :data:`NAMES` for names that went elsewhere or were renamed), one ``from ... import`` per module.
* ``import calibdash.OLD [as m]`` and ``from calibdash.PKG import OLD [as m]``: the module's new path; a name read
  through it (``m.name``, ``calibdash.OLD.name``) that lives in another module today is rewritten to it.
* ``calibdash.OLD.name`` anywhere else in the text (``mock.patch`` strings, docs, ``:mod:`` references).

Whatever resolves in today's calibdash is left as written, so a second run changes nothing. A name that is gone
(:data:`GONE`) is not written into any import: the tool prints a line saying so and what replaces it, if anything.
Every import of calibdash in each Python file is then checked against today's package, and one that does not
resolve is printed too: that is how a name is reported that a package which kept its path no longer offers
(``calibdash.benchmark.BenchmarkResult``; the tables cover the modules that moved or merged). The exit status is 1
when a line asks for work by hand, else 0.

The tool rewrites names, not calls: some functions' arguments changed too (``w``/``weights`` are ``sample_weight``
in many; ``run_class_benchmark`` became ``run_benchmark`` for any number of classes).

The old modules are those of the package as released before issue 27 (commit d508b4a) and of the tree the
regrouping ran on (c530651). The regrouping itself (the ``git mv`` of this repository's modules and tests, the
tests mirrored into ``tests/<package>/``) was done once by this script's first version, run in commit 799b9b0
(``git show 799b9b0:tools/relayout.py``); this version keeps only the rewrite a user's checkout needs.
``tests/tools/test_relayout.py`` checks that every entry of the tables names a module and a name that exist today,
and (with the old trees in the clone's history) that every name an old module offered has a home or a note.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import importlib
import importlib.util
import re
import sys
from pathlib import Path

PKG = "calibdash"

#: Every old module (dotted, under calibdash) that is no module today -> the module that holds its names today
#: (``evaluation``: its path is the package that holds ``holdout`` today).
MODULES: dict[str, str] = {
    "benchmark.catalogue": "benchmark.outcome",
    "benchmark.classes": "benchmark.engine",
    "benchmark.large": "benchmark.engine",
    "benchmark.result": "benchmark.outcome",
    "bootstrap": "evaluation.bootstrap",
    "bootstrap.cells": "evaluation.bootstrap.cell_resamples",
    "bootstrap.draws": "evaluation.bootstrap.draws",
    "bootstrap.measures": "evaluation.bootstrap.cell_resamples",
    "bootstrap.poisson": "evaluation.bootstrap.draws",
    "bootstrap.result": "evaluation.bootstrap.result",
    "bootstrap.rows": "evaluation.bootstrap.row_resamples",
    "calibrators._mbct_lines": "calibrators._mbct_tree",
    "calibrators._steps": "core.step_maps",
    "cells": "evaluation.cells",
    "cli.classes": "cli.file_problem",
    "cli.listing": "cli",
    "cli.problem": "cli.file_problem",
    "crossfit": "evaluation.crossfit",
    "data.class_roles": "data.roles",
    "data.classes": "data.class_set",
    "data.compact": "data.read",
    "data.guard.errors": "data.guard.refusals",
    "data.large": "data.large_source",
    "data.limits": "core.limits",
    "data.margins": "core.margins",
    "data.numbers": "core.numbers",
    "data.problem": "data.scoreset",
    "drift": "monitoring.drift",
    "engines.class_rows": "engines.classes",
    "engines.duckdb_keyed": "engines.duckdb.keyed",
    "engines.large": "engines.plan",
    "engines.spark_keyed": "engines.spark.keyed",
    "errors": "core.errors",
    "evaluation": "evaluation.holdout",
    "explain.abb": "explain.sbb",
    "explain.histogram": "explain.scaling_binning",
    "explain.isotonic": "explain.venn_abers",
    "explain.k_binary_maps": "explain.k_class",
    "explain.k_linear": "explain.k_class",
    "explain.platt": "explain.beta",
    "explain.temperature": "explain.beta",
    "export": "io.export",
    "figures.abb": "figures.methods.bbq",
    "figures.bbq": "figures.methods.bbq",
    "figures.benchmark": "figures.charts.benchmark",
    "figures.beta": "figures.methods.beta",
    "figures.calibration_map": "figures.charts.calibration_map",
    "figures.corp": "diagrams.corp",
    "figures.diagrams": "diagrams",
    "figures.drift": "figures.charts.drift",
    "figures.elite": "figures.methods.elite",
    "figures.enir": "figures.methods.enir",
    "figures.groups": "figures.charts.groups",
    "figures.learn": "figures.charts.learn",
    "figures.mbct": "figures.methods.mbct",
    "figures.methods.abb": "figures.methods.bbq",
    "figures.methods.k_binary_maps": "figures.methods.k_class",
    "figures.methods.k_linear": "figures.methods.k_class",
    "figures.methods.k_temperature": "figures.methods.k_class",
    "figures.methods.sbb": "figures.methods.bbq",
    "figures.methods.temperature": "figures.methods.beta",
    "figures.multiclass": "diagrams.classwise",
    "figures.multiclass_explain": "figures.methods.k_class",
    "figures.reliability": "figures.charts.reliability",
    "figures.sbb": "figures.methods.bbq",
    "figures.scaling_binning": "figures.methods.scaling_binning",
    "figures.smooth_ece": "diagrams.smooth",
    "figures.temperature": "figures.methods.beta",
    "figures.venn_abers": "figures.methods.venn_abers",
    "group_metrics": "monitoring.group_metrics",
    "grouping": "monitoring.grouping",
    "groups": "monitoring.groups",
    "jobs": "core.jobs",
    "jobs.cancel": "core.jobs.runner",
    "jobs.fair": "core.jobs.runner",
    "jobs.registry": "core.jobs.runner",
    "jobs.status": "core.jobs.status",
    "keyed": "monitoring.keyed",
    "keyed.assemble": "monitoring.keyed.assemble",
    "keyed.measures": "monitoring.keyed.per_key",
    "keyed.rows": "monitoring.keyed.from_rows",
    "logistic": "core.logistic",
    "methods": "evaluation.methods",
    "model_checks": "io.export",
    "multiclass": "calibrators.multiclass",
    "multiclass.base": "calibrators.multiclass.base",
    "multiclass.bootstrap": "evaluation.bootstrap.row_resamples",
    "multiclass.budget": "evaluation.class_budget",
    "multiclass.cells": "evaluation.cells",
    "multiclass.diagrams": "diagrams.classwise",
    "multiclass.evaluation": "evaluation.holdout",
    "multiclass.explain": "explain.k_class",
    "multiclass.export": "io.export",
    "multiclass.groups": "monitoring.class_groups",
    "multiclass.large": "engines.class_fit",
    "multiclass.linear": "calibrators.multiclass.linear",
    "multiclass.linear_map": "calibrators.multiclass.linear_map",
    "multiclass.methods": "calibrators.multiclass.methods",
    "multiclass.methods.dirichlet": "calibrators.multiclass.methods.dirichlet",
    "multiclass.methods.matrix": "calibrators.multiclass.methods.matrix",
    "multiclass.methods.ovr": "calibrators.multiclass.methods.ovr",
    "multiclass.methods.temperature": "calibrators.multiclass.methods.temperature",
    "multiclass.methods.top_label": "calibrators.multiclass.methods.top_label",
    "multiclass.methods.vector": "calibrators.multiclass.methods.vector",
    "multiclass.metrics": "measures.class_measures",
    "multiclass.newton": "calibrators.multiclass.newton",
    "multiclass.newton_cg": "calibrators.multiclass.newton",
    "multiclass.penalty_search": "calibrators.multiclass.penalty_search",
    "multiclass.scaling": "calibrators.multiclass.scaling",
    "multiclass.split": "evaluation.scheme",
    "periods": "monitoring.periods",
    "registry": "core.scan",
    "report.classes": "report.build",
    "report.pipeline": "report.build",
    "report.text": "report.build",
    "safe_text": "core.safe_text",
    "samples.drift": "samples.drifting_score",
    "schemas": "io.schemas",
    "scheme": "evaluation.scheme",
    "sql": "io.sql",
    "sql_forms": "core.sql_forms.forms",
    "sql_lookup": "core.sql_forms.forms",
    "sql_writer": "core.sql_forms.writer",
    "staleness": "monitoring.staleness",
    "synthetic.multiclass": "synthetic.gaussian_classes",
    "synthetic.svm": "synthetic.populations",
    "synthetic.truth": "synthetic.study",
    "validation": "core.validation",
}

#: Names that left their module's successor: old module -> {today's module: "names"}; ``module:new`` renames.
NAMES: dict[str, dict[str, str]] = {
    "benchmark.classes": {"benchmark.outcome": "CLASS_MEASURES",
                          "benchmark.datasets": "class_datasets_from_table load_benchmark_datasets",
                          "benchmark.engine:unit_key": "class_unit_key",
                          "benchmark.engine:run_benchmark": "run_class_benchmark",
                          "benchmark.engine:run_unit": "run_class_unit"},
    "bootstrap": {"evaluation.bootstrap.row_resamples": "bootstrap_metrics"},
    "data.class_roles": {"data.class_names": "PREFIXES ScoreClasses class_notes pair score_classes"},
    "data.classes": {"data.roles": "ClassRoles guess_class_columns is_multiclass", "data.class_names": "PREFIXES"},
    "diagrams": {"diagrams.corp": "CorpColumn", "diagrams.common": "Diagram"},
    "drift": {"monitoring.periods": "DATE_SHARE FREQS MAX_PERIODS Periods day_codes name_periods period_start_days "
                                    "ymd_note",
              "monitoring.staleness": "Staleness"},
    "engines.duckdb_keyed": {"engines.flow": "KEYED_STAGES TRUNC_UNITS"},
    "evaluation": {"evaluation.scheme": "TEST_WORDS TRAIN_WORDS content_order split_plan"},
    # an explainer or figure module merged into its family's: the dispatcher explains/draws any method
    **{f"explain.{m}": {"explain": "explain"} for m in ("abb", "platt", "temperature")},
    **{f"explain.{m}": {"explain.bbq": "MAP_TOL", "explain": "explain"} for m in ("histogram", "isotonic")},
    **{f"figures.{m}": {"figures": "inner_figures"} for m in (
        "abb", "bbq", "beta", "elite", "enir", "mbct", "sbb", "scaling_binning", "temperature", "venn_abers",
        "methods.abb", "methods.k_binary_maps", "methods.k_linear", "methods.k_temperature", "methods.sbb",
        "methods.temperature")},
    **{f"figures.{m}": {"figures": "inner_figures", "figures.layout": "MAX_OPACITY"} for m in ("bbq", "enir")},
    "export": {"calibrators.state": "IMPORT_ERRORS State calibrator_from state_of"},
    "figures.diagrams": {"diagrams:plot": "plot_corp plot_smooth"},
    "figures.multiclass": {"diagrams.confidence": "plot_confidence", "diagrams.simplex": "plot_simplex_map"},
    "figures.multiclass_explain": {"figures.palette": "CLASS_COLORS", "figures": "inner_figures"},
    "groups": {"monitoring.group_metrics": "GroupReport", "monitoring.grouping": "make_groups"},
    "jobs": {"core.jobs.runner": "Job REINTERRUPT_S STOP_WAIT_S", "core.jobs.status": "Status"},
    "multiclass.base": {"calibrators.base": "HyperParam",
                        "core.validation": "SUM_TOLERANCE check_classes check_probabilities"},
    "multiclass.bootstrap": {"evaluation.bootstrap.draws": "resample_blocks",
                             "evaluation.bootstrap.result": "verdict"},
    "multiclass.diagrams": {"diagrams.confidence": "CONFIDENCE ConfidenceData prepare_confidence",
                            "diagrams.simplex": "SIMPLEX SimplexMapData prepare_simplex_map simplex_grid",
                            "diagrams.common": "class_labels"},
    "multiclass.explain": {"explain.k_temperature": "T_GRID fitted_temperature temperature_curve",
                           "explain:explain": "explain_classes"},
    "multiclass.linear": {"calibrators.multiclass.linear_map": "FORMS LinearFit LinearForm PENALTIES SCALE_BOUNDS "
                                                               "identity_start linear_scores n_parameters objective "
                                                               "predict_linear unpack",
                          "calibrators.multiclass.penalty_search": "SEARCH_ROWS cv_log_loss fold_ids penalty_grid "
                                                                   "search_rows select_penalty",
                          "calibrators.multiclass.scaling": "ScalingCalibrator"},
    "multiclass.split": {"evaluation.scheme:split_plan": "class_split_plan"},
    "report.classes": {"report.build:CLASS_N_BOOT": "N_BOOT", "report.build:build_report": "build_class_report"},
    "sql": {"core.sql_forms.forms": "CASE_MAX_STEPS ClosedForm LinearMap StepMap SqlMap",
            "core.sql_forms.writer": "DIALECTS",
            "calibrators.sql": "register_sql sql_methods"},
}

#: Names that are gone: old module -> {"names": what to do instead}. A ``calibdash.x.y`` in a note exists today.
GONE: dict[str, dict[str, str]] = {
    "benchmark.result": {"describe": "removed (it was unused); the result's tables hold the same numbers",
                         "to_json": "now a method: calibdash.benchmark.outcome.BenchmarkResult.to_json()"},
    "cli.problem": {"check_params": "calibdash.cli.file_problem.class_methods checks the K-class methods and their "
                                    "parameters together"},
    "multiclass": {"available classes get get_class":
                   "one registry for both families: calibdash.calibrators.available, classes, get and get_class "
                   "with family \"classes\" (e.g. get(name, \"classes\"); the bare names mean the binary family)",
                   "COMPOSITES": "calibdash.calibrators.composites() returns the composite prefixes"},
    "cli.classes": {"best_text class_params cmd_apply_classes cmd_evaluate_class_source cmd_evaluate_classes "
                    "cmd_fit_classes cmd_report_classes is_class_model refuse_export_sql":
                    "the command line has one path per command for any number of classes: calibdash.cli.main "
                    "(evaluate, report, fit, apply and export-sql read K-class files and models too)"},
    "data.compact": {"pa_buffer": "inlined into calibdash.data.read (no public replacement)"},
    "diagrams": {"CAPTIONS BAND_CAPTIONS": "each diagram's data writes its own caption: "
                                           "calibdash.diagrams.common.Diagram.caption",
                 "diagram": "prepare, then plot: calibdash.diagrams.prepare and calibdash.diagrams.plot"},
    "drift": {"MIN_PERIODS": "removed (nothing read it)",
              "choose_freq": "removed; calibdash.monitoring.periods.to_periods chooses the period length itself"},
    "bootstrap.draws": {"resample_counts": "removed; calibdash.evaluation.bootstrap.draws.row_draws draws the "
                                           "resampled rows (counts are a bincount of them)"},
    "multiclass.budget": {"check_work": "removed; calibdash.evaluation.class_budget.fitting says which methods fit "
                                        "and why the others do not"},
    "export": {"compact": "removed with the K-class model file's twin; json.dumps(value, separators=(',', ':')) "
                         "is what it did"},
    "model_checks": {"check_top parse_json": "folded into calibdash.io.export.read_model, which refuses a file that "
                                             "is not JSON, holds a value out of bounds or a top-level key the format "
                                             "does not have"},
    "figures.bbq": {"weights_data": "the BBQ explanation's models table: calibdash.explain.bbq.BBQExplanation",
                    "map_data": "removed; calibdash.figures.layout.faint_maps draws the heaviest models' maps"},
    "figures.corp": {"decomposition_text": "the CORP diagram's legend writes it: calibdash.diagrams.corp.CorpData"},
    "figures.diagrams": {"LEGEND_MARGIN": "removed (a layout detail of the figures)",
                         "diagram": "prepare, then plot: calibdash.diagrams.prepare and calibdash.diagrams.plot"},
    "grouping": {"group_codes": "folded into calibdash.monitoring.grouping.make_groups"},
    "keyed.assemble": {"check_group_key": "folded into calibdash.monitoring.keyed.Key, which refuses n_quantiles "
                                          "outside 2..max_groups when it is made"},
    "multiclass.base": {"check_logits": "folded into calibdash.calibrators.multiclass.base.as_scores "
                                          "(a K-column table: calibdash.core.validation.class_matrix)"},
    "multiclass.bootstrap": {"resample_counts": "removed; calibdash.evaluation.bootstrap.draws.row_draws draws "
                                                "the resampled rows (counts are a bincount of them)",
                             "RESAMPLED": "the resampled K-class measures are the registry's: "
                                          "calibdash.measures.class_measures.MEASURE_NAMES"},
    "multiclass.cells": {"accuracy_cells classwise_ece_cells debiased_l2_cells overconfidence_cells "
                         "smooth_ece_cells top_label_ece_cells top_label_mce_cells":
                         "every K-class measure on cells by name: calibdash.evaluation.cells.cell_measures "
                         "(names in calibdash.evaluation.cells.CELL_MEASURES)"},
    "multiclass.diagrams": {"CAPTIONS": "each diagram's data writes its own caption: "
                                        "calibdash.diagrams.common.Diagram.caption"},
    "multiclass.metrics": {"classwise": "removed; the class-k view is (P[:, k], y == k), which "
                                        "calibdash.measures.class_measures.per_class_ece reads for every k",
                           "brier debiased_top_label_l2 overconfidence smooth_ece_confidence top_label_mce":
                           "every K-class measure by name: calibdash.measures.class_measures.compute "
                           "(names in calibdash.measures.class_measures.MEASURE_NAMES)",
                           "MulticlassMeasure": "a record of the one measure registry: "
                                                "calibdash.measures.registry.Measure"},
    "periods": {"MIN_PERIODS": "removed (nothing read it)",
                "choose_freq": "removed; calibdash.monitoring.periods.to_periods chooses the period length itself"},
    "report.text": {"judged_text intervals_text": "inlined into the binary report's Data section, which "
                                                  "calibdash.report.build.build_report writes"},
}

SUFFIXES = {".py", ".md", ".rst", ".txt"}
SKIP_DIRS = {".git", ".venv", "venv", "site-packages", "node_modules", "__pycache__"}
DOTTED = re.compile(r"(?<![\w.])" + PKG + r"(?:\.[A-Za-z_]\w*)+")


def home(old: str, name: str) -> tuple[str, str] | str | None:
    """Where ``name`` read from the old module ``old`` (``calibdash.x``) lives today: ``(module, name)``; the
    note of :data:`GONE` when it is gone; None when ``old`` is no old module. An old module read from its package
    (``from calibdash import export``) is a name of that package."""
    rel = old[len(PKG) + 1:] if old != PKG else ""
    sub = f"{rel}.{name}" if rel else name
    if sub in MODULES:
        parent, _, base = f"{PKG}.{MODULES[sub]}".rpartition(".")
        return parent, base
    for names, note in GONE.get(rel, {}).items():
        if name in names.split():
            return note
    for spec, names in NAMES.get(rel, {}).items():
        if name in names.split():
            module, _, new = spec.partition(":")
            return f"{PKG}.{module}", new or name
    if rel in MODULES or rel in NAMES or rel in GONE:
        return f"{PKG}.{MODULES.get(rel, rel)}", name
    return None


def is_old(dotted: str) -> bool:
    """Whether ``dotted`` (``calibdash.x``) names a module of the old layout."""
    rel = dotted[len(PKG) + 1:]
    return rel in MODULES or rel in NAMES or rel in GONE


def listed(old: str, name: str) -> bool:
    """Whether :data:`NAMES` or :data:`GONE` says where ``name`` of the old module ``old`` went."""
    rel = old[len(PKG) + 1:]
    return any(name in names.split() for table in (NAMES, GONE) for names in table.get(rel, {}))


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` is a module of today's calibdash (not a name in one: ``calibdash.figures.calibration_map``
    was a module and is a function now)."""
    try:
        return importlib.util.find_spec(dotted) is not None
    except ImportError:                              # a parent that is no package
        return False


_RESOLVED: dict[str, bool] = {}


_MISSING = object()


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` (``calibdash.a.b``) is a module of today's calibdash or a name read through one."""
    if dotted not in _RESOLVED:
        parts = dotted.split(".")
        _RESOLVED[dotted] = False
        for k in range(len(parts), 0, -1):
            if not is_module(".".join(parts[:k])):
                continue
            obj = importlib.import_module(".".join(parts[:k]))
            for attr in parts[k:]:
                obj = getattr(obj, attr, _MISSING)
                if obj is _MISSING:               # stop here: the next name must not be read off the marker
                    break
            _RESOLVED[dotted] = obj is not _MISSING
            break
    return _RESOLVED[dotted]


def locate(dotted: str) -> tuple[str, str] | str | None:
    """Today's ``(module, name)`` of the first part of ``dotted`` that an old module held (the rest of the chain
    follows it), the note of a gone name, or None when ``dotted`` resolves today or names nothing old."""
    if resolves(dotted):
        return None
    parts = dotted.split(".")
    for k in range(len(parts) - 1, 0, -1):
        found = home(".".join(parts[:k]), parts[k])
        if found is not None:
            return found if isinstance(found, str) else (found[0], ".".join([found[1], *parts[k + 1:]]))
    return None


class Notes(list):
    """The lines the tool prints: ``(by_hand, text)``."""

    def add(self, where: str, node, text: str, by_hand: bool = False) -> None:
        self.append((by_hand, f"{where}:{getattr(node, 'lineno', '?')}: {text}"))


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _span(text: str, starts: list[int], node) -> tuple[int, int]:
    """The characters of ``node`` (the parser counts columns in UTF-8 bytes)."""
    def at(line: int, col: int) -> int:
        return starts[line - 1] + len(text[starts[line - 1]:].encode()[:col].decode(errors="ignore"))
    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


def _statement(node, lines: list[str]) -> str:
    """``lines`` in place of the import ``node``; with none left, a line that keeps an indented block valid."""
    indent = " " * node.col_offset
    if not lines:
        return "pass  # calibdash: every name of this import is gone (see the tool's output)" if node.col_offset \
            else "# calibdash: every name of this import is gone (see the tool's output)"
    return ("\n" + indent).join(lines)


def _as(name: str, local: str | None) -> str:
    return f"{name} as {local}" if local and local != name else name


def from_import(node: ast.ImportFrom, where: str, notes: Notes, bound: dict[str, tuple]) -> list[str] | None:
    """The lines replacing ``from calibdash.OLD import ...`` (None: leave it), grouped by today's module."""
    groups: dict[str, list[str]] = {}
    changed = False
    for a in node.names:
        dotted = f"{node.module}.{a.name}"
        found = None if a.name == "*" or resolves(dotted) else home(node.module, a.name)
        if found is None and is_old(dotted) and not is_module(dotted):
            notes.add(where, node, f"{dotted} was a module and is a name in {node.module} now; the module is "
                                   f"{'.'.join(home(node.module, a.name))}")
        if found is None and a.name == "*" and not resolves(node.module):
            found = locate(node.module)
            if isinstance(found, tuple):
                notes.add(where, node, f"from {node.module} import *: names that left it are not imported",
                          by_hand=True)
                found = (".".join(found), "*")
        if found is None:
            groups.setdefault(node.module, []).append(_as(a.name, a.asname))
            continue
        changed = True
        if isinstance(found, str):
            notes.add(where, node, f"{dotted} is gone, not imported: {found}", by_hand=True)
            continue
        module, name = found
        groups.setdefault(module, []).append(_as(name, a.asname or a.name))
        if name != a.name and not is_old(dotted):
            notes.add(where, node, f"{dotted} is {module}.{name} now (check its arguments)")
    for a in node.names:
        if is_old(f"{node.module}.{a.name}"):
            bound[a.asname or a.name] = (f"{node.module}.{a.name}", node)     # an old module, bound to a name
    return [f"from {m} import {', '.join(ns)}" for m, ns in groups.items()] if changed else None


def plain_import(node: ast.Import, tree, where: str, notes: Notes, bound: dict[str, tuple]) -> list[str] | None:
    """The lines replacing ``import calibdash.OLD [as m]`` (None: leave it). Without ``as``, the code reads
    ``calibdash.OLD.name``, which the text pass rewrites: every module those names live in is imported."""
    names, changed = [], False
    for a in node.names:
        if a.asname and is_old(a.name):
            bound[a.asname] = (a.name, node)
        found = home(*a.name.rsplit(".", 1)) if is_old(a.name) and not is_module(a.name) else None
        if not isinstance(found, tuple):
            names.append(_as(a.name, a.asname))
            continue
        changed = True
        new = ".".join(found)
        if a.asname:
            names.append(_as(new, a.asname))
            continue
        read = {new}
        for chain in _chains(tree, a.name + "."):
            place = locate(chain)
            if isinstance(place, tuple):
                read.add(place[0])
        names.extend(sorted(read))
    return [f"import {', '.join(names)}"] if changed else None


def _chains(tree, prefix: str):
    """The dotted names ``a.b.c`` read in ``tree`` that start with ``prefix``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                dotted = ".".join([value.id, *reversed(parts)])
                if dotted.startswith(prefix):
                    yield dotted


def attribute_edits(tree, text, starts, bound, where, notes) -> tuple[list, dict]:
    """``m.name`` where ``m`` is bound to an old module and ``name`` lives in another module today: the edits
    naming it by itself, and the imports that needs (import statement -> today's module -> names)."""
    edits, wanted = [], {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound):
            continue
        old, statement = bound[node.value.id]
        found = home(old, node.attr)
        successor = old if is_module(old) else ".".join(home(*old.rsplit(".", 1)))
        if resolves(f"{successor}.{node.attr}") and not listed(old, node.attr):
            continue
        if isinstance(found, str):
            notes.add(where, node, f"{node.value.id}.{node.attr} ({old}.{node.attr}) is gone: {found}", by_hand=True)
        elif found and found != (successor, node.attr):
            edits.append((*_span(text, starts, node), found[1]))
            wanted.setdefault(statement, {}).setdefault(found[0], set()).add(found[1])
            notes.add(where, node, f"{node.value.id}.{node.attr} -> {found[1]}, imported from {found[0]}")
    return edits, wanted


def python_edits(text: str, where: str, notes: Notes) -> list[tuple[int, int, str]]:
    """Edits ``(start, end, text)`` of the imports of calibdash in one Python file, and of the names read through
    a module they bind."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        notes.add(where, exc, f"not parsed ({exc.msg}); only dotted names rewritten", by_hand=True)
        return []
    starts, edits, bound, rewritten = _offsets(text), [], {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == PKG:
            lines = from_import(node, where, notes, bound)
        elif isinstance(node, ast.Import):
            lines = plain_import(node, tree, where, notes, bound)
        else:
            continue
        if lines is not None:
            rewritten[node] = lines
    more, wanted = attribute_edits(tree, text, starts, bound, where, notes)
    for node in {**rewritten, **wanted}:
        start, end = _span(text, starts, node)
        lines = rewritten.get(node, [text[start:end]])
        extra = [f"from {m} import {', '.join(sorted(ns))}" for m, ns in wanted.get(node, {}).items()]
        edits.append((start, end, _statement(node, lines + extra)))
    return edits + more


def rewrite(text: str, edits: list[tuple[int, int, str]], where: str, notes: Notes) -> str:
    """``text`` with ``edits`` applied and every old dotted name outside them rewritten."""
    def dotted(match) -> str:
        found = locate(match.group(0))
        if isinstance(found, str):
            notes.append((True, f"{where}: {match.group(0)} is gone: {found}"))
        return ".".join(found) if isinstance(found, tuple) else match.group(0)

    out, pos = [], 0
    for start, end, new in sorted(edits):
        out += [DOTTED.sub(dotted, text[pos:start]), new]
        pos = end
    return "".join(out + [DOTTED.sub(dotted, text[pos:])])


def check(text: str, where: str, notes: Notes) -> None:
    """A line for every import of calibdash in ``text`` that does not resolve today."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == PKG:
            wrong = [f"{node.module}.{a.name}" for a in node.names if a.name != "*" and
                     not resolves(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.Import):
            wrong = [a.name for a in node.names if a.name.split(".")[0] == PKG and not resolves(a.name)]
        else:
            continue
        for name in wrong:
            notes.add(where, node, f"{name} is not in today's calibdash (nor in this tool's tables)", by_hand=True)


def files(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        out += [p for p in found if p.is_file() and p.suffix in SUFFIXES and not SKIP_DIRS & set(p.parts)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path, help="files or folders to rewrite")
    ap.add_argument("--dry-run", action="store_true", help="print the changes as a diff, write nothing")
    args = ap.parse_args(argv)
    try:
        importlib.import_module(PKG)
    except ImportError as exc:
        print(f"today's {PKG} must be importable (install it, or run from its checkout): {exc}", file=sys.stderr)
        return 2
    notes, changed = Notes(), 0
    for path in files(args.paths):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        where = str(path)
        new = rewrite(text, python_edits(text, where, notes) if path.suffix == ".py" else [], where, notes)
        if path.suffix == ".py":
            check(new, where, notes)
        if new == text:
            continue
        changed += 1
        if args.dry_run:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), where, where))
        else:
            path.write_text(new, encoding="utf-8")
    for by_hand, line in dict.fromkeys(notes):
        print(("by hand: " if by_hand else "note: ") + line)
    print(f"{'would rewrite' if args.dry_run else 'rewrote'} {changed} file(s)")
    return 1 if any(by_hand for by_hand, _ in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
