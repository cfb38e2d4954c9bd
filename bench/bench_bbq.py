"""Speed of BBQ: fit + predict at 10k, 100k and 1M rows, and netcal's BBQ in the same run.

Run on demand with the project venv (netcal is not a project dependency)::

    .venv/bin/python bench/bench_bbq.py

or, to include netcal, with an interpreter that has it (a separate venv, not the
project's; this repo on PYTHONPATH)::

    python3 -m venv /tmp/netcal-venv
    /tmp/netcal-venv/bin/pip install torch==2.13.0   # CPU wheel; another torch spec pulls GBs of CUDA
    /tmp/netcal-venv/bin/pip install -c <(echo torch==2.13.0) netcal pandas plotly
    PYTHONPATH=. /tmp/netcal-venv/bin/python bench/bench_bbq.py

Data: ``N`` scores ``s ~ Beta(2, 2)`` (continuous, no ties), labels drawn with
``P(y = 1) = s**2``; the same ``N`` rows are fitted and then predicted. Times
are wall-clock seconds, the best of ``--repeat`` runs for ours and of
``--netcal-repeat`` runs for netcal (``netcal.binning.BBQ()`` with its
defaults: BIC score, equal-width bins; ``fit`` then ``transform``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibdash import calibrators  # noqa: E402


def sample(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 2, n)
    y = (rng.uniform(size=n) < s ** 2).astype(np.int8)
    return s, y


def best_of(repeat: int, fit, predict):
    best_fit = best_pred = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        model = fit()
        t1 = time.perf_counter()
        predict(model)
        t2 = time.perf_counter()
        best_fit, best_pred = min(best_fit, t1 - t0), min(best_pred, t2 - t1)
    return best_fit, best_pred


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--netcal-repeat", type=int, default=1)
    ap.add_argument("--no-netcal", action="store_true")
    args = ap.parse_args(argv)

    try:
        if args.no_netcal:
            raise ImportError
        os.environ.setdefault("TQDM_DISABLE", "1")      # netcal's BBQ.fit draws a tqdm progress bar
        import netcal
        from netcal.binning import BBQ as NetcalBBQ
    except ImportError:
        NetcalBBQ = None

    rows = []
    for n in args.sizes:
        s, y = sample(n)
        for variant, prune in (("paper", True), ("authors", True), ("paper", False)):
            cal = calibrators.get("bbq", variant=variant, prune=prune)
            f, p = best_of(args.repeat, lambda: cal.fit(s, y), lambda m: m.predict(s))
            what = (f"calibdash bbq variant={variant} prune={prune}: {cal.n_models_} models, "
                    f"{cal.kept_b_.size} averaged, {cal.cuts_.size:,} cut points")
            rows.append((n, f, p, what))
        if NetcalBBQ is not None:
            sf = s.astype(np.float64)
            f, p = best_of(args.netcal_repeat, lambda: NetcalBBQ().fit(sf, y), lambda m: m.transform(sf))
            rows.append((n, f, p, f"netcal {netcal.__version__} BBQ() defaults (BIC, equal-width bins)"))

    print(f"{'N':>9}  {'fit s':>8}  {'predict s':>9}  {'total s':>8}  measured")
    for n, f, p, what in rows:
        print(f"{n:>9,}  {f:8.3f}  {p:9.3f}  {f + p:8.3f}  {what}")
    if NetcalBBQ is None:
        print("\nnetcal is not installed in this interpreter, so it was not timed. To compare, install it in a "
              "separate venv (see this file's docstring) and run: PYTHONPATH=. /tmp/netcal-venv/bin/python "
              "bench/bench_bbq.py")


if __name__ == "__main__":
    main()
