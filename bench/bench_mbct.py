"""MBCT: speed on synthetic data, speed at scale, and the evidence table on the paper's benchmark release.

    .venv/bin/python bench/bench_mbct.py [speed] [scale] [evidence] [--sizes 10000 100000]
                                         [--scale-sizes 1000000 10000000] [--compare] [--boot 200]

speed
    N rows with 8 feature columns (4 categorical with 3, 10, 50 and ~500
    values, 4 numeric), a score whose miscalibration depends on some of them;
    MBCT with depth 5 and 8 trees (``early_stopping=False``, so all 8 trees
    are grown; other hyperparameters at their defaults). Best of 3 runs of
    ``fit`` and of ``predict`` on the same N rows. Target at N = 100,000:
    fit < 10 s, predict < 0.5 s.
scale
    N rows (``--scale-sizes``, default 1e6 and 1e7) with 8 categorical
    columns (``category`` dtype; 2 to 1,000 values), a score miscalibrated
    by two of them; MBCT with depth 5 and 8 trees (``early_stopping=False``),
    ``growth_rows`` at its default (200,000: the trees are grown on a seeded
    sample, the node scales computed on all rows). One run of ``fit`` and of
    ``predict`` on the same N rows, the peak resident memory of the two
    (Linux: VmHWM, reset once the data are built; elsewhere the process's
    peak so far) beside the memory the data take, and a floor: the seconds
    of ``np.argsort`` of the N scores and of ``pd.Categorical`` of one raw
    column (int64 values to codes). Also: the first tree's first split and
    the largest |PUD - 1| of its leaves on all tree rows, before clipping to
    [0, 1] (0 up to rounding: the scales are exact). Target at N = 1e7: fit < 60 s. ``--compare``
    also fits the smallest N unsampled (``growth_rows = N``) and compares
    the two on fresh rows (MVCE, 100 views; mean |difference| of the
    predictions).
evidence
    ``../shared/data/mbct-benchmarks``: Avazu (8 label-encoded categorical
    features, given to MBCT as ``category`` columns; 10,000 train / 10,000
    test rows) and Porto Seguro (scores only; 178,085 / 60,000). Every method
    is fitted on train and judged on test: MVCE (``metrics.mvce``, 100 views,
    bin size N // 10 and 250 rows), ECE (10 equal-count bins) and AUC. BBQ
    is included when registered. ``P(MBCT better)`` columns: share of paired
    bootstrap resamples of the test rows (``--boot``, MVCE there with 20
    views) in which MBCT (defaults) has the lower MVCE (bin size N // 10) /
    higher AUC than the row's method.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibdash import calibrators, metrics  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mbct-benchmarks"
REPEATS = 3


# -- speed ---------------------------------------------------------------------------------------------
def synthetic(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "c3": pd.Categorical(rng.integers(0, 3, n)),
        "c10": pd.Categorical(rng.integers(0, 10, n)),
        "c50": pd.Categorical(rng.integers(0, 50, n)),
        "c500": pd.Categorical(rng.zipf(1.5, n) % 500),
        "x1": rng.normal(size=n), "x2": rng.uniform(size=n), "x3": rng.exponential(size=n),
        "x4": rng.integers(0, 7, n),
    })
    s = rng.beta(2, 8, n)
    z = (np.log(s / (1 - s)) + 0.8 * (df["c3"].cat.codes.to_numpy() - 1)
         + 0.5 * np.sin(df["x1"].to_numpy()) + 0.3 * (df["c10"].cat.codes.to_numpy() % 3 - 1))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(int)
    return s, y, df


def speed(sizes: list[int]) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"MBCT speed: depth 5, 8 trees grown (early_stopping=False), 8 feature columns; best of {REPEATS}; "
          f"load average at start {load:.2f}")
    print(f"{'N':>9} {'fit s':>8} {'predict s':>10} {'leaves per tree':>32}  measured")
    for n in sizes:
        s, y, df = synthetic(n)
        fit_t, pred_t, model = [], [], None
        for _ in range(REPEATS):
            model = calibrators.get("mbct", max_depth=5, n_trees=8, early_stopping=False)
            t0 = time.perf_counter()
            model.fit(s, y, df)
            fit_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            model.predict(s, df)
            pred_t.append(time.perf_counter() - t0)
        leaves = ",".join(str(t.n_leaves) for t in model.trees_)
        print(f"{n:>9,} {min(fit_t):>8.2f} {min(pred_t):>10.3f} {leaves:>32}  fit(scores, labels, features), "
              f"predict(scores, features) on the same rows")


# -- scale ---------------------------------------------------------------------------------------------
#: Values of the 8 categorical columns of the scale data.
SCALE_CARDINALITY = (2, 3, 5, 10, 20, 50, 200, 1000)


def scale_raw(n: int, seed: int = 0):
    """Scores, labels and the raw int64 values of the 8 columns; the label depends on c3 and c10."""
    rng = np.random.default_rng(seed)
    raw = {f"c{k}": rng.integers(0, k, n) for k in SCALE_CARDINALITY}
    s = rng.beta(2, 8, n)
    z = np.log(s / (1 - s)) + 0.8 * (raw["c3"] - 1) + 0.3 * (raw["c10"] % 3 - 1)
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(np.int8)
    return s, y, raw


def scale_frame(raw: dict) -> pd.DataFrame:
    """The raw values as ``category`` columns (their values are the codes: no hashing needed)."""
    return pd.DataFrame({c: pd.Categorical.from_codes(v.astype(np.int16), categories=np.arange(int(c[1:])))
                         for c, v in raw.items()})


def _reset_peak() -> bool:
    """Reset the peak resident memory (Linux); False where it cannot be reset."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_gb() -> float:
    """Peak resident memory of this process in GB (VmHWM on Linux, else ``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _leaf_pud_error(model, s, y, df) -> float:
    """Largest |PUD - 1| over the first tree's leaves on its tree rows (all rows but the check rows),
    before the output is clipped to [0, 1]."""
    from calibdash.calibrators.mbct import canonical_rows, tree_rows

    data = canonical_rows(s, y, model._codes(s, df), None)
    fit = tree_rows(data, model.holdout, model.seed, model.growth_rows).fit
    tree = model.trees_[0]
    node = tree.route(data.codes, model._top_codes())
    out = fit * (tree.slope[node] * data.s + tree.intercept[node])
    leaves = tree.feature[node] < 0
    pos = np.bincount(node[leaves], weights=(fit * data.y)[leaves], minlength=tree.n_nodes)
    pred = np.bincount(node[leaves], weights=out[leaves], minlength=tree.n_nodes)
    used = pred > 0
    return float(np.max(np.abs(pos[used] / pred[used] - 1)))


def scale(sizes: list[int], compare: bool) -> None:
    params = dict(max_depth=5, n_trees=8, early_stopping=False)
    growth = calibrators.get("mbct").growth_rows
    print(f"MBCT at scale: {len(SCALE_CARDINALITY)} categorical columns ({', '.join(map(str, SCALE_CARDINALITY))} "
          f"values), depth 5, 8 trees grown, growth_rows {growth:,}; one run each; {os.cpu_count()} cores")
    print(f"{'N':>11} {'features':>8} {'fit s':>7} {'predict s':>9} {'peak RSS GB':>11} {'data GB':>7} "
          f"{'argsort s':>9} {'Categorical s':>13}  first split, max |leaf PUD - 1| on all tree rows")
    for n in sizes:
        s, y, raw = scale_raw(n)
        df = scale_frame(raw)
        data_gb = (s.nbytes + y.nbytes + sum(df[c].cat.codes.nbytes for c in df)) / 2 ** 30
        floor_sort = _seconds(lambda: np.argsort(s))
        floor_cat = _seconds(lambda: pd.Categorical(raw["c1000"]).codes)
        exact_peak = _reset_peak()
        model = calibrators.get("mbct", **params)
        fit_s = _seconds(lambda: model.fit(s, y, df))
        pred_s = _seconds(lambda: model.predict(s, df))
        peak = _peak_gb()
        names = [c.name for c in model.columns_]
        first = names[model.trees_[0].feature[0]] if model.trees_[0].feature[0] >= 0 else "(no split)"
        print(f"{n:>11,} {df.shape[1]:>8} {fit_s:>7.2f} {pred_s:>9.2f} {peak:>10.2f}{'' if exact_peak else '*'} "
              f"{data_gb:>7.2f} {floor_sort:>9.2f} {floor_cat:>13.2f}  {first}, "
              f"{_leaf_pud_error(model, s, y, df):.1e}")
        del model, df, raw, s, y
    if compare:
        _compare_unsampled(min(sizes), params)


def _compare_unsampled(n: int, params: dict) -> None:
    """The sampled fit beside the unsampled one (growth_rows = N) on fresh rows."""
    s, y, raw = scale_raw(n)
    df = scale_frame(raw)
    s2, y2, raw2 = scale_raw(200_000, seed=1)
    df2 = scale_frame(raw2)
    print(f"\n{n:,} rows, sampled vs unsampled growth; judged on 200,000 fresh rows (MVCE, 100 views, bin size 1,000)")
    print(f"{'growth_rows':>12} {'fit s':>7} {'MVCE':>9}  leaves per tree")
    preds = {}
    for g in (calibrators.get("mbct").growth_rows, n):
        model = calibrators.get("mbct", growth_rows=g, **params)
        fit_s = _seconds(lambda: model.fit(s, y, df))
        preds[g] = model.predict(s2, df2)
        print(f"{g:>12,} {fit_s:>7.2f} {metrics.mvce(preds[g], y2, bin_size=1000):>9.5f}  "
              f"{','.join(str(t.n_leaves) for t in model.trees_)}")
    print(f"{'raw scores':>12} {'':>7} {metrics.mvce(s2, y2, bin_size=1000):>9.5f}")
    a, b = preds.values()
    print(f"mean |difference| of the two fits' predictions: {np.abs(a - b).mean():.2e} "
          f"(mean prediction {b.mean():.4f})")


# -- evidence ------------------------------------------------------------------------------------------
def load(name: str):
    if name == "Avazu":
        part = {k: np.load(DATA / f"Avazu__{k}.npy") for k in (
            "train_prediction_samples", "train_label_samples", "train_feature_samples",
            "test_prediction_samples", "test_label_samples", "test_feature_samples")}

        def frame(x):
            return pd.DataFrame({f"f{j}": pd.Categorical(x[:, j]) for j in range(x.shape[1])})
        return (part["train_prediction_samples"], part["train_label_samples"], frame(part["train_feature_samples"]),
                part["test_prediction_samples"], part["test_label_samples"], frame(part["test_feature_samples"]))
    tr = (np.load(DATA / "Porto_Seguro__train_prediction.npy"), np.load(DATA / "Porto_Seguro__train_label.npy"))
    te = (np.load(DATA / "Porto_Seguro__test_prediction.npy"), np.load(DATA / "Porto_Seguro__test_label.npy"))
    return tr[0], tr[1], None, te[0], te[1], None


def methods(has_features: bool, paper_bin_size: int) -> list[tuple[str, str, dict, bool]]:
    """(row label, registry name, params, pass features)."""
    rows = []
    for name in ("platt", "histogram", "isotonic", "bbq"):
        if name in calibrators.available():
            rows.append((name, name, {}, False))
        else:
            print(f"note: {name!r} is not registered; its row is skipped")
    rows.append(("MBCT (defaults)", "mbct", {}, True))
    rows.append(("MBCT, 1 tree (no boosting)", "mbct", {"n_trees": 1}, True))
    rows.append((f"MBCT, bin size {paper_bin_size} (paper's)", "mbct", {"bin_size": paper_bin_size}, True))
    rows.append(("MBCT, no holdout (paper's rule)", "mbct", {"holdout": 0.0}, True))
    if has_features:
        rows.append(("MBCT, score only (no features)", "mbct", {}, False))
    return rows


def evidence(n_boot: int) -> None:
    if not DATA.exists():
        print(f"evidence skipped: {DATA} not found (shared/ must sit beside the repo)")
        return
    for name, paper_bin in (("Avazu", 2000), ("Porto Seguro", 800)):
        s_tr, y_tr, f_tr, s_te, y_te, f_te = load(name)
        y_tr, y_te = y_tr.astype(int), y_te.astype(int)
        preds = {"raw scores": s_te}
        info = {"raw scores": ""}
        for label, key, params, use_f in methods(f_tr is not None, paper_bin):
            t0 = time.perf_counter()
            model = calibrators.get(key, **params).fit(s_tr, y_tr, f_tr if use_f else None)
            preds[label] = model.predict(s_te, f_te if use_f else None)
            info[label] = f"{time.perf_counter() - t0:.1f} s"
            if key == "mbct":
                info[label] += f", {len(model.trees_)} tree(s), {model.trees_[0].n_leaves} leaves in tree 1"
        ref = preds["MBCT (defaults)"]
        rng = np.random.default_rng(0)
        idx = [rng.integers(0, y_te.size, y_te.size) for _ in range(n_boot)]
        m10 = max(1, y_te.size // 10)
        boot_ref = [(metrics.mvce(ref[i], y_te[i], bin_size=m10, n_views=20), metrics.auc(ref[i], y_te[i]))
                    for i in idx]
        print(f"\n{name}: fit on {y_tr.size:,} train rows, judged on {y_te.size:,} test rows "
              f"(base rate {y_te.mean():.4f}); MVCE with 100 views")
        print(f"{'method':<36} {'MVCE M=N/10':>11} {'MVCE M=250':>10} {'ECE':>8} {'AUC':>8} "
              f"{'P(MBCT better) MVCE':>20} {'AUC':>6}  fit")
        for label, p in preds.items():
            mv = metrics.mvce(p, y_te)
            mv250 = metrics.mvce(p, y_te, bin_size=250)
            ece = metrics.ece(p, y_te, 10, "quantile")
            auc = metrics.auc(p, y_te)
            if label == "MBCT (defaults)":
                pb = ""
            elif np.array_equal(p, ref):
                pb = f"{'(same predictions)':>27}"
            else:
                wins = np.array([(metrics.mvce(p[i], y_te[i], bin_size=m10, n_views=20) > r[0],
                                  metrics.auc(p[i], y_te[i]) < r[1]) for i, r in zip(idx, boot_ref)])
                pb = f"{wins[:, 0].mean():>20.2f} {wins[:, 1].mean():>6.2f}"
            print(f"{label:<36} {mv:>11.5f} {mv250:>10.5f} {ece:>8.5f} {auc:>8.5f} {pb:>27}  {info[label]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", default=["speed", "evidence"], choices=["speed", "scale", "evidence"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--scale-sizes", type=lambda v: int(float(v)), nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--compare", action="store_true", help="scale: also fit the smallest size unsampled")
    ap.add_argument("--boot", type=int, default=200)
    args = ap.parse_args()
    if "speed" in args.parts:
        speed(args.sizes)
    if "scale" in args.parts:
        scale(args.scale_sizes, args.compare)
    if "evidence" in args.parts:
        evidence(args.boot)


if __name__ == "__main__":
    main()
