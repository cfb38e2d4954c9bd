"""Command line: ``python -m calibdash {evaluate,report,methods,fit,apply,export-sql,benchmark} ...``.

``evaluate`` prints the same metrics table as the dashboard's Compare page:
each method is fitted on the fitting rows and judged on held-out rows.
``report`` writes the same comparison as a one-page HTML report
(:mod:`calibdash.report`: verdict, metrics with intervals, interactive
figures, more measures, the methods' papers), which opens offline.
``methods`` lists the calibrators. ``fit`` saves one fitted calibrator as
JSON (:mod:`calibdash.export`); ``apply`` adds its calibrated scores to a
file's rows (in memory, or with ``--engine duckdb|spark`` where the files lie,
:mod:`calibdash.engines.apply`); ``export-sql`` prints it as SQL
(:mod:`calibdash.sql`). ``benchmark`` compares calibrators over several data sets, as
the dashboard's Benchmark page does (:mod:`calibdash.benchmark`).

This module is the only one that parses arguments: :func:`build_parser`
holds every option, each ``cmd_*`` function turns parsed arguments into
calls of the library, and :func:`main` reports calibdash's errors as
messages with exit status 2. Method lists and ``--param`` go through
:mod:`calibdash.methods`; the scheme's defaults are
:class:`calibdash.evaluation.Scheme`'s.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .. import benchmark, bootstrap as cboot, calibrators, diagrams, export, measures, report
from ..data import guess_roles, load_scores, margins, read_table
from ..errors import CalibdashError, DataError, EnvironmentProblem, ProgrammingError, SettingsError
from ..evaluation import CELLS_CHOICES, CELLS_MIN_ROWS, KINDS, Scheme, evaluate_score_set
from ..methods import DEFAULT_METHODS, parse_params, resolve, split_names

__all__ = ["main", "build_parser", "cmd_evaluate", "cmd_report", "cmd_methods", "cmd_fit", "cmd_apply",
           "cmd_export_sql", "cmd_benchmark", "EVALUATE_METHODS"]

#: Methods ``evaluate`` and ``report`` fit unless told otherwise (:data:`calibdash.methods.DEFAULT_METHODS`).
EVALUATE_METHODS = DEFAULT_METHODS
_SCHEME = Scheme()
#: Paired resamples of ``evaluate --measures``' intervals unless ``--boot`` says otherwise (the Compare page's).
MEASURES_BOOT = 100


def _float(v: float) -> str:
    return f"{v:.4f}"


def _write(text: str, out: str | None) -> str:
    """Write ``text`` to the file ``out``, or to stdout; returns where it went.

    Raises
    ------
    EnvironmentProblem
        ``out`` cannot be written.
    """
    if not out:
        sys.stdout.write(text)
        return "stdout"
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {out}: {exc.strerror or exc}.") from None
    return out


# -- evaluate ---------------------------------------------------------------------------------------------
def _scheme(args) -> Scheme:
    return Scheme(kind=args.scheme, test_size=args.test_size, seed=args.seed, n_folds=args.folds)


def _check_split(ss, args) -> None:
    if args.scheme == "column" and not ss.split_column:
        raise DataError("--scheme column needs a split column in the file.")


def _default_engine(path: str) -> str | None:
    """None (read the file into pandas) for one file under 200 MB, "duckdb" for a larger file or a glob
    (:func:`calibdash.engines.default_engine`); None for a path that names no file, so loading says why."""
    from .. import engines

    if any(c in path for c in "*?["):
        return "duckdb"
    if not Path(path).is_file():
        return None
    return None if engines.default_engine(engines.Source(path=path)) == "memory" else "duckdb"


def _engine(args) -> str | None:
    """The engine that reads ``args.file`` for evaluate and fit: None for the in-memory path that reads one
    file into pandas (``--engine memory``, or by default a single file under 200 MB), else duckdb or spark."""
    if args.engine == "memory":
        return None
    if args.engine:
        return args.engine
    if getattr(args, "table", None) or getattr(args, "query", None):
        return "duckdb"
    return _default_engine(args.file)


def _engine_source(args, split: str | None = None):
    from .. import engines

    src = engines.source_for(args.file, score=args.score, label=args.label, split=split,
                             database=getattr(args, "database", None), table=getattr(args, "table", None),
                             query=getattr(args, "query", None), order_by=getattr(args, "order_by", None))
    if getattr(args, "positive", None) is not None:
        src = dataclasses.replace(src, positive=args.positive)
    return src


class _ProgressLine:
    """A job's stage and elapsed seconds on stderr: rewritten in place with ``\\r`` on a terminal
    (:meth:`calibdash.jobs.Status.line`), else one line per stage; nothing goes to stdout."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.printed, self.width, self.queued = 0, 0, False

    def __call__(self, status) -> None:
        if self.tty:
            text = status.line()[:150]
            self.stream.write("\r" + text.ljust(self.width) + ("\n" if status.finished else ""))
            self.width = 0 if status.finished else len(text)
        else:
            if status.queued and not self.queued:
                self.stream.write(status.line() + "\n")
                self.queued = True
            for stage, at in status.stages[self.printed:]:
                self.stream.write(f"{status.what}: {stage} ({at:.0f} s)\n")
            self.printed = max(self.printed, len(status.stages))
        self.stream.flush()

    def close(self) -> None:
        """End a line left open on a terminal (the job stopped before its last status was shown)."""
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def _in_job(what: str, work):
    """``work(job)`` run as a job of :mod:`calibdash.jobs`: its stage and elapsed time on stderr while it runs,
    and Ctrl-C cancels it (interrupting the DuckDB connection it watches); returns its result."""
    import uuid

    from .. import jobs

    reg = jobs.JobRegistry(max_jobs=1, timeout_s=float("inf"), lease_s=None)
    line = _ProgressLine()
    try:
        return reg.run(uuid.uuid4().hex, work, owner="cli", what=what, on_status=line)
    finally:
        line.close()


def _aggregate(source, scheme, engine: str, memory_limit: str):
    """:func:`calibdash.engines.aggregate` as a job (:func:`_in_job`; :func:`calibdash.engines.plan.aggregate_job`)."""
    from ..engines.plan import aggregate_job

    return _in_job(f"Aggregating {source.describe()} with {engine}",
                   lambda job: aggregate_job(job, source, scheme, engine=engine, features=[], memory_limit=memory_limit))


def _number(v):
    """A float for JSON, None where it is NaN or infinite (JSON has no NaN)."""
    v = float(v)
    return v if math.isfinite(v) else None


def _jsonable(v):
    """A label value as JSON holds it: a Python scalar (``1.0`` stays ``1.0``), else its text."""
    v = v.item() if hasattr(v, "item") else v
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def _sentence(fragment: str) -> str:
    return fragment[:1].upper() + fragment[1:] + ("" if fragment.endswith(".") else ".")


def _metrics_json(ev) -> dict:
    return {k: {m: _number(v) for m, v in row.items()} for k, row in ev.metrics.iterrows()}


def _validation_json(ss) -> dict:
    """What loading found (:class:`calibdash.data.ValidationReport`): rows read, used, dropped and why, the
    label's classes, the mapped score columns, and the report's messages."""
    rep = ss.report
    return {"rows_read": rep.n_read, "rows_used": rep.n_used, "rows_dropped": int(sum(rep.dropped.values())),
            "dropped": {reason: int(k) for reason, k in rep.dropped.items()},
            "dropped_examples": {reason: list(ex) for reason, ex in rep.dropped_examples.items()},
            "label": {"column": ss.label_column, "positive": _jsonable(ss.positive_label),
                      "negative": _jsonable(ss.negative_label)},
            "class_counts": {k: int(v) for k, v in rep.class_counts.items()},
            "mapped": {col: {"from": float(lo), "to": float(hi)} for col, (lo, hi) in rep.mapped.items()},
            "messages": list(rep.messages)}


def _measure_names(arg: str | None) -> tuple[str, ...] | None:
    """``--measures``: None when not asked, every measure for ``all``, else the listed ones (any case)."""
    if arg is None:
        return None
    if arg.strip().lower() in ("", "all"):
        return measures.MEASURE_NAMES
    by_lower = {m.lower(): m for m in measures.MEASURE_NAMES}
    names = [by_lower.get(x.strip().lower(), x.strip()) for x in arg.split(",") if x.strip()]
    return measures.check_names(names)


def _measures(ev, names, n_boot: int) -> cboot.BootstrapResult:
    """The further measures of ``ev``'s judged rows (or cells: weighted rows) with paired Poisson-bootstrap
    intervals, as the Compare page's "More measures" (:func:`calibdash.bootstrap.bootstrap_measures`)."""
    if int(n_boot) < 1:
        raise SettingsError(f"--boot must be at least 1, got {n_boot}.")
    n = ev.weights if ev.weights is not None else np.ones(len(ev.labels))
    with warnings.catch_warnings():          # a resample where a measure is undefined is NaN, and left out
        warnings.simplefilter("ignore", RuntimeWarning)
        return cboot.bootstrap_measures(ev.predictions, n, n * ev.labels, names, n_boot=int(n_boot))


def _measures_json(boot: cboot.BootstrapResult) -> dict:
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))
    return {"level": boot.level, "resamples": boot.n_boot, "note": boot.note,
            "values": {m: {name: {stat: _number(t.loc[m, (name, stat)]) for stat in ("value", "low", "high")}
                           for name in names} for m in t.index}}


def _print_measures(boot: cboot.BootstrapResult) -> None:
    """One row per measure, one column per method: ``value [low, high]``."""
    t = boot.table
    names = list(dict.fromkeys(t.columns.get_level_values(0)))

    def cell(m, name):
        v, lo, hi = (t.loc[m, (name, s)] for s in ("value", "low", "high"))
        return "n/a" if not np.isfinite(v) else f"{v:.4f} [{lo:.4f}, {hi:.4f}]"

    frame = pd.DataFrame({"best": [measures.best_phrase(name).removesuffix(" is better") for name in names],
                          **{m: [cell(m, name) for name in names] for m in t.index}}, index=names)
    frame.index.name = "measure"
    print(f"\nMore measures: value [{round(100 * boot.level)}% paired interval]")
    print(frame.to_string())
    print(boot.note)


def _evaluate_engine(args, cals, scheme: Scheme, engine: str) -> int:
    """``evaluate`` where the rows live: the engine aggregates them into score cells, the fits run on those."""
    from ..evaluation import evaluate_cells

    if any(c.uses_features for c in cals.values()):
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    names = _measure_names(args.measures)
    src = _engine_source(args, split=args.split)
    if scheme.kind == "column" and not src.split:
        raise DataError("--scheme column needs a split column: name it with --split.")
    cells = _aggregate(src, scheme, engine, args.memory_limit)
    ev = evaluate_cells(cells, cals, scheme)
    scheme_text = scheme.describe(on_cells=True)
    boot = _measures(ev, names, args.boot) if names else None
    if args.json:
        n_pos = int(cells.n_pos.sum())
        out = {"file": src.describe(), "score": src.score, "engine": engine, "rows_judged": ev.n_judged,
               "scheme": scheme_text, "cells": cells.describe(), "notes": list(ev.notes), "binning": ev.binning,
               "validation": {"rows_read": cells.n_rows, "rows_used": cells.n_rows, "rows_dropped": 0, "dropped": {},
                              "label": {"column": src.label, "positive": _jsonable(src.positive)},
                              "class_counts": {"positive": n_pos, "negative": cells.n_rows - n_pos},
                              "messages": [("Rows where they live are checked, not dropped: a missing score or "
                                            "label is refused.")]},
               "metrics": _metrics_json(ev)}
        if boot is not None:
            out["measures"] = _measures_json(boot)
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    print(f"{src.describe()}: score {src.score!r}, label {src.label!r}; {scheme_text}; {ev.n_judged:,} rows judged "
          f"(aggregated by {engine})")
    for msg in [cells.describe(), *ev.notes]:
        print(f"  · {_sentence(msg)}")
    print(ev.metrics.to_string(float_format=_float))
    print(f"ECE and MCE: {ev.binning}.")
    if boot is not None:
        _print_measures(boot)
    return 0


def cmd_evaluate(args) -> int:
    """Fit the chosen calibrators and print their held-out metrics (a table, or JSON); with ``--measures`` the
    further measures with paired intervals too."""
    cals = resolve(args.methods, parse_params(args.param))
    scheme = _scheme(args)
    engine = _engine(args)
    if engine:
        return _evaluate_engine(args, cals, scheme, engine)
    names = _measure_names(args.measures)
    ss = load_scores(args.file, score=args.score, label=args.label, positive=args.positive)
    _check_split(ss, args)
    ev = evaluate_score_set(ss, cals, scheme, cells=args.cells)
    if ev.weights is not None:
        judged, scheme_text = ev.n_judged, scheme.describe(on_cells=True)
        how = ev.note.removesuffix("; ".join(["", *ev.notes])) if ev.notes else ev.note
    else:
        judged, how, scheme_text = int(ev.rows.size), None, scheme.describe()
    boot = _measures(ev, names, args.boot) if names else None
    if args.json:
        out = {"file": ss.name, "score": ss.score, "rows_judged": judged, "scheme": scheme_text,
               "cells": how, "notes": list(ev.notes), "binning": ev.binning, "validation": _validation_json(ss),
               "metrics": _metrics_json(ev)}
        if boot is not None:
            out["measures"] = _measures_json(boot)
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    print(f"{ss.name}: score {ss.score!r}, label {ss.label_column!r}; {scheme_text}; {judged:,} rows judged")
    for msg in ss.report.messages + ([how] if how else []) + list(ev.notes):
        print(f"  · {_sentence(msg)}")
    print(ev.metrics.to_string(float_format=_float))
    print(f"ECE and MCE: {ev.binning}.")
    if boot is not None:
        _print_measures(boot)
    return 0


# -- report -----------------------------------------------------------------------------------------------
def cmd_report(args) -> int:
    """Write the one-page HTML report of the held-out comparison ``evaluate`` prints (:mod:`calibdash.report`)."""
    ss = load_scores(args.file, score=args.score, label=args.label, positive=args.positive)
    _check_split(ss, args)
    text = report.report_for_score_set(ss, args.methods, _scheme(args), params=parse_params(args.param),
                                       cells=args.cells, title=args.title, diagram=args.diagram,
                                       include_plotlyjs="cdn" if args.plotlyjs == "cdn" else True)
    where = _write(text, None if args.out == "-" else args.out)
    if where != "stdout":
        print(f"Wrote the report of {ss.name} to {where} ({len(text.encode()) / 1e6:.1f} MB"
              + ("; its charts load plotly.js from the CDN" if args.plotlyjs == "cdn" else "; it opens offline")
              + ").", file=sys.stderr)
    return 0


# -- methods ----------------------------------------------------------------------------------------------
def cmd_methods(args) -> int:
    """List the registered calibrators with their papers and hyperparameters."""
    for name, cls in calibrators.classes().items():
        hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
        print(f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}")
    return 0


# -- fit --------------------------------------------------------------------------------------------------
def cmd_fit(args) -> int:
    """Fit one calibrator on a file (or the rows of one split value) and save it as JSON."""
    names = split_names(args.method)
    if len(names) != 1:
        raise SettingsError(f"--method takes one calibrator, got {args.method!r}.")
    method = names[0]
    params = parse_params(args.param)
    for key in params:
        if key != method:
            raise SettingsError(f"--param {key}.… is a hyperparameter of {key!r}, but --method is {method!r}.")
    cal = resolve(method, params)[method]
    engine = _engine(args)
    if engine:
        return _fit_engine(args, cal, method, engine)
    ss = load_scores(args.file, score=args.score, label=args.label, positive=args.positive)
    rows = np.arange(ss.n_rows)
    if args.split_value is not None:
        if ss.split is None:
            raise DataError(f"--split-value needs a split column in {ss.name}; none was found.")
        rows = np.flatnonzero(ss.split == args.split_value)
        if rows.size == 0:
            raise DataError(f"no row of {ss.name} has {args.split_value!r} in split column {ss.split_column!r} "
                            f"(values: {', '.join(sorted(set(ss.split)))}).")
    feats = ss.features.iloc[rows].reset_index(drop=True) if cal.uses_features and ss.features is not None else None
    cal.fit(ss.scores[rows], ss.labels[rows], feats)
    text = export.dumps(cal, fitted_on=export.provenance(ss, cal))
    where = _write(text, args.out)
    print(f"Fitted {method} on {rows.size:,} rows of {ss.name} (score {ss.score!r}); wrote {where} "
          f"({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


def _fit_engine(args, cal, method: str, engine: str) -> int:
    """``fit`` where the rows live: fitted on the score cells of every row, or of the rows whose split column
    holds ``--split-value``."""
    if cal.uses_features:
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    src = _engine_source(args, split=args.split)
    scheme = None
    if args.split_value is not None:
        if not src.split:
            raise DataError(f"--split-value needs a split column in {src.describe()}: name it with --split.")
        scheme = Scheme(kind="column", train_value=args.split_value)
    c = _aggregate(src, scheme, engine, args.memory_limit)
    if scheme is not None:
        c = c.select(c.part == 0)
    s, y, w = c.weighted_rows()
    cal.fit(s, y, sample_weight=w)
    # transform None: scores are mapped iff one lies outside [0, 1], at fit and at apply alike
    fitted_on = {"file": src.describe(), "score": src.score, "score_transform": src.transform_name,
                 "features": [], "engine": engine}
    text = export.dumps(cal, fitted_on=fitted_on)
    where = _write(text, args.out)
    print(f"Fitted {method} on {int(c.n.sum()):,} rows of {src.describe()} ({c.describe()}; aggregated by "
          f"{engine}); wrote {where} ({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


# -- apply ------------------------------------------------------------------------------------------------
def _apply_scores(df: pd.DataFrame, score: str, transform: str | None) -> tuple[np.ndarray, str | None]:
    """Scores in [0, 1] (NaN where missing) mapped as the model's scores were; and a note when mapped."""
    values = pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    probs, mapped = margins.to_probabilities(values, transform=transform, column=score)
    note = (f"score column {score!r} mapped by the logistic function, as the model's training scores were"
            if mapped else None)
    return probs, note


def _apply_score_column(df: pd.DataFrame, info, asked: str | None, fitted_on: dict) -> str:
    """The score column to apply the model to: asked for, else the model's, else the first guessed."""
    score = asked
    if score is None and fitted_on.get("score") in df.columns:
        score = fitted_on["score"]
    if score is None:
        guessed = guess_roles(df).scores
        if not guessed:
            raise DataError(f"no numeric column in {info.name} to use as a score; name one with --score.")
        score = guessed[0]
    if score not in df.columns:
        raise DataError(f"score column {score!r} not found in {info.name}; the columns are: "
                        f"{', '.join(map(repr, df.columns))}.")
    return score


def cmd_apply(args) -> int:
    """Add a saved calibrator's calibrated scores to every row of a file (rows without a score stay empty)."""
    if args.engine is None and _default_engine(args.file):
        args.engine = "duckdb"                      # a glob or a file over 200 MB: applied where it lies
    if args.engine:
        return _apply_engine(args)
    try:
        model_text = Path(args.model).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {args.model}: {exc.strerror or exc}.") from None
    cal, fitted_on = export.read_model(model_text)
    df, info = read_table(args.file)
    score = _apply_score_column(df, info, args.score, fitted_on)
    s, note = _apply_scores(df, score, fitted_on.get("score_transform"))
    ok = np.isfinite(s)
    feats = df.loc[ok].reset_index(drop=True) if cal.uses_features else None
    out = df.copy()
    replaced = "calibrated" in out.columns
    out["calibrated"] = np.nan
    out.loc[ok, "calibrated"] = cal.predict(s[ok], feats)
    where = _write(out.to_csv(index=False), args.out)
    for msg in ([note] if note else []) + (["its column 'calibrated' was replaced"] if replaced else []):
        print(f"  · {msg}", file=sys.stderr)
    print(f"Applied {cal.name} to {int(ok.sum()):,} of {len(df):,} rows of {info.name} (score {score!r}"
          f"{'; rows without a score are left empty' if not ok.all() else ''}); wrote {where}.", file=sys.stderr)
    return 0


def _apply_engine(args) -> int:
    """``apply --engine``: files (a path or a glob) read and written as Parquet by DuckDB, Spark or pandas."""
    from ..engines.apply import apply_model
    if not args.out:
        raise SettingsError("apply --engine writes Parquet: give the output file with --out.")

    def work(job):
        if args.engine != "duckdb":
            job.set_stage(f"applying with {args.engine}")
            return apply_model(args.model, args.file, args.out, engine=args.engine, score_column=args.score)
        import duckdb

        from ..engines.plan import watch
        con = duckdb.connect()
        try:
            with watch(job, con):
                job.set_stage("reading the rows, calibrating and writing them")
                return apply_model(args.model, args.file, args.out, engine="duckdb", score_column=args.score,
                                   connection=con)
        finally:
            con.close()

    res = _in_job(f"Applying {args.model} to {args.file} with {args.engine}", work)
    for msg in res.notes:
        print(f"  · {msg}", file=sys.stderr)
    how = {"sql": f"as SQL ({res.form} form)", "udf": "by predict called from the engine",
           "predict": "in memory"}[res.via]
    print(f"Applied {res.method} {how} with {res.engine} to {res.n_calibrated:,} of {res.n_rows:,} rows of "
          f"{args.file} (score {res.score_column!r}); wrote {res.out_path} in {res.seconds:.1f} s.", file=sys.stderr)
    return 0


# -- export-sql -------------------------------------------------------------------------------------------
def cmd_export_sql(args) -> int:
    """Print a saved calibrator as one SQL statement adding ``calibrated`` to the rows of a table."""
    from .. import sql
    try:
        model_text = Path(args.model).read_bytes()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the model file {args.model}: {exc.strerror or exc}.") from None
    model = export.read_model(model_text)
    score = args.score or model.fitted_on.get("score") or "score"
    feats = {f: f for f in model.fitted_on.get("features") or []}
    source = args.table
    if model.fitted_on.get("score_transform") == "logistic":        # map margins as the training scores were
        x = sql.quote(score, args.dialect)
        prob = f"{score}_probability"
        source = (f"SELECT *, {sql.SqlWriter(args.dialect, x).sigmoid(x)} AS {sql.quote(prob, args.dialect)} "
                  f"FROM {args.table}")
        print(f"  · the model was fitted on {score!r} mapped by the logistic function; the SQL maps it too, "
              f"as the column {prob!r}.", file=sys.stderr)
        score = prob
    m = sql.to_sql(model, score_column=score, dialect=args.dialect, feature_columns=feats, form=args.form)
    where = _write(m.standalone(source), args.out)
    if where != "stdout":
        print(f"Wrote {model.calibrator.name} as {args.dialect} SQL ({m.form} form) to {where}.", file=sys.stderr)
    return 0


# -- benchmark --------------------------------------------------------------------------------------------
def cmd_benchmark(args) -> int:
    """Run a benchmark over the files' data sets; print the report tables and the verdict (or JSON)."""
    if args.engine is None:                          # a glob or a file over 200 MB stays where it is
        args.engine = "duckdb" if any(_default_engine(f) for f in args.files) else "memory"
    if args.engine in ("duckdb", "spark"):           # each FILE (a file or a glob) stays where it is
        from .. import engines
        if args.score and len(args.score) > 1:
            raise SettingsError("with --engine, give one --score (each FILE is one data set).")
        datasets = {}
        for path in args.files:
            src = engines.source_for(path, score=args.score[0] if args.score else None, label=args.label)
            datasets[src.describe()] = benchmark.EngineDataset(src, args.engine, memory_limit=args.memory_limit,
                                                               aggregate=_aggregate)
    else:
        datasets = benchmark.load_datasets(args.files, label=args.label, scores=args.score)
    cals = resolve(args.methods, parse_params(args.param))
    quiet = args.json or not sys.stderr.isatty()

    def progress(frac, msg):
        if not quiet:
            print(f"\r{100 * frac:5.1f}%  {msg[:90]:<90}", end="", file=sys.stderr, flush=True)

    result = benchmark.run_benchmark(datasets, cals, n_folds=args.folds, repeats=args.repeats, seed=args.seed,
                                     metric=args.metric, reference=args.reference, alpha=args.alpha,
                                     include_uncalibrated=not args.no_uncalibrated, progress=progress)
    if not quiet:
        print(file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        print()
        return 0
    print(f"{len(datasets)} data set{'s' if len(datasets) != 1 else ''}: "
          + "; ".join(f"{k} ({ss.n_rows:,} rows)" if ss.n_rows is not None else k for k, ss in datasets.items()))
    for table in benchmark.report_tables(result):
        print(f"\n{table.title}")
        print(table.frame.to_string(float_format=_float))
    print()
    print(result.describe())
    for note in result.notes:
        print(f"Note: {note}")
    return 0


# -- the parser -------------------------------------------------------------------------------------------
def _add_methods(p: argparse.ArgumentParser, default: Sequence[str]) -> None:
    p.add_argument("--methods", default=",".join(default),
                   help="comma-separated calibrators (see `methods`; default: %(default)s)")
    _add_param(p)


def _add_param(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")


def _add_evaluation(p: argparse.ArgumentParser, table_help: str) -> None:
    """The file, methods, columns, scheme and score-cell options ``evaluate`` and ``report`` share."""
    p.add_argument("file", help=table_help)
    _add_methods(p, EVALUATE_METHODS)
    p.add_argument("--score", help="score column (default: guessed)")
    p.add_argument("--label", help="label column (default: guessed)")
    _add_positive(p)
    p.add_argument("--scheme", default=_SCHEME.kind, choices=list(KINDS), help="default: %(default)s")
    p.add_argument("--test-size", type=float, default=_SCHEME.test_size,
                   help="held-out fraction for --scheme split (default: %(default)s)")
    p.add_argument("--folds", type=int, default=_SCHEME.n_folds, help="K for --scheme kfold (default: %(default)s)")
    p.add_argument("--seed", type=int, default=_SCHEME.seed, help="default: %(default)s")
    p.add_argument("--cells", choices=list(CELLS_CHOICES), default="auto",
                   help=f"work on score cells (per distinct score: rows, positives) instead of rows; auto: above "
                        f"{CELLS_MIN_ROWS:,} rows unless a feature-aware method needs the rows (default auto)")


def _add_positive(p: argparse.ArgumentParser) -> None:
    p.add_argument("--positive", "--pos-label", dest="positive", metavar="VALUE",
                   help="the label value of the positive class (class 1); default: 1, true, yes, pos, ...; else the "
                        "value opposite 0, -1, no, neg, ...; else the second value in sorted order "
                        "(calibdash.validation.choose_positive, the rule of the API and the pages)")


def _add_engine(p: argparse.ArgumentParser) -> None:
    """Where the rows are read and aggregated (:mod:`calibdash.engines`)."""
    g = p.add_argument_group("large sources", "FILE may be a glob of Parquet or CSV files; or give a DuckDB "
                                              "database with --database and --table, or --query")
    g.add_argument("--engine", choices=["memory", "duckdb", "spark"],
                   help="memory: read the file into pandas; duckdb: aggregate into score cells out of core; spark: "
                        "the same as a Spark job (default: memory for one file under 200 MB, else duckdb)")
    g.add_argument("--split", help="split column, for --scheme column or --split-value (default: guessed)")
    g.add_argument("--database", help="a DuckDB database file holding --table (or read by --query)")
    g.add_argument("--table", help="a table of --database (DuckDB) or of the Spark catalog")
    g.add_argument("--query", help="a SQL query giving the rows (needs --order-by for a split or folds)")
    g.add_argument("--order-by", help="for --query: the ORDER BY list that fixes the rows' positions")
    g.add_argument("--memory-limit", default="1GB", help="DuckDB's memory limit; beyond it, it spills to disk "
                                                         "(default: %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each subcommand sets ``func`` to its ``cmd_*`` function."""
    p = argparse.ArgumentParser(prog="python -m calibdash", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    table_help = "CSV, .csv.gz or Parquet file of scores and labels"

    e = sub.add_parser("evaluate", help="fit calibrators and print held-out metrics")
    _add_evaluation(e, table_help)
    e.add_argument("--json", action="store_true",
                   help="print JSON instead of a table: the metrics, the validation report (rows read, used, dropped "
                        "and why) and the evaluation's notes")
    e.add_argument("--measures", nargs="?", const="all", metavar="all|NAME,...",
                   help="add the further measures (smECE, ICI, calibration slope and intercept, CORP and Murphy "
                        "decompositions, Spiegelhalter's z, Hosmer-Lemeshow, ...) with paired bootstrap intervals, "
                        "as the Compare page's 'More measures'; alone or 'all': every one; else a comma list of "
                        f"{', '.join(measures.MEASURE_NAMES)}")
    e.add_argument("--boot", type=int, default=MEASURES_BOOT,
                   help="paired resamples of the --measures intervals (default: %(default)s)")
    _add_engine(e)
    e.set_defaults(func=cmd_evaluate)

    r = sub.add_parser("report", help="fit calibrators and write a one-page HTML report",
                       description="The comparison `evaluate` prints, as one self-contained HTML page: the "
                                   "verdict, the metrics with 95% bootstrap intervals, the reliability diagram "
                                   "and calibration map (interactive), more calibration measures, the data and "
                                   "the methods' papers.")
    _add_evaluation(r, table_help)
    r.add_argument("--out", metavar="REPORT.html", default="report.html",
                   help="where to write the report; - for stdout (default: %(default)s)")
    r.add_argument("--title", help="the report's title (default: 'Calibration report: FILE')")
    r.add_argument("--plotlyjs", choices=["inline", "cdn"], default="inline",
                   help="inline: plotly.js inside the file (about 5 MB; opens offline); cdn: loaded from "
                        "plotly's CDN when opened (about 0.1 MB; needs the network) (default: %(default)s)")
    r.add_argument("--diagram", choices=[k.lower() for k in diagrams.KINDS], default="binned",
                   help="the reliability diagram: binned (observed frequency per bin), smooth (SmoothECE's kernel "
                        "curve) or corp (the PAV fit, MCB/DSC/UNC in the legend) (default: %(default)s)")
    r.set_defaults(func=cmd_report)

    m = sub.add_parser("methods", help="list the calibrators and their hyperparameters")
    m.set_defaults(func=cmd_methods)

    f = sub.add_parser("fit", help="fit one calibrator on a file and save it as JSON")
    f.add_argument("file", help=table_help)
    f.add_argument("--method", required=True, help="the calibrator (see `methods`)")
    _add_param(f)
    f.add_argument("--score", help="score column (default: guessed)")
    f.add_argument("--label", help="label column (default: guessed)")
    _add_positive(f)
    f.add_argument("--split-value", metavar="VALUE", help="fit only on the rows whose split column holds VALUE")
    f.add_argument("--out", metavar="MODEL.json", help="where to write the model (default: stdout)")
    _add_engine(f)
    f.set_defaults(func=cmd_fit)

    a = sub.add_parser("apply", help="add a saved calibrator's calibrated scores to a file's rows")
    a.add_argument("model", metavar="MODEL.json", help="a calibrator saved by `fit` (or calibdash.export.dumps)")
    a.add_argument("file", help="CSV, .csv.gz or Parquet file with a score column (a label is not needed)")
    a.add_argument("--score", help="score column (default: the model's, else guessed)")
    a.add_argument("--out", metavar="OUT.csv", help="where to write the rows with the new column 'calibrated' "
                   "(default: stdout; Parquet, and required, with --engine)")
    a.add_argument("--engine", choices=["duckdb", "spark", "memory"],
                   help="apply where the files lie: FILE may be a glob of Parquet or CSV files, written to --out as "
                        "Parquet by DuckDB (the calibrator as SQL), Spark, or pandas (default: in memory with CSV "
                        "out for one file under 200 MB, else duckdb)")
    a.set_defaults(func=cmd_apply)

    x = sub.add_parser("export-sql", help="print a saved calibrator as SQL (DuckDB, Spark SQL or ANSI)")
    x.add_argument("model", metavar="MODEL.json", help="a calibrator saved by `fit`")
    x.add_argument("--dialect", choices=["duckdb", "spark", "ansi"], default="duckdb", help="default: %(default)s")
    x.add_argument("--score", help="score column, in [0, 1] (default: the model's, else 'score')")
    x.add_argument("--table", default="scores", help="the table the statement reads (default: %(default)s)")
    x.add_argument("--form", choices=["auto", "case", "bisect", "lookup"], default="auto",
                   help="large step and linear maps as a lookup table (auto) or nested CASEs (default: %(default)s)")
    x.add_argument("--out", metavar="OUT.sql", help="where to write the SQL (default: stdout)")
    x.set_defaults(func=cmd_export_sql)

    b = sub.add_parser(
        "benchmark", help="compare calibrators over several data sets (ranks, Friedman, Holm)",
        description="Repeated K-fold cross-fitting of each calibrator on each data set, average ranks, "
                    "the Friedman test with the Iman-Davenport correction and Holm's procedure against "
                    "a reference method (Demsar 2006), as on the dashboard's Benchmark page.")
    b.add_argument("files", nargs="+", metavar="FILE",
                   help="CSV, .csv.gz or Parquet files, or folders of them; every score column is a data set")
    _add_methods(b, benchmark.DEFAULT_METHODS)
    b.add_argument("--folds", type=int, default=benchmark.DEFAULT_FOLDS,
                   help="K of the cross-fitting (default: %(default)s)")
    b.add_argument("--repeats", type=int, default=benchmark.DEFAULT_REPEATS,
                   help="repetitions with seeds seed, seed+1, ... (default: %(default)s)")
    b.add_argument("--seed", type=int, default=_SCHEME.seed, help="default: %(default)s")
    b.add_argument("--metric", default=benchmark.DEFAULT_METRIC,
                   choices=[m for m in measures.ALL_NAMES if measures.rankable(m)],
                   help="metric to rank (default: %(default)s)")
    b.add_argument("--reference", help="method the others are compared with (default: bbq if chosen)")
    b.add_argument("--alpha", type=float, default=benchmark.DEFAULT_ALPHA, help="default: %(default)s")
    b.add_argument("--no-uncalibrated", action="store_true", help="do not rank the raw scores")
    b.add_argument("--label", help="label column (default: guessed)")
    b.add_argument("--score", action="append", help="score column to use (repeatable; default: every score column)")
    b.add_argument("--json", action="store_true", help="print JSON instead of tables")
    b.add_argument("--engine", choices=["memory", "duckdb", "spark"],
                   help="memory: read each file into pandas; duckdb or spark: each FILE (a file or a glob) stays "
                        "where it is, and each repeat's folds are aggregated into score cells by the engine "
                        "(default: memory, unless a FILE is a glob or over 200 MB)")
    b.add_argument("--memory-limit", default="1GB", help="DuckDB's memory limit (default: %(default)s)")
    b.set_defaults(func=cmd_benchmark)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status.

    calibdash's own errors are printed as one line on stderr with exit
    status 2: ``error: ...`` for a problem with the data, a setting or the
    machine, ``internal error: ...`` for a :class:`ProgrammingError` (a bug,
    shown for what it is). Bad arguments exit through ``argparse`` (status 2).
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ProgrammingError as exc:
        print(f"internal error ({type(exc).__name__}): {exc} This is a bug in calibdash, not a problem with "
              "your data or settings; please report it.", file=sys.stderr)
        return 2
    except CalibdashError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:                   # Ctrl-C: a running job was cancelled (its query interrupted)
        print("cancelled.", file=sys.stderr)
        return 130
