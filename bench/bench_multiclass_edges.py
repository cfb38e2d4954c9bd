"""Time the scaling family's fits on the degenerate inputs of the solver issue (each in a child process with a
time limit), to compare the code of two checkouts.

    .venv/bin/python bench/bench_multiclass_edges.py                       # this checkout
    .venv/bin/python bench/bench_multiclass_edges.py --repo /work/main --timeout 60

Every case is at most 5,000 rows. Each line: the case, the method, the wall time of ``fit`` (or "> T s" when
the child was stopped at the limit), the final fit's solver iterations (``n_iter_``), whether it converged,
the chosen lambda, and the error's type if the fit was refused. The child runs on one BLAS thread.
The K = 1,000 full maps are skipped with ``--repo`` pointing at code that allocates the 7.5 GiB block
preconditioner (``--skip-big``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CASES = {
    "one-hot mixed with soft rows (5000 x 10)": ("mixed", ["temperature", "vector", "matrix", "dirichlet"]),
    "logits of magnitude 1e4 (5000 x 10)": ("huge_logits", ["matrix"]),
    "a class never in the labels (5000 x 10)": ("absent", ["matrix", "dirichlet"]),
    "two of ten classes in the labels": ("two_of_ten", ["matrix", "dirichlet"]),
    "one class in the labels": ("one_class", ["matrix"]),
    "near-uniform probabilities (5000 x 10)": ("near_uniform", ["vector", "matrix", "dirichlet"]),
    "constant probabilities (4 distinct rows)": ("constant", ["matrix", "dirichlet"]),
    "K = 1,000, n = 5,000": ("big_k", ["vector", "matrix", "dirichlet"]),
    "columns permuted (5000 x 10)": ("permuted", ["matrix", "dirichlet"]),
}

CHILD = r"""
import json, sys, time, warnings
import numpy as np
from threadpoolctl import threadpool_limits
from scipy.special import softmax
sys.path.insert(0, REPO)
from calibdash import calibrators

def data(case):
    rng = np.random.default_rng(0)
    d = np.load("/work/shared/data/multiclass-cifar/lenet-5-cifar-10.npz")
    P, y = d["predictions"][:5000].astype(float), d["ground_truth"][:5000]
    P /= P.sum(axis=1, keepdims=True)
    if case == "mixed":
        hard = rng.random(y.size) < 0.3
        P[hard] = np.eye(10)[P[hard].argmax(axis=1)]
        return P, y, False
    if case == "huge_logits":
        Z = rng.normal(0, 1, (5000, 10))
        y = (rng.random(5000)[:, None] > np.cumsum(softmax(2 * Z, axis=1), axis=1)).sum(axis=1)
        return 1e4 * Z, np.minimum(y, 9), True
    if case == "absent":
        keep = y != 3
        return P[keep], y[keep], False
    if case == "two_of_ten":
        keep = y < 2
        return P[keep], y[keep], False
    if case == "one_class":
        keep = y == 4
        return P[keep], y[keep], False
    if case == "near_uniform":
        P = 0.1 + rng.uniform(-1e-6, 1e-6, (5000, 10))
        return P / P.sum(axis=1, keepdims=True), rng.integers(0, 10, 5000), False
    if case == "constant":
        row = softmax(rng.normal(0, 1, 10))
        return np.tile(row, (2000, 1)), rng.integers(0, 4, 2000), False
    if case == "big_k":
        Z = rng.normal(0, 2, (5000, 1000))
        y = (rng.random(5000)[:, None] > np.cumsum(softmax(1.5 * Z, axis=1), axis=1)).sum(axis=1)
        return Z, np.minimum(y, 999), True
    if case == "permuted":
        return P, y, False

case, method = sys.argv[1], sys.argv[2]
P, y, logits = data(case)
out = {}
with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    t0 = time.perf_counter()
    try:
        cal = calibrators.get(method, "classes", logits=logits).fit(P, y)
        Q = cal.predict_proba(P)
        out.update(n_iter=int(cal.n_iter_), converged=bool(cal.converged_), lam=float(cal.lambda_),
                   finite=bool(np.isfinite(Q).all()), rowsum=float(np.abs(Q.sum(1) - 1).max()))
        if case == "permuted":
            perm = np.random.default_rng(5).permutation(P.shape[1])
            inv = np.argsort(perm)
            cal2 = calibrators.get(method, "classes", logits=logits).fit(P[:, perm], inv[y])
            out.update(perm_diff=float(np.abs(cal2.predict_proba(P[:, perm]) - Q[:, perm]).max()),
                       lam_permuted=float(cal2.lambda_))
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {str(exc)[:150]}"
    out["seconds"] = time.perf_counter() - t0
    out["warnings"] = sorted({str(w.category.__name__) for w in caught})
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--skip-big", action="store_true", help="skip the K = 1,000 full maps")
    ap.add_argument("--cases", nargs="*", default=None, help="keys of the cases to run (default all)")
    args = ap.parse_args()
    for title, (case, methods) in CASES.items():
        if args.cases and case not in args.cases:
            continue
        for method in methods:
            if args.skip_big and case == "big_k" and method in ("matrix", "dirichlet"):
                print(f"{title:<44} {method:<12} skipped", flush=True)
                continue
            code = f"REPO = {args.repo!r}\n" + CHILD
            try:
                done = subprocess.run([sys.executable, "-c", code, case, method], capture_output=True, text=True,
                                      timeout=args.timeout)
                lines = done.stdout.strip().splitlines()
                res = json.loads(lines[-1]) if lines else {"error": done.stderr.strip().splitlines()[-1]}
            except subprocess.TimeoutExpired:
                res = {"timeout": args.timeout}
            if "timeout" in res:
                text = f"> {res['timeout']:g} s (stopped)"
            else:
                text = f"{res['seconds']:7.2f} s  " + "  ".join(f"{k}={v}" for k, v in res.items() if k != "seconds")
            print(f"{title:<44} {method:<12} {text}", flush=True)


if __name__ == "__main__":
    main()
