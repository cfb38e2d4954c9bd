"""Small shared pieces for calibrators whose map is built on sorted scores."""
from __future__ import annotations

import numpy as np


def collapse_ties(s: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
    """Distinct sorted scores with their row counts and positive counts.

    With weights ``w`` a row of weight ``w`` counts as ``w`` rows: the counts
    are weight sums, and a distinct score whose rows all weigh 0 is dropped
    (it is absent, as it would be from the rows repeated ``w`` times).

    Returns
    -------
    values : ndarray, shape (m,)   distinct scores, ascending
    counts : ndarray, shape (m,)   rows per distinct score (int64; float weight sums with ``w``)
    positives : ndarray, shape (m,) positive labels per distinct score (weight sums with ``w``)
    """
    if w is None:
        values, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        positives = np.bincount(inverse, weights=y, minlength=values.size)
        return values, counts.astype(np.int64), positives
    values, inverse = np.unique(s, return_inverse=True)
    counts = np.bincount(inverse, weights=w, minlength=values.size)
    positives = np.bincount(inverse, weights=w * y, minlength=values.size)
    present = counts > 0
    return values[present], counts[present], positives[present]


def midpoints(values: np.ndarray) -> np.ndarray:
    """Cut points halfway between consecutive sorted values."""
    return (values[:-1] + values[1:]) / 2.0


def step_lookup(cuts: np.ndarray, levels: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Piecewise-constant map: ``levels[k]`` for ``cuts[k-1] <= s < cuts[k]``.

    ``len(levels) == len(cuts) + 1``; a score exactly on a cut goes to the upper
    piece; scores beyond the outer cuts take the end levels.
    """
    return levels[np.searchsorted(cuts, s, side="right")]
