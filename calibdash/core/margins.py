"""Scores to probabilities: margins and logits mapped by the logistic function.

Scores outside [0, 1] (SVM margins, logits) are mapped by the logistic
function ``1 / (1 + exp(-s))``, never min-max scaled: min-max scaling would
change the calibration the dashboard is there to measure, while the logistic
map is what Platt's and the BBQ authors' code apply to SVM margins.

>>> import numpy as np
>>> p, mapped = to_probabilities(np.array([-2.0, 0.0, np.nan, 3.0]))
>>> mapped, p.round(3).tolist()
(True, [0.119, 0.5, nan, 0.953])
"""
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
        None maps by the logistic function iff a finite value lies outside
        [0, 1] (what loading a file does); ``"logistic"`` always maps (a
        model fitted on margins gets new margins mapped even when they happen
        to lie in [0, 1]); ``"identity"`` never maps.
    column : str
        The scores' column, named in messages.

    Returns
    -------
    (ndarray, bool)
        The probabilities, a new float array of the same length with NaN
        where a value was missing or not finite; and whether the values were
        mapped.

    Raises
    ------
    DataError
        No value is a finite number; ``transform`` is not one of the above;
        ``"identity"`` with a finite value outside [0, 1].
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
