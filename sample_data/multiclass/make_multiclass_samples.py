"""Write the multi-class sample files of this folder (see README.md here).

    python sample_data/multiclass/make_multiclass_samples.py              # writes next to this script
    python sample_data/multiclass/make_multiclass_samples.py --out DIR    # writes elsewhere

The two synthetic files come from calibdash.synthetic.gaussian_classes with the seeds
below; the CIFAR-10 file is converted from netcal's LeNet-5 record, read from
--cifar (default: ../shared/data/multiclass-cifar/ beside the repository) and
skipped, saying so, when that file is not there. Nothing is downloaded.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))           # this checkout's calibdash, not an installed copy

from calibdash.synthetic.gaussian_classes import gaussian_classes  # noqa: E402

#: Every number is written with this many significant digits: a probability of 1e-8 stays visible, and
#: rows of K probabilities sum to 1 within K * 5e-7, far inside calibdash.calibrators.multiclass.base.SUM_TOLERANCE.
FLOAT_FORMAT = "%.6g"
ANIMALS_SEED, ANIMALS_ROWS = 20190613, 3_000
ANIMALS = dict(classes=("cat", "dog", "emu"), radius=1.5, temperature=2.5, bias=(0.5, 0.0, -0.5))
LOGITS_SEED, LOGITS_ROWS = 20170806, 400
LOGITS = dict(classes=4, radius=2.0, temperature=2.0, bias=(0.3, 0.0, 0.0, -0.3))
#: CIFAR-10's classes in the order of its label indices (the data set's batches.meta).
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR_RECORD = REPO.parent / "shared" / "data" / "multiclass-cifar" / "lenet-5-cifar-10.npz"


def animals() -> pd.DataFrame:
    """3,000 rows of three Gaussian classes: label, p_cat, p_dog, p_emu, x1, x2 (no true posterior)."""
    frame = gaussian_classes(**ANIMALS).draw(ANIMALS_ROWS, ANIMALS_SEED).frame
    return frame[["label", "p_cat", "p_dog", "p_emu", "x1", "x2"]]


def logits() -> pd.DataFrame:
    """400 rows of four Gaussian classes 0..3 reported as logits: label, logit_0 .. logit_3."""
    frame = gaussian_classes(**LOGITS).draw(LOGITS_ROWS, LOGITS_SEED, logits=True).frame
    return frame[["label"] + [f"logit_{k}" for k in range(4)]]


def cifar10_lenet5(record: Path = CIFAR_RECORD) -> pd.DataFrame:
    """The LeNet-5 softmax outputs on CIFAR-10's 10,000 test images, in the record's order: label (the
    class name) and p_<class>, from float32 as stored."""
    with np.load(record) as data:
        probabilities, truth = data["predictions"].astype(np.float64), data["ground_truth"]
    frame = pd.DataFrame({"label": np.asarray(CIFAR10_CLASSES, dtype=object)[truth]})
    for k, name in enumerate(CIFAR10_CLASSES):
        frame[f"p_{name}"] = probabilities[:, k]
    return frame


FILES = {"animals_3class.csv": animals, "logits_4class.csv": logits, "cifar10_lenet5.csv": cifar10_lenet5}


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    ap.add_argument("--cifar", default=str(CIFAR_RECORD), help="netcal's lenet-5-cifar-10.npz")
    args = ap.parse_args(argv)
    out = Path(args.out)
    for fname, make in FILES.items():
        if make is cifar10_lenet5:
            if not Path(args.cifar).is_file():
                print(f"skipped {fname}: {args.cifar} not found", file=sys.stderr)
                continue
            frame = cifar10_lenet5(Path(args.cifar))
        else:
            frame = make()
        path = write(frame, out / fname)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
