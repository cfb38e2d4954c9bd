"""Time SBB and ABB, and (with --lambda) measure the choice of their default lambda.

    .venv/bin/python bench/bench_sbb_abb.py              # speed table
    .venv/bin/python bench/bench_sbb_abb.py --lambda     # held-out log-loss against lambda

Speed: for each N, N rows with N distinct scores (uniform) and labels drawn
from a miscalibrated curve; reports the best of 3 runs of fit + predict on
the same N rows, for SBB and ABB at the default lambda. The 1,000,000-row
case has more distinct scores than ``MAX_POSITIONS``, so it includes the
grouping into micro-bins. Targets (issue 3): under 2 s each at 10,000
distinct scores, under 5 s at 1,000,000 rows.

Lambda: held-out log-loss of SBB and ABB for lambda on a log grid, on the
reference and sample data (train -> test split where the data has one,
5-fold cross-validation or two halves otherwise) and on simulated scores
with known true probabilities (excess cross-entropy against the truth,
mean over seeds). For each data set the regret of a lambda is its loss
relative to the best lambda on that set, in percent; the table ends with the
mean regret and mean rank over data sets, from which the default is chosen.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibdash import calibrators  # noqa: E402
from calibdash.calibrators._bayes_binning import DEFAULT_LAMBDA, MAX_POSITIONS, collapse  # noqa: E402
from calibdash.measures.calibration import log_loss  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
SAMPLES = ROOT / "sample_data"
REPEATS = 3
LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)


# -- speed ---------------------------------------------------------------------
def _toy(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    p = 0.5 + 0.4 * np.sin(3 * np.pi * s)          # non-monotone: many bins worth finding
    return s, (rng.random(n) < p).astype(np.int8)


def _best(fn) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of REPEATS runs (CPU time is what a busy machine
    distorts least)."""
    wall, cpu = [], []
    for _ in range(REPEATS):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def speed(sizes: list[int]) -> None:
    print(f"best of {REPEATS} runs; fit + predict on the same rows; lambda = {DEFAULT_LAMBDA:g}; "
          f"grouping above {MAX_POSITIONS:,} distinct scores")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(f"{'N rows':>10} {'distinct':>9} {'positions':>9} {'SBB s':>7} {'(cpu)':>7} "
          f"{'ABB s':>7} {'(cpu)':>7}  measured")
    for n in sizes:
        s, y = _toy(n)
        row = []
        for name in ("sbb", "abb"):
            cal = calibrators.get(name)
            row += _best(lambda: cal.fit(s, y).predict(s))
        pos = collapse(s, y, MAX_POSITIONS)             # the positions the fits ran on
        print(f"{n:>10,} {pos.n_distinct:>9,} {pos.size:>9,} {row[0]:>7.3f} {row[1]:>7.3f} "
              f"{row[2]:>7.3f} {row[3]:>7.3f}  "
              f"fit (sort, collapse{', group' if pos.grouped else ''}, DP) + predict {n:,} rows")


# -- lambda --------------------------------------------------------------------
def _csv(path: Path) -> np.ndarray:
    return np.loadtxt(path, dtype=float).reshape(-1)


def real_sets() -> dict:
    """name -> list of (train_s, train_y, test_s, test_y) folds."""
    sets = {}
    q = SHARED / "svm-quadratic-scores"
    if q.is_dir():
        sets["svm-quadratic (shared)"] = [(_csv(q / "train_data_y.csv"), _csv(q / "train_data_z.csv"),
                                           _csv(q / "test_data_y.csv"), _csv(q / "test_data_z.csv"))]
    m = SHARED / "mbct-benchmarks"
    if m.is_dir():
        for name, tr, te in (("Avazu", "Avazu__train_%s_samples", "Avazu__test_%s_samples"),
                             ("Porto Seguro", "Porto_Seguro__train_%s", "Porto_Seguro__test_%s")):
            ld = lambda stem, what: np.load(m / f"{stem % what}.npy").astype(float)  # noqa: E731
            sets[name] = [(ld(tr, "prediction"), ld(tr, "label"), ld(te, "prediction"), ld(te, "label"))]
    circles = SAMPLES / "circles_svm.csv"
    if circles.is_file():
        df = pd.read_csv(circles)
        tr, te = df[df.split == "train"], df[df.split == "test"]
        for col in ("linear_svm", "quadratic_svm"):
            sets[f"circles {col}"] = [(tr[col].to_numpy(), tr.label.to_numpy(),
                                       te[col].to_numpy(), te.label.to_numpy())]
    for fname, col, lab, k in (("breast_cancer_nb.csv", "nb_score", "malignant", 5),
                               ("ctr_120k.csv", "pctr", "click", 2)):
        path = SAMPLES / fname
        if path.is_file():
            df = pd.read_csv(path)
            s, y = df[col].to_numpy(float), df[lab].to_numpy(float)
            fold = np.random.default_rng(0).permutation(s.size) % k
            sets[f"{fname.split('.')[0]} ({k}-fold)"] = [
                (s[fold != f], y[fold != f], s[fold == f], y[fold == f]) for f in range(k)]
    return sets


#: Simulated true calibration curves p(s) (non-monotone ones included: the paper's use case).
CURVES = {
    "over-confident": lambda s: 1 / (1 + np.exp(-0.5 * np.log(s / (1 - s)))),
    "under-confident": lambda s: 1 / (1 + np.exp(-2.0 * np.log(s / (1 - s)))),
    "shifted": lambda s: 1 / (1 + np.exp(-(np.log(s / (1 - s)) - 1.0))),
    "sine": lambda s: 0.5 + 0.4 * np.sin(3 * np.pi * s),
    "step": lambda s: np.where(s > 0.5, 0.8, 0.2),
}


def _sim_scores(rng, n):
    return 1 / (1 + np.exp(-rng.normal(0.0, 2.0, n)))


def regret_table(losses: dict) -> pd.DataFrame:
    """losses: set name -> array over LAMBDAS. Returns regret (%) with mean regret and mean rank rows."""
    table = pd.DataFrame({k: 100 * (v / v.min() - 1) for k, v in losses.items()},
                         index=[f"{lam:g}" for lam in LAMBDAS]).T
    ranks = table.rank(axis=1)
    table.loc["MEAN REGRET %"] = table.mean()
    table.loc["MEAN RANK"] = ranks.mean()
    return table


def lambda_study(seeds: int, sizes: list[int]) -> None:
    for method in ("sbb", "abb"):
        losses = {}
        for name, folds in real_sets().items():
            vals = []
            for lam in LAMBDAS:
                tot = 0.0
                for s_tr, y_tr, s_te, y_te in folds:
                    cal = calibrators.get(method, lam=lam).fit(s_tr, y_tr)
                    tot += log_loss(cal.predict(s_te), y_te) * s_te.size
                vals.append(tot / sum(f[2].size for f in folds))
            losses[name] = np.array(vals)
        grid = _sim_scores(np.random.default_rng(12345), 20_000)
        for cname, curve in CURVES.items():
            p_true = np.clip(curve(grid), 1e-6, 1 - 1e-6)
            entropy = -np.mean(p_true * np.log(p_true) + (1 - p_true) * np.log1p(-p_true))
            for n in sizes:
                vals = np.zeros(len(LAMBDAS))
                for seed in range(seeds):
                    rng = np.random.default_rng(seed)
                    s = _sim_scores(rng, n)
                    y = (rng.random(n) < curve(s)).astype(np.int8)
                    if y.min() == y.max():
                        continue
                    for i, lam in enumerate(LAMBDAS):
                        q = np.clip(calibrators.get(method, lam=lam).fit(s, y).predict(grid), 1e-12, 1 - 1e-12)
                        ce = -np.mean(p_true * np.log(q) + (1 - p_true) * np.log1p(-q))
                        vals[i] += (ce - entropy) / seeds      # excess cross-entropy (KL)
                losses[f"sim {cname} n={n}"] = vals
        table = regret_table(losses)
        with pd.option_context("display.width", 200, "display.max_columns", 20,
                               "display.float_format", "{:.1f}".format):
            print(f"\n{method.upper()}: held-out loss regret (%) against lambda "
                  "(real: log-loss; sim: excess cross-entropy vs the truth, "
                  f"mean of {seeds} seeds)")
            print(table)
        best = table.loc["MEAN REGRET %"].astype(float).idxmin()
        print(f"{method.upper()}: lowest mean regret at lambda = {best}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1_000, 3_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--lambda", dest="lam", action="store_true", help="run the lambda study instead")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per simulated setting (--lambda)")
    args = ap.parse_args()
    if args.lam:
        lambda_study(args.seeds, [300, 1000, 3000])
    else:
        speed(args.sizes)


if __name__ == "__main__":
    main()
