"""Command line: ``python -m calibdash evaluate FILE [--methods ...] [--json]``.

Prints the same metrics table as the dashboard's Compare page: each method is
fitted on the fitting rows and judged on held-out rows. ``fit`` saves one fitted
calibrator as JSON (:mod:`calibdash.export`); ``apply`` adds its calibrated
scores to a file's rows.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from . import calibrators, export
from .data import guess_roles, load_scores, read_table
from .benchmark import add_parser as add_benchmark
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


def _write(text: str, out: str | None) -> str:
    """Write ``text`` to the file ``out``, or to stdout; returns where it went."""
    if not out:
        sys.stdout.write(text)
        return "stdout"
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}.") from None
    return out


def cmd_fit(args) -> int:
    ss = load_scores(args.file, score=args.score, label=args.label)
    params = _params(args.param)
    for method in params:
        if method != args.method:
            raise DataError(f"--param {method}.… is a hyperparameter of {method!r}, but --method is {args.method!r}.")
    cal = calibrators.get(args.method, **params.get(args.method, {}))
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
    print(f"Fitted {args.method} on {rows.size:,} rows of {ss.name} (score {ss.score!r}); wrote {where} "
          f"({len(text.encode()):,} bytes).", file=sys.stderr)
    return 0


def _apply_scores(df: pd.DataFrame, score: str, transform: str | None) -> tuple[np.ndarray, str | None]:
    """Scores in [0, 1] (NaN where missing) mapped as the model's scores were; and a note when mapped."""
    x = pd.to_numeric(df[score], errors="coerce").to_numpy(dtype=float, na_value=np.nan, copy=True)
    ok = np.isfinite(x)
    if not ok.any():
        raise DataError(f"score column {score!r} holds no finite numbers; pick a numeric column with --score.")
    lo, hi = float(x[ok].min()), float(x[ok].max())
    outside = lo < 0.0 or hi > 1.0
    if transform not in (None, "logistic", "identity"):
        raise DataError(f"the model file's score_transform {transform!r} is unknown (logistic or identity).")
    if transform == "identity" and outside:
        raise DataError(f"the model was fitted on probabilities in [0, 1], but score column {score!r} ranges from "
                        f"{lo:.4g} to {hi:.4g}; give the column the model was fitted on (--score).")
    if transform == "logistic" or (transform is None and outside):
        x[ok] = expit(x[ok])
        return x, f"score column {score!r} mapped by the logistic function, as the model's training scores were"
    return x, None


def cmd_apply(args) -> int:
    try:
        model_text = Path(args.model).read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the model file {args.model}: {exc.strerror or exc}.") from None
    cal, fitted_on = export.read_model(model_text)
    df, info = read_table(args.file)
    score = args.score
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
    f = sub.add_parser("fit", help="fit one calibrator on a file and save it as JSON")
    f.add_argument("file", help="CSV, .csv.gz or Parquet file of scores and labels")
    f.add_argument("--method", required=True, help="the calibrator (see `methods`)")
    f.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a hyperparameter (repeatable)")
    f.add_argument("--score", help="score column (default: guessed)")
    f.add_argument("--label", help="label column (default: guessed)")
    f.add_argument("--split-value", metavar="VALUE", help="fit only on the rows whose split column holds VALUE")
    f.add_argument("--out", metavar="MODEL.json", help="where to write the model (default: stdout)")
    f.set_defaults(func=cmd_fit)
    a = sub.add_parser("apply", help="add a saved calibrator's calibrated scores to a file's rows")
    a.add_argument("model", metavar="MODEL.json", help="a calibrator saved by `fit` (or calibdash.export.dumps)")
    a.add_argument("file", help="CSV, .csv.gz or Parquet file with a score column (a label is not needed)")
    a.add_argument("--score", help="score column (default: the model's, else guessed)")
    a.add_argument("--out", metavar="OUT.csv", help="where to write the rows with the new column 'calibrated' "
                   "(default: stdout)")
    a.set_defaults(func=cmd_apply)
    add_benchmark(sub)
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
