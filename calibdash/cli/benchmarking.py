"""The ``benchmark`` command: calibrators compared over several data sets (:mod:`calibdash.benchmark`), in
memory or with each FILE left where it lies and its folds aggregated by DuckDB or Spark."""
from __future__ import annotations

import json
import sys

from .. import benchmark
from ..errors import SettingsError
from ..methods import parse_params, resolve
from .engine_jobs import aggregate, default_engine
from .output import four_places

__all__ = ["cmd_benchmark"]


def cmd_benchmark(args) -> int:
    """Run a benchmark over the files' data sets; print the report tables and the verdict (or JSON)."""
    if args.engine is None:                          # a glob or a file over 200 MB stays where it is
        args.engine = "duckdb" if any(default_engine(f) for f in args.files) else "memory"
    if args.engine in ("duckdb", "spark"):           # each FILE (a file or a glob) stays where it is
        from .. import engines
        if args.score and len(args.score) > 1:
            raise SettingsError("with --engine, give one --score (each FILE is one data set).")
        datasets = {}
        for path in args.files:
            src = engines.source_for(path, score=args.score[0] if args.score else None, label=args.label)
            datasets[src.describe()] = benchmark.EngineDataset(src, args.engine, memory_limit=args.memory_limit,
                                                               aggregate=aggregate)
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
        print(table.frame.to_string(float_format=four_places))
    print()
    print(result.describe())
    for note in result.notes:
        print(f"Note: {note}")
    return 0
