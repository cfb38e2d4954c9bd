"""The ``groups`` and ``drift`` commands: calibration by segment and over time, where the rows live, for
scheduled checks, measured on keyed score cells as the Groups & time page measures them."""
from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd

from .. import engines
from ..monitoring.drift import FRESH_COL, RAW_COL, STALE_COL
from ..core.errors import DataError, SettingsError
from ..monitoring.group_metrics import STATS
from ..monitoring.groups import ALL_ROWS
from ..monitoring.keyed import Key
from ..monitoring.keyed.per_key import by_key, fix_keys, over_periods, staleness_of
from ..evaluation.methods import parse_params
from ..evaluation.scheme import Scheme
from .file_problem import scheme_of
from .engine_jobs import aggregate_keyed, engine_source
from .runs import save_run
from .output import finite_or_none, four_places, print_json, sentence

__all__ = ["PERIOD_WORDS", "groups_document", "drift_document"]

#: ``--period`` words and the key's period (``"auto"``: chosen as the page chooses).
PERIOD_WORDS = {"day": "D", "week": "W", "month": "M", "quarter": "Q", "auto": "auto"}
#: Staleness columns as JSON names them.
_STALE_JSON = {RAW_COL: "uncalibrated", STALE_COL: "fitted_on_first", FRESH_COL: "refitted_before"}


def _keyed(args, key: Key, scheme: Scheme | None):
    """The source's keyed cells, aggregated as a job with its progress on stderr; (cells, source, engine), the
    engine ``--engine``, else DuckDB for a table or query, else memory for one file under 200 MB, else DuckDB."""
    if args.n_bins < 2:
        raise SettingsError(f"--n-bins must be at least 2, got {args.n_bins}.")
    if args.boot < 0:
        raise SettingsError(f"--boot must be 0 (no intervals) or more, got {args.boot}.")
    src = engine_source(args, split=args.split, key={"--by" if key.kind == "group" else "--time": key.column})
    engine = args.engine or engines.default_engine(None if args.table or args.query else src)
    return aggregate_keyed(src, key, scheme, engine, args.memory_limit), src, engine


def _value(row, name: str) -> dict:
    return {"value": finite_or_none(row[name]), "low": finite_or_none(row[f"{name}_low"]),
            "high": finite_or_none(row[f"{name}_high"])}


def records(table: pd.DataFrame) -> list[dict]:
    """One JSON record per row of a group or period table: ``key``, (``start``), ``rows``, ``positives``, each of
    :data:`STATS` as ``{"value", "low", "high"}`` (null where not defined), ``note``."""
    return [{"key": str(key), **({"start": f"{pd.Timestamp(row['start']):%Y-%m-%d}"} if "start" in row.index else {}),
             "rows": int(row["rows"]), "positives": int(round(float(row["positives"]))),
             **{name: _value(row, name) for name in STATS}, "note": row["note"]} for key, row in table.iterrows()]


def parse_thresholds(items) -> list[tuple[str, float]]:
    """``--fail-above NAME=VALUE`` items as (measure, value), the measure a name of :data:`STATS` in any case
    (SettingsError: an item without ``=``, an unknown measure, or a value that is not a number)."""
    by_lower = {name.lower(): name for name in STATS}
    out = []
    for item in items or ():
        name, eq, value = item.partition("=")
        if not eq:
            raise SettingsError(f"--fail-above takes MEASURE=VALUE (such as ECE=0.05), got {item!r}.")
        measure = by_lower.get(name.strip().lower())
        if measure is None:
            raise SettingsError(f"--fail-above: unknown measure {name.strip()!r}; the measures are "
                                f"{', '.join(STATS)}.")
        try:
            limit = float(value)
        except ValueError:
            raise SettingsError(f"--fail-above {measure}: {value.strip()!r} is not a number.") from None
        if not math.isfinite(limit):
            raise SettingsError(f"--fail-above {measure}: the threshold must be a finite number.")
        out.append((measure, limit))
    return out


def past_thresholds(table: pd.DataFrame, thresholds) -> list[dict]:
    """Per threshold passed: ``{"measure", "above", "keys": [...], "values": [...]}`` (keys in table order;
    a value not defined, NaN, is never past)."""
    alerts = []
    for measure, limit in thresholds:
        v = table[measure].astype(float)
        past = v[v > limit]
        if len(past):
            alerts.append({"measure": measure, "above": limit, "keys": [str(k) for k in past.index],
                           "values": [float(x) for x in past]})
    return alerts


def _table_text(table: pd.DataFrame, index_name: str) -> str:
    """The measures as a text table: rows, positives and each measure as ``value [low, high]``."""
    def cell(row, name):
        v, lo, hi = row[name], row[f"{name}_low"], row[f"{name}_high"]
        if not np.isfinite(v):
            return "n/a"
        return four_places(v) + ("" if not np.isfinite(lo) else f" [{four_places(lo)}, {four_places(hi)}]")

    shown = pd.DataFrame({"rows": [f"{int(r):,}" for r in table["rows"]],
                          "positives": [f"{int(round(float(p))):,}" for p in table["positives"]],
                          **{name: [cell(row, name) for _, row in table.iterrows()] for name in STATS}},
                         index=table.index)
    shown.index.name = index_name
    return shown.to_string()


def _finish(args, out: dict, text: list[str], table: pd.DataFrame, what: str) -> int:
    """Print the JSON or the text, then the alerts of ``--fail-above`` on stderr; the exit status."""
    alerts = past_thresholds(table, args.thresholds)
    out["alerts"] = alerts
    save_run(args, "groups" if what == "groups" else "drift", out, out["source"])
    if args.json:
        print_json(out)
    else:
        print("\n".join(text))
    for a in alerts:                # one line per threshold passed, naming the groups or periods past it, worst first
        pairs = sorted(zip(a["keys"], a["values"]), key=lambda kv: -kv[1])
        named = ", ".join(f"{k} ({v:.4f})" for k, v in pairs)
        print(f"{a['measure']} above {a['above']:g} in {len(pairs)} of {len(table)} {what}: {named}", file=sys.stderr)
    return 1 if alerts else 0


def _text(src, kc, engine: str, rep, notes, what: str, how: str) -> list[str]:
    """The text output's lines up to the measures table and its intervals line."""
    intervals = ("no intervals (--boot 0)" if rep.n_boot <= 0 else f"[low, high]: {round(100 * rep.level)}% "
                 f"Poisson-bootstrap intervals ({rep.n_boot} resamples of each {what}'s rows)")
    return [f"{src.describe()}: score {src.score!r}, label {src.label!r}; {how}; {kc.cells.describe()} "
            f"(aggregated by {engine})", *[f"  · {sentence(n)}" for n in notes], _table_text(rep.table, what),
            f"ECE: {rep.binning}; {intervals}."]


def _json_head(source: str, score: str, label: str, engine: str, kc, rep, **where) -> dict:
    return {"source": source, "score": score, "label": label, **where, "engine": engine,
            "cells": kc.cells.describe(), "binning": rep.binning, "level": rep.level, "resamples": rep.n_boot}


def groups_document(source: str, score: str, label: str, by: str, engine: str, kc, rep) -> dict:
    """``groups --json`` (before ``fix`` and ``alerts``) of the by-group report ``rep`` of the keyed cells ``kc``:
    what the command prints and what the Groups & time page saves as a run."""
    return {**_json_head(source, score, label, engine, kc, rep, by=by), "groups": records(rep.table),
            "overall": {"rows": int(rep.overall["rows"]), "positives": int(round(rep.overall["positives"])),
                        **{name: finite_or_none(rep.overall[name]) for name in STATS}}, "notes": list(rep.notes)}


def drift_document(source: str, score: str, label: str, time: str, engine: str, kc, rep, stale=None,
                   notes=None) -> dict:
    """``drift --json`` (before ``alerts``) of the per-period report ``rep`` and the staleness ``stale``; ``notes``
    (default the report's): what the command prints and what the Groups & time page saves as a run."""
    return {**_json_head(source, score, label, engine, kc, rep, time=time, period=kc.spec.freq),
            "rows_left_out": rep.periods.n_left_out, "periods": records(rep.table),
            "staleness": None if stale is None else _staleness_json(stale),
            "notes": list(rep.notes) if notes is None else notes}


def cmd_groups(args) -> int:
    """Per-group calibration of a source (and, with ``--fix``, the calibrator that fixes the groups)."""
    args.thresholds = parse_thresholds(args.fail_above)
    scheme = scheme_of(args) if args.fix else None
    key = Key(args.by, "group", n_quantiles=args.quantiles, max_groups=args.max_groups, min_rows=args.min_rows)
    kc, src, engine = _keyed(args, key, scheme)
    rep = by_key(kc, n_bins=args.n_bins, strategy=args.strategy, n_boot=args.boot, seed=args.seed)
    out = groups_document(src.describe(), src.score, src.label, args.by, engine, kc, rep)
    text = _text(src, kc, engine, rep, out["notes"], "group", f"by {args.by!r}")
    if args.fix:
        params = parse_params(args.param)
        fix = fix_keys(kc, args.fix, scheme, params=params.get(args.fix), mbct_params=params.get("mbct"),
                       n_bins=args.n_bins, strategy=args.strategy, n_boot=0, seed=args.seed)
        how = scheme.describe(on_cells=True)
        out["fix"] = {"method": args.fix, "scheme": how, "mbct_params": fix.mbct_params,
                      "ECE": [{"key": str(g), **{m: finite_or_none(v) for m, v in row.items()}}
                              for g, row in fix.table.iterrows()]}
        text += ["", f"Held-out ECE per group ({how}): {args.fix} on the score alone beside MBCT with "
                     f"{args.by!r} as its feature; '{ALL_ROWS}': every judged row.",
                 fix.table.to_string(float_format=four_places)]
    return _finish(args, out, text, rep.table, "groups")


def _staleness_json(st) -> dict:
    t = st.table
    return {"method": st.method,
            "periods": [{"key": str(p), "age": int(row["age"]), "rows": int(round(float(row["rows"]))),
                         **{_STALE_JSON[c]: finite_or_none(row[c]) for c in _STALE_JSON}} for p, row in t.iterrows()],
            "by_age": [{"age": int(a), "ECE": finite_or_none(row["ECE"]), "uncalibrated": finite_or_none(row["raw"]),
                        "pairs": int(row["pairs"])} for a, row in st.by_age.iterrows()],
            "matrix": {"fitted_on": [str(x) for x in st.matrix.index], "judged_on": [str(x) for x in st.matrix.columns],
                       "ECE": [[finite_or_none(v) for v in row] for row in st.matrix.to_numpy()]},
            "notes": [n for n in st.notes if n not in st.periods.notes]}


def cmd_drift(args) -> int:
    """Per-period calibration of a source and the staleness of a calibrator fitted on one period."""
    args.thresholds = parse_thresholds(args.fail_above)
    key = Key(args.time, "period", PERIOD_WORDS[args.period])
    kc, src, engine = _keyed(args, key, None)
    rep = over_periods(kc, n_bins=args.n_bins, strategy=args.strategy, n_boot=args.boot, seed=args.seed)
    notes = list(rep.notes)
    stale = None
    if args.method.lower() != "none":
        try:
            stale = staleness_of(kc, args.method, parse_params(args.param).get(args.method), n_bins=args.n_bins,
                                 strategy=args.strategy)
        except DataError as exc:          # fewer than two periods, or none to fit on: the per-period check stands
            notes.append(f"No staleness: {exc}")
    out = drift_document(src.describe(), src.score, src.label, args.time, engine, kc, rep, stale, notes)
    text = _text(src, kc, engine, rep, notes, "period", f"over {args.time!r}")
    if stale is not None:
        t = stale.table[[RAW_COL, STALE_COL, FRESH_COL]]
        text += ["", f"Staleness of {stale.method}: held-out ECE of each later period (age: periods since the "
                     "first)", pd.concat([stale.table[["age"]], t], axis=1).to_string(float_format=four_places)]
        text += [f"  · {sentence(n)}" for n in _staleness_json(stale)["notes"]]
    return _finish(args, out, text, rep.table, "periods")
