"""Scores to probabilities: margins and logits mapped by the logistic function ``1 / (1 + exp(-s))``, never
min-max scaled (which would change the calibration the dashboard measures); the logistic map is what Platt's and
the BBQ authors' code apply to SVM margins."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from .errors import DataError

__all__ = ["TRANSFORMS", "to_probabilities"]

#: The transforms :func:`to_probabilities` knows (None: decide from the values).
TRANSFORMS = ("logistic", "identity")


def to_probabilities(values, transform: str | None = None, column: str = "score") -> tuple[np.ndarray, bool]:
    """Scores as probabilities in [0, 1], mapping margins by the logistic function.

    Parameters
    ----------
    values : array-like of float
        The scores, NaN where missing.
    transform : {None, "logistic", "identity"}
        None maps iff a finite value lies outside [0, 1] (what loading a file does); ``"logistic"`` always maps
        (a model fitted on margins, given margins that happen to lie in [0, 1]); ``"identity"`` never maps.
    column : str
        The scores' column, named in messages.

    Returns
    -------
    (ndarray, bool)
        The probabilities (a new array, NaN where a value was missing or not finite); whether they were mapped.

    Raises
    ------
    DataError
        No finite value; an unknown ``transform``; ``"identity"`` with a finite value outside [0, 1].
    """
    x = np.array(values, dtype=float).reshape(-1)
    ok = np.isfinite(x)
    if not ok.any():
        raise DataError(f"score column {column!r} holds no finite numbers; pick a numeric column.")
    if transform is not None and transform not in TRANSFORMS:
        raise DataError(f"the model file's score_transform {transform!r} is unknown (logistic or identity).")
    x[~ok] = np.nan
    lo, hi = float(x[ok].min()), float(x[ok].max())
    outside = lo < 0.0 or hi > 1.0
    if transform == "identity" and outside:
        raise DataError(f"the model was fitted on probabilities in [0, 1], but score column {column!r} ranges from "
                        f"{lo:.4g} to {hi:.4g}; give the column the model was fitted on (--score).")
    mapped = transform == "logistic" or (transform is None and outside)
    if mapped:
        x[ok] = expit(x[ok])
    return x, bool(mapped)
