"""A K-class table read as a binary one: the top-label (confidence) reduction of a :class:`ClassSet`.

Gupta & Ramdas (2022, "Top-label calibration and multiclass-to-binary reductions", ICLR) write a K-class predictor
as its predicted class ``c(X) = argmax_k P_k(X)`` and its confidence ``h(X) = max_k P_k(X)``. It is **confidence
calibrated** when ``P(Y = c(X) | h(X)) = h(X)`` (their eq. 1) and **top-label calibrated** when
``P(Y = c(X) | c(X), h(X)) = h(X)`` (their eq. 2). Both are about one binary pair, the score ``h(X)`` and the
outcome ``1[Y = c(X)]``: :func:`top_label_set` builds it as a binary :class:`~calibdash.data.ScoreSet`, so every
binary tool reads a K-class table through it. Its ECE on all rows is the confidence ECE (Guo et al. 2017) of
:func:`calibdash.measures.class_measures.top_label_ece` at the same bins; within the groups of the
predicted-class column (:data:`PREDICTED`) it checks eq. 2 one class at a time.

The ScoreSet's ``raw`` is the ClassSet's usable rows, in order, with every column but the class columns, and
:data:`CONFIDENCE` (``h``), :data:`CORRECT` (1 when the top class is the label; the ScoreSet's label, positive 1)
and :data:`PREDICTED` (``c``, as the label column writes it); a name already taken gets ``" (top label)"`` added.
Tied maxima: the predicted class is the first of them; the confidence is the same whichever wins.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core.errors import DataError
from .problem import TOP_LABEL
from .scoreset import ScoreSet, build_score_set

if TYPE_CHECKING:
    from .class_set import ClassSet

__all__ = []

#: The columns the reduction adds: the score, the 0/1 outcome (the label) and the predicted class.
CONFIDENCE, CORRECT, PREDICTED = "confidence", "top class right", "predicted class"
_TAKEN = " (top label)"


def top_label_frame(cs: "ClassSet") -> tuple[pd.DataFrame, dict]:
    """The usable rows of ``cs`` (index 0..n-1) with the class columns replaced by the reduction's three, and the
    names used (``"confidence"``, ``"correct"``, ``"predicted"`` -> column); DataError when ``cs`` does not say which
    rows of its table it kept (a ClassSet built by hand without ``rows``)."""
    if cs.rows is None or len(cs.rows) != cs.n_rows:
        raise DataError(f"{cs.name}: the usable rows' positions in the table are not known, so its other "
                        "columns cannot be aligned with the top-label reduction; build it with build_class_set.")
    c, a = cs.reduce(TOP_LABEL)
    keep = [col for col in cs.raw.columns if col not in set(cs.columns)]
    frame = cs.raw.iloc[np.asarray(cs.rows)][keep].reset_index(drop=True)
    taken = set(map(str, cs.raw.columns))
    names = {}
    for role, name in (("confidence", CONFIDENCE), ("correct", CORRECT), ("predicted", PREDICTED)):
        while name in taken:
            name += _TAKEN
        names[role] = name
        taken.add(name)
    frame[names["confidence"]] = c
    frame[names["correct"]] = a.astype(np.int64)
    classes = np.asarray(cs.classes, dtype=object)
    frame[names["predicted"]] = pd.Series(classes[cs.scores().probabilities.argmax(axis=1)], dtype=object)
    return frame, names


def top_label_set(cs: "ClassSet") -> ScoreSet:
    """The top-label reduction of ``cs`` as a binary :class:`~calibdash.data.ScoreSet`.

    Score: the confidence ``h(X) = max_k P_k(X)`` (of the softmax when ``cs`` holds logits); label: ``1[Y = c(X)]``;
    features and split: those of ``cs``; ``raw``: :func:`top_label_frame`, so any other column of the file can be
    aligned with the rows (:func:`calibdash.monitoring.groups.column_for_rows`). Its cache key derives from ``cs``'s.

    DataError when every usable row's top class is right, or every one is wrong: no binary calibration to judge.
    """
    frame, names = top_label_frame(cs)
    right = int(frame[names["correct"]].sum())
    if right in (0, cs.n_rows):
        raise DataError(f"{cs.name}: the top class is {'right' if right else 'wrong'} on all {cs.n_rows:,} "
                        "usable rows, so the confidence has one outcome only and its calibration (top class "
                        "right or not) cannot be judged.")
    key = hashlib.sha256(f"top-label:{cs.content_key()}".encode()).hexdigest()
    info = replace(cs.info, sha256=key) if cs.info is not None else None
    ss = build_score_set(frame, score=names["confidence"], label=names["correct"], positive=1,
                         features=list(cs.feature_columns), split=cs.split_column or "", info=info,
                         name=cs.name)
    ss.report.messages.append(
        f"Read as its top-label reduction: score {names['confidence']!r} (the top class's probability), label "
        f"{names['correct']!r} (1 when the top class is the true class), K = {cs.k} classes.")
    return replace(ss, score_columns=[names["confidence"]])
