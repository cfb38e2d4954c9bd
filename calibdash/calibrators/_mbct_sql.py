"""MBCT as SQL: the trees as nested ``CASE``s over the score and the feature columns, equal to ``predict`` bit for
bit."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.sql_forms import ClosedForm, SqlUnsupported, SqlWriter, literal
from ._mbct_tree import Tree

__all__ = []


def mbct_form(columns: Sequence[dict], trees: Sequence[Tree]) -> ClosedForm:
    """MBCT's map as a SQL formula, from how its columns are coded (``columns``: as its model file holds them) and its
    ``trees``: as ``predict``, per tree the row's node maps the previous output by its line, ``slope * f + intercept``
    (the intercept written only where a node of the tree has one), clipped to [0, 1]. Routing compares the raw values
    instead of computing codes: codes of ordered columns are ranges (the score's code is ``min(floor(s n), n - 1)``, so
    codes ``<= c`` are ``s * n < c + 1``, the same double product; a numeric column's code is ``searchsorted(edges, x,
    side="right")``, so codes ``<= c`` are ``x < edges[c]``), and runs of consecutive codes going the same way become
    one ``WHEN``; categorical codes are the values seen at fit time (``x IN (...)``). A value unseen at fit time, unseen
    in the node or beyond the routing table stays at the node; a missing value (NULL; NaN outside ANSI SQL) takes the
    column's missing code."""
    for col in columns:
        if col["kind"] == "categorical":
            kinds = {bool if isinstance(v, bool) else str if isinstance(v, str) else float
                     for v in col["categories"]}
            if len(kinds) > 1:
                raise SqlUnsupported(f"MBCT's feature column {col['name']!r} holds values of several types "
                                     f"({', '.join(sorted(k.__name__ for k in kinds))}), which one SQL "
                                     "comparison cannot match as pandas does.")
        elif col["kind"] not in ("score", "numeric"):
            raise SqlUnsupported(f"MBCT column kind {col['kind']!r} is unknown.")

    def node_sql(tree: Tree, scale, starts, node: int, w: SqlWriter) -> str:
        """The value ``scale`` (a slope or an intercept per node) of the node the row ends at."""
        stay = literal(scale[node])
        j = int(tree.feature[node])
        if j < 0:
            return stay
        col = columns[j]
        table = [int(c) for c in tree.table[starts[node]:starts[node] + int(tree.table_len[node])]]

        def target(code: int) -> str:
            child = table[code] if 0 <= code < len(table) else -1
            return stay if child < 0 else node_sql(tree, scale, starts, child, w)

        kind = col["kind"]
        x = w.score if kind == "score" else w.feature(col["name"])
        if x is None:                                   # an absent feature: code -1 on every row
            return stay
        arms = []
        if kind == "categorical":
            groups: dict[int, list[int]] = {}
            for code, child in enumerate(table[:len(col["categories"])]):
                if child >= 0:
                    groups.setdefault(child, []).append(code)
            if int(col["missing_code"]) >= 0:
                arms.append(f"WHEN {x} IS NULL THEN {target(int(col['missing_code']))}")
            arms += [f"WHEN {x} IN ({', '.join(_value_literal(col['categories'][c], w) for c in codes)}) "
                     f"THEN {node_sql(tree, scale, starts, child, w)}" for child, codes in groups.items()]
            return f"(CASE {' '.join(arms)} ELSE {stay} END)" if arms else stay
        if kind == "score":
            n = int(col["n_codes"])
            k, bound = n, (lambda c: f"{x} * {literal(float(n))} < {literal(float(c + 1))}")
        else:
            edges = col["edges"]
            k, bound = len(edges) + 1, (lambda c: f"{x} < {literal(edges[c])}")
            arms.append(f"WHEN {x} IS NULL OR {w.isnan(x)} THEN {target(int(col['missing_code']))}")
        goes = [table[c] if c < len(table) else -1 for c in range(k)]
        runs = [c for c in range(k - 1) if goes[c] != goes[c + 1]]      # last code of each run but the last
        arms += [f"WHEN {bound(c)} THEN {target(c)}" for c in runs]
        return f"(CASE {' '.join(arms)} ELSE {target(k - 1)} END)"

    def build(w: SqlWriter) -> str:
        f = w.score
        for tree in trees:
            line = f"{node_sql(tree, tree.slope, tree.table_start, 0, w)} * {f}"
            if np.any(tree.intercept != 0):
                line += f" + {node_sql(tree, tree.intercept, tree.table_start, 0, w)}"
            f = w.clip(line)
        return f
    return ClosedForm(build)


def _value_literal(v, w: SqlWriter) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return w.string(v)
    if isinstance(v, int):
        return str(v)
    return literal(v)
