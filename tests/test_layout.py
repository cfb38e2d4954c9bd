"""The package's shape: no import cycles, no streamlit in the backend, the pages apart from the package.

The import graph is read from the source with ``ast`` (every ``import`` and
``from ... import`` anywhere in a module, function bodies included, so a
cycle cannot hide behind a late import); only ``if TYPE_CHECKING:`` blocks are
left out.
"""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "calibdash"


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(root.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Import nodes of a module, outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = name if is_pkg else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = []
                for alias in node.names:
                    sub = f"{origin}.{alias.name}"
                    targets.append(sub if sub in modules else origin)
            for t in targets:
                # "import a.b.c" names a.b.c; keep the longest known module prefix
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    edges.add(t)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_planted_cycle_and_a_late_import(tmp_path):
    """The checker itself: a two-module cycle through a function-level import is found."""
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    mods = {}
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(tmp_path).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    graph = import_graph(mods)
    assert graph["pkgx.a"] == {"pkgx.b"}
    assert graph["pkgx.b"] == {"pkgx.a"}
    assert graph["pkgx.c"] == set()            # TYPE_CHECKING imports are not runtime edges
    assert cycles(graph) == [["pkgx.a", "pkgx.b"]]


def test_calibdash_has_no_import_cycles():
    graph = import_graph(_modules(PACKAGE))
    assert len(graph) > 30                      # the walk really saw the package
    assert "calibdash.measures.calibration" in graph["calibdash.evaluation.holdout"]
    assert cycles(graph) == []


def test_backend_never_imports_streamlit():
    for name, path in _modules(PACKAGE).items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(n.split(".")[0] == "streamlit" for n in names), f"{name} imports streamlit"


def test_validation_sits_below_metrics_and_calibrators():
    """Metrics and calibrators share their input checks from a module that imports neither."""
    graph = import_graph(_modules(PACKAGE))
    assert "calibdash.core.validation" in graph["calibdash.measures.binning"]
    assert "calibdash.core.validation" in graph["calibdash.calibrators.base"]
    assert graph["calibdash.core.validation"] <= {"calibdash.core.errors"}
    assert "calibdash.calibrators.base" not in graph["calibdash.measures.binning"]
    assert "calibdash.calibrators.base" not in graph["calibdash.measures.calibration"]


def test_each_method_is_explained_and_drawn_by_declaration():
    """A method is fitted in its own module (calibrators/NAME.py, K-class: multiclass/methods/NAME.py); its
    explainer declares the calibrator classes it explains (``@explains``) and its figures the explanation
    classes they draw (``@draws``), and the dispatchers find them by class, never by a module named for the
    method. So: every declared calibrator class is a registered method (or a family's base, whose explainer is
    the fallback); every registered binary method is explained; every explanation an explainer returns is
    drawn by a declared figure exactly when it says it is drawn (``Explanation.drawn``); every drawn class is
    one an explainer returns."""
    from typing import get_type_hints

    from calibdash import calibrators, figures
    from calibdash.calibrators.base import Calibrator
    from calibdash.explain import Explanation, explainers
    from calibdash.calibrators.multiclass.base import MulticlassCalibrator

    binary, k_class = set(calibrators.classes().values()), set(calibrators.classes("classes").values())
    found = explainers()
    assert set(found) - binary - k_class == {Calibrator, MulticlassCalibrator}
    assert binary <= set(found)
    assert {calibrators.get_class("temperature", "classes"), calibrators.get_class("ovr", "classes")} <= set(found)
    returned = {get_type_hints(fn)["return"] for fn in found.values()}
    assert all(issubclass(r, Explanation) for r in returned)
    drawn = figures.drawers()
    for cls in returned - {Explanation}:
        by = [c for c in cls.__mro__ if c in drawn]
        assert bool(by) == cls.drawn, f"{cls.__name__} says drawn={cls.drawn} but is drawn by {by}"
    unreachable = {c for c in drawn if not any(issubclass(r, c) for r in returned)}
    assert not unreachable, f"figures declared for explanations no explainer returns: {unreachable}"


def test_pages_and_app_have_no_import_cycles_and_pages_import_no_page():
    """The dashboard side too: app.py routes, pages/ import calibdash and pages/parts, never each other."""
    mods = {**_modules(PACKAGE), **_modules(REPO / "pages"), "app": REPO / "app.py"}
    graph = import_graph(mods)
    assert cycles(graph) == []
    page_files = {n for n, p in mods.items() if n.startswith("pages.") and p.parent.name == "pages"
                  and not n.endswith("__init__") and n != "pages"}
    assert {"pages.compare", "pages.explore", "pages.data", "pages.benchmark", "pages.learn"} <= page_files
    for page in page_files:
        assert not (graph[page] & page_files), f"{page} imports another page: {graph[page] & page_files}"
    assert all(not dep.startswith("pages") for name in graph if name.startswith("calibdash") for dep in graph[name])


def test_benchmark_statistics_and_report_share_the_result_type_not_each_other():
    """The result type has its own module: the statistics build it, the report shows it, neither imports the
    other (not even for annotations, behind ``TYPE_CHECKING``)."""
    graph = import_graph(_modules(PACKAGE))
    stats, report = "calibdash.benchmark.statistics", "calibdash.benchmark.report"
    assert "calibdash.benchmark.outcome" in graph[stats] and "calibdash.benchmark.outcome" in graph[report]
    assert report not in graph[stats] and stats not in graph[report]
    for name in (stats, report, "calibdash.benchmark.outcome"):
        assert "TYPE_CHECKING" not in _modules(PACKAGE)[name].read_text(encoding="utf-8"), name


def test_each_registered_calibrator_declares_its_order_colour_and_sql_form():
    """A method declares itself in its class: its place in every list (``order``), its colour in every
    chart (``color``) and its SQL form (``sql_map``: a form of calibdash.core.sql_forms, or an explicit None); the
    registry sorts by the declared order, and no two methods share a place or a colour."""
    from calibdash import calibrators
    from calibdash.core import sql_forms
    from calibdash.calibrators.base import Calibrator
    from calibdash.calibrators.sql import sql_methods
    from calibdash.figures.palette import UNCALIBRATED, color_of

    classes = calibrators.classes()
    assert len(classes) >= 12
    for name, cls in classes.items():
        assert isinstance(cls.order, (int, float)) and math.isfinite(cls.order), f"{name} declares no order"
        assert re.fullmatch(r"#[0-9A-F]{6}", cls.color or ""), f"{name} declares no colour (#RRGGBB)"
        assert cls.sql_map is not Calibrator.sql_map, f"{name} does not say what its SQL form is (or that it has none)"
        assert color_of(name) == cls.color
    assert list(classes) == sorted(classes, key=lambda n: (classes[n].order, n))
    assert len({cls.order for cls in classes.values()}) == len(classes), "two methods share a place"
    colours = [cls.color for cls in classes.values()] + [color_of(UNCALIBRATED), color_of("truth")]
    assert len(set(colours)) == len(colours), "two methods share a colour"

    rng = np.random.default_rng(18)
    s = np.round(rng.uniform(size=300), 3)
    y = (rng.uniform(size=300) < s).astype(int)
    for name in classes:
        form = calibrators.get(name).fit(s, y).sql_map()
        assert form is None or isinstance(form, (sql_forms.StepMap, sql_forms.LinearMap, sql_forms.ClosedForm)), name
        if form is not None:
            assert name in sql_methods()


@pytest.mark.parametrize("module", ["calibdash.calibrators", "calibdash.figures.palette", "calibdash.figures",
                                    "calibdash.explain", "calibdash.calibrators.sql"])
def test_no_central_list_names_the_methods(module):
    """Adding a method is adding files: the registry, the palette, the dispatch to explainers and
    figures and the SQL writer name no method (they ask the classes, or read what modules declare)."""
    from calibdash import calibrators

    names = set(calibrators.available())
    tree = ast.parse(_modules(PACKAGE)[module].read_text(encoding="utf-8"))
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names}
    assert not named, f"{module} names the methods {sorted(named)}"


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name)


def taken_names(modules: dict[str, Path]) -> set[tuple[str, str, str]]:
    """``(module, other module, name)`` for every name a module takes from another module of ``modules``:
    ``from m import x``, or ``m.x`` on a module imported by name (submodules taken this way are left out)."""
    found = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        bound: dict[str, str] = {}                  # local name -> the module it is
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules:
                        bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if not any(origin == m or m.startswith(origin + ".") for m in modules):
                continue                              # a third-party module: its names are its business
            for a in node.names:
                if f"{origin}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{origin}.{a.name}"
                elif origin != name:
                    found.add((name, origin, a.name))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                    and bound[node.value.id] != name and f"{bound[node.value.id]}.{node.attr}" not in modules):
                found.add((name, bound[node.value.id], node.attr))
    return found


def private_imports(modules: dict[str, Path]) -> set[tuple[str, str, str]]:
    """``(module, other module, name)`` for every private (``_``-prefixed, not dunder) name a module takes from
    another module of ``modules``."""
    return {t for t in taken_names(modules) if _is_private(t[2])}


def test_private_import_finder_finds_both_forms(tmp_path):
    """The checker itself: ``from .a import _x`` and ``a._y`` are found; a dunder and a module's own names are not."""
    pkg = tmp_path / "pkgy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("_x = 1\n_y = 2\n__all__ = []\ndef f():\n    return _x\n")
    (pkg / "b.py").write_text("from .a import _x, __all__\n")
    (pkg / "c.py").write_text("from . import a\nfrom numpy import _pytesttester\ndef g():\n    return a._y\n")
    mods = {"pkgy": pkg / "__init__.py", **{f"pkgy.{m}": pkg / f"{m}.py" for m in "abc"}}
    assert private_imports(mods) == {("pkgy.b", "pkgy.a", "_x"), ("pkgy.c", "pkgy.a", "_y")}


#: Private names still taken across modules (none now). Remove an entry when it is fixed; the test fails on any
#: other private import, and on an entry that no longer occurs.
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()


def test_no_module_imports_another_modules_private_names():
    """calibdash/, pages/ and app.py share code through public names only (the measures share their binning
    through ``calibdash.measures.binning``, not each other's ``_`` helpers)."""
    mods = {**_modules(PACKAGE), **_modules(REPO / "pages"), "app": REPO / "app.py"}
    found = private_imports(mods)
    assert found - KNOWN_PRIVATE_IMPORTS == set()
    assert KNOWN_PRIVATE_IMPORTS <= found, f"fixed, remove from KNOWN_PRIVATE_IMPORTS: {KNOWN_PRIVATE_IMPORTS - found}"


def test_measures_are_one_subpackage_over_one_solver():
    """The measures live in calibdash/measures/; the old root names (metrics, clinical, smooth_ece, corp) only
    re-export it and nothing inside imports them back; the one logistic solver sits below calibrators and measures."""
    graph = import_graph(_modules(PACKAGE))
    old = {"calibdash.metrics", "calibdash.clinical", "calibdash.smooth_ece", "calibdash.corp"}
    inside = {name for name in graph if name.startswith("calibdash.measures")}
    assert {"calibdash.measures.binning", "calibdash.measures.calibration", "calibdash.measures.mvce"} <= inside
    for name in inside:
        assert not graph[name] & old, f"{name} imports an old re-export module: {graph[name] & old}"
    for name in old - {"calibdash.clinical"}:                 # clinical also keeps the UI's bin-count rule
        assert graph[name] and all(dep.startswith("calibdash.measures") or dep == "calibdash.core.deprecation"
                                   for dep in graph[name]), name
    assert graph["calibdash.core.logistic"] == set()
    for user in ("calibdash.calibrators.platt", "calibdash.calibrators.beta", "calibdash.calibrators.temperature",
                 "calibdash.measures.recalibration"):
        assert "calibdash.core.logistic" in graph[user], user


def _calls(path: Path, name: str) -> bool:
    """Whether the module at ``path`` calls a function named ``name`` (``name()`` or ``x.name()``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                return True
    return False


def test_calls_finder_sees_plain_and_attribute_calls(tmp_path):
    for text, found in (("if using_classes():\n    pass\n", True), ("import c\nc.using_classes()\n", True),
                        ("from c import using_classes\n", False), ("using_classes = 1\n", False)):
        (tmp_path / "m.py").write_text(text)
        assert _calls(tmp_path / "m.py", "using_classes") is found, text


def test_no_page_forks_on_the_problem_kind_and_no_class_twins():
    """Issue 27: each page is one script over the problem; what only K classes (or only a score) have is a part
    the problem declares, never a fork at the top (``if using_classes(): ...; st.stop()``) into a twin module."""
    pages = {str(p.relative_to(REPO)) for p in (REPO / "pages").glob("*.py") if p.name != "__init__.py"}
    assert {"pages/data.py", "pages/compare.py", "pages/explore.py"} <= pages
    forking = {p for p in pages if _calls(REPO / p, "using_classes")}
    assert not forking, f"pages fork on the problem kind: {sorted(forking)}"
    twins = {str(p.relative_to(REPO)) for p in (REPO / "pages").rglob("*_classes.py")}
    assert not twins, f"K-class twins of page parts: {sorted(twins)}"


# ---------------------------------------------------------------------------------------------------------------
# the layers (issue 27): packages that only import downward
# ---------------------------------------------------------------------------------------------------------------
#: The layers, lowest first, each a set of top-level nodes of calibdash (a subpackage, or a module at the root;
#: "" is the package's own ``__init__``). A module may import from its own layer and from lower ones, never from a
#: higher one. The dashboard (app.py, pages/) sits above them all and the package never imports it.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"core"}),                                   # errors, validation, the logistic solver, safe text, jobs
    ("measures", {"measures"}),                           # every measure, binary and K-class
    ("calibrators", {"calibrators", "sklearn"}),          # binary and K-class calibrators, their solvers
    ("evaluation", {"evaluation"}),                       # scheme, split, cross-fit, cells, bootstrap, verdict
    ("monitoring", {"monitoring"}),                       # groups, periods, keyed cells, staleness, drift
    ("sources and engines", {"data", "engines", "synthetic", "samples", "benchmark"}),
    ("io", {"io"}),                                       # model files, SQL, the command line's JSON schemas
    ("presentation", {"diagrams", "explain", "figures", "report", "cli", "__main__", ""}),
]
#: Old names kept for users at the root: thin re-exports that nothing in calibdash/, pages/ or app.py imports.
SHIMS = {"metrics", "smooth_ece", "corp", "clinical"}
#: At most this many modules at the package root (``__init__`` and ``__main__`` included).
MAX_ROOT_MODULES = 10

#: Imports that still run up a layer: ``(importer, imported)``, each a module or a package standing for every module
#: in it (the package ``calibdash`` itself stands for its ``__init__`` only). Each is a code change to make; remove
#: an entry when it is cut. The test fails on any other upward import, and on an entry that no longer occurs.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _within(module: str, entry: str) -> bool:
    return module == entry or (entry != "calibdash" and module.startswith(entry + "."))


def known_upward(found: set[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """``(new, stale)``: the upward imports no entry of :data:`KNOWN_UPWARD` covers, and the entries that cover none."""
    covers = {k: {e for e in found if _within(e[0], k[0]) and _within(e[1], k[1])} for k in KNOWN_UPWARD}
    return found - set().union(*covers.values()), {k for k, v in covers.items() if not v}



def node_of(module: str, package: str = "calibdash") -> str:
    """The top-level node of a module: ``calibdash.evaluation.split`` -> ``evaluation``; the package -> ``""``."""
    return module[len(package) + 1:].split(".")[0] if module != package else ""


def upward_imports(graph: dict[str, set[str]], layers: list[tuple[str, set[str]]],
                   package: str = "calibdash") -> set[tuple[str, str]]:
    """``(module, imported module)`` for every import from a lower layer's module to a higher layer's one."""
    rank = {n: i for i, (_, nodes) in enumerate(layers) for n in nodes}
    out = set()
    for name, deps in graph.items():
        here = rank.get(node_of(name, package))
        for dep in deps:
            there = rank.get(node_of(dep, package))
            if here is not None and there is not None and there > here:
                out.add((name, dep))
    return out


def test_layer_checker_finds_a_planted_upward_import(tmp_path):
    """The checker itself: a late import from a low package into a high one is found, a downward one is not."""
    pkg = tmp_path / "pkgz"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from ..high import b\n")
    (pkg / "high" / "b.py").write_text("from ..low import a\n")
    mods = {}
    for p in sorted(pkg.rglob("*.py")):
        parts = list(p.relative_to(tmp_path).with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph = import_graph(mods)
    layers = [("low", {"low"}), ("high", {"high", ""})]
    assert upward_imports(graph, layers, "pkgz") == {("pkgz.low.a", "pkgz.high.b")}


def test_every_top_level_package_and_root_module_has_a_layer():
    nodes = {node_of(name) for name in _modules(PACKAGE)}
    placed = set().union(*(n for _, n in LAYERS))
    assert nodes - SHIMS == placed, (f"without a layer: {sorted(nodes - SHIMS - placed)}; "
                                     f"a layer names what is gone: {sorted(placed - nodes)}")
    assert not placed & SHIMS


def test_packages_import_only_downward():
    """The package-level rule: no import runs from a layer up to a higher one (function-level imports too)."""
    new, stale = known_upward(upward_imports(import_graph(_modules(PACKAGE)), LAYERS))
    assert not new, f"imports that run up a layer: {sorted(new)}"
    assert not stale, f"cut, remove from KNOWN_UPWARD: {sorted(stale)}"


def test_at_most_ten_modules_at_the_package_root():
    root = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at calibdash/: {root}"


def test_no_module_imports_a_shim():
    """The old names kept for users are imported by nothing inside: not by the package, the pages or app.py."""
    mods = {**_modules(PACKAGE), **_modules(REPO / "pages"), "app": REPO / "app.py"}
    shims = {f"calibdash.{s}" for s in SHIMS}
    assert shims <= set(mods)
    for name, deps in import_graph(mods).items():
        assert name in shims or not deps & shims, f"{name} imports the shim {sorted(deps & shims)}"


def test_no_two_modules_share_a_file_name_with_different_jobs():
    """One name per concept: a file name is used once in calibdash/, except (1) ``__init__``, (2) a method's own
    name (calibrators/NAME.py fits it, explain/NAME.py explains it, figures/NAME.py draws it), (3) a diagram's data, a
    figure or an explainer named for what it shows (figures/drift.py draws monitoring/drift.py), (4) one module per member of
    a family (engines/duckdb/rows.py, engines/spark/rows.py: the same job per backend; engines/apply.py beside
    engines/duckdb/apply.py: the family's shared part), (5) a shim named for what
    it re-exports, (6) ``base``: the contract of a family (calibrators/base.py, calibrators/multiclass/base.py).
    No second classes.py, large.py or diagrams.py."""
    from calibdash import calibrators

    methods = set(calibrators.available()) | set(calibrators.classes("classes"))
    by_name: dict[str, list[tuple[str, ...]]] = {}
    for name, path in _modules(PACKAGE).items():
        if path.name != "__init__.py":
            by_name.setdefault(path.stem, []).append(tuple(name.split(".")[1:]))
    clashes = {}
    for stem, places in by_name.items():
        if len(places) < 2 or stem in methods or stem == "base":
            continue
        homes = [p for p in places if p[0] not in {"diagrams", "figures", "explain"} and p != (stem,)]
        if len(homes) <= 1:
            continue
        top = {p[0] for p in homes}
        members = [p[1] for p in homes if len(p) == 3]
        if len(top) == 1 and all(len(p) in (2, 3) for p in homes) and len(members) == len(set(members)) and \
                sum(len(p) == 2 for p in homes) <= 1:
            continue          # a family: engines/duckdb/apply.py, engines/spark/apply.py (and engines/apply.py)
        clashes[stem] = sorted(".".join(p) for p in places)
    assert not clashes, f"file names with two jobs: {clashes}"


# ---------------------------------------------------------------------------------------------------------------
# one name for the rows' weights (issue 27 item 5)
# ---------------------------------------------------------------------------------------------------------------
#: Parameter names a public signature may not use: the rows' weights are ``sample_weight`` everywhere (scikit-learn's
#: name); a parameter that holds other weights says which (``posterior``, ``rows``), a SQL writer is ``writer``.
WEIGHT_ALIASES = {"w", "weights", "weight"}


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def weight_aliases(modules: dict[str, Path]) -> set[tuple[str, str, str]]:
    """``(module, function, parameter)`` for every public function or method (its name not ``_``-prefixed, in a
    module whose dotted name has no ``_``-prefixed part; a package's ``__init__`` counts as the package) with a
    positional or keyword-only parameter named like :data:`WEIGHT_ALIASES`."""
    found = set()
    for name, path in modules.items():
        if not _is_public_module(name):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                a = node.args
                found |= {(name, node.name, p.arg) for p in a.posonlyargs + a.args + a.kwonlyargs
                          if p.arg in WEIGHT_ALIASES}
    return found


def test_weight_alias_finder_finds_planted_public_parameters(tmp_path):
    """The checker itself: ``w``/``weights``/``weight`` of a public function, a method and a keyword-only argument are
    found; a private function's, a private module's and ``sample_weight`` are not."""
    pkg = tmp_path / "pkgw"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def diagram(kind, weights=None):\n    pass\n")
    (pkg / "a.py").write_text("def fit(s, y, w=None):\n    pass\n\n"
                              "class Data:\n    def prepare(self, p, *, weight):\n        pass\n\n"
                              "    def _cells(self, w):\n        pass\n\n"
                              "def _total(w):\n    return w.sum()\n\n"
                              "def good(s, sample_weight=None, weighted=True):\n    pass\n")
    (pkg / "_rows.py").write_text("def rows(w):\n    pass\n")
    mods = {"pkgw": pkg / "__init__.py", "pkgw.a": pkg / "a.py", "pkgw._rows": pkg / "_rows.py"}
    assert weight_aliases(mods) == {("pkgw", "diagram", "weights"), ("pkgw.a", "fit", "w"),
                                    ("pkgw.a", "prepare", "weight")}


def test_public_signatures_name_the_weights_sample_weight():
    """Issue 27: one public name for the rows' weights, ``sample_weight``, in every public signature of calibdash."""
    modules = _modules(PACKAGE)
    found = weight_aliases(modules)
    assert not found, f"public parameters to rename sample_weight (or to what they hold): {sorted(found)}"
    # the rule reads real signatures: the package's public functions do take sample_weight
    import inspect

    from calibdash.core.logistic import fit_logistic
    from calibdash.diagrams import prepare

    for fn in (fit_logistic, prepare):
        assert "sample_weight" in inspect.signature(fn).parameters, fn.__name__


#: At most this many names in all of calibdash's ``__all__`` lists (issue 27: the public surface a user learns).
MAX_PUBLIC_NAMES = 700


def _declared(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _package_of(module: str) -> str:
    """The unit whose insides are its own business: ``calibdash.X`` for the package's modules, else the top name."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "calibdash" else parts[0]


def across_packages(modules: dict[str, Path]) -> set[tuple[str, str, str]]:
    """Names taken from a calibdash module by a module of another package (or by the pages) that the
    module's ``__all__`` does not list."""
    declared = {name: _declared(path) for name, path in modules.items() if name.startswith("calibdash")}
    return {(who, origin, name) for who, origin, name in taken_names(modules)
            if origin in declared and _package_of(who) != _package_of(origin) and not _is_dunder(name)
            and name not in (declared[origin] or [])}


def test_imports_across_packages_use_listed_names_and_the_lists_are_short():
    """``__all__`` is the public surface: every name another package or a page takes is listed in its module's
    ``__all__``, and all the lists together hold at most :data:`MAX_PUBLIC_NAMES` names."""
    mods = {**_modules(PACKAGE), **_modules(REPO / "pages"), "app": REPO / "app.py"}
    assert across_packages(mods) == set()
    lists = {name: _declared(path) for name, path in _modules(PACKAGE).items()}
    total = sum(len(names or []) for names in lists.values())
    assert total <= MAX_PUBLIC_NAMES, total
    for name, names in lists.items():
        missing = [x for x in names or [] if not hasattr(__import__(name, fromlist=["_"]), x)]
        assert not missing, f"{name}.__all__ lists names it lacks: {missing}"


def test_cross_package_finder_sees_an_unlisted_name(tmp_path, monkeypatch):
    """The checker itself: a page taking an unlisted name is found; a listed one, and one taken inside its own
    package, are not."""
    root = tmp_path / "calibdash" / "inner"
    root.mkdir(parents=True)
    (tmp_path / "calibdash" / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("__all__ = ['shown']\nshown = hidden = 1\n")
    (root / "b.py").write_text("from .a import hidden\n")
    (tmp_path / "page.py").write_text("from calibdash.inner.a import shown, hidden\nimport calibdash.inner.a as a\na.hidden\n")
    mods = {"calibdash": tmp_path / "calibdash" / "__init__.py", "calibdash.inner": root / "__init__.py",
            "calibdash.inner.a": root / "a.py", "calibdash.inner.b": root / "b.py", "page": tmp_path / "page.py"}
    assert across_packages(mods) == {("page", "calibdash.inner.a", "hidden")}
