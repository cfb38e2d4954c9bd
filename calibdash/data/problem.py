"""A data set is a calibration problem with K classes; :class:`Problem` says which binary reductions it has.

Binary data (K = 2, :class:`~calibdash.data.ScoreSet`) has one reduction, the **score**: the positive class's
score against the 0/1 label. K-class data (:class:`~calibdash.data.ClassSet`) has the reductions of Gupta &
Ramdas (2022, "Top-label calibration and multiclass-to-binary reductions"): the **top label**, the confidence
``max_k P_k`` against ``1[argmax_k P_k = y]``, and the K **one-vs-rest** columns ``P_k`` against ``1[y = k]``.
Every binary tool reads a K-class problem through one of them.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..core.errors import SettingsError
from ..measures.class_measures import top_label

__all__ = []

#: The reductions' names.
SCORE, TOP_LABEL, ONE_VS_REST = "score", "top_label", "ovr"


class Problem:
    """What :class:`~calibdash.data.ScoreSet` and :class:`~calibdash.data.ClassSet` share: K and the
    ``REDUCTIONS`` (the binary reductions the problem has)."""

    REDUCTIONS: ClassVar[tuple[str, ...]] = (SCORE,)

    @property
    def k(self) -> int:
        """Number of classes (2 for a score column)."""
        return 2

    def reduce(self, reduction: str, cls: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, 0/1 labels)`` of one binary reduction (one of :attr:`REDUCTIONS`: ``"score"``,
        ``"top_label"``, ``"ovr"`` with ``cls`` the class index 0..K-1) of the usable rows, in their order;
        SettingsError for a reduction the problem does not have, or ``"ovr"`` without a class index in range."""
        if reduction not in self.REDUCTIONS:
            raise SettingsError(f"this problem's reductions are {self.REDUCTIONS}, not {reduction!r}.")
        if reduction == SCORE:
            return self.scores, self.labels
        P = self.scores().probabilities
        if reduction == TOP_LABEL:
            confidence, correct = top_label(P, self.labels)
            return confidence, correct.astype(np.int8)
        if cls is None or not 0 <= int(cls) < self.k:
            raise SettingsError(f"a one-vs-rest reduction needs a class index 0..{self.k - 1}, got {cls!r}.")
        return P[:, int(cls)], (self.labels == int(cls)).astype(np.int8)
