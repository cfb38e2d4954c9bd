"""The README's Python examples name modules and functions that exist: every ``import`` and ``from ... import``
line of its ``python`` code blocks is run (the examples themselves need data files; the names they import must be
real, so that a refactor that moves a module also moves the README)."""
from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO

BLOCK = re.compile(r"```python\n(.*?)```", re.S)
IMPORT = re.compile(r"^\s*(from\s+calibdash[\w.]*\s+import\s+[^#\n]+|import\s+calibdash[\w.]*(\s+as\s+\w+)?)", re.M)


def readme_imports() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = []
    for block in BLOCK.findall(text):
        lines += [m.group(1).strip().rstrip("(\\").strip() for m in IMPORT.finditer(block)]
    return sorted(set(lines))


def test_the_readme_has_python_examples():
    assert len(readme_imports()) >= 10


@pytest.mark.parametrize("line", readme_imports())
def test_a_readme_import_names_what_exists(line):
    if line.startswith("import "):
        importlib.import_module(line.split()[1])
        return
    module, names = re.match(r"from\s+(\S+)\s+import\s+(.+)", line).groups()
    found = importlib.import_module(module)
    for name in (n.split(" as ")[0].strip() for n in names.split(",")):
        if name:
            assert hasattr(found, name) or importlib.util.find_spec(f"{module}.{name}"), f"{module} has no {name}"


#: Old module paths the README names on purpose, to say where they moved.
MOVED = {"calibdash.export", "calibdash.groups", "calibdash.multiclass"}


def test_every_dotted_calibdash_name_in_the_readme_exists():
    """`calibdash.a.b.name` in the README's text names a module, or a module's attribute, that exists."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    missing = set()
    for dotted in set(re.findall(r"`(calibdash(?:\.\w+)+)", text)) - MOVED:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        for attr in parts[i:]:
            if not hasattr(found, attr):
                missing.add(dotted)
                break
            found = getattr(found, attr)
    assert not missing, sorted(missing)
