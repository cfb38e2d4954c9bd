"""tools/relayout.py: its tables name only what exists today, and it turns old imports into working ones.

The tables (old module -> today's module, names that left it, names that are gone) are checked entry by entry
against today's package, and against the old package itself where git history holds it (the release before issue 27,
d508b4a, and the tree the regrouping ran on, c530651), so a later merge or rename cannot leave them stale unseen.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("relayout", REPO / "tools" / "relayout.py")
relayout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(relayout)

PKG = relayout.PKG
#: The release before issue 27 and the tree the regrouping ran on.
OLD_TREES = ("d508b4a", "c530651")
#: Old modules whose dotted path names a package today (``evaluation.py`` became ``evaluation/``).
PATH_REUSED = {"evaluation"}


def _named(table: dict[str, dict[str, str]]):
    for old, entries in table.items():
        for key, value in entries.items():
            for name in key.split() if table is relayout.GONE else value.split():
                yield old, name, (value if table is relayout.GONE else key)


def test_every_module_of_the_map_exists_today_and_every_old_path_does_not():
    for old, new in relayout.MODULES.items():
        assert relayout.is_module(f"{PKG}.{new}"), f"{old} -> {new}: no module {PKG}.{new} today"
        if old not in PATH_REUSED:
            assert not relayout.is_module(f"{PKG}.{old}"), f"{PKG}.{old} is a module today: no entry needed"


def test_every_moved_name_exists_where_the_table_says():
    for old, name, spec_ in _named(relayout.NAMES):
        module, _, new = spec_.partition(":")
        assert relayout.is_module(f"{PKG}.{module}"), f"{old}.{name} -> {module}: no module"
        assert hasattr(importlib.import_module(f"{PKG}.{module}"), new or name), \
            f"{PKG}.{old}.{name} -> {PKG}.{module}.{new or name}: no such name"
        assert old in relayout.MODULES or relayout.is_module(f"{PKG}.{old}"), f"{old}: no successor module"


def test_every_gone_name_is_gone_and_its_note_names_what_exists():
    for old, name, note in _named(relayout.GONE):
        successor = f"{PKG}.{relayout.MODULES.get(old, old)}"
        assert not relayout.resolves(f"{successor}.{name}"), f"{old}.{name} is in {successor}: not gone"
        assert not relayout.resolves(f"{PKG}.{old}.{name}"), f"{PKG}.{old}.{name} still imports"
        for ref in re.findall(PKG + r"(?:\.\w+)+", note):
            assert relayout.resolves(ref), f"the note of {old}.{name} names {ref}, which does not exist"


def test_a_name_under_a_missing_module_does_not_resolve():
    """Reading past a missing name stops there (a dict's ``get`` once made ``calibdash.multiclass.get`` resolve)."""
    assert relayout.resolves("calibdash.calibrators.get")
    for dotted in ("calibdash.multiclass.get", "calibdash.no_such.keys", "calibdash.calibrators.no_such.items"):
        assert not relayout.resolves(dotted), dotted


def test_home_of_a_moved_a_renamed_and_a_gone_name():
    assert relayout.home(f"{PKG}.export", "read_model") == (f"{PKG}.io.export", "read_model")
    assert relayout.home(PKG, "export") == (f"{PKG}.io", "export")
    assert relayout.home(f"{PKG}.multiclass", "metrics") == (f"{PKG}.measures", "class_measures")
    assert relayout.home(f"{PKG}.drift", "Staleness") == (f"{PKG}.monitoring.staleness", "Staleness")
    assert relayout.home(f"{PKG}.report.classes", "N_BOOT") == (f"{PKG}.report.build", "CLASS_N_BOOT")
    assert "removed" in relayout.home(f"{PKG}.periods", "MIN_PERIODS")
    assert relayout.home(f"{PKG}.calibrators.platt", "PlattCalibrator") is None      # not an old module


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def _public(source: str) -> set[str]:
    """The names an old module offered: its ``__all__``, else its public top-level definitions."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def _old_modules():
    """``{old dotted module: {name: tree}}`` of every old module whose path no longer imports, or None without the
    history (a shallow clone)."""
    try:
        for tree in OLD_TREES:
            _git("cat-file", "-e", f"{tree}^{{commit}}")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    out: dict[str, dict[str, str]] = {}
    for tree in OLD_TREES:
        for path in _git("ls-tree", "-r", "--name-only", tree, PKG).split():
            if not path.endswith(".py"):
                continue
            module = path[:-3].removesuffix("/__init__").replace("/", ".")
            if relayout.is_module(module) and module[len(PKG) + 1:] not in PATH_REUSED | {"diagrams"}:
                continue
            for name in _public(_git("show", f"{tree}:{path}")):
                out.setdefault(module, {}).setdefault(name, tree)
    return out


def test_every_old_module_and_each_of_its_names_has_a_home_today():
    """Completeness: each name an old module offered, read from its old path, resolves today, is rewritten to a
    module that has it, or is named gone."""
    old = _old_modules()
    if old is None:
        pytest.skip("the old trees are not in this clone's history")
    missing = []
    for module, names in sorted(old.items()):
        rel = module[len(PKG) + 1:]
        if not relayout.is_old(module):
            missing.append(f"{module}: no entry in MODULES")
            continue
        for name, tree in sorted(names.items()):
            if relayout.resolves(f"{module}.{name}"):
                continue
            found = relayout.home(module, name)
            if isinstance(found, tuple) and not relayout.resolves(".".join(found)):
                missing.append(f"{module}.{name} ({tree}) -> {'.'.join(found)}, which does not exist")
            assert found is not None, rel
    assert not missing, "\n".join(missing)


#: A user's module written against the old layout: one name per target the regroup's map had wrong (the modules
#: merged since), a sample of the rest, every import form, a ``mock.patch`` string, and checks that each name is
#: today's object.
OLD_USER_CODE = '''\
"""Reads a model with calibdash.export.read_model."""
import calibdash.export
import calibdash.multiclass.metrics as mm
from calibdash import groups, diagrams
from calibdash.multiclass import metrics
from calibdash.multiclass.evaluation import (evaluate_classes,
                                             DEFAULT_METHODS as K_METHODS)
from calibdash.multiclass.split import content_keys, class_split_plan
from calibdash.multiclass.cells import ClassCells, accuracy_cells
from calibdash.multiclass.bootstrap import bootstrap_multiclass, resample_blocks
from calibdash.bootstrap.measures import bootstrap_measures
from calibdash.benchmark.classes import run_class_benchmark, load_benchmark_datasets
from calibdash.benchmark.large import EngineDataset
from calibdash.multiclass.export import read_model as read_class_model
from calibdash.diagrams import prepare_binned, CorpColumn
from calibdash.multiclass.diagrams import prepare_classwise, ConfidenceData
from calibdash.multiclass.explain import ClassExplanation, temperature_curve
from calibdash.report.classes import report_for_class_set, N_BOOT
from calibdash.cli.classes import open_table
from calibdash.engines.large import LargeSource
from calibdash.multiclass.newton_cg import newton_cg_solve
from calibdash.jobs.cancel import Cancelled
from calibdash.bootstrap.poisson import Poisson
from calibdash.drift import period_report, Staleness, MIN_PERIODS
from calibdash.weights_of_nothing import x  # no such module, ever
from calibdash.errors import DataError
from calibdash.evaluation import evaluate, split_plan

PATCHED = "calibdash.groups.fix_groups"


def check():
    import calibdash.io.export, calibdash.monitoring.groups, calibdash.evaluation.holdout
    from calibdash import core, evaluation as ev, measures, calibrators, benchmark, engines, explain, report, cli
    assert calibdash.export.read_model is calibdash.io.export.read_model
    assert mm.top_label_ece is measures.class_measures.top_label_ece and metrics is measures.class_measures
    assert groups.fix_groups is calibdash.monitoring.groups.fix_groups
    assert groups.GroupReport.__module__ == "calibdash.monitoring.group_metrics"
    assert diagrams.CorpColumn is CorpColumn and CorpColumn.__module__ == "calibdash.diagrams.corp"
    assert evaluate_classes is ev.holdout.evaluate_classes and K_METHODS == ev.holdout.DEFAULT_METHODS
    assert content_keys is ev.scheme.content_keys and class_split_plan is ev.scheme.split_plan
    assert split_plan is ev.scheme.split_plan and ClassCells is ev.cells.ClassCells
    assert bootstrap_multiclass is ev.bootstrap.row_resamples.bootstrap_multiclass
    assert resample_blocks is ev.bootstrap.draws.resample_blocks and Poisson is ev.bootstrap.draws.Poisson
    assert bootstrap_measures is ev.bootstrap.cell_resamples.bootstrap_measures
    assert run_class_benchmark is benchmark.engine.run_benchmark and EngineDataset is benchmark.engine.EngineDataset
    assert load_benchmark_datasets is benchmark.datasets.load_benchmark_datasets
    assert read_class_model is calibdash.io.export.read_model
    assert prepare_classwise.__module__ == "calibdash.diagrams.classwise"
    assert ConfidenceData.__module__ == "calibdash.diagrams.confidence"
    assert ClassExplanation is explain.k_class.ClassExplanation
    assert temperature_curve is explain.k_temperature.temperature_curve
    assert report_for_class_set is report.build.report_for_class_set and N_BOOT == report.build.CLASS_N_BOOT
    assert open_table is cli.file_problem.open_table and LargeSource is engines.plan.LargeSource
    assert newton_cg_solve is calibrators.multiclass.newton.newton_cg_solve
    assert Cancelled is core.jobs.runner.Cancelled and DataError is core.errors.DataError
    assert Staleness.__module__ == "calibdash.monitoring.staleness" and period_report.__module__ == (
        "calibdash.monitoring.drift")
    assert PATCHED == "calibdash.monitoring.groups.fix_groups"
    assert evaluate is ev.evaluate and prepare_binned is diagrams.prepare_binned
    for gone in ("MIN_PERIODS", "accuracy_cells", "x"):
        assert gone not in globals()
    return "ok"
'''


#: The subprocesses import calibdash from this checkout, with one BLAS thread.
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "relayout.py"), *args], capture_output=True,
                          text=True, cwd=REPO, env=ENV)


def test_old_imports_are_rewritten_into_a_module_that_runs_today(tmp_path):
    user = tmp_path / "project" / "user_code.py"
    user.parent.mkdir()
    user.write_text(OLD_USER_CODE, encoding="utf-8")
    doc = tmp_path / "project" / "NOTES.md"
    doc.write_text("We call `calibdash.multiclass.metrics.top_label_ece` and `calibdash.evaluation.holdout`.\n")

    first = _run(str(user.parent))
    assert first.returncode == 1, first.stderr                 # lines ask for work by hand
    out = first.stdout
    assert "calibdash.drift.MIN_PERIODS is gone, not imported: removed" in out
    assert "calibdash.multiclass.cells.accuracy_cells is gone" in out
    assert "calibdash.evaluation.cells.cell_measures" in out      # ... and what replaces it
    assert "calibdash.weights_of_nothing.x is not in today's calibdash" in out
    assert "run_class_benchmark is calibdash.benchmark.engine.run_benchmark now" in out
    text = user.read_text(encoding="utf-8")
    assert "MIN_PERIODS" not in text.split("def check")[0] and "accuracy_cells" not in text.split("def check")[0]
    assert doc.read_text() == ("We call `calibdash.measures.class_measures.top_label_ece` and "
                               "`calibdash.evaluation.holdout`.\n")

    # the module the user cannot have (the import of a module that never existed) aside, it runs today
    runnable = text.replace("from calibdash.weights_of_nothing import x  # no such module, ever\n", "")
    assert runnable != text
    (tmp_path / "user.py").write_text(runnable, encoding="utf-8")
    ran = subprocess.run([sys.executable, "-c", "import runpy; print(runpy.run_path('user.py')['check']())"],
                         capture_output=True, text=True, cwd=tmp_path, env=ENV)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr

    second = _run(str(user.parent))                            # nothing left to rewrite
    assert user.read_text(encoding="utf-8") == text and "rewrote 0 file(s)" in second.stdout


def _rewritten(tmp_path, code: str, *options: str) -> tuple[subprocess.CompletedProcess, str]:
    """The tool's run on one file holding ``code``, and the file's text after it."""
    path = tmp_path / "user_file.py"
    path.write_text(code, encoding="utf-8")
    return _run(*options, str(path)), path.read_text(encoding="utf-8")


def test_code_already_in_todays_layout_is_left_as_written(tmp_path):
    code = textwrap.dedent('''\
        import calibdash.io.export
        from calibdash import evaluation, diagrams
        from calibdash.evaluation import holdout, evaluate
        from calibdash.diagrams.corp import CorpColumn
        from calibdash.monitoring.groups import fix_groups

        def f():
            return evaluation.holdout.evaluate, diagrams.plot, calibdash.io.export.read_model
        ''')
    done, _ = _rewritten(tmp_path, code, "--dry-run")
    assert done.returncode == 0 and "would rewrite 0 file(s)" in done.stdout, done.stdout + done.stderr


def test_a_name_read_through_an_old_module_that_left_it_is_imported_by_itself(tmp_path):
    done, text = _rewritten(tmp_path, "if True:\n    from calibdash import drift as d\n\n"
                                      "X = d.Staleness, d.period_report\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert text == ("if True:\n    from calibdash.monitoring import drift as d\n"
                    "    from calibdash.monitoring.staleness import Staleness\n\n"
                    "X = Staleness, d.period_report\n")


def test_an_old_module_whose_path_is_a_function_today_is_left_and_said(tmp_path):
    done, text = _rewritten(tmp_path, "from calibdash.figures import calibration_map\n")
    assert done.returncode == 0 and text == "from calibdash.figures import calibration_map\n"
    assert ("calibdash.figures.calibration_map was a module and is a name in calibdash.figures now; the module is "
            "calibdash.figures.charts.calibration_map") in done.stdout


def test_an_old_module_imported_whole_imports_every_module_its_names_live_in(tmp_path):
    done, text = _rewritten(tmp_path, "import calibdash.drift\n\n"
                                      "X = calibdash.drift.Staleness, calibdash.drift.period_report\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert text == ("import calibdash.monitoring.drift, calibdash.monitoring.staleness\n\n"
                    "X = calibdash.monitoring.staleness.Staleness, calibdash.monitoring.drift.period_report\n")
