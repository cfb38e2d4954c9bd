"""K-class rows where they live, shared by every engine: the source, its checks, and the rows for fitting.

A :class:`ClassSource` has a label column and K class columns (probabilities, or logits softmaxed in the engine).
Per row an engine computes ``p_k``, the top probability, the predicted class (lowest index among the maxima,
``numpy.argmax``'s rule) and the label's class index, then aggregates the K + 1 binary reductions (confidence,
each class's one-vs-rest) as the binary engines do: statistics checked by :func:`check_class_stats`, exact
distinct counts where the estimate is unsure (:func:`exact_flags`), one grouped scan of all reductions. Rows
are not dropped (that would move later rows to other parts).

Arithmetic: probabilities are measured as given (not divided by their sums), so cells are identical in every
engine. Logits: ``p_k = e_k / (((e_0 + e_1) + e_2) + ...)``, ``e_k = exp(z_k - max z)``, summed left to right
everywhere (in memory too, not ``scipy.special.softmax``): engines differ only in ``exp``'s last bit (~1e-15).

The content key (:func:`content_key`) depends on what a row holds, never where it lies: a chain of
:func:`calibdash.evaluation.cells.row_hash` over the class index and, per class column, the two 32-bit halves of
``u = floor(clip(x, -2^20, 2^20) * 2^32) + 2^52``, exact in every engine (Spark runs it in a pandas UDF, so its
workers need numpy, pandas, pyarrow and calibdash). Unlike :func:`calibdash.evaluation.scheme.content_keys`
(a value's 64-bit pattern, not readable in SQL) it quantizes values, so rows may share a key; ties are broken by
the values. :func:`fit_samples` draws what :func:`calibdash.evaluation.scheme.content_sample` would: class ``c``
takes its Hamilton quota ``q_c`` of rows first in (key, values) order; only rows with key below
``2^32 (q_c + 4 sqrt(q_c) + 16) / n_c`` are fetched (the margin grows and the scan repeats if too few pass), and
every row before the ``q_c``-th passing one has a smaller key, so the sample is exact."""
from __future__ import annotations

import abc
from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..evaluation.cells import MAX_EXACT, ClassCells, row_hash
from ..core.errors import DataError, SettingsError
from ..core.validation import SUM_TOLERANCE, format_values
from ..evaluation.scheme import Scheme, class_quotas
from .source import Source, assemble_cells, checked_scheme, unsure

__all__ = ["class_source", "HEAD_ROWS"]

#: Rows read from the start of a source to find its class columns and the class of each.
HEAD_ROWS = 20_000
#: Rows per batch of the judged rows.
BATCH_ROWS = 65_536
#: Values are clipped to [-KEY_CLIP, KEY_CLIP] for the content key (logits beyond are equal for the key only).
KEY_CLIP = 2.0 ** 20
#: Values are quantized to steps of 1 / KEY_STEP for the content key.
KEY_STEP = 2.0 ** 32
#: Added to a quantized value for the content key (so it is a non-negative integer below 2^53).
KEY_OFFSET = 2 ** 52
_M32 = 0xFFFFFFFF
_ALL = 2 ** 32          # a threshold every key lies below


def softmax_rows(Z: np.ndarray) -> np.ndarray:
    """``exp(z_k - max z) / sum_j exp(z_j - max z)`` with the sum taken left to right, as the SQL engines."""
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / row_sums(E)[:, None]


def row_sums(X: np.ndarray) -> np.ndarray:
    """Each row's sum taken left to right, as the SQL engines add (not numpy's pairwise sum)."""
    total = X[:, 0].copy()
    for j in range(1, X.shape[1]):
        total += X[:, j]
    return total


def part_count(scheme: Scheme) -> int:
    """How many parts ``scheme`` makes: the folds of ``"kfold"``, 2 for a split (0 fit, 1 held out), else 1."""
    return int(scheme.n_folds) if scheme.kind == "kfold" else 2 if scheme.kind in ("split", "column") else 1


def content_key(X: np.ndarray, y: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each row's 32-bit content key (uint64) from its class index and class values (see the module docstring)."""
    X = np.asarray(X, dtype=float)
    h = row_hash(np.asarray(y, dtype=np.int64).astype(np.uint64), seed)
    for k in range(X.shape[1]):
        u = (np.floor(np.clip(X[:, k], -KEY_CLIP, KEY_CLIP) * KEY_STEP).astype(np.int64) + KEY_OFFSET).astype(np.uint64)
        h = row_hash(h ^ (u & np.uint64(_M32)), seed)
        h = row_hash(h ^ (u >> np.uint64(32)), seed)
    return h


class ClassRows(abc.ABC):
    """A source's checked K-class rows (``k`` classes, ``n_rows`` rows) and their ``n_parts`` parts."""

    k: int
    n_rows: int
    n_parts: int

    @abc.abstractmethod
    def counts(self) -> np.ndarray:
        """Rows per part and class, shape (n_parts, K), int64."""

    @abc.abstractmethod
    def candidates(self, limits: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, part, key)`` of the rows whose :func:`content_key` with ``seed`` lies below
        ``limits[part, y]`` (an int64 array of shape (n_parts, K); ``2**32`` takes every row), in no order."""

    @abc.abstractmethod
    def batches(self, parts: Sequence[int], batch_rows: int = BATCH_ROWS
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(X, y, part)`` of the rows in ``parts``, at most ``batch_rows`` at a time, in no order."""


@dataclass(frozen=True)
class ClassSource:
    """Rows of a K-class model where they live, and what their columns mean.

    Attributes
    ----------
    source : Source
        The rows, the label column and the split column; its ``score`` names the first class column.
    columns, classes : tuple
        The K class columns, in class order, and the label value of each.
    logits : bool
        Whether the class columns hold logits (softmaxed in the engine) rather than probabilities.
    """

    source: Source
    columns: tuple
    classes: tuple
    logits: bool = False

    def __post_init__(self):
        if len(self.columns) < 3:
            raise DataError(f"a multi-class source has at least three class columns, got {len(self.columns)}.")
        if len(self.classes) != len(self.columns):
            raise SettingsError(f"one class per class column is needed: {len(self.columns)} columns, "
                                f"{len(self.classes)} classes.")
        if len(set(self.columns)) != len(self.columns):
            raise DataError("the class columns are named more than once.")
        if self.source.label in self.columns or (self.source.split and self.source.split in self.columns):
            raise DataError("the label or split column cannot also be a class column.")

    @property
    def k(self) -> int:
        return len(self.columns)


def class_source(path=None, label: str | None = None, probs=None, logits=None, *, split: str | None = None,
                 database: str | None = None, table: str | None = None, query: str | None = None,
                 order_by: str | None = None, format: str | None = None, head_rows: int = HEAD_ROWS
                 ) -> ClassSource:
    """A :class:`ClassSource` for files, a DuckDB table or a query, its class columns found or named.

    The class columns and their classes are found by :func:`calibdash.data.build_class_set` (``label``, ``probs``,
    ``logits`` as it takes them) on the first ``head_rows`` rows, which must hold at least two classes; later
    labels that name no class column are refused by the aggregation.
    """
    from ..data.class_set import build_class_set
    from . import reader

    rows = Source(path=path, database=database, table=table, query=query, order_by=order_by, format=format,
                  score="__unused__", label=label or "__unused_label__")
    head = reader(rows).read_head(rows, head_rows)
    cs = build_class_set(head, label=label, probs=probs, logits=logits, features=[], split=False,
                         name=rows.describe())
    src = replace(rows, score=cs.columns[0], label=cs.label_column, split=split)
    return ClassSource(source=src, columns=tuple(cs.columns), classes=tuple(cs.classes), logits=cs.logits)


@dataclass
class ClassStats:
    """What the first pass finds (the input of :func:`check_class_stats`).

    ``n_bad``: rows with a missing or non-finite class value; ``n_label_null``: missing labels; ``n_other``:
    labels naming no class column; ``n_classes_seen``: distinct classes among the labels; for probabilities,
    ``n_negative``, ``n_above`` (an entry above 1) and ``n_off_sum`` (a sum more than ``SUM_TOLERANCE`` from 1);
    ``distinct``: per reduction (confidence, then each class) an estimate of its distinct scores.
    """

    n_rows: int
    n_bad: int
    n_label_null: int
    n_other: int
    n_classes_seen: int
    n_negative: int = 0
    n_above: int = 0
    n_off_sum: int = 0
    distinct: list = field(default_factory=list)


def check_class_stats(st: ClassStats, csrc: ClassSource) -> None:
    """Refuse the rows as every engine refuses them (:class:`~calibdash.core.errors.DataError`, with counts)."""
    name, cols = csrc.source.describe(), format_values(list(csrc.columns), 4)
    hint = " If the columns hold logits, read them as logits." if not csrc.logits else ""
    if st.n_rows == 0:
        raise DataError(f"{name} holds no rows.")
    if st.n_bad:
        raise DataError(f"{st.n_bad:,} of {st.n_rows:,} rows have a missing or non-finite value in the class "
                        f"columns ({cols}); filter them out first (rows where they live are not dropped, which "
                        "would move the rows after them to other folds).")
    if st.n_label_null:
        raise DataError(f"label column {csrc.source.label!r} has {st.n_label_null:,} missing values among "
                        f"{st.n_rows:,} rows; filter them out first.")
    if st.n_other:
        raise DataError(f"{st.n_other:,} rows have a label that names no class column (label column "
                        f"{csrc.source.label!r}; the classes are {format_values(list(csrc.classes), 6)}). Every "
                        "class needs a column.")
    if st.n_classes_seen < 2:
        raise DataError(f"label column {csrc.source.label!r} holds one class only; calibration needs at least two.")
    if st.n_negative:
        raise DataError(f"{st.n_negative:,} rows hold negative values in the class columns ({cols}); probabilities "
                        f"are never negative.{hint}")
    if st.n_above:
        raise DataError(f"{st.n_above:,} rows hold values above 1 in the class columns ({cols}); probabilities "
                        f"lie in [0, 1].{hint}")
    if st.n_off_sum:
        raise DataError(f"{st.n_off_sum:,} of {st.n_rows:,} rows of the class columns ({cols}) do not sum to 1 "
                        f"within {SUM_TOLERANCE:g}; a probability column is needed for every class.{hint}")


def checked_class_stats(got, csrc: ClassSource, n_distinct: int) -> ClassStats:
    """The :class:`ClassStats` of a SQL engine's statistics row (rows, the four counts of every source, the three
    of probabilities, then ``n_distinct`` estimates), checked by :func:`check_class_stats`."""
    n = 5 if csrc.logits else 8
    probs = {} if csrc.logits else dict(n_negative=int(got[5]), n_above=int(got[6]), n_off_sum=int(got[7]))
    st = ClassStats(int(got[0]), *[int(g) for g in got[1:5]], **probs,
                    distinct=[float(g or 0) for g in got[n:n + n_distinct]])
    check_class_stats(st, csrc)
    return st


def exact_flags(distinct, max_exact: int, count) -> list[bool]:
    """Exact cells or the grid, per reduction, as the binary engines decide: the estimate taken as it says
    beyond a factor 4 of ``max_exact``, else ``count(indices)`` gives the exact distinct counts."""
    m = int(max_exact)
    flags = [d <= m for d in distinct]
    check = [r for r, d in enumerate(distinct) if unsure(d, m)]
    if check:
        for r, n in zip(check, count(check)):
            flags[r] = int(n) <= m
    return flags


def split_cells(res: pd.DataFrame, exact: list[bool], n_rows: int) -> ClassCells:
    """The grouped ``(r, part, code, n, n_pos, s_sum)`` of every reduction as :class:`ClassCells`."""
    out = []
    for r, ex in enumerate(exact):
        g = res[res["r"] == r]
        out.append(assemble_cells(g["part"].to_numpy(), g["code"].to_numpy(dtype=float), g["n"].to_numpy(),
                                  g["n_pos"].to_numpy(), g["s_sum"].to_numpy(dtype=float), exact=ex))
    return ClassCells(top=out[0], classes=tuple(out[1:]), n_rows=int(n_rows))


def aggregate_classes(csrc: ClassSource, scheme: Scheme | None = None, *, engine: str | None = None,
                      max_exact: int = MAX_EXACT, memory_limit: str = "1GB", threads: int | None = None,
                      **options) -> ClassCells:
    """Aggregate a K-class source into :class:`~calibdash.evaluation.cells.ClassCells` with ``engine``.

    Parameters
    ----------
    csrc : ClassSource
    scheme : Scheme, optional
        How rows are divided into parts (default every row in part 0), by the binary engines' rule.
    engine : str, optional
        A name of :func:`calibdash.engines.available` (default :func:`calibdash.engines.default_engine`).
    max_exact : int
        Per reduction: its distinct scores as cells up to this many, else the grid.
    memory_limit, threads, options
        As :func:`calibdash.engines.aggregate` takes them; ``options`` the engine's own (a ``connection``, a
        session), None left out.

    Raises
    ------
    DataError
        As :func:`check_class_stats`; engine errors as the binary engines raise them.
    SettingsError
        An unknown engine; bad scheme settings; a hashed scheme on rows without positions.
    """
    from . import dispatch

    return dispatch("aggregate_classes", engine, None, csrc, checked_scheme(csrc.source, scheme),
                    max_exact=max_exact, memory_limit=memory_limit, threads=threads, **options)


def open_class_rows(csrc: ClassSource, scheme: Scheme, engine: str | None = None, *, memory_limit: str = "1GB",
                    threads: int | None = None, **options):
    """The checked rows of ``csrc`` under ``scheme`` as a :class:`ClassRows`, open while inside (a context
    manager), read by ``engine``; the other parameters as :func:`aggregate_classes`.

    Raises
    ------
    DataError
        As :func:`check_class_stats`.
    SettingsError
        An unknown engine; a hashed scheme on rows without positions.
    """
    from . import dispatch

    return dispatch("class_rows", engine, None, csrc, checked_scheme(csrc.source, scheme),
                    memory_limit=memory_limit, threads=threads, **options)


def fit_samples(rows: ClassRows, fit_parts: Sequence[Sequence[int]], size: int | None, seed: int = 0,
                on_scan=None) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Each fitting part's rows, or its stratified content-keyed sample of ``size`` rows (see the module
    docstring), as ``(X, y)`` ordered by class, key and values; and the counts per part and class.

    Parameters
    ----------
    rows : ClassRows
    fit_parts : sequence of sequences of int
        The parts each fit is made on (k-fold: every fold but one).
    size, seed : int or None, int
        The sample's rows (None, or at least the part's rows, takes every row); the content key's seed.
    on_scan : callable, optional
        Called before each scan for the sample (one, unless too few rows passed the thresholds).

    Raises
    ------
    DataError
        A fitting part that is empty or holds one class only.
    """
    counts = rows.counts()
    sets = [np.asarray(sorted({int(p) for p in f}), dtype=np.int64) for f in fit_parts]
    n_of = [counts[f].sum(axis=0) for f in sets]
    quotas = [n.copy() if size is None else class_quotas(n, int(size)) for n in n_of]
    for n in n_of:
        if n.sum() == 0:
            raise DataError("the fitting part is empty.")
        if np.count_nonzero(n) < 2:
            raise DataError(f"the fitting part ({int(n.sum()):,} rows) holds one class only; calibration needs "
                            "at least two.")
    margin = 4.0
    while True:
        cuts = [np.where(q >= n, _ALL, np.minimum(_ALL, np.ceil(_ALL * (q + margin * np.sqrt(q) + 16)
                                                                / np.maximum(n, 1)))).astype(np.int64)
                for q, n in zip(quotas, n_of)]
        limits = np.zeros((rows.n_parts, rows.k), dtype=np.int64)
        for f, t in zip(sets, cuts):
            limits[f] = np.maximum(limits[f], t[None, :])
        if on_scan is not None:
            on_scan()
        X, y, part, key = rows.candidates(limits, seed)
        out, short = [], False
        for f, t, q in zip(sets, cuts, quotas):
            keep = np.isin(part, f) & (key < t[y].astype(np.uint64))
            Xf, yf, kf = X[keep], y[keep], key[keep]
            if np.any(np.bincount(yf, minlength=rows.k) < q):
                short = True
                break
            order = np.lexsort(tuple(Xf[:, j] for j in range(rows.k - 1, -1, -1)) + (kf, yf))
            ys = yf[order]
            starts = np.searchsorted(ys, np.arange(rows.k))
            rank = np.arange(ys.size) - starts[ys]
            take = order[rank < q[ys]]
            out.append((Xf[take], yf[take]))
        if not short:
            return out, counts
        margin *= 4


