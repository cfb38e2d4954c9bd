"""Command line: ``python -m calibdash {evaluate,report,methods,fit,apply,export-sql,benchmark,groups,drift} ...``.

The parser (:func:`build_parser`) and :func:`main`; the commands live in one module per group. ``--json`` prints
one record whose shape is the command's JSON Schema (:mod:`calibdash.io.schemas`).
"""
from __future__ import annotations

import argparse
import os
import sys
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


def _line(name: str, cls) -> str:
    hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
    return f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}"


def cmd_methods(args) -> int:
    """List the calibrators; with ``--multiclass``, the multi-class ones, a composite as ``prefix:<binary>``."""
    if args.multiclass:
        print("Multi-class calibrators (K-class files; ovr:<binary> and top_label:<binary> wrap any binary "
              "calibrator above that reads no features, and take its hyperparameters too):")
    family = "classes" if args.multiclass else "binary"
    for name, cls in calibrators.classes(family).items():
        print(_line(f"{name}:<binary>" if name in calibrators.composites() else name, cls))
    return 0


# -- the parser -------------------------------------------------------------------------------------------
class _Given(argparse.Action):
    """Store the value and set ``<dest>_given``, so a command can tell a choice from the default."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _add_methods(p: argparse.ArgumentParser, default: Sequence[str], classes: bool = False) -> None:
    more = f"; on a K-class file: {','.join(CLASS_METHODS)}" if classes else ""
    p.add_argument("--methods", default=",".join(default), action=_Given,
                   help=f"comma-separated calibrators (see `methods`; default: %(default)s{more})")
    _add_param(p)


def _add_columns(p: argparse.ArgumentParser, classes: bool = False) -> None:
    """The score, label and positive class (and with ``classes``, a K-class file's class columns)."""
    p.add_argument("--score", help="score column (default: guessed)")
    p.add_argument("--label", help="label column (default: guessed)")
    p.add_argument("--positive", "--pos-label", dest="positive", metavar="VALUE",
                   help="the label value of the positive class (class 1); default: 1, true, yes, pos, ...; else the "
                        "value opposite 0, -1, no, neg, ...; else the second value in sorted order "
                        "(calibdash.core.validation.choose_positive, the rule of the API and the pages)")
    if classes:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--probs", metavar="PREFIX", help="K-class file: the class columns are the columns whose "
                       "names start with PREFIX (p_, prob_, proba_ and logit_ columns are found by themselves)")
        g.add_argument("--logits", metavar="PREFIX", help="K-class file: as --probs, the columns holding logits")


def _add_folds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test-size", type=float, default=_SCHEME.test_size,
                   help="held-out fraction for --scheme split (default: %(default)s)")
    p.add_argument("--folds", type=int, default=_SCHEME.n_folds, help="K for --scheme kfold (default: %(default)s)")


def _add_param(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")


def _add_evaluation(p: argparse.ArgumentParser, table_help: str) -> None:
    """The file, methods, columns, scheme and score-cell options ``evaluate`` and ``report`` share."""
    p.add_argument("file", help=table_help)
    _add_methods(p, EVALUATE_METHODS, classes=True)
    _add_columns(p, classes=True)
    p.add_argument("--scheme", default=_SCHEME.kind, choices=list(KINDS), help="default: %(default)s")
    _add_folds(p)
    p.add_argument("--seed", type=int, default=_SCHEME.seed, help="default: %(default)s")
    p.add_argument("--cells", choices=list(CELLS_CHOICES), default="auto",
                   help=f"work on score cells (per distinct score: rows, positives) instead of rows; auto: above "
                        f"{CELLS_MIN_ROWS:,} rows unless a feature-aware method needs the rows (default auto)")


def _add_engine(p: argparse.ArgumentParser) -> None:
    """Where the rows are read and aggregated (:mod:`calibdash.engines`)."""
    g = p.add_argument_group("large sources", "FILE may be a glob of Parquet or CSV files; or give a DuckDB "
                                              "database with --database and --table, or --query")
    g.add_argument("--engine", choices=engines.available(),
                   help="memory: read the file into pandas; duckdb: aggregate into score cells out of core; spark: "
                        "the same as a Spark job (default: memory for one file under 200 MB, else duckdb)")
    g.add_argument("--split", help="split column, for --scheme column or --split-value (default: guessed)")
    g.add_argument("--database", help="a DuckDB database file holding --table (or read by --query)")
    g.add_argument("--table", help="a table of --database (DuckDB) or of the Spark catalog")
    g.add_argument("--query", help="a SQL query giving the rows (needs --order-by for a split or folds)")
    g.add_argument("--order-by", help="for --query: the ORDER BY list that fixes the rows' positions")
    g.add_argument("--memory-limit", default="1GB", help="DuckDB's memory limit; beyond it, it spills to disk "
                                                         "(default: %(default)s)")


def _add_monitor(p: argparse.ArgumentParser, what: str) -> None:
    """The source, columns, engine and measure options ``groups`` and ``drift`` share."""
    p.add_argument("file", metavar="SOURCE", help="CSV, .csv.gz or Parquet file, or a glob of them (or give "
                                                  "--database/--table or --query)")
    _add_columns(p)
    p.add_argument("--n-bins", type=int, default=DEFAULT_N_BINS, help="ECE's bins (default: %(default)s)")
    p.add_argument("--strategy", choices=list(STRATEGIES), default=DEFAULT_STRATEGY,
                   help="ECE's bins: equal-count (quantile) or equal-width (uniform) (default: %(default)s)")
    p.add_argument("--boot", type=int, default=200, metavar="N",
                   help=f"Poisson-bootstrap resamples of each {what}'s rows for the intervals; 0: none "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=_SCHEME.seed,
                   help="seed of the bootstrap (and of --scheme's row hash) (default: %(default)s)")
    p.add_argument("--json", action="store_true",
                   help=f"print JSON: one record per {what} (key, rows, positives, each measure with its interval), "
                        "the notes and the alerts; one record whatever the engine (its JSON Schema: "
                        f"calibdash/io/schemas/{'groups' if what == 'group' else 'drift'}.json)")
    p.add_argument("--fail-above", action="append", metavar="MEASURE=VALUE",
                   help=f"exit with status 1 and name on stderr the {what}s whose MEASURE ({', '.join(GROUP_STATS)}; "
                        "any case) is above VALUE, such as ECE=0.05 (repeatable)")
    _add_param(p)
    _add_engine(p)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each subcommand sets ``func`` to its ``cmd_*`` function."""
    p = argparse.ArgumentParser(prog="python -m calibdash", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    table_help = ("CSV, .csv.gz or Parquet file of scores and labels (binary), or of K class columns and "
                  "labels (K-class)")

    e = sub.add_parser("evaluate", help="fit calibrators and print held-out metrics")
    _add_evaluation(e, table_help)
    e.add_argument("--json", action="store_true",
                   help="print JSON instead of a table: the metrics, the validation report (rows read, used, dropped "
                        "and why) and the evaluation's notes; one record whatever the engine, binary or K-class "
                        "(its JSON Schema: calibdash/io/schemas/evaluate.json)")
    e.add_argument("--measures", nargs="?", const="all", metavar="all|NAME,...",
                   help="add the further measures (smECE, ICI, calibration slope and intercept, CORP and Murphy "
                        "decompositions, Spiegelhalter's z, Hosmer-Lemeshow, ...) with paired bootstrap intervals, "
                        "as the Compare page's 'More measures'; alone or 'all': every one; else a comma list of "
                        f"{', '.join(measures.MEASURE_NAMES)}")
    e.add_argument("--boot", type=int, metavar="N",
                   help=f"paired resamples of the --measures intervals (default: {MEASURES_BOOT}); on a K-class "
                        "file: paired bootstrap intervals of every measure and the verdict (default: none)")
    _add_engine(e)
    _add_save_options(e)
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
    m.add_argument("--multiclass", action="store_true",
                   help="list the multi-class calibrators (for K-class files) instead")
    m.set_defaults(func=cmd_methods)

    f = sub.add_parser("fit", help="fit one calibrator on a file and save it as JSON")
    f.add_argument("file", help=table_help)
    f.add_argument("--method", required=True, help="the calibrator (see `methods`; a multi-class one on a "
                                                    "K-class file)")
    _add_param(f)
    _add_columns(f, classes=True)
    f.add_argument("--split-value", metavar="VALUE", help="fit only on the rows whose split column holds VALUE")
    f.add_argument("--out", metavar="MODEL.json", help="where to write the model (default: stdout)")
    _add_engine(f)
    f.set_defaults(func=cmd_fit)

    a = sub.add_parser("apply", help="add a saved calibrator's calibrated scores to a file's rows")
    a.add_argument("model", metavar="MODEL.json", help="a calibrator saved by `fit` (or calibdash.io.export.dumps)")
    a.add_argument("file", help="CSV, .csv.gz or Parquet file with a score column (a label is not needed)")
    a.add_argument("--score", help="score column (default: the model's, else guessed)")
    a.add_argument("--out", metavar="OUT.csv", help="where to write the rows with the new column 'calibrated' "
                   "(a K-class model: one column calibrated_<class> per class) (default: stdout; Parquet, and "
                   "required, with --engine)")
    a.add_argument("--engine", choices=engines.available(),
                   help="apply where the files lie: FILE may be a glob of Parquet or CSV files, written to --out as "
                        "Parquet by DuckDB (the calibrator as SQL), Spark, or pandas (default: in memory with CSV "
                        "out for one file under 200 MB, else duckdb; a K-class model: memory only)")
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
    b.add_argument("--json", action="store_true", help="print JSON instead of tables (its JSON Schema: "
                                                       "calibdash/io/schemas/benchmark.json)")
    b.add_argument("--engine", choices=engines.available(),
                   help="memory: read each file into pandas; duckdb or spark: each FILE (a file or a glob) stays "
                        "where it is, and each repeat's folds are aggregated into score cells by the engine "
                        "(default: memory, unless a FILE is a glob or over 200 MB)")
    b.add_argument("--memory-limit", default="1GB", help="DuckDB's memory limit (default: %(default)s)")
    b.set_defaults(func=cmd_benchmark)

    g = sub.add_parser(
        "groups", help="calibration per group of a column, with intervals, where the rows live",
        description="Per group of --by: rows, positives, positive rate, mean score, ECE, Brier, log-loss and AUC "
                    "with Poisson-bootstrap intervals, from keyed score cells aggregated in memory, by DuckDB or by "
                    "Spark (the Groups & time page's numbers); --fix adds the calibrator that fixes the groups.")
    _add_monitor(g, "group")
    g.add_argument("--by", required=True, metavar="COL", help="the group column")
    g.add_argument("--quantiles", type=int, default=N_QUANTILES, metavar="N",
                   help="a numeric column with many values is cut into N equal-count groups (default: %(default)s)")
    g.add_argument("--max-groups", type=int, default=CLI_MAX_GROUPS, metavar="N",
                   help="most groups after pooling; more is refused (default: %(default)s; the page shows at most "
                        f"{MAX_GROUPS} side by side)")
    g.add_argument("--min-rows", type=float, default=MIN_ROWS,
                   help="groups with fewer rows are pooled into 'other' (default: %(default)s)")
    g.add_argument("--fix", metavar="METHOD",
                   help="also fit METHOD (the score alone) and MBCT with the group as its feature on the fitting "
                        "rows, and print each group's held-out ECE")
    g.add_argument("--scheme", choices=["split", "kfold"], default="split",
                   help="how --fix divides the rows, by a hash of their position (default: %(default)s)")
    _add_folds(g)
    _add_save_options(g)
    g.set_defaults(func=cmd_groups)

    d = sub.add_parser(
        "drift", help="calibration per period of a date column, and when a calibrator goes stale",
        description="Per period of --time: the measures of `groups` with intervals, and the staleness of --method "
                    "(fitted on each period, judged on every later one, against refitting each period).")
    _add_monitor(d, "period")
    d.add_argument("--time", required=True, metavar="COL", help="the date or date-time column")
    d.add_argument("--period", choices=list(PERIOD_WORDS), default="auto",
                   help="period length; auto: the finest giving at most 30 periods (default: %(default)s)")
    d.add_argument("--method", default="isotonic",
                   help="the calibrator whose staleness is shown; none: skip it (default: %(default)s)")
    _add_save_options(d)
    d.set_defaults(func=cmd_drift)
    _add_runs_command(sub)
    return p


def _add_where(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workspace", help="the workspace folder (default: CALIBDASH_WORKSPACE or the user's data "
                                       "directory)")
    p.add_argument("--catalog", help="the catalog URL (default: CALIBDASH_CATALOG or the folder's SQLite file)")


def _add_save_options(p: argparse.ArgumentParser) -> None:
    """``--save NAME``, ``--tag K=V`` and where and for whom the run is kept."""
    g = p.add_argument_group("saving", "keep the result as a run the Runs page lists (a series by its name)")
    g.add_argument("--save", metavar="NAME", help="save the result as a run named NAME")
    g.add_argument("--tag", action="append", metavar="KEY=VALUE", help="a tag of the saved run (repeatable)")
    g.add_argument("--owner", default=os.environ.get("CALIBDASH_USER"),
                   help="the saved run's owner (default: CALIBDASH_USER; none: every signed-in user sees it)")
    _add_where(g)


def _add_runs_command(sub) -> None:
    p = sub.add_parser("runs", help="list, show, export, delete or share saved runs")
    rsub = p.add_subparsers(dest="action", required=True)
    common = argparse.ArgumentParser(add_help=False)
    _add_where(common)
    common.add_argument("--user", default=None, help="act as this user (default: as the operator, on every run)")
    common.add_argument("--json", action="store_true", help="print one JSON document")
    ls = rsub.add_parser("list", parents=[common], help="the runs, newest first")
    ls.add_argument("--dataset")
    ls.add_argument("--name", help="one saved series")
    ls.add_argument("--tag", metavar="KEY=VALUE")
    ls.add_argument("--owner")
    ls.add_argument("--kind", choices=["evaluate", "groups", "drift"])
    for action, text in (("show", "a run's record and results"), ("delete", "delete a run (its owner)")):
        rsub.add_parser(action, parents=[common], help=text).add_argument("id")
    ex = rsub.add_parser("export", parents=[common], help="copy a run's files (run.json, rows.parquet) to a folder")
    ex.add_argument("id")
    ex.add_argument("--out", required=True, help="the folder to write (created)")
    sh = rsub.add_parser("share", parents=[common], help="set who sees a run (its owner)")
    sh.add_argument("id")
    who = sh.add_mutually_exclusive_group(required=True)
    who.add_argument("--with", dest="users", metavar="USER,USER", help="private, shared with these users")
    who.add_argument("--all", action="store_true", help="every signed-in user")
    who.add_argument("--private", action="store_true", help="the owner only")
    p.set_defaults(func=cmd_runs)


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
