"""The JSON Schemas (draft 2020-12) of the command line's ``--json`` output: one per command.

``evaluate``, ``groups``, ``drift`` and ``benchmark`` each print one record whose shape does not depend on the
engine nor on the file being binary or K-class. The schemas are files of this package, ``<command>.json``, with the
definitions they share in ``common.json`` (``urn:calibdash:schema:common#/$defs/...``), so that a script can check
what it reads with any JSON Schema validator; :func:`validate` does it with ``jsonschema`` (not a dependency).
"""
from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

__all__ = []

#: The commands whose ``--json`` output has a schema here.
COMMANDS = ("evaluate", "groups", "drift", "benchmark")


@cache
def _text(name: str) -> str:
    return files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")


def load(name: str) -> dict:
    """The schema ``name`` (a command of :data:`COMMANDS`, or ``"common"``) as a dict (a fresh copy)."""
    if name not in (*COMMANDS, "common"):
        raise ValueError(f"no schema {name!r}; the schemas are {', '.join((*COMMANDS, 'common'))}.")
    return json.loads(_text(name))


def validator(command: str):
    """A ``jsonschema`` validator of ``command``'s output, the shared definitions registered and date formats
    checked. Needs the ``jsonschema`` package."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = [load(name) for name in ("common", *COMMANDS)]
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
    return Draft202012Validator(load(command), registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


def validate(doc: dict, command: str) -> None:
    """Check ``doc`` (the parsed ``--json`` output of ``command``) against its schema; raises
    ``jsonschema.ValidationError`` at the first place ``doc`` departs from it."""
    validator(command).validate(doc)
