"""The generators of the sample data sets (see :mod:`calibdash.samples` and sample_data/README.md).

>>> from calibdash.samples import make
>>> make.write_all("some/folder", only=["circles_svm.csv"])   # doctest: +SKIP

An installed calibdash calls :func:`write` on first use of a sample, into the per-user cache;
``sample_data/make_samples.py`` is the command line that writes into ``sample_data/``. Everything is deterministic
(fixed seeds, no download: the breast cancer data is bundled with scikit-learn); on the pinned library versions of
``requirements.txt`` the output equals the repository's ``sample_data/*.csv`` (``tests/samples/test_samples.py``).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import SettingsError
from .drifting_score import DECIMALS, sigmoid, make_drift

__all__ = ["circles_points"]

CIRCLES_SEED = 20141129          # the date of the BBQ authors' data.mat
BREAST_CANCER_SEED = 0
CTR_SEED = 2021
CTR_ROWS = 120_000


def circles_points(n_per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The BBQ/SBB papers' "circular configuration", rows shuffled: class 0 radius ~ U(0, 2), class 1 radius ~
    U(2, 4), angle ~ U(0, 2 pi) (as the radii in the BBQ authors' data.mat: 0.0005-1.9993 and 2.0002-3.9875, 500
    points of each class per split)."""
    r = np.concatenate([rng.uniform(0, 2, n_per_class), rng.uniform(2, 4, n_per_class)])
    theta = rng.uniform(0, 2 * np.pi, 2 * n_per_class)
    y = np.repeat([0, 1], n_per_class)
    order = rng.permutation(2 * n_per_class)
    x = np.column_stack([r * np.cos(theta), r * np.sin(theta)])[order]
    return x, y[order]


def make_circles_svm(seed: int = CIRCLES_SEED) -> pd.DataFrame:
    """1000 train + 1000 test circle points scored by a linear and a quadratic SVM, fitted on the train rows: the
    logistic sigmoid of the margin (``decision_function``), as in the BBQ authors' demo."""
    from sklearn.svm import SVC

    rng = np.random.default_rng(seed)
    x_tr, y_tr = circles_points(500, rng)
    x_te, y_te = circles_points(500, rng)
    x = np.vstack([x_tr, x_te])
    out = pd.DataFrame({
        "split": np.repeat(["train", "test"], [len(y_tr), len(y_te)]),
        "x1": x[:, 0], "x2": x[:, 1],
        "label": np.concatenate([y_tr, y_te]),
    })
    for col, svm in (("linear_svm", SVC(kernel="linear", C=1.0)),
                     ("quadratic_svm", SVC(kernel="poly", degree=2, C=1.0, gamma="scale", coef0=1.0))):
        svm.fit(x_tr, y_tr)
        out[col] = sigmoid(svm.decision_function(x))
    return out.round(DECIMALS)


BREAST_CANCER_FEATURES = {"mean radius": "mean_radius", "mean texture": "mean_texture",
                          "mean perimeter": "mean_perimeter", "mean area": "mean_area"}


def make_breast_cancer_nb(seed: int = BREAST_CANCER_SEED) -> pd.DataFrame:
    """scikit-learn's breast cancer data scored by out-of-fold Gaussian naive Bayes: ``nb_score`` is P(malignant)
    from ``cross_val_predict`` with 5 stratified, shuffled folds (``random_state=seed``) over all 30 features;
    ``malignant`` is 1 for malignant tumours (scikit-learn's target 0)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.naive_bayes import GaussianNB

    data = load_breast_cancer(as_frame=True)
    x = data.data
    malignant = (data.target == 0).astype(int).to_numpy()
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    proba = cross_val_predict(GaussianNB(), x, malignant, cv=cv, method="predict_proba")[:, 1]
    out = x[list(BREAST_CANCER_FEATURES)].rename(columns=BREAST_CANCER_FEATURES).reset_index(drop=True)
    # six significant digits, not places: NB's tiny probabilities stay visible instead of rounding to 0/1
    out["nb_score"] = [float(f"{p:.6g}") for p in proba]
    out["malignant"] = malignant
    return out


CTR_DEVICES = ("mobile", "desktop", "tablet")
CTR_DEVICE_P = (0.6, 0.3, 0.1)
CTR_SITES = ("news", "games", "shopping", "finance", "sports", "travel")
CTR_SITE_P = (0.25, 0.20, 0.20, 0.10, 0.15, 0.10)
#: How the true log-odds differ from the base model's at the same score, per site category: negative = the model
#: over-estimates the group, positive = under.
CTR_SITE_SHIFT = {"news": -0.6, "games": 0.5, "shopping": 0.3, "finance": -0.4, "sports": 0.0, "travel": 0.4}
CTR_DEVICE_SHIFT = {"mobile": 0.1, "desktop": -0.25, "tablet": 0.2}


def make_ctr(seed: int = CTR_SEED, n: int = CTR_ROWS) -> pd.DataFrame:
    """Synthetic click-through data whose base score is miscalibrated per group.

    The base model's log-odds ``z`` depend on banner position, hour and age plus noise; ``pctr = sigmoid(z)``. The
    true click log-odds are ``1.15 * (z + 2.5) - 2.5 + CTR_SITE_SHIFT[site] + CTR_DEVICE_SHIFT[device]``: slightly
    under-confident overall, and at the same ``pctr`` some site categories (news, finance) click less and others
    (games, travel, shopping) more than predicted, which only a feature-aware calibrator (MBCT) can fix.
    """
    rng = np.random.default_rng(seed)
    device = rng.choice(CTR_DEVICES, size=n, p=CTR_DEVICE_P)
    site = rng.choice(CTR_SITES, size=n, p=CTR_SITE_P)
    hour = rng.integers(0, 24, size=n)
    banner_pos = rng.choice([0, 1, 2], size=n, p=[0.55, 0.35, 0.10])
    user_age = np.clip(np.round(rng.normal(36, 12, size=n)), 18, 75).astype(int)
    z = (-2.5 + np.array([0.0, 0.45, -0.3])[banner_pos] + 0.25 * np.sin(2 * np.pi * (hour - 6) / 24)
         - 0.012 * (user_age - 36) + rng.normal(0.0, 0.7, size=n))
    shift = pd.Series(site).map(CTR_SITE_SHIFT).to_numpy() + pd.Series(device).map(CTR_DEVICE_SHIFT).to_numpy()
    true_p = sigmoid(1.15 * (z + 2.5) - 2.5 + shift)
    click = (rng.random(n) < true_p).astype(int)
    return pd.DataFrame({"device": device, "site_category": site, "hour": hour, "banner_pos": banner_pos,
                         "user_age": user_age, "pctr": np.round(sigmoid(z), DECIMALS), "click": click})


#: file name -> generator; the order is the order of calibdash.samples.SAMPLES
GENERATORS = {"circles_svm.csv": make_circles_svm, "breast_cancer_nb.csv": make_breast_cancer_nb,
              "ctr_120k.csv": make_ctr, "drift.csv": make_drift}


def write(fname: str, out_dir: Path | str) -> Path:
    """Generate the sample file ``fname`` (a key of :data:`GENERATORS`) into ``out_dir``.

    The file appears whole or not at all (written to a temporary name, then renamed), so a reader never sees half
    a CSV, and two processes filling the same cache at once both end with the same complete file.

    SettingsError when ``fname`` is not a sample file; OSError when ``out_dir`` cannot be created or written.
    """
    if fname not in GENERATORS:
        raise SettingsError(f"not a sample file: {fname}; available: {', '.join(GENERATORS)}.")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / fname
    tmp = out_dir / f".{fname}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        GENERATORS[fname]().to_csv(tmp, index=False, lineterminator="\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_all(out_dir: Path | str, only: list[str] | None = None) -> list[Path]:
    """Write the sample CSVs into ``out_dir`` (all, or the file names in ``only``); SettingsError when a name in
    ``only`` is not a sample file (nothing is written then), OSError as :func:`write`."""
    unknown = set(only or ()) - set(GENERATORS)
    if unknown:
        raise SettingsError(f"not a sample file: {', '.join(sorted(unknown))}; available: {', '.join(GENERATORS)}.")
    return [write(fname, out_dir) for fname in GENERATORS if not only or fname in only]
