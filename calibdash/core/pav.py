"""Pool-adjacent-violators: isotonic regression of labels on scores as blocks of pooled rows."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import isotonic_regression

from .step_maps import collapse_ties, cuts_between

__all__ = ["Blocks", "pav_blocks"]


@dataclass(frozen=True)
class Blocks:
    """The blocks PAV pools a set of rows into.

    Attributes
    ----------
    first_score, last_score : ndarray of float
        The smallest and largest training score in each block.
    count : ndarray of int
        Training rows in each block (float weight sums when fitted with weights).
    value : ndarray of float
        The block's fitted value (its rows' mean label, weighted when fitted with weights), non-decreasing.
    """

    first_score: np.ndarray
    last_score: np.ndarray
    count: np.ndarray
    value: np.ndarray

    @property
    def cuts(self) -> np.ndarray:
        """Cut points of the step map: halfway between one block's last score and the next's first
        (the next's first when halfway rounds down to the last: :func:`~calibdash.core.step_maps.cuts_between`)."""
        return cuts_between(self.last_score[:-1], self.first_score[1:])

    @property
    def knots(self) -> tuple[np.ndarray, np.ndarray]:
        """Knots ``(x, value)`` of the linear map: each block's first and last score (once when they
        are equal). Inside a block the map is flat, so the fitted points in between change nothing."""
        x = np.column_stack([self.first_score, self.last_score]).ravel()
        v = np.repeat(self.value, 2)
        keep = np.r_[True, x[1:] != x[:-1]]
        return x[keep], v[keep]


def pav_blocks(s: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> Blocks:
    """Isotonic regression of labels ``y`` on scores ``s`` (checked arrays), as PAV's blocks.

    Tied scores are merged into one point weighted by its count (with ``sample_weight``: its weight sum, at its
    weighted mean label; scores whose rows all weigh 0 are absent); the fitted values are clipped to [0, 1].
    """
    values, counts, positives = collapse_ties(s, y, sample_weight)
    fitted = isotonic_regression(positives / counts, sample_weight=counts.astype(float), increasing=True)
    fitted = np.clip(fitted, 0.0, 1.0)
    change = np.flatnonzero(np.diff(fitted) != 0)
    start = np.concatenate([[0], change + 1])
    end = np.concatenate([change, [values.size - 1]])
    return Blocks(first_score=values[start], last_score=values[end],
                  count=np.add.reduceat(counts, start), value=fitted[start])
