"""The ``benchmark`` command (:mod:`calibdash.benchmark`), in memory or with each FILE left where it lies; on
K-class tables the default ``--methods`` is :func:`calibdash.benchmark.default_class_methods`."""
from __future__ import annotations

import sys

from .. import benchmark, engines
from ..data import is_multiclass
from ..benchmark.datasets import unique_name
from ..core.errors import SettingsError
from ..evaluation.methods import parse_params
from .engine_jobs import aggregate, default_engine, head_rows
from .output import four_places, print_json, source_name

__all__ = []


def cmd_benchmark(args) -> int:
    """Run a benchmark over the files' data sets; print the report tables and the verdict (or JSON)."""
    if args.engine is None:                          # a glob or a file over 200 MB stays where it is
        args.engine = next(filter(None, map(default_engine, args.files)), engines.find(out_of_core=False))
    if engines.get(args.engine).out_of_core:         # each FILE (a file or a glob) stays where it is
        if args.score and len(args.score) > 1:
            raise SettingsError("with --engine, give one --score (each FILE is one data set).")
        datasets = {}
        for path in args.files:
            # a K-class table (found in its first rows) runs in memory only; a named score column: binary
            if not args.score and is_multiclass(head_rows(path, args.label), args.label):
                raise SettingsError(f"{path} is a K-class table: a K-class benchmark runs in memory (--engine memory, "
                                    f"or no --engine for files under 200 MB); --engine {args.engine} benchmarks "
                                    "binary scores.")
            src = engines.source_for(path, score=args.score[0] if args.score else None, label=args.label)
            name = unique_name(source_name(src), datasets)          # a file by its name, as in memory
            datasets[name] = benchmark.EngineDataset(src, args.engine, memory_limit=args.memory_limit,
                                                     aggregate=aggregate)
        kind = "binary"
    else:
        kind, datasets = benchmark.load_benchmark_datasets(args.files, label=args.label, scores=args.score)
    quiet = args.json or not sys.stderr.isatty()

    def progress(frac, msg):
        if not quiet:
            print(f"\r{100 * frac:5.1f}%  {msg[:90]:<90}", end="", file=sys.stderr, flush=True)

    binary_default = args.methods == ",".join(benchmark.DEFAULT_METHODS)      # no --methods given
    methods = benchmark.default_class_methods() if kind == "multiclass" and binary_default else args.methods
    result = benchmark.run_benchmark(datasets, methods, n_folds=args.folds, repeats=args.repeats, seed=args.seed,
                                     metric=args.metric, reference=args.reference, alpha=args.alpha,
                                     include_uncalibrated=not args.no_uncalibrated, progress=progress,
                                     params=parse_params(args.param))
    if not quiet:
        print(file=sys.stderr)
    if args.json:
        print_json({"engine": args.engine, **result.to_json()})
        return 0
    what = " K-class" if kind == "multiclass" else ""
    print(f"{len(datasets)}{what} data set{'s' if len(datasets) != 1 else ''}: "
          + "; ".join(f"{k} ({ss.n_rows:,} rows)" if ss.n_rows is not None else k for k, ss in datasets.items()))
    for table in benchmark.report_tables(result):
        print(f"\n{table.title}")
        print(table.frame.to_string(float_format=four_places))
    print()
    print(result.describe())
    for note in result.notes:
        print(f"Note: {note}")
    return 0
