"""The package's shape: no import cycles, no streamlit in the backend, the pages apart from the package.

The import graph is read from the source with ``ast`` (every ``import`` and
``from ... import`` anywhere in a module, function bodies included, so a
cycle cannot hide behind a late import); only ``if TYPE_CHECKING:`` blocks are
left out.
"""
from __future__ import annotations

import ast
from pathlib import Path

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
    assert "calibdash.metrics" in graph["calibdash.evaluation"]
    assert cycles(graph) == []


def test_backend_never_imports_streamlit():
    for name, path in _modules(PACKAGE).items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(n.split(".")[0] == "streamlit" for n in names), f"{name} imports streamlit"


def test_validation_sits_below_metrics_and_calibrators():
    """Metrics and calibrators share their input checks from a module that imports neither."""
    graph = import_graph(_modules(PACKAGE))
    assert "calibdash.validation" in graph["calibdash.measures.binning"]
    assert "calibdash.validation" in graph["calibdash.calibrators.base"]
    assert graph["calibdash.validation"] <= {"calibdash.errors"}
    assert "calibdash.calibrators.base" not in graph["calibdash.measures.binning"]
    assert "calibdash.calibrators.base" not in graph["calibdash.measures.calibration"]


@pytest.mark.parametrize("folder", ["calibrators", "explain", "figures"])
def test_each_method_is_fitted_explained_and_drawn_in_a_module_named_for_it(folder):
    """The file tree says where a method fits (calibrators/NAME.py), is explained (explain/NAME.py) and
    drawn (figures/NAME.py): every explainer and inner-figure module is named after a registered method."""
    from calibdash import calibrators

    names = set(calibrators.available())
    files = {p.stem for p in (PACKAGE / folder).glob("*.py") if not p.stem.startswith("_")}
    if folder == "calibrators":
        assert names <= files
    else:
        shared = {"calibration_map", "reliability", "layout", "palette", "images", "benchmark", "learn",
                  "smooth_ece", "corp", "groups", "drift"}
        assert files - shared <= names, f"{folder}/ has modules named for no method: {sorted(files - shared - names)}"


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
