"""Small shared pieces for maps built on sorted scores (calibrators fit them, the SQL forms write them)."""
from __future__ import annotations

import numpy as np

__all__ = ["collapse_ties", "interp", "midpoints", "step_lookup"]


def collapse_ties(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None):
    """``(values, counts, positives)``: the distinct scores ascending, their rows (int64) and positive labels.

    With ``sample_weight`` a row of weight ``w`` counts as ``w`` rows: the counts are float weight sums, and a
    score whose rows all weigh 0 is dropped (as it would be absent from the rows repeated ``w`` times).
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
    """``np.interp(x, xp, fp)`` (linear between the knots, the end values beyond them) without its overflow.

    ``np.interp``'s slope ``(fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` overflows when the knots are closer than
    about 1e-308 (subnormal scores), giving +-inf or NaN (scikit-learn issue #10903). Here the position
    ``t = (x - xp[j]) / (xp[j+1] - xp[j])`` (in [0, 1]) comes first and the value ``fp[j] + t (fp[j+1] - fp[j])``
    is kept between the segment's two values (``fp[j+1]`` exactly at ``t = 1``): non-decreasing when ``fp`` is.
    ``xp`` must be non-decreasing; equal neighbouring knots must have equal values.
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
    """``levels[k]`` for ``cuts[k-1] <= s < cuts[k]`` (``len(cuts) + 1`` levels; a score on a cut goes up)."""
    return levels[np.searchsorted(cuts, s, side="right")]
