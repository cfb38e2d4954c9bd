"""netcal's fits, run by ``bench_multiclass_fit.py --netcal-python PY`` in that interpreter (a separate venv with
netcal and torch, e.g. ``python3 -m venv /tmp/netcal-venv && /tmp/netcal-venv/bin/pip install torch netcal``):
not part of the project's environment and imported by nothing in it.

    PY bench/_netcal_fit.py DIR --methods temperature vector --repeat 3 --threads 2

reads ``DIR/P.npy`` (n x K probabilities) and ``DIR/y.npy`` (labels), times each method's ``fit(P, y)`` (best
wall and best CPU time of this process over ``--repeat`` runs, BLAS and torch pinned to ``--threads``), writes
the last fit's ``transform(P)`` to ``DIR/netcal-METHOD.npy`` and the times so far to ``DIR/netcal.json``
(rewritten after each method).

netcal 1.4 has, for multi-class scores, temperature scaling (``TemperatureScaling``) and vector scaling
(``LogisticCalibration`` without ``temperature_only``: one weight and one bias per class on the log-probabilities,
an element-wise product, not a matrix); it has no matrix scaling and no Dirichlet calibration. Both are fitted
by maximum likelihood (``method='mle'``: scipy's L-BFGS-B on the torch cross-entropy, gradients by finite
differences), unregularised.
"""
import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of_both  # noqa: E402  (standard library only)


def _makers():
    from netcal.scaling import LogisticCalibration, TemperatureScaling

    return {
        "temperature": ("TemperatureScaling(method='mle')", lambda: TemperatureScaling(method="mle")),
        "vector": ("LogisticCalibration(temperature_only=False, method='mle')",
                   lambda: LogisticCalibration(temperature_only=False, method="mle")),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--methods", nargs="+", default=["temperature", "vector"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch
    import netcal
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    P, y = np.load(args.dir / "P.npy"), np.load(args.dir / "y.npy")
    makers = _makers()
    out = {"netcal": netcal.__version__, "torch": torch.__version__, "fits": {}}
    with threadpool_limits(args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in args.methods:
            if method not in makers:
                continue
            what, make = makers[method]
            wall, cpu, cal = best_of_both(lambda: make().fit(P, y, tensorboard=False), args.repeat)
            np.save(args.dir / f"netcal-{method}.npy", np.asarray(cal.transform(P), dtype=float))
            out["fits"][method] = {"class": what, "wall": wall, "cpu": cpu}
            (args.dir / "netcal.json").write_text(json.dumps(out))  # after each fit: a timed-out run keeps the rest
            print(f"  done netcal {method}: {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
