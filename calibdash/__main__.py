"""Command line: ``python -m calibdash evaluate FILE [--methods ...] [--json]``.

Prints the same metrics table as the dashboard's Compare page: each method is
fitted on the fitting rows and judged on held-out rows.
"""
from __future__ import annotations

import argparse
import json
import sys

from . import calibrators
from .data import load_scores
from .errors import DataError
from .evaluation import Scheme, evaluate


def _params(items: list[str]) -> dict[str, dict]:
    """``["bbq.c=5", "histogram.n_bins=20"]`` -> {"bbq": {"c": 5}, ...} (values parsed as JSON when they can be)."""
    out: dict[str, dict] = {}
    for item in items or []:
        try:
            lhs, value = item.split("=", 1)
            method, name = lhs.split(".", 1)
        except ValueError:
            raise DataError(f"--param takes METHOD.NAME=VALUE, got {item!r}.") from None
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(method, {})[name] = parsed
    return out


def cmd_evaluate(args) -> int:
    ss = load_scores(args.file, score=args.score, label=args.label)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    params = _params(args.param)
    cals = {m: calibrators.get(m, **params.get(m, {})) for m in methods}
    scheme = Scheme(kind=args.scheme, test_size=args.test_size, seed=args.seed, n_folds=args.folds)
    if args.scheme == "column" and not ss.split_column:
        raise DataError("--scheme column needs a split column in the file.")
    feats = ss.features if any(c.uses_features for c in cals.values()) else None
    ev = evaluate(ss.scores, ss.labels, cals, scheme, features=feats, split=ss.split)
    if args.json:
        json.dump({"file": ss.name, "score": ss.score, "rows_judged": int(ev.rows.size),
                   "scheme": scheme.describe(),
                   "metrics": {k: {m: float(v) for m, v in row.items()} for k, row in ev.metrics.iterrows()}},
                  sys.stdout, indent=2)
        print()
    else:
        print(f"{ss.name}: score {ss.score!r}, label {ss.label_column!r}; {scheme.describe()}; "
              f"{ev.rows.size:,} rows judged")
        for msg in ss.report.messages:
            print(f"  · {msg}")
        print(ev.metrics.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0


def cmd_methods(args) -> int:
    for name, cls in calibrators.classes().items():
        hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
        print(f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m calibdash", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("evaluate", help="fit calibrators and print held-out metrics")
    e.add_argument("file", help="CSV, .csv.gz or Parquet file of scores and labels")
    e.add_argument("--methods", default="platt,histogram,isotonic",
                   help="comma-separated calibrators (see `methods`); default: the three classic ones")
    e.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")
    e.add_argument("--score", help="score column (default: guessed)")
    e.add_argument("--label", help="label column (default: guessed)")
    e.add_argument("--scheme", default="split", choices=["split", "column", "kfold", "insample"])
    e.add_argument("--test-size", type=float, default=0.3)
    e.add_argument("--folds", type=int, default=5)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print JSON instead of a table")
    e.set_defaults(func=cmd_evaluate)
    m = sub.add_parser("methods", help="list the calibrators and their hyperparameters")
    m.set_defaults(func=cmd_methods)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
