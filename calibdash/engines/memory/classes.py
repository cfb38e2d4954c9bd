"""K-class rows in memory, aggregated by :func:`calibdash.evaluation.cells.class_cells`."""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd

from ...evaluation.cells import MAX_EXACT, ClassCells, class_cells
from ...core.validation import SUM_TOLERANCE
from ...evaluation.scheme import Scheme
from ..classes import (BATCH_ROWS, ClassRows, ClassSource, ClassStats, check_class_stats, content_key, part_count,
                       row_sums, softmax_rows)
from .rows import parts, read_rows

__all__ = []


def checked_rows(csrc: ClassSource, scheme: Scheme) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The memory engine's checked rows: ``(X, y, part)``, the class columns' values as read (probabilities
    or logits, shape (n, K)), each row's class index and its part, in the source's order; refused as
    :func:`check_class_stats` says."""
    src = csrc.source
    df, keys = read_rows(src, list(csrc.columns), src.needs_keys(scheme))
    X = np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                         for c in csrc.columns])
    label = df[src.label]
    code = pd.Index(list(csrc.classes)).get_indexer(label)
    null = label.isna().to_numpy()
    finite = np.isfinite(X).all(axis=1)
    st = ClassStats(n_rows=len(df), n_bad=int((~finite).sum()), n_label_null=int(null.sum()),
                    n_other=int(((code < 0) & ~null).sum()), n_classes_seen=int(np.unique(code[code >= 0]).size))
    if not csrc.logits and finite.all():
        st.n_negative, st.n_above = int((X < 0).any(axis=1).sum()), int((X > 1).any(axis=1).sum())
        st.n_off_sum = int((np.abs(row_sums(X) - 1) > SUM_TOLERANCE).sum())
    check_class_stats(st, csrc)
    return X, code, parts(len(df), keys, scheme, df[src.split] if src.split else None)


def aggregate_classes(csrc: ClassSource, scheme: Scheme, *, max_exact: int = MAX_EXACT, memory_limit: str = "1GB",
                      threads: int | None = None) -> ClassCells:
    """K-class cells of the rows read into memory (:func:`calibdash.evaluation.cells.class_cells`; ``memory_limit``
    and ``threads`` are not used)."""
    X, code, part = checked_rows(csrc, scheme)
    return class_cells(softmax_rows(X) if csrc.logits else X, code, part, max_exact=max_exact)


class MemoryRows(ClassRows):
    """The checked rows held in memory."""

    def __init__(self, csrc: ClassSource, scheme: Scheme):
        self.X, self.y, self.part = checked_rows(csrc, scheme)
        self.k, self.n_rows, self.n_parts = csrc.k, int(self.y.size), part_count(scheme)

    def counts(self) -> np.ndarray:
        out = np.zeros((self.n_parts, self.k), dtype=np.int64)
        np.add.at(out, (self.part.astype(np.int64), self.y), 1)
        return out

    def candidates(self, limits, seed):
        key = content_key(self.X, self.y, seed)
        keep = key < np.asarray(limits, dtype=np.int64)[self.part.astype(np.int64), self.y].astype(np.uint64)
        return self.X[keep], self.y[keep], self.part[keep].astype(np.int64), key[keep]

    def batches(self, parts, batch_rows=BATCH_ROWS):
        rows = np.flatnonzero(np.isin(self.part, np.asarray(list(parts))))
        for start in range(0, rows.size, int(batch_rows)):
            r = rows[start:start + int(batch_rows)]
            yield self.X[r], self.y[r], self.part[r].astype(np.int64)


@contextlib.contextmanager
def class_rows(csrc: ClassSource, scheme: Scheme, *, memory_limit: str = "1GB", threads: int | None = None):
    """The checked rows as a :class:`MemoryRows` (every row in memory; ``memory_limit`` and ``threads`` not used)."""
    yield MemoryRows(csrc, scheme)
