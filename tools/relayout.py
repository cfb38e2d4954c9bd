"""Regroup calibdash/ into packages that only import downward (issue 27, items 4 and 5), and move the tests with them.

Run from the repository root, on a clean work tree::

    python tools/relayout.py            # git mv every module, rewrite every import, move the tests
    python tools/relayout.py --dry-run  # print what it would do, change nothing

What it does, in order:

1. **Modules.** Every ``calibdash/**/*.py`` is given its new place by :data:`MODULES` (one module) or, failing
   that, by :data:`PACKAGES` (the longest old package prefix: a module another change adds later to an old package
   moves with its package). A module no rule names stays where it is and is printed as ``unplaced``. Each move is a
   ``git mv``; a new package gets an ``__init__.py`` with a one-line docstring (:data:`NEW_PACKAGES`).
2. **Imports.** In every tracked text file (calibdash/, pages/, app.py, tests/, bench/, sample_data/ scripts,
   README.md and other docs, Makefile, .ci/, pyproject.toml; not the golden outputs): absolute names ``calibdash.x.y`` anywhere in the text (imports, ``import calibdash.x``,
   ``mock.patch``/``monkeypatch``/``importlib`` strings, ``:mod:`` references, ``-m calibdash.x``), paths
   ``calibdash/x/y.py``, and relative imports (``from .x import``, ``from ..x import``, ``from . import x``) of
   every moved file, re-expressed from the file's new place.
3. **Tests.** ``tests/test_*.py`` go to ``tests/<package>/test_<module>.py`` (:data:`TESTS`; a test file no rule
   names stays and is printed). ``tests/__init__.py`` and an ``__init__.py`` in each test folder make the test
   modules ``tests.<package>.test_<module>`` (pytest's default ``prepend`` import mode then puts the repository root
   on ``sys.path``; two test files may share a name in two folders, and no test folder shadows a top-level module
   such as ``io``). ``from conftest import`` becomes ``from tests.conftest import`` (the one conftest stays at
   ``tests/conftest.py``, so its fixtures stay visible to every folder), ``from test_x import`` becomes
   ``from tests.<package>.test_x import``, ``Path(__file__).resolve().parents[1]`` (the repository root) becomes
   ``parents[2]`` in a test moved one folder down, ``tests/test_x.py`` in any text becomes its new path, and a
   quoted path relative to the package in a test (``PACKAGE / "evaluation.py"``) becomes the module's new one.

The script is idempotent: a module already in its place is left alone, a file that is gone is skipped, and a second
run finds nothing to do.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

PKG = "calibdash"

#: One module's new place (old dotted name under calibdash -> new). Checked before :data:`PACKAGES`.
MODULES: dict[str, str] = {
    # core: what every layer uses
    "errors": "core.errors",
    "validation": "core.validation",
    "logistic": "core.logistic",
    "safe_text": "core.safe_text",
    "registry": "core.scan",                       # measures/registry.py is the measures' registry
    "jobs.registry": "core.jobs.runner",           # ... and this one runs jobs
    "weights": "core.weights",                     # if the weights' one spelling gets a module
    "data.limits": "core.limits",                  # bounds every layer checks (the K-class budget too)
    "data.margins": "core.margins",                # margins -> probabilities: monitoring reads it too
    "data.numbers": "core.numbers",                # text parsed as numbers: monitoring reads it too
    # measures: the K-class measures beside the binary ones
    "multiclass.metrics": "measures.class_measures",
    # calibrators: the K-class calibrators and their solvers (the rest of multiclass/, see PACKAGES)
    "multiclass": "calibrators.multiclass",
    # evaluation: problem, split, cross-fit, bootstrap, verdict, cells
    "evaluation": "evaluation.holdout",
    "crossfit": "evaluation.crossfit",
    "cells": "evaluation.cells",
    "scheme": "evaluation.scheme",
    "methods": "evaluation.methods",
    "problem": "evaluation.problem",
    "verdict": "evaluation.verdict",
    "reductions": "evaluation.reductions",
    "multiclass.evaluation": "evaluation.class_evaluation",
    "multiclass.split": "evaluation.split",
    "multiclass.cells": "evaluation.class_cells",
    "multiclass.budget": "evaluation.class_budget",
    "multiclass.bootstrap": "evaluation.bootstrap.class_intervals",
    "bootstrap.cells": "evaluation.bootstrap.cell_resamples",
    "bootstrap.rows": "evaluation.bootstrap.row_resamples",
    "bootstrap.measures": "evaluation.bootstrap.measure_intervals",
    # monitoring: groups, periods, keyed cells, staleness, drift
    "groups": "monitoring.groups",
    "grouping": "monitoring.grouping",
    "group_metrics": "monitoring.group_metrics",
    "periods": "monitoring.periods",
    "staleness": "monitoring.staleness",
    "drift": "monitoring.drift",
    "multiclass.groups": "monitoring.class_groups",
    "keyed.measures": "monitoring.keyed.per_key",
    "keyed.rows": "monitoring.keyed.from_rows",    # engines/<backend>/rows.py are the engines' rows
    # sources and engines: one name per concept (no classes.py, no large.py)
    "data.classes": "data.class_set",
    "data.large": "data.large_source",
    # engines/classes.py and engines/<backend>/classes.py keep their names: engines/base.py finds the backend's
    # module by the string "classes" (a family's one name; renaming it is a change of engines/base.py too)
    "engines.large": "engines.plan",
    "multiclass.large": "engines.class_fit",
    "benchmark.classes": "benchmark.class_benchmark",
    "benchmark.large": "benchmark.in_place",
    "benchmark.result": "benchmark.outcome",       # evaluation/bootstrap/result.py is the bootstrap's
    "data.guard.errors": "data.guard.refusals",    # core/errors.py is the package's errors
    "synthetic.multiclass": "synthetic.gaussian_classes",
    "samples.drift": "samples.drifting_score",     # monitoring/drift.py measures drift
    # io: model files, SQL, the command line's JSON schemas
    "export": "io.export",
    "model_checks": "io.model_checks",
    "multiclass.export": "io.class_export",
    "sql": "io.sql",
    "sql_forms": "core.sql_forms.forms",
    "sql_lookup": "core.sql_forms.lookup",
    "sql_writer": "core.sql_forms.writer",
    # presentation: diagrams' data, explainers, figures, report, command line
    "diagrams": "diagrams.reliability",
    "multiclass.diagrams": "diagrams.multiclass",
    "multiclass.explain": "explain.multiclass",
    "report.classes": "report.class_report",
    "cli.classes": "cli.class_commands",
}

#: Whole packages (old dotted prefix -> new). A module under an old package that :data:`MODULES` does not name
#: moves with its package, keeping its path inside it.
PACKAGES: dict[str, str] = {
    "jobs": "core.jobs",
    "multiclass": "calibrators.multiclass",
    "bootstrap": "evaluation.bootstrap",
    "keyed": "monitoring.keyed",
    "schemas": "io.schemas",
    "sql": "io.sql",
}

#: Modules that stay at the package root (at most 10): the package itself, ``python -m calibdash``, the
#: scikit-learn estimators, and the old names kept for users (thin re-exports, imported by nothing inside).
ROOT = {"__init__", "__main__", "sklearn", "metrics", "smooth_ece", "corp", "clinical"}

#: Docstrings of the packages this layout creates.
NEW_PACKAGES = {
    "core": "What every layer uses: typed errors, input checks, the one logistic solver, safe text, the registry "
            "scan, jobs.",
    "evaluation": "Judging calibrators on held-out rows: the scheme, the split, the cross-fit, the cells, the "
                  "bootstrap, the verdict.",
    "monitoring": "Calibration over groups and time: groups, periods, keyed cells, staleness, drift.",
    "io": "What leaves the process: model files, SQL, the command line's JSON schemas.",
    "io.sql": None,                                # sql.py's text becomes the package's __init__
    "diagrams": "The data of the diagrams (no plotly): reliability diagrams and the K-class diagrams.",
}

#: Test files (old name under tests/ -> new path under tests/). The rest stay where they are and are printed.
TESTS: dict[str, str] = {
    **{f"test_{m}.py": f"calibrators/test_{m}.py" for m in (
        "bbq", "elite", "enir", "mbct", "venn_abers", "scaling_binning", "beta_temperature", "sbb_abb",
        "calibrators", "odd_input")},
    **{f"test_multiclass_{m}.py": f"calibrators/test_multiclass_{m}.py" for m in (
        "composites", "contract", "fit_sample", "odd_input", "scaling", "solver", "solver_edges")},
    "test_fit_notes.py": "calibrators/test_multiclass_fit_notes.py",
    **{f"test_{m}.py": f"measures/test_{m}.py" for m in (
        "clinical", "corp", "smooth_ece", "measures", "measures_package", "metrics", "labels")},
    "test_multiclass_metrics.py": "measures/test_class_measures.py",
    **{f"test_{m}.py": f"evaluation/test_{m}.py" for m in (
        "bootstrap", "cells", "crossfit", "evaluation", "methods")},
    "test_multiclass_cells.py": "evaluation/test_class_cells.py",
    "test_page_jobs.py": "evaluation/test_class_budget.py",
    "test_jobs.py": "core/test_jobs.py",
    **{f"test_{m}.py": f"monitoring/test_{m}.py" for m in ("drift", "groups", "keyed_measures", "keyed_rows")},
    **{f"test_{m}.py": f"data/test_{m}.py" for m in (
        "data", "data_classes", "compact", "guard", "loading_fixes", "upload_bombs", "top_label_reduction")},
    **{f"test_{m}.py": f"engines/test_{m}.py" for m in ("engines", "engines_classes", "keyed_engines", "apply")},
    "test_multiclass_large.py": "engines/test_class_fit.py",
    **{f"test_{m}.py": f"benchmark/test_{m}.py" for m in ("benchmark", "benchmark_classes", "stats")},
    "test_synthetic.py": "synthetic/test_synthetic.py",
    "test_multiclass_study.py": "synthetic/test_multiclass_study.py",
    "test_samples.py": "samples/test_samples.py",
    **{f"test_{m}.py": f"io/test_{m}.py" for m in ("export", "sql", "security_sql", "security_csv")},
    "test_diagrams.py": "diagrams/test_diagrams.py",
    "test_diagram_library.py": "diagrams/test_diagram_library.py",
    "test_multiclass_diagrams.py": "diagrams/test_multiclass.py",
    "test_explain.py": "explain/test_explain.py",
    "test_multiclass_explain.py": "explain/test_multiclass.py",
    "test_figures.py": "figures/test_figures.py",
    "test_report.py": "report/test_report.py",
    **{f"test_cli{m}.py": f"cli/test_cli{m}.py" for m in (
        "", "_classes", "_engines", "_json_schema", "_monitor", "_notes", "_roles")},
    **{f"test_{m}.py": f"pages/test_{m}.py" for m in (
        "app", "app_classes", "app_classes_pages", "app_classes_url", "app_compare", "app_diagrams", "app_roles",
        "app_segments", "app_segments_classes", "app_segments_large", "learn_page", "live_cache",
        "server_memory", "security_pages", "large_source")},
}
#: Tests of the whole package (or of the root's sklearn.py): they stay in tests/.
STAY = {"test_layout.py", "test_conventions.py", "test_packaging.py", "test_row_order.py", "test_weights.py",
        "test_sklearn.py", "test_sklearn_classes.py"}
#: A test file another change adds, named test_<word>_..., goes with the package of its first word.
TEST_PREFIXES = {"multiclass": "calibrators", "app": "pages", "cli": "cli", "engines": "engines", "engine": "engines",
                 "keyed": "monitoring", "measures": "measures", "benchmark": "benchmark", "data": "data",
                 "explain": "explain", "figures": "figures", "report": "report", "export": "io", "sql": "io",
                 "bootstrap": "evaluation", "evaluation": "evaluation", "calibrators": "calibrators"}

SKIP_TEXT = {"tools/relayout.py"}


# ---------------------------------------------------------------------------------------------------------------
# the module map
# ---------------------------------------------------------------------------------------------------------------
def module_name(rel: Path) -> str:
    """``calibdash/a/b.py`` -> ``calibdash.a.b``; ``calibdash/a/__init__.py`` -> ``calibdash.a``."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def new_module(old: str, is_pkg: bool = False) -> str | None:
    """The new dotted name of the old module ``old`` (``calibdash.x.y``; ``is_pkg``: it is a package's
    ``__init__``), or None if no rule places it.

    A :data:`MODULES` entry names a plain module (``evaluation.py``), so it never moves a package of the same name
    (the ``evaluation/`` this script makes): that keeps a second run from moving anything again."""
    if old == PKG:
        return PKG
    assert old.startswith(PKG + ".")
    rel = old[len(PKG) + 1:]
    if rel in ROOT:
        return old
    if rel in MODULES and not is_pkg:
        return f"{PKG}.{MODULES[rel]}"
    parts = rel.split(".")
    for k in range(len(parts), 0, -1):              # the longest old package prefix (the package itself too)
        prefix = ".".join(parts[:k])
        if prefix in PACKAGES and (k < len(parts) or is_pkg):
            return ".".join([f"{PKG}.{PACKAGES[prefix]}"] + parts[k:])
    if len(parts) > 1 or is_pkg:                    # in a package that keeps its name (calibrators, data...)
        return old
    return None


def plan_moves(repo: Path) -> tuple[dict[str, str], dict[str, tuple[Path, Path]], list[str]]:
    """``(rename, moves, unplaced)``: old module -> new module for every module of the package now, the file
    moves ``module -> (old path, new path)`` among them, and the root modules no rule places."""
    rename: dict[str, str] = {}
    moves: dict[str, tuple[Path, Path]] = {}
    unplaced: list[str] = []
    for path in sorted((repo / PKG).rglob("*.py")):
        rel = path.relative_to(repo)
        old = module_name(rel)
        new = new_module(old, path.name == "__init__.py")
        if new is None:
            unplaced.append(old)
            new = old
        rename[old] = new
        if new != old:
            target = Path(*new.split("."))
            target = target / "__init__.py" if path.name == "__init__.py" or _becomes_package(old, new) \
                else target.with_suffix(".py")
            moves[old] = (rel, target)
    # a module that becomes a package's __init__ (sql.py -> io/sql/__init__.py)
    return rename, moves, unplaced


def _becomes_package(old: str, new: str) -> bool:
    rel = new[len(PKG) + 1:]
    return any(v.startswith(rel + ".") for v in list(MODULES.values()) + list(PACKAGES.values())) and \
        old[len(PKG) + 1:] in MODULES


def _old_modules_and_packages(rename: dict[str, str]) -> dict[str, str]:
    """Every old dotted name that can appear in text -> its new name: the modules, plus the old packages and
    prefixes of :data:`MODULES`/:data:`PACKAGES` that no longer hold a file (so ``calibdash.keyed`` in a
    docstring follows its package even after the last file is gone)."""
    out = dict(rename)
    done = set(rename.values())
    for old, new in [*PACKAGES.items(), *MODULES.items()]:
        if f"{PKG}.{new}" not in done:              # after a first run the new names are the modules: keep them
            out.setdefault(f"{PKG}.{old}", f"{PKG}.{new}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# rewriting text
# ---------------------------------------------------------------------------------------------------------------
DOTTED = re.compile(r"(?<![\w.])" + PKG + r"((?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"(?<![\w/.])" + PKG + r"/((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*)\.py\b")
FOLDER = re.compile(r"(?<![\w/.])" + PKG + r"/(?:[A-Za-z_]\w*/)+")


_NEW_ONLY: dict[int, set[str]] = {}


def _new_only(table: dict[str, str]) -> set[str]:
    """Dotted names of the new layout that name no old module (``calibdash.evaluation.split``, ``calibdash.io``)."""
    out = set()
    for new in table.values():
        parts = new.split(".")
        out |= {".".join(parts[:k]) for k in range(2, len(parts) + 1)}
    return out - set(table)


def map_dotted(name: str, table: dict[str, str]) -> str:
    """``calibdash.a.b.attr`` with its longest known old module prefix replaced by the new one; a name already
    in the new layout (``calibdash.evaluation.split`` written before the run) is left as it is."""
    parts = name.split(".")
    key = id(table)
    if key not in _NEW_ONLY:
        _NEW_ONLY[key] = _new_only(table)
    new_only = _NEW_ONLY[key]
    for k in range(len(parts), 1, -1):
        prefix = ".".join(parts[:k])
        if prefix in table:
            return ".".join([table[prefix]] + parts[k:])
        if prefix in new_only:
            return name
    return name


HEAD = re.compile(r"from\s+(\.*[\w.]*)\s+import\b")


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _relative(from_package: str, target: str) -> tuple[int, str]:
    """``(level, module)`` of a relative import of ``target`` written in a module of package ``from_package``."""
    p, t = from_package.split("."), target.split(".")
    c = 0
    while c < min(len(p), len(t)) and p[c] == t[c]:
        c += 1
    return len(p) - c + 1, ".".join(t[c:])


def _origin(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` in a module of ``package`` reads from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edits(text: str, old_name: str, new_name: str, is_pkg: bool, table: dict[str, str],
                 modules: set[str], new_is_pkg: bool | None = None) -> list[tuple[int, int, str]]:
    """Edits ``(start, end, text)`` of the import statements of one module whose text needs more than the
    dotted-name pass: relative imports (re-expressed from the module's new package), and ``from P import m``
    where ``m`` is a module that moves to another package than P's new name."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    starts = _offsets(text)
    old_pkg = old_name if is_pkg else old_name.rpartition(".")[0]
    new_is_pkg = is_pkg if new_is_pkg is None else new_is_pkg      # sql.py becomes io/sql/__init__.py
    new_pkg = new_name if new_is_pkg else new_name.rpartition(".")[0]
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        origin = _origin(node, old_pkg)
        if not (origin == PKG or origin.startswith(PKG + ".")):
            continue
        # group the names by the module they come from after the move
        groups: dict[str, list[str]] = {}
        for alias in node.names:
            sub = f"{origin}.{alias.name}"
            if sub in modules or sub in table:
                new_sub = map_dotted(sub, table)
                parent, _, base_name = new_sub.rpartition(".")
                shown = alias.asname or (alias.name if base_name != alias.name else None)
                groups.setdefault(parent, []).append(base_name + (f" as {shown}" if shown and shown != base_name
                                                                 else ""))
            else:
                groups.setdefault(map_dotted(origin, table), []).append(
                    alias.name + (f" as {alias.asname}" if alias.asname else ""))
        same = list(groups) == [map_dotted(origin, table)] and all(
            a.name == n.split(" as ")[0] for a, n in zip(node.names, groups[list(groups)[0]]))
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        indent = " " * node.col_offset
        if same and not node.level:
            continue                                   # the dotted-name pass rewrites the module's name
        if same:
            # only the "from <dots><module>" head changes: keep the names (and their comments) as written
            level, mod = _relative(new_pkg, list(groups)[0])
            head = HEAD.match(text, start)
            edits.append((start, head.end(1), f"from {'.' * level}{mod}"))
            continue
        lines = []
        for target, names in groups.items():
            if node.level:
                level, mod = _relative(new_pkg, target)
                src = "." * level + mod
            else:
                src = target
            lines.append(f"from {src} import {', '.join(names)}")
        if "#" in text[start:end]:
            print(f"  note: comments inside an import of {old_name} were dropped: {text[start:end]!r}")
        edits.append((start, end, ("\n" + indent).join(lines)))
    return edits


def attribute_edits(text: str, old_name: str, is_pkg: bool, table: dict[str, str],
                    modules: set[str], where: str = "") -> list[tuple[int, int, str]]:
    """Edits of ``m.sub`` where the name ``m`` is bound to a calibdash module (``from calibdash import bootstrap``)
    and ``sub`` is one of its modules renamed in place (``bootstrap.cells`` -> ``bootstrap.cell_resamples``).
    A module that leaves its package is then named by itself (``multiclass.metrics.X`` -> ``class_measures.X``,
    with ``from calibdash.measures import class_measures`` after the file's last top-level import)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    old_pkg = old_name if is_pkg else old_name.rpartition(".")[0]
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _origin(node, old_pkg)
            for a in node.names:
                if f"{origin}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{origin}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in modules:
                    bound[a.asname] = a.name
    if not bound:
        return []
    starts = _offsets(text)
    edits, wanted = [], {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound):
            continue
        old_sub = f"{bound[node.value.id]}.{node.attr}"
        if old_sub not in modules or table.get(old_sub, old_sub) == old_sub:
            continue
        parent, _, base = table[old_sub].rpartition(".")
        end = starts[node.end_lineno - 1] + node.end_col_offset
        if parent == map_dotted(bound[node.value.id], table):
            edits.append((end - len(node.attr), end, base))
            continue
        # the module left the package: name it by itself, imported once after the module's last import
        start = starts[node.lineno - 1] + node.col_offset
        edits.append((start, end, base))
        wanted[base] = parent
    if wanted:
        last = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if not last:
            print(f"  by hand: {where} reaches {sorted(wanted)} through a package they left")
            return []
        at = starts[last[-1].end_lineno - 1] + last[-1].end_col_offset
        lines = "".join(f"\nfrom {parent} import {base}" for base, parent in sorted(wanted.items()))
        edits.append((at, at, lines))
        print(f"  {where}: {', '.join(sorted(wanted))} imported by name (reached through a package they left)")
    return edits


def _folder(path: str, paths: dict[str, str]) -> str:
    """``calibdash/schemas/x/`` with its longest moved package folder replaced."""
    parts = path.rstrip("/").split("/")
    for k in range(len(parts), 1, -1):
        head = "/".join(parts[:k]) + "/"
        if head in paths:
            return paths[head] + path[len(head):]
    return path


def rewrite_text(text: str, table: dict[str, str], edits: list[tuple[int, int, str]],
                 paths: dict[str, str], tests: dict[str, str]) -> str:
    """The text with ``edits`` applied and, outside them, every dotted name, package path and old test path
    replaced."""
    spans = sorted(edits)
    out, pos = [], 0

    def plain(chunk: str) -> str:
        chunk = DOTTED.sub(lambda m: map_dotted(m.group(0), table), chunk)
        chunk = PATH.sub(lambda m: paths.get(m.group(0), m.group(0)), chunk)
        chunk = FOLDER.sub(lambda m: _folder(m.group(0), paths), chunk)
        for old, new in tests.items():
            chunk = re.sub(r"(?<![\w/])tests/" + re.escape(old) + r"\b", "tests/" + new, chunk)
        return chunk

    for start, end, repl in spans:
        out.append(plain(text[pos:start]))
        out.append(repl)
        pos = end
    out.append(plain(text[pos:]))
    return "".join(out)


def path_table(table: dict[str, str], repo: Path) -> dict[str, str]:
    """``calibdash/a/b.py`` (and ``calibdash/a/__init__.py``) -> its new path, for every module that moves; and
    ``calibdash/pkg/`` -> its new folder for every package that moves whole (the JSON schemas' folder)."""
    out = {}
    for old, new in table.items():
        if old == new or old == PKG:
            continue
        o, n = old.replace(".", "/"), new.replace(".", "/")
        out.setdefault(o + "/__init__.py", n + "/__init__.py")
        out.setdefault(o + ".py", n + ("/__init__.py" if _becomes_package(old, new) else ".py"))
    for old, new in PACKAGES.items():
        out.setdefault(f"{PKG}/{old.replace('.', '/')}/", f"{PKG}/{new.replace('.', '/')}/")
    return out


# ---------------------------------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------------------------------
def plan_tests(repo: Path, rename: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """``old name -> new relative path`` for the test files at tests/ that move, and those that stay.

    A file :data:`TESTS` does not name goes where the module it is named for lives (``test_isotonic.py`` ->
    ``calibrators/``, for ``calibdash/calibrators/isotonic.py``; a private ``_bayes_binning.py`` counts), else
    with the package of its first word (:data:`TEST_PREFIXES`); a name found in two top-level packages stays."""
    homes: dict[str, set[str]] = {}
    for new in rename.values():
        parts = new.split(".")
        if len(parts) > 2:
            homes.setdefault(parts[-1].lstrip("_"), set()).add(parts[1])
    moves, stay = {}, []
    for path in sorted((repo / "tests").glob("test_*.py")):
        name = path.name
        stem = name[len("test_"):-len(".py")]
        word = stem.split("_")[0]
        home = homes.get(stem, set())
        home = home - {"figures", "explain"} or home          # a method's tests sit with its calibrator
        if name in STAY:
            stay.append(name)
        elif name in TESTS:
            moves[name] = TESTS[name]
        elif len(home) == 1:
            moves[name] = f"{next(iter(home))}/{name}"
        elif word in TEST_PREFIXES:
            moves[name] = f"{TEST_PREFIXES[word]}/{name}"
        else:
            stay.append(name)
    return moves, stay


def rewrite_test_imports(text: str, test_moves: dict[str, str], moved_down: bool) -> str:
    """``from conftest import`` / ``import conftest`` / ``from test_x import`` as package imports, and the repo
    root one folder further up in a test moved one folder down."""
    text = re.sub(r"(?m)^(\s*)from conftest import", r"\1from tests.conftest import", text)
    text = re.sub(r"(?m)^(\s*)import conftest\b", r"\1from tests import conftest", text)

    def sibling(m):
        name = m.group(2) + ".py"
        where = test_moves.get(name)
        mod = "tests." + (where[:-3].replace("/", ".") if where else m.group(2))
        return f"{m.group(1)}from {mod} import"
    text = re.sub(r"(?m)^(\s*)from (test_\w+) import", sibling, text)

    def plain_import(m):                            # import test_engines as B -> from tests.engines import ...
        where = test_moves.get(m.group(2) + ".py")
        package = "tests." + where.rpartition("/")[0].replace("/", ".") if where and "/" in where else "tests"
        return f"{m.group(1)}from {package} import {m.group(2)}{m.group(3) or ''}"
    text = re.sub(r"(?m)^(\s*)import (test_\w+)( as \w+)?\s*$", plain_import, text)

    def dotted(m):                                  # tests.test_app (already a package import) -> tests.pages.test_app
        where = test_moves.get(m.group(1) + ".py")
        return "tests." + where[:-3].replace("/", ".") if where else m.group(0)
    text = re.sub(r"(?<![\w.])tests\.(test_\w+)\b", dotted, text)
    if moved_down:
        text = re.sub(r"Path\(__file__\)\.resolve\(\)\.parents\[1\]", "Path(__file__).resolve().parents[2]", text)
        text = re.sub(r"Path\(__file__\)\.parent\.parent\b", "Path(__file__).parent.parent.parent", text)
        text = re.sub(r"Path\(__file__\)\.resolve\(\)\.parent\.parent\b",
                      "Path(__file__).resolve().parent.parent.parent", text)
    return text


# ---------------------------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------------------------
def git(repo: Path, *args: str, dry: bool) -> None:
    if dry:
        print("  git", " ".join(args))
        return
    subprocess.run(["git", "-C", str(repo), *args], check=True)


TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".txt", ".sh", ""}


def text_files(repo: Path) -> list[Path]:
    """Every tracked text file that can name a module or a test: sources, docs, the Makefile, CI scripts, the
    project's settings (the golden outputs, tests/golden/*outputs/, and this script excepted)."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files"], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    out = []
    for rel in listed:
        path = repo / rel
        parts = Path(rel).parts
        if (path.suffix in TEXT_SUFFIXES and path.is_file() and rel not in SKIP_TEXT
                and not (parts[:2] == ("tests", "golden") and any(q.endswith("outputs") for q in parts))):
            out.append(path)
    return sorted(out)


QUOTED_PY = re.compile(r"""(["'])((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*\.py)\1""")


def rewrite_package_relative(text: str, paths: dict[str, str]) -> str:
    """In a test, a quoted path relative to the package (``PACKAGE / "evaluation.py"``) -> its new path."""
    rel = {k[len(PKG) + 1:]: v[len(PKG) + 1:] for k, v in paths.items() if k.endswith(".py")}
    return QUOTED_PY.sub(lambda m: m.group(1) + rel.get(m.group(2), m.group(2)) + m.group(1), text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=".", help="the repository's root (default: here)")
    ap.add_argument("--dry-run", action="store_true", help="print what would be done, change nothing")
    args = ap.parse_args(argv)
    repo = Path(args.repo).resolve()
    dry = args.dry_run
    if not (repo / PKG).is_dir():
        print(f"no {PKG}/ under {repo}", file=sys.stderr)
        return 2

    rename, moves, unplaced = plan_moves(repo)
    table = _old_modules_and_packages(rename)
    paths = path_table(table, repo)
    test_moves, test_stay = plan_tests(repo, rename)
    modules = set(rename)

    # 1. rewrite every text file in place, each module's relative imports from its new place
    files = text_files(repo)
    changed = 0
    for path in files:
        rel = path.relative_to(repo)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        edits = []
        if path.suffix == ".py" and rel.parts[0] == PKG:
            old = module_name(rel)
            edits = import_edits(text, old, rename.get(old, old), path.name == "__init__.py", table, modules,
                                 moves[old][1].name == "__init__.py" if old in moves else None)
            edits += attribute_edits(text, old, path.name == "__init__.py", table, modules, str(rel))
        elif path.suffix == ".py":
            edits = import_edits(text, "__outside__", "__outside__", False, table, modules)
            edits += attribute_edits(text, "__outside__", False, table, modules, str(rel))
        new = rewrite_text(text, table, edits, paths, test_moves)
        if rel.parts[0] == "tests" and path.suffix == ".py":
            new = rewrite_package_relative(new, paths)
            moved_down = rel.parent == Path("tests") and rel.name in test_moves
            new = rewrite_test_imports(new, test_moves, moved_down)
        if new != text:
            changed += 1
            if dry:
                print(f"  rewrite {rel}")
            else:
                path.write_text(new, encoding="utf-8")
    print(f"rewrote {changed} of {len(files)} files")

    # 2. move the modules (children before the parents' __init__, so a module that becomes a package works)
    for old, (src, dst) in sorted(moves.items(), key=lambda kv: (-len(kv[1][1].parts), str(kv[1][1]))):
        if not (repo / src).exists():
            print(f"  gone, skipped: {src}")
            continue
        if (repo / dst).exists():
            print(f"  already there, skipped: {dst}")
            continue
        if not dry:
            (repo / dst).parent.mkdir(parents=True, exist_ok=True)
        print(f"  move {src} -> {dst}")
        git(repo, "mv", str(src), str(dst), dry=dry)
    for pkg, doc in NEW_PACKAGES.items():
        init = repo / PKG / Path(*pkg.split(".")) / "__init__.py"
        if doc and not init.exists() and (dry or init.parent.is_dir()):
            print(f"  new package {init.relative_to(repo)}")
            if not dry:
                init.write_text(f'"""{doc}"""\n', encoding="utf-8")
                git(repo, "add", str(init.relative_to(repo)), dry=dry)
    # the other files of a moved package (the JSON schemas) follow it
    for old, new in PACKAGES.items():
        src_dir = repo / PKG / Path(*old.split("."))
        if not src_dir.is_dir():
            continue
        for f in sorted(src_dir.rglob("*")):
            if f.is_file() and f.suffix != ".py" and "__pycache__" not in f.parts:
                dst = repo / PKG / Path(*new.split(".")) / f.relative_to(src_dir)
                print(f"  move {f.relative_to(repo)} -> {dst.relative_to(repo)}")
                if not dry:
                    dst.parent.mkdir(parents=True, exist_ok=True)
                git(repo, "mv", str(f.relative_to(repo)), str(dst.relative_to(repo)), dry=dry)
    # the old package folders left empty (their __pycache__ only)
    if not dry:
        for d in sorted((repo / PKG).rglob("*"), key=lambda p: -len(p.parts)):
            if d.is_dir() and not any(q.is_file() and "__pycache__" not in q.parts for q in d.rglob("*")):
                subprocess.run(["rm", "-rf", str(d)], check=True)
    for u in unplaced:
        print(f"  unplaced (stays at the root, say where in tools/relayout.py): {u}")

    # 3. the tests: one folder per package, each a package of tests
    inits = {"tests/__init__.py"} | {f"tests/{new.split('/')[0]}/__init__.py" for new in test_moves.values()}
    for init in sorted(inits):
        if not (repo / init).exists():
            print(f"  new {init}")
            if not dry:
                (repo / init).parent.mkdir(parents=True, exist_ok=True)
                (repo / init).write_text("", encoding="utf-8")
                git(repo, "add", init, dry=dry)
    for old, new in sorted(test_moves.items()):
        src, dst = Path("tests") / old, Path("tests") / new
        if (repo / dst).exists():
            print(f"  already there, skipped: {dst}")
            continue
        print(f"  move {src} -> {dst}")
        git(repo, "mv", str(src), str(dst), dry=dry)
    for name in test_stay:
        print(f"  test stays in tests/: {name}")
    roots = sorted(p.stem for p in (repo / PKG).glob("*.py"))
    print(f"root modules after: {len(roots)}: {', '.join(roots)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
