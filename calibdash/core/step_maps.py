"""Small shared pieces for maps built on sorted scores (calibrators fit them, the SQL forms write them)."""
from __future__ import annotations

import numpy as np

__all__ = ["collapse_ties", "interp", "midpoints", "step_lookup"]


def collapse_ties(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None):
    """Distinct sorted scores with their row counts and positive counts.

    With weights ``sample_weight`` a row of weight ``w`` counts as ``w`` rows: the counts
    are weight sums, and a distinct score whose rows all weigh 0 is dropped
    (it is absent, as it would be from the rows repeated ``w`` times).

    Returns
    -------
    values : ndarray, shape (m,)   distinct scores, ascending
    counts : ndarray, shape (m,)   rows per distinct score (int64; float weight sums with weights)
    positives : ndarray, shape (m,) positive labels per distinct score (weight sums with weights)
    """
    if sample_weight is None:
        values, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        positives = np.bincount(inverse, weights=y, minlength=values.size)
        return values, counts.astype(np.int64), positives
    values, inverse = np.unique(s, return_inverse=True)
    counts = np.bincount(inverse, weights=sample_weight, minlength=values.size)
    positives = np.bincount(inverse, weights=sample_weight * y, minlength=values.size)
    present = counts > 0
    return values[present], counts[present], positives[present]


def cuts_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cut points halfway between ``a < b`` (elementwise), with ``a < cut <= b``: under
    :func:`step_lookup` (a score on a cut goes up) ``a`` stays below its cut and ``b`` above.
    Halfway is rounded up to ``b`` when it rounds down to ``a``: between adjacent floats (``0`` and
    the smallest subnormal ``5e-324``, whose half rounds to 0) there is no float strictly between."""
    mid = (a + b) / 2.0
    return np.where(mid > a, mid, b)


def midpoints(values: np.ndarray) -> np.ndarray:
    """Cut points halfway between consecutive sorted distinct values (:func:`cuts_between`)."""
    return cuts_between(values[:-1], values[1:])


def interp(x, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``np.interp(x, xp, fp)`` (linear between the knots, the end values beyond them) without its
    overflow between close knots.

    ``np.interp`` forms the slope ``(fp[j+1] - fp[j]) / (xp[j+1] - xp[j])``, which overflows to
    infinity when the knots are closer than about 1e-308 (subnormal scores such as 4e-314): the map
    then gives +-inf or NaN between them (scikit-learn issue #10903 is this failure). Here the
    position inside the segment, ``t = (x - xp[j]) / (xp[j+1] - xp[j])``, is computed first
    (always in [0, 1]) and the value is ``fp[j] + t (fp[j+1] - fp[j])``, kept between the segment's
    two values; at ``t = 1`` it is ``fp[j+1]`` exactly. So the result lies between the values of
    the two knots around ``x``, and is non-decreasing in ``x`` when ``fp`` is.

    ``xp`` must be non-decreasing; equal neighbouring knots must have equal values (as np.interp,
    it is then the same function).
    """
    x = np.asarray(x, dtype=float)
    xp = np.asarray(xp, dtype=float)
    fp = np.asarray(fp, dtype=float)
    if xp.size == 1:
        return np.full(x.shape, fp[0])
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, xp.size - 2)
    x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
    h = x1 - x0
    wide = h > 0
    t = np.where(wide, (np.clip(x, x0, x1) - x0) / np.where(wide, h, 1.0), 0.0)
    out = np.where(t >= 1.0, f1, f0 + t * (f1 - f0))
    return np.clip(out, np.minimum(f0, f1), np.maximum(f0, f1))


def step_lookup(cuts: np.ndarray, levels: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Piecewise-constant map: ``levels[k]`` for ``cuts[k-1] <= s < cuts[k]``.

    ``len(levels) == len(cuts) + 1``; a score exactly on a cut goes to the upper
    piece; scores beyond the outer cuts take the end levels.
    """
    return levels[np.searchsorted(cuts, s, side="right")]
