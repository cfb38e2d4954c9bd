"""Tables the Runs page and the command line read from run records: the list, a saved series over time, and
two evaluations side by side."""
from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from .catalog import RunRecord

__all__ = ["runs_table", "history_frame", "history_measures", "measures_side_by_side", "results_table"]


def _when(t: float) -> pd.Timestamp:
    return pd.Timestamp(datetime.fromtimestamp(t, timezone.utc))


def _headline_text(r: RunRecord) -> str:
    first = next(iter(r.headline.items()), None)
    if first is None:
        return ""
    key, values = first
    return f"{key}: " + ", ".join(f"{k} {v:.4g}" for k, v in values.items() if isinstance(v, (int, float)))


def runs_table(records: list[RunRecord]) -> pd.DataFrame:
    """One row per run, newest first: what the Runs page lists."""
    return pd.DataFrame({
        "name": [r.name for r in records], "kind": [r.kind for r in records],
        "data set": [r.dataset for r in records], "owner": [r.owner or "(server)" for r in records],
        "saved": [_when(r.saved_at) for r in records],
        "tags": [", ".join(f"{k}={v}" for k, v in r.tags.items()) for r in records],
        "headline": [_headline_text(r) for r in records],
        "shared": [r.visibility if r.visibility == "all" else ", ".join(r.shared_with) or "private" for r in records],
        "id": [r.id for r in records]})


def history_measures(records: list[RunRecord]) -> list[str]:
    """The measures a series of runs holds, in first-seen order."""
    seen = {}
    for r in records:
        for values in r.headline.values():
            seen.update(dict.fromkeys(values))
    return list(seen)


def history_frame(records: list[RunRecord], measure: str) -> pd.DataFrame:
    """``saved`` (time), ``part`` (a group, a period or a method) and ``value`` of ``measure`` in each run of a
    series, oldest first."""
    rows = [(_when(r.saved_at), part, values[measure]) for r in records for part, values in r.headline.items()
            if isinstance(values.get(measure), (int, float))]
    frame = pd.DataFrame(rows, columns=["saved", "part", "value"])
    return frame.sort_values(["saved", "part"], kind="stable").reset_index(drop=True)


def measures_side_by_side(a: dict, b: dict) -> pd.DataFrame:
    """Two ``evaluate`` results' measures per method present in both: ``A``, ``B`` and ``B - A``."""
    rows = []
    for method, values in (a.get("metrics") or {}).items():
        other = (b.get("metrics") or {}).get(method)
        if not isinstance(other, dict):
            continue
        for name, va in values.items():
            vb = other.get(name)
            if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
                rows.append((method, name, float(va), float(vb), float(vb) - float(va)))
    return pd.DataFrame(rows, columns=["method", "measure", "A", "B", "B - A"])


def results_table(kind: str, results: dict) -> pd.DataFrame:
    """A run's numbers as its command printed them: for ``evaluate`` one row per method and a column per measure;
    for ``groups`` and ``drift`` one row per group or period (the whole data first) with rows, positives and each
    measure's value, low and high."""
    if kind == "evaluate":
        return pd.DataFrame.from_dict(results.get("metrics") or {}, orient="index").rename_axis("method")
    parts = [("(all rows)", results["overall"])] if isinstance(results.get("overall"), dict) else []
    parts += [(str(p.get("key")), p) for p in results.get("groups") or results.get("periods") or []]
    rows = {}
    for key, part in parts:
        row = {k: v for k, v in part.items() if k in ("rows", "positives")}
        for name, v in part.items():
            if isinstance(v, dict) and "value" in v:
                row.update({name: v["value"], f"{name} low": v.get("low"), f"{name} high": v.get("high")})
            elif name not in row and isinstance(v, (int, float)) and not isinstance(v, bool):
                row[name] = v
        rows[key] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("group" if kind == "groups" else "period")
