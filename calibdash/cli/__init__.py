"""Command line: ``python -m calibdash {evaluate,report,methods,fit,apply,export-sql,benchmark,groups,drift} ...``.

The parser (:func:`build_parser`) and :func:`main`; the commands live in one module per group. ``--json`` prints
one record whose shape is the command's JSON Schema (:mod:`calibdash.io.schemas`).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Sequence

from .. import benchmark, calibrators, diagrams, engines, measures
from ..core.errors import CalibdashError, ProgrammingError
from ..evaluation.holdout import CELLS_CHOICES, CELLS_MIN_ROWS, KINDS, Scheme
from ..evaluation.holdout import DEFAULT_METHODS as CLASS_METHODS
from ..measures.binning import DEFAULT_N_BINS, DEFAULT_STRATEGY, STRATEGIES
from ..monitoring.group_metrics import STATS as GROUP_STATS
from ..monitoring.grouping import MAX_GROUPS, MIN_ROWS, N_QUANTILES
from .benchmarking import cmd_benchmark
from .comparison import EVALUATE_METHODS, MEASURES_BOOT, cmd_evaluate, cmd_report
from .models import cmd_apply, cmd_export_sql, cmd_fit
from .monitor import PERIOD_WORDS, cmd_drift, cmd_groups
from .notes import notes_on_stderr
from .runs import cmd_runs

__all__ = ["main"]

_SCHEME = Scheme()
#: Most groups the `groups` command takes (a nightly job may watch many segments; the page shows MAX_GROUPS).
CLI_MAX_GROUPS = 200


def cmd_methods(args) -> int:
    """List the calibrators; with ``--multiclass``, the multi-class ones, a composite as ``prefix:<binary>``."""
    if args.multiclass:
        print("Multi-class calibrators (K-class files; ovr:<binary> and top_label:<binary> wrap any binary "
              "calibrator above that reads no features, and take its hyperparameters too):")
    family = "classes" if args.multiclass else "binary"
    for name, cls in calibrators.classes(family).items():
        hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
        name = f"{name}:<binary>" if name in calibrators.composites() else name
        print(f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}")
    return 0


# -- the parser: each command's options declared in one list ----------------------------------------------
class _Given(argparse.Action):
    """Store the value and set ``<dest>_given``, so a command can tell a choice from the default."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _arg(*flags, **kw) -> tuple:
    """One argument, as ``add_argument`` takes it."""
    return flags, kw


#: Where runs are kept: ``--save``'s and the ``runs`` command's workspace folder and catalog.
_WHERE = [_arg("--workspace", help="the workspace folder (default: CALIBDASH_WORKSPACE or the user's data directory)"),
          _arg("--catalog", help="the catalog URL (default: CALIBDASH_CATALOG or the folder's SQLite file)")]


@dataclass
class _Group:
    """Arguments under a heading (``title``, ``description``); with no title, arguments of which at most one may be
    given (``required``: exactly one)."""

    items: list
    title: str | None = None
    description: str | None = None
    required: bool = False


def _declare(p, items) -> None:
    """Add ``items`` (each an :func:`_arg`, a :class:`_Group` or a list of them) to the parser or group ``p``."""
    for item in items:
        if isinstance(item, list):
            _declare(p, item)
        elif isinstance(item, _Group):
            _declare(p.add_argument_group(item.title, item.description) if item.title else
                     p.add_mutually_exclusive_group(required=item.required), item.items)
        else:
            p.add_argument(*item[0], **item[1])


def _commands() -> dict:
    """Each command's ``cmd_*`` function, ``add_parser`` keywords and arguments, in their order in ``--help``;
    the arguments several commands take are declared once, above the table."""
    table = _arg("file", help="CSV, .csv.gz or Parquet file of scores and labels (binary), or of K class columns "
                              "and labels (K-class)")
    param = _arg("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")

    def methods(default: Sequence[str], classes: bool = False) -> list:
        more = f"; on a K-class file: {','.join(CLASS_METHODS)}" if classes else ""
        return [_arg("--methods", default=",".join(default), action=_Given,
                     help=f"comma-separated calibrators (see `methods`; default: %(default)s{more})"), param]

    label = _arg("--label", help="label column (default: guessed)")
    columns = [_arg("--score", help="score column (default: guessed)"), label, _arg(
        "--positive", "--pos-label", dest="positive", metavar="VALUE",
        help="the label value of the positive class (class 1); default: 1, true, yes, pos, ...; else the value "
             "opposite 0, -1, no, neg, ...; else the second value in sorted order "
             "(calibdash.core.validation.choose_positive, the rule of the API and the pages)")]
    classes = _Group([_arg("--probs", metavar="PREFIX", help="K-class file: the class columns are the columns whose "
                           "names start with PREFIX (p_, prob_, proba_ and logit_ columns are found by themselves)"),
                      _arg("--logits", metavar="PREFIX", help="K-class file: as --probs, the columns holding logits")])
    folds = [_arg("--test-size", type=float, default=_SCHEME.test_size,
                  help="held-out fraction for --scheme split (default: %(default)s)"),
             _arg("--folds", type=int, default=_SCHEME.n_folds, help="K for --scheme kfold (default: %(default)s)")]
    seed = _arg("--seed", type=int, default=_SCHEME.seed, help="default: %(default)s")
    evaluation = [table, methods(EVALUATE_METHODS, classes=True), columns, classes,
                  _arg("--scheme", default=_SCHEME.kind, choices=list(KINDS), help="default: %(default)s"), folds, seed,
                  _arg("--cells", choices=list(CELLS_CHOICES), default="auto",
                       help=f"work on score cells (per distinct score: rows, positives) instead of rows; auto: above "
                            f"{CELLS_MIN_ROWS:,} rows unless a feature-aware method needs the rows (default auto)")]
    engine = _Group([
        _arg("--engine", choices=engines.available(),
             help="memory: read the file into pandas; duckdb: aggregate into score cells out of core; spark: the same "
                  "as a Spark job (default: memory for one file under 200 MB, else duckdb)"),
        _arg("--split", help="split column, for --scheme column or --split-value (default: guessed)"),
        _arg("--database", help="a DuckDB database file holding --table (or read by --query)"),
        _arg("--table", help="a table of --database (DuckDB) or of the Spark catalog"),
        _arg("--query", help="a SQL query giving the rows (needs --order-by for a split or folds)"),
        _arg("--order-by", help="for --query: the ORDER BY list that fixes the rows' positions"),
        _arg("--memory-limit", default="1GB", help="DuckDB's memory limit; beyond it, it spills to disk "
                                                   "(default: %(default)s)")],
        "large sources", "FILE may be a glob of Parquet or CSV files; or give a DuckDB database with --database and "
                         "--table, or --query")
    saving = _Group([
        _arg("--save", metavar="NAME", help="save the result as a run named NAME"),
        _arg("--tag", action="append", metavar="KEY=VALUE", help="a tag of the saved run (repeatable)"),
        _arg("--owner", default=os.environ.get("CALIBDASH_USER"),
             help="the saved run's owner (default: CALIBDASH_USER; none: every signed-in user sees it)"), _WHERE],
        "saving", "keep the result as a run the Runs page lists (a series by its name)")

    def monitor(what: str) -> list:
        """The source, columns, measure and engine arguments ``groups`` and ``drift`` share."""
        return [_arg("file", metavar="SOURCE", help="CSV, .csv.gz or Parquet file, or a glob of them (or give "
                                                    "--database/--table or --query)"), columns,
                _arg("--n-bins", type=int, default=DEFAULT_N_BINS, help="ECE's bins (default: %(default)s)"),
                _arg("--strategy", choices=list(STRATEGIES), default=DEFAULT_STRATEGY,
                     help="ECE's bins: equal-count (quantile) or equal-width (uniform) (default: %(default)s)"),
                _arg("--boot", type=int, default=200, metavar="N",
                     help=f"Poisson-bootstrap resamples of each {what}'s rows for the intervals; 0: none "
                          "(default: %(default)s)"),
                _arg("--seed", type=int, default=_SCHEME.seed,
                     help="seed of the bootstrap (and of --scheme's row hash) (default: %(default)s)"),
                _arg("--json", action="store_true",
                     help=f"print JSON: one record per {what} (key, rows, positives, each measure with its interval), "
                          "the notes and the alerts; one record whatever the engine (its JSON Schema: "
                          f"calibdash/io/schemas/{'groups' if what == 'group' else 'drift'}.json)"),
                _arg("--fail-above", action="append", metavar="MEASURE=VALUE",
                     help=f"exit with status 1 and name on stderr the {what}s whose MEASURE "
                          f"({', '.join(GROUP_STATS)}; any case) is above VALUE, such as ECE=0.05 (repeatable)"),
                param, engine]

    return {
        "evaluate": (cmd_evaluate, dict(help="fit calibrators and print held-out metrics"), [
            evaluation,
            _arg("--json", action="store_true",
                 help="print JSON instead of a table: the metrics, the validation report (rows read, used, dropped "
                      "and why) and the evaluation's notes; one record whatever the engine, binary or K-class "
                      "(its JSON Schema: calibdash/io/schemas/evaluate.json)"),
            _arg("--measures", nargs="?", const="all", metavar="all|NAME,...",
                 help="add the further measures (smECE, ICI, calibration slope and intercept, CORP and Murphy "
                      "decompositions, Spiegelhalter's z, Hosmer-Lemeshow, ...) with paired bootstrap intervals, "
                      "as the Compare page's 'More measures'; alone or 'all': every one; else a comma list of "
                      f"{', '.join(measures.MEASURE_NAMES)}"),
            _arg("--boot", type=int, metavar="N",
                 help=f"paired resamples of the --measures intervals (default: {MEASURES_BOOT}); on a K-class "
                      "file: paired bootstrap intervals of every measure and the verdict (default: none)"),
            engine, saving]),
        "report": (cmd_report, dict(
            help="fit calibrators and write a one-page HTML report",
            description="The comparison `evaluate` prints, as one self-contained HTML page: the verdict, the metrics "
                        "with 95% bootstrap intervals, the reliability diagram and calibration map (interactive), "
                        "more calibration measures, the data and the methods' papers."), [
            evaluation,
            _arg("--out", metavar="REPORT.html", default="report.html",
                 help="where to write the report; - for stdout (default: %(default)s)"),
            _arg("--title", help="the report's title (default: 'Calibration report: FILE')"),
            _arg("--plotlyjs", choices=["inline", "cdn"], default="inline",
                 help="inline: plotly.js inside the file (about 5 MB; opens offline); cdn: loaded from plotly's CDN "
                      "when opened (about 0.1 MB; needs the network) (default: %(default)s)"),
            _arg("--diagram", choices=[k.lower() for k in diagrams.KINDS], default="binned",
                 help="the reliability diagram: binned (observed frequency per bin), smooth (SmoothECE's kernel "
                      "curve) or corp (the PAV fit, MCB/DSC/UNC in the legend) (default: %(default)s)")]),
        "methods": (cmd_methods, dict(help="list the calibrators and their hyperparameters"), [
            _arg("--multiclass", action="store_true",
                 help="list the multi-class calibrators (for K-class files) instead")]),
        "fit": (cmd_fit, dict(help="fit one calibrator on a file and save it as JSON"), [
            table, _arg("--method", required=True,
                        help="the calibrator (see `methods`; a multi-class one on a K-class file)"), param, columns,
            classes, _arg("--split-value", metavar="VALUE", help="fit only on the rows whose split column holds VALUE"),
            _arg("--out", metavar="MODEL.json", help="where to write the model (default: stdout)"), engine]),
        "apply": (cmd_apply, dict(help="add a saved calibrator's calibrated scores to a file's rows"), [
            _arg("model", metavar="MODEL.json", help="a calibrator saved by `fit` (or calibdash.io.export.dumps)"),
            _arg("file", help="CSV, .csv.gz or Parquet file with a score column (a label is not needed)"),
            _arg("--score", help="score column (default: the model's, else guessed)"),
            _arg("--out", metavar="OUT.csv", help="where to write the rows with the new column 'calibrated' (a K-class "
                 "model: one column calibrated_<class> per class) (default: stdout; Parquet, and required, with "
                 "--engine)"),
            _arg("--engine", choices=engines.available(),
                 help="apply where the files lie: FILE may be a glob of Parquet or CSV files, written to --out as "
                      "Parquet by DuckDB (the calibrator as SQL), Spark, or pandas (default: in memory with CSV out "
                      "for one file under 200 MB, else duckdb; a K-class model: memory only)")]),
        "export-sql": (cmd_export_sql, dict(help="print a saved calibrator as SQL (DuckDB, Spark SQL or ANSI)"), [
            _arg("model", metavar="MODEL.json", help="a calibrator saved by `fit`"),
            _arg("--dialect", choices=["duckdb", "spark", "ansi"], default="duckdb", help="default: %(default)s"),
            _arg("--score", help="score column, in [0, 1] (default: the model's, else 'score')"),
            _arg("--table", default="scores", help="the table the statement reads (default: %(default)s)"),
            _arg("--form", choices=["auto", "case", "bisect", "lookup"], default="auto",
                 help="large step and linear maps as a lookup table (auto) or nested CASEs (default: %(default)s)"),
            _arg("--out", metavar="OUT.sql", help="where to write the SQL (default: stdout)")]),
        "benchmark": (cmd_benchmark, dict(
            help="compare calibrators over several data sets (ranks, Friedman, Holm)",
            description="Repeated K-fold cross-fitting of each calibrator on each data set, average ranks, the "
                        "Friedman test with the Iman-Davenport correction and Holm's procedure against a reference "
                        "method (Demsar 2006), as on the dashboard's Benchmark page."), [
            _arg("files", nargs="+", metavar="FILE",
                 help="CSV, .csv.gz or Parquet files, or folders of them; every score column is a data set"),
            methods(benchmark.DEFAULT_METHODS),
            _arg("--folds", type=int, default=benchmark.DEFAULT_FOLDS,
                 help="K of the cross-fitting (default: %(default)s)"),
            _arg("--repeats", type=int, default=benchmark.DEFAULT_REPEATS,
                 help="repetitions with seeds seed, seed+1, ... (default: %(default)s)"), seed,
            _arg("--metric", default=benchmark.DEFAULT_METRIC,
                 choices=[m for m in measures.ALL_NAMES if measures.rankable(m)],
                 help="metric to rank (default: %(default)s)"),
            _arg("--reference", help="method the others are compared with (default: bbq if chosen)"),
            _arg("--alpha", type=float, default=benchmark.DEFAULT_ALPHA, help="default: %(default)s"),
            _arg("--no-uncalibrated", action="store_true", help="do not rank the raw scores"), label,
            _arg("--score", action="append", help="score column to use (repeatable; default: every score column)"),
            _arg("--json", action="store_true",
                 help="print JSON instead of tables (its JSON Schema: calibdash/io/schemas/benchmark.json)"),
            _arg("--engine", choices=engines.available(),
                 help="memory: read each file into pandas; duckdb or spark: each FILE (a file or a glob) stays where "
                      "it is, and each repeat's folds are aggregated into score cells by the engine (default: "
                      "memory, unless a FILE is a glob or over 200 MB)"),
            _arg("--memory-limit", default="1GB", help="DuckDB's memory limit (default: %(default)s)")]),
        "groups": (cmd_groups, dict(
            help="calibration per group of a column, with intervals, where the rows live",
            description="Per group of --by: rows, positives, positive rate, mean score, ECE, Brier, log-loss and AUC "
                        "with Poisson-bootstrap intervals, from keyed score cells aggregated in memory, by DuckDB or "
                        "by Spark (the Groups & time page's numbers); --fix adds the calibrator that fixes the "
                        "groups."), [
            monitor("group"), _arg("--by", required=True, metavar="COL", help="the group column"),
            _arg("--quantiles", type=int, default=N_QUANTILES, metavar="N",
                 help="a numeric column with many values is cut into N equal-count groups (default: %(default)s)"),
            _arg("--max-groups", type=int, default=CLI_MAX_GROUPS, metavar="N",
                 help="most groups after pooling; more is refused (default: %(default)s; the page shows at most "
                      f"{MAX_GROUPS} side by side)"),
            _arg("--min-rows", type=float, default=MIN_ROWS,
                 help="groups with fewer rows are pooled into 'other' (default: %(default)s)"),
            _arg("--fix", metavar="METHOD",
                 help="also fit METHOD (the score alone) and MBCT with the group as its feature on the fitting rows, "
                      "and print each group's held-out ECE"),
            _arg("--scheme", choices=["split", "kfold"], default="split",
                 help="how --fix divides the rows, by a hash of their position (default: %(default)s)"),
            folds, saving]),
        "drift": (cmd_drift, dict(
            help="calibration per period of a date column, and when a calibrator goes stale",
            description="Per period of --time: the measures of `groups` with intervals, and the staleness of "
                        "--method (fitted on each period, judged on every later one, against refitting each "
                        "period)."), [
            monitor("period"), _arg("--time", required=True, metavar="COL", help="the date or date-time column"),
            _arg("--period", choices=list(PERIOD_WORDS), default="auto",
                 help="period length; auto: the finest giving at most 30 periods (default: %(default)s)"),
            _arg("--method", default="isotonic",
                 help="the calibrator whose staleness is shown; none: skip it (default: %(default)s)"), saving]),
    }


def _run_actions() -> dict:
    """The ``runs`` actions: help and arguments (after those every action takes: where, ``--user``, ``--json``)."""
    run = _arg("id", help="the run's id (an older id that starts with '-': put -- before it, after the options)")
    return {
        "list": ("the runs, newest first", [
            _arg("--dataset"), _arg("--name", help="one saved series"), _arg("--tag", metavar="KEY=VALUE"),
            _arg("--owner"), _arg("--kind", choices=["evaluate", "groups", "drift"])]),
        "show": ("a run's record and results", [run]),
        "delete": ("delete a run (its owner)", [run]),
        "export": ("copy a run's files (run.json, rows.parquet) to a folder", [
            run, _arg("--out", required=True, help="the folder to write (created)")]),
        "share": ("set who sees a run (its owner)", [run, _Group([
            _arg("--with", dest="users", metavar="USER,USER", help="private, shared with these users"),
            _arg("--all", action="store_true", help="every signed-in user"),
            _arg("--private", action="store_true", help="the owner only")], required=True)]),
    }


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each subcommand sets ``func`` to its ``cmd_*`` function."""
    p = argparse.ArgumentParser(prog="python -m calibdash", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name, (func, kw, items) in _commands().items():
        command = sub.add_parser(name, **kw)
        _declare(command, items)
        command.set_defaults(func=func)
    runs = sub.add_parser("runs", help="list, show, export, delete or share saved runs")
    actions = runs.add_subparsers(dest="action", required=True)
    for action, (text, items) in _run_actions().items():
        _declare(actions.add_parser(action, help=text), [
            _WHERE, _arg("--user", default=None, help="act as this user (default: as the operator, on every run)"),
            _arg("--json", action="store_true", help="print one JSON document"), items])
    runs.set_defaults(func=cmd_runs)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status: calibdash's own errors print one line on stderr and give 2
    (``internal error: ...`` for a :class:`ProgrammingError`, a bug), as argparse gives for bad arguments."""
    args = build_parser().parse_args(argv)
    try:
        with notes_on_stderr():
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
