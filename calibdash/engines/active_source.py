"""The dashboard's active large source without its widgets: the spec resolved, the keys of its cells, its LargeData.

The Data page's "Large data" source keeps a spec and the cells its jobs give, under keys; what lies between
the widgets and the jobs is here, free of Streamlit."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ..data.guard import DataRoot
from ..data.large_source import LargeData
from ..core.errors import DataError, SettingsError
from ..evaluation.scheme import Scheme
from .plan import (Plan, aggregate_keyed_plan, aggregate_plan, database_file, numeric_columns, plan_key,
                   read_schema, read_tables, resolve_plan, tables_key)

__all__ = ["LargeSource", "tables_step", "schema_step", "ROLES", "role_choices", "chosen_roles"]

#: The roles a large source's columns play, in the order they are chosen.
ROLES = ("score", "label", "split")
#: The split role's choice of no column.
NO_SPLIT = "(none)"


class ReadStep(NamedTuple):
    """A reading job before a source is aggregated: its key, what it does (for people), its work ``fn(job)``."""

    key: str
    what: str
    work: Callable


def tables_step(root: DataRoot, database: str) -> ReadStep:
    """Listing the tables of the DuckDB database file ``database`` (as typed) under ``root``."""
    db = database_file(root, database)
    return ReadStep(tables_key(db), "Listing the database's tables", lambda job: read_tables(job, root, db))


def schema_step(root: DataRoot, plan: Plan) -> ReadStep:
    """Reading a source's columns, their types and the roles guessed from a sample
    (:func:`calibdash.engines.plan.read_schema`)."""
    return ReadStep(plan_key(plan, step="schema"), f"Reading the columns of {plan.describe(root)}",
                    lambda job: read_schema(job, root, plan))


def role_choices(schema: dict, role: str, chosen: dict) -> tuple[list, int]:
    """The columns offered for ``role`` (one of :data:`ROLES`) once the roles before it are ``chosen``, and the
    index of the guessed one (else 0): a numeric score, a label other than the score, an optional split."""
    cols = list(schema["columns"])
    if role == "score":
        options = numeric_columns(cols, schema["types"]) or cols
    elif role == "label":
        options = [c for c in cols if c != chosen["score"]]
    else:
        options = [NO_SPLIT] + [c for c in cols if c not in (chosen["score"], chosen["label"])]
    guessed = schema["guess"].get(role)
    return options, options.index(guessed) if guessed in options else 0


def chosen_roles(chosen: dict) -> dict:
    """A spec's ``roles`` from the choices: no split column is ``""``."""
    split = chosen.get("split")
    return {"score": chosen["score"], "label": chosen["label"], "split": "" if split in (None, NO_SPLIT) else split}


@dataclass(frozen=True)
class LargeSource:
    """A large source's root, spec (``kind``, the texts typed, ``roles``) and resolved :class:`Plan`."""

    root: DataRoot
    spec: dict
    plan: Plan

    @classmethod
    def resolve(cls, root: DataRoot | None, spec: dict | None) -> "LargeSource":
        """The source of ``spec`` under ``root``; DataError when there is none or no root, else as
        :func:`calibdash.engines.plan.resolve_plan`."""
        if not spec:
            raise DataError("no large source has been aggregated yet: choose one on the Data page and press "
                            "Aggregate.")
        if root is None:
            raise DataError("large sources are off on this server (no data root is configured).")
        return cls(root, spec, resolve_plan(root, spec))

    @property
    def roles(self) -> dict:
        return self.spec["roles"]

    def key(self, scheme: Scheme | None = None) -> str:
        """The key of the cells of ``scheme``; without one, of the all-rows cells."""
        return plan_key(self.plan, self.roles, scheme)

    def describe(self) -> str:
        return self.plan.describe(self.root)

    def check(self, scheme: Scheme) -> None:
        """SettingsError when ``scheme`` does not work on this source (e.g. a hashed split of a query's rows
        without ORDER BY)."""
        self.plan.source(self.roles).check_keys(scheme)

    def first_scheme(self, scheme: Scheme) -> Scheme:
        """The scheme of the first aggregation, which also gives the all-rows cells: ``scheme`` when it works on
        this source, else all rows in sample (the Data page then says what fails)."""
        try:
            self.check(scheme)
        except SettingsError:
            return Scheme(kind="insample")
        return scheme

    def aggregate(self, job, scheme: Scheme, need_all: bool) -> dict:
        """An aggregation job's work (:func:`calibdash.engines.plan.aggregate_plan`)."""
        return aggregate_plan(job, self.root, self.plan, self.roles, scheme, need_all)

    def keyed_key(self, key, scheme: Scheme | None = None) -> str:
        """The key of the keyed cells of ``key`` (a :class:`calibdash.monitoring.keyed.Key`) under ``scheme``."""
        return plan_key(self.plan, self.roles, scheme, step=f"keyed {key!r}")

    def aggregate_keyed(self, job, key, scheme: Scheme | None = None):
        """A keyed aggregation job's work (:func:`calibdash.engines.plan.aggregate_keyed_plan`)."""
        return aggregate_keyed_plan(job, self.root, self.plan, self.roles, key, scheme)

    def kept(self, scheme: Scheme, result: dict) -> dict:
        """What to keep of an aggregation's ``result``, by key: the cells of ``scheme`` and, when it gave them,
        the all-rows cells."""
        out = {self.key(scheme): result["cells"]}
        if "all" in result:
            out[self.key()] = result["all"]
        return out

    def cells(self, scheme: Scheme, lookup: Callable[[str], Any], aggregate: Callable[[Scheme], None]):
        """The cells of ``scheme``: ``lookup(key)``, else ``aggregate(scheme)`` (which returns once they are kept,
        or does not return) and ``lookup`` again."""
        got = lookup(self.key(scheme))
        if got is None:
            aggregate(scheme)
            got = lookup(self.key(scheme))
        return got

    def large_data(self, got: dict, lookup: Callable[[str], Any],
                   aggregate: Callable[[Scheme], None]) -> LargeData:
        """The pages' :class:`LargeData` from the all-rows aggregation ``got``; the cells of a scheme through
        :meth:`cells` with ``lookup`` and ``aggregate``."""
        return LargeData.from_aggregate(self.describe(), self.roles, got, self.key(),
                                        aggregate=functools.partial(self.cells, lookup=lookup, aggregate=aggregate))
