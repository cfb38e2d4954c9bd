"""Speed of the multi-class scaling family's fits on the three CIFAR files (10,000 rows each).

Run on demand with the project venv::

    .venv/bin/python bench/bench_multiclass_fit.py
    .venv/bin/python bench/bench_multiclass_fit.py --files wideresnet-16-4-cifar-100 --repeat 1

Targets (issue 19), on 10,000 x 100 (wideresnet-16-4-cifar-100): temperature < 0.2 s, vector < 2 s,
Dirichlet and matrix scaling with ODIR, including the cross-validated choice of lambda and mu, < 20 s.

Each row is the best wall-clock time and the best CPU time (this process, all its threads) of ``--repeat``
runs of ``fit(P, y)`` on the whole file (validation of the table included), BLAS pinned to ``--threads``
threads (threadpoolctl; default 2, the target machine's cores; the solver itself runs its products on one), with its defaults: temperature and vector scaling unregularised, matrix and
Dirichlet scaling with ODIR, lambda (= mu) chosen by 5-fold cross-validation over the default grid
(``calibdash.calibrators.multiclass.methods.matrix.LAMBDAS``), then refitted. Beside them:

* ``floor``: ``scipy.special.softmax`` of the same (n, K) array, the least any map of it costs;
* ``sklearn temperature``, ``sklearn ovr sigmoid``, ``sklearn ovr isotonic``: scikit-learn's
  ``CalibratedClassifierCV(FrozenEstimator(est), method=...)`` on the same probabilities (``est`` a
  fitted stand-in whose ``predict_proba`` returns its input), fitted on the same rows.

* ``netcal temperature``, ``netcal vector``, only with ``--netcal-python PY``: netcal's ``TemperatureScaling`` and
  ``LogisticCalibration(temperature_only=False)`` (its vector scaling), both ``method='mle'``, fitted on the same
  rows. netcal and torch are not in the project's environment: they run in the interpreter ``PY`` of a
  separate venv, as a child process (``bench/_netcal_fit.py``, which imports netcal and nothing of the
  project), handed the same float64 array as an .npy file in a temporary folder; its times are the child's
  own (best wall and CPU time of ``--repeat`` fits, BLAS and torch pinned to ``--threads``), its interpreter
  start and imports not included. netcal 1.4 has no matrix scaling and no Dirichlet calibration. Its vector
  fit makes hundreds of small torch evaluations (finite-difference gradients: 525 for 22 L-BFGS steps on
  10,000 x 10), so on a loaded machine torch's 2 threads cost it far more than they give (10,000 x 10: 5-13 s
  with 2, 1.7 s with 1, same iterations): time it with ``--threads 1`` too. Such a venv::

      python3 -m venv /tmp/netcal-venv
      /tmp/netcal-venv/bin/pip install torch==2.13.0   # the CPU wheel, before netcal pulls one in
      /tmp/netcal-venv/bin/pip install netcal
      .venv/bin/python bench/bench_multiclass_fit.py --netcal-python /tmp/netcal-venv/bin/python

The in-sample log-loss of each fit is printed beside its time (the raw scores' first), to show the fits did
their work.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from scipy.special import softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of_both  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.dummy import DummyClassifier  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402

from calibdash import calibrators  # noqa: E402

DATA = Path("/work/shared/data/multiclass-cifar")
FILES = ["wideresnet-16-4-cifar-10", "lenet-5-cifar-10", "wideresnet-16-4-cifar-100"]
METHODS = ["temperature", "vector", "matrix", "dirichlet"]
TARGETS = {"temperature": 0.2, "vector": 2.0, "matrix": 20.0, "dirichlet": 20.0}


class _Given(DummyClassifier):
    """A fitted stand-in classifier whose predict_proba returns its input (the file's probabilities)."""

    def predict_proba(self, X):
        return np.asarray(X, dtype=float)


def _log_loss(Q, y) -> float:
    return float(-np.mean(np.log(np.clip(Q[np.arange(y.size), y], 1e-300, None))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", default=FILES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--netcal-python", metavar="PY", default=None,
                    help="interpreter of a venv with netcal (and torch) installed: time netcal's fits there too")
    ap.add_argument("--netcal-timeout", type=float, default=1800.0,
                    help="seconds allowed to netcal's child process per file (default 1800)")
    args = ap.parse_args()
    with threadpool_limits(args.threads):
        run(args)


def run(args) -> None:
    rows = []
    for name in args.files:
        d = np.load(DATA / f"{name}.npz")
        P, y = d["predictions"].astype(float), d["ground_truth"]
        n, k = P.shape
        nan = float("nan")
        rows.append((name, n, k, "raw scores", nan, nan, _log_loss(P / P.sum(1, keepdims=True), y), ""))
        t, c, _ = best_of_both(lambda: softmax(P, axis=1), args.repeat)
        rows.append((name, n, k, "floor (softmax)", t, c, nan, ""))
        for method in args.methods:
            t, c, cal = best_of_both(lambda: calibrators.get(method, "classes").fit(P, y), args.repeat)
            note = f"target < {TARGETS[method]:g} s" if k == 100 else ""
            if getattr(cal, "cv_losses_", None) is not None:
                note = (note + "; " if note else "") + f"lambda = mu = {cal.lambda_:g}"
            rows.append((name, n, k, method, t, c, _log_loss(cal.predict_proba(P), y), note))
            print(f"  done {name} {method}: {t:.2f} s wall, {c:.2f} s CPU", file=sys.stderr, flush=True)
        est = _Given().fit(P, y)
        for label, how in (("sklearn temperature", "temperature"), ("sklearn ovr sigmoid", "sigmoid"),
                           ("sklearn ovr isotonic", "isotonic")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t, c, ref = best_of_both(
                    lambda: CalibratedClassifierCV(FrozenEstimator(est), method=how).fit(P, y), args.repeat)
            rows.append((name, n, k, label, t, c, _log_loss(ref.predict_proba(P), y), ""))
        if args.netcal_python:
            rows.extend(_netcal_rows(args, name, P, y))
    print(f"{'file':<28} {'n':>6} {'K':>4}  {'method':<22} {'wall s':>8} {'CPU s':>8}  {'log-loss':>8}  note")
    for name, n, k, method, t, c, ll, note in rows:
        ts, cs = ("", "") if np.isnan(t) else (f"{t:8.3f}", f"{c:8.3f}")
        ls = "" if np.isnan(ll) else f"{ll:8.4f}"
        print(f"{name:<28} {n:>6} {k:>4}  {method:<22} {ts:>8} {cs:>8}  {ls:>8}  {note}")
    if args.netcal_python and not any(m in NETCAL_METHODS for m in args.methods):
        print("netcal: not run (it has no matrix scaling or Dirichlet calibration; its methods here: "
              f"{', '.join(NETCAL_METHODS)}).")
    elif args.netcal_python:
        print(f"netcal: run by {args.netcal_python} in a child process (its own fit times, interpreter start "
              "and imports excluded); netcal has no matrix scaling or Dirichlet calibration.")
    else:
        print("netcal: not timed (it is not in the project's environment); to time it, give a venv's interpreter "
              "that has netcal: --netcal-python /tmp/netcal-venv/bin/python (see this script's docstring).")
    print(f"Log-loss is in-sample (the fitting rows). Best of {args.repeat} runs.")


NETCAL_METHODS = ("temperature", "vector")


def _netcal_rows(args, name, P, y):
    """netcal's fits of ``P, y`` timed by ``_netcal_fit.py`` in ``args.netcal_python``: rows for the table."""
    n, k = P.shape
    nan = float("nan")
    methods = [m for m in args.methods if m in NETCAL_METHODS]
    if not methods:
        return []
    with tempfile.TemporaryDirectory(prefix="netcal-bench-") as tmp:
        tmp = Path(tmp)
        np.save(tmp / "P.npy", P)
        np.save(tmp / "y.npy", y)
        cmd = [args.netcal_python, str(Path(__file__).resolve().parent / "_netcal_fit.py"), str(tmp),
               "--methods", *methods, "--repeat", str(args.repeat), "--threads", str(args.threads)]
        note = ""
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=args.netcal_timeout)
            sys.stderr.write(done.stderr[-4000:] if done.returncode else
                             "".join(l + "\n" for l in done.stderr.splitlines() if l.startswith("  done")))
            if done.returncode:
                note = f"netcal child failed (exit {done.returncode})"
        except subprocess.TimeoutExpired:
            note = f"not finished in {args.netcal_timeout:g} s"
        result = json.loads((tmp / "netcal.json").read_text()) if (tmp / "netcal.json").exists() else {"fits": {}}
        rows = []
        for method in methods:
            fit = result["fits"].get(method)
            if fit is None:
                rows.append((name, n, k, f"netcal {method}", nan, nan, nan, note or "no result"))
                continue
            Q = np.load(tmp / f"netcal-{method}.npy")
            rows.append((name, n, k, f"netcal {method}", fit["wall"], fit["cpu"], _log_loss(Q, y),
                         f"netcal {result['netcal']}: {fit['class']}"))
        return rows


if __name__ == "__main__":
    main()
