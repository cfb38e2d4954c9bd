"""One cross-fit: fit a set of methods on one part of a weighted sample and judge them on another.

:func:`cross_fit` is the package's one fit-and-judge loop: every caller (the held-out evaluation on rows or score
cells, the group fix, the staleness view, the benchmark) divides its sample into (fit, judged) pairs and hands them
over. Whether a data set is evaluated on rows or score cells is decided here too (:func:`choose_path`), with its
reason as data (:class:`Path`), so the command line and the pages decide alike.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..core.errors import SettingsError
from ..core.jobs import stop_if
from .methods import RAW, resolve, split_names
from ..calibrators import get
from ..calibrators.multiclass.base import MulticlassCalibrator

__all__ = ["cross_fit", "Path", "choose_path"]

#: Above this many rows the command line and the dashboard evaluate on score cells (:mod:`~calibdash.evaluation.cells`);
#: below it the row path costs under a second and keeps its stratified folds.
CELLS_MIN_ROWS = 200_000

#: Ways to choose between rows and score cells (the command line's ``--cells``).
CELLS_CHOICES = ("auto", "always", "never")


@dataclass
class CrossFit:
    """What :func:`cross_fit` fitted and predicted for a sample of ``n``: each pair's ``judged`` positions; per method
    key the ``predictions`` on them, the model to keep (``models``: fitted on the whole sample with ``refit``, else on
    the last pair's fit part) and the ``seconds`` spent.
    """

    n: int
    judged: list
    predictions: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)

    def column(self, key: str, pair: int | None = None) -> np.ndarray:
        """Method ``key``'s predictions as one value per sample position, NaN where not judged: ``pair``'s alone,
        or by default every pair's (a later pair's where two judge the same position)."""
        first = self.predictions[key][0] if self.predictions[key] else np.empty(0)
        out = np.full((self.n,) + np.shape(first)[1:], np.nan)
        for i in (range(len(self.judged)) if pair is None else [pair]):
            out[self.judged[i]] = self.predictions[key][i]
        return out


def _positions(part, n: int) -> np.ndarray:
    """Indices into a sample of ``n``: from a boolean mask or from indices (kept in their order)."""
    part = np.asarray(part)
    if part.dtype == bool:
        if part.size != n:
            raise SettingsError(f"a part's mask has {part.size} values for a sample of {n}.")
        return np.flatnonzero(part)
    return part.astype(np.int64, copy=False)


def resolve_classes(methods, params: Mapping[str, Mapping] | None = None, *, logits: bool = False
                    ) -> dict[str, MulticlassCalibrator]:
    """Key -> new unfitted K-class calibrator, from a name, a comma-separated list, a list, or a mapping key -> name /
    {hyperparameters} / calibrator, ``params`` set on top and ``logits`` on every one. SettingsError for an unknown
    method or hyperparameter, or the reserved key ``"uncalibrated"``."""
    if isinstance(methods, str):
        methods = split_names(methods)
    items = list(methods.items()) if isinstance(methods, Mapping) else [(str(m), None) for m in methods]
    out: dict[str, MulticlassCalibrator] = {}
    for key, value in items:
        key = str(key).strip()
        if key == RAW:
            raise SettingsError(f"{RAW!r} names the raw probabilities; give the calibrators other keys.")
        if isinstance(value, MulticlassCalibrator):
            cal = clone(value)
        else:
            spec = dict(value) if isinstance(value, Mapping) else {}
            name = str(spec.pop("method", value if isinstance(value, str) else key))
            spec.update((params or {}).get(key, {}))
            cal = get(name, "classes", **spec)
        cal.set_params(logits=bool(logits))
        out[key] = cal
    return out


def _fit(model, s, y, features, sample_weight):
    if features is None:
        return model.fit(s, y, sample_weight=sample_weight)
    return model.fit(s, y, features, sample_weight=sample_weight)


def _judge(model, s, features) -> np.ndarray:
    if getattr(model, "multiclass", False):
        return model.predict_proba(s)
    return model.predict(s, features)


def cross_fit(methods, scores, labels, sample_weight=None, pairs: Sequence[tuple] = (),
              features: pd.DataFrame | None = None,
              *, refit: bool = False, progress: Callable[[float, str], None] | None = None,
              should_stop: Callable[[], bool] | None = None) -> CrossFit:
    """Fit each method on every pair's fit part and predict on its judged part.

    Parameters
    ----------
    methods : method spec
        What :func:`calibdash.evaluation.methods.resolve` takes, or a mapping key -> ``MulticlassCalibrator``; each
        calibrator is cloned for every fit.
    scores, labels, sample_weight : ndarray
        Checked scores in [0, 1] and 0/1 labels, or (n, K) probabilities or logits and class indices for multi-class
        calibrators (whose predictions are (m, K)); each row's weight, passed to every fit (None: weight 1).
    pairs : sequence of (fit, judged)
        Parts of the sample, each a boolean mask or an index array.
    features : DataFrame, optional
        One row per sample row, given only to the methods that read features (``uses_features``, MBCT).
    refit, progress, should_stop
        Also fit each method on the whole sample (k-fold's deployable model, what ``models`` keeps); called after
        each fitted pair; asked before each fit, True stopping with :class:`calibdash.core.jobs.Cancelled`.
    """
    # a mapping of multi-class calibrators as given (cloned per fit), binary method specs through resolve
    multi = isinstance(methods, dict) and methods and all(getattr(m, "multiclass", False) for m in methods.values())
    cals = dict(methods) if multi else resolve(methods)
    s = np.asarray(scores)
    y = np.asarray(labels)
    n = s.shape[0]
    if features is not None and any(getattr(c, "uses_features", False) for c in cals.values()):
        features = features.reset_index(drop=True)
    parts = [(_positions(fit, n), _positions(judged, n)) for fit, judged in pairs]
    out = CrossFit(n=n, judged=[te for _, te in parts])
    total = max(1, len(cals) * len(parts))
    done = 0
    for key, cal in cals.items():
        t0 = time.perf_counter()
        feats = features if getattr(cal, "uses_features", False) else None
        preds, model = [], None
        for tr, te in parts:
            stop_if(should_stop, f"fitting {key}")
            model = _fit(clone(cal), s[tr], y[tr], None if feats is None else feats.iloc[tr],
                         None if sample_weight is None else sample_weight[tr])
            preds.append(_judge(model, s[te], None if feats is None else feats.iloc[te]) if te.size
                         else np.empty((0,) + s.shape[1:]))
            done += 1
            if progress:
                progress(done / total, f"{key}: fold {done} of {total}")
        if refit:
            stop_if(should_stop, f"fitting {key}")
            model = _fit(clone(cal), s, y, feats, sample_weight)
        out.predictions[key] = preds
        out.models[key] = model
        out.seconds[key] = time.perf_counter() - t0
    return out


#: The reasons a :class:`Path` gives, each with what it means.
REASONS = {
    "small": f"up to {CELLS_MIN_ROWS:,} rows: judged on the rows",
    "large": f"above {CELLS_MIN_ROWS:,} rows: judged on score cells",
    "features": "a chosen method reads the feature columns: every method is judged on the rows",
    "large source": "a large source's rows stay where they live: judged on the score cells its engine gives",
    "always": "score cells were asked for",
    "never": "rows were asked for",
}


@dataclass(frozen=True)
class Path:
    """Whether a data set is evaluated on score cells (``on_cells``) or on its rows, and why: ``reason``, a key of
    :data:`REASONS`; ``note``, a sentence when the choice costs the user something (large data judged on rows), else "".
    """

    on_cells: bool
    reason: str
    note: str = ""

    def explain(self) -> str:
        """What :data:`REASONS` says of this path's reason."""
        return REASONS[self.reason]


def use_cells_for(n_rows: int, needs_rows: bool = False) -> bool:
    """Whether data of ``n_rows`` rows is evaluated on score cells by default (not when ``needs_rows``: a chosen
    method reads the rows' features, so every method is judged on rows)."""
    return int(n_rows) > CELLS_MIN_ROWS and not needs_rows


def choose_path(n_rows: int, methods=(), feature_columns: Sequence[str] | None = None, *, cells: str = "auto",
                large: bool = False) -> Path:
    """Rows or score cells for ``methods`` on ``n_rows`` rows, with the reason: one reading features (MBCT) needs the
    rows when the data has ``feature_columns``; ``cells`` is ``--cells`` ({"auto", "always", "never"}, else
    SettingsError); a ``large`` source, whose rows stay where they live, is always on score cells.
    """
    if cells not in CELLS_CHOICES:
        raise SettingsError(f"cells must be one of {CELLS_CHOICES}, got {cells!r}.")
    if large:
        return Path(True, "large source")
    if cells != "auto":
        return Path(cells == "always", cells)
    cals = resolve(methods) if feature_columns else {}
    readers = [key for key, cal in cals.items() if getattr(cal, "uses_features", False)]
    if use_cells_for(n_rows, bool(readers)):
        return Path(True, "large")
    if int(n_rows) <= CELLS_MIN_ROWS:
        return Path(False, "small")
    users = [type(cals[key]).label or key for key in readers]
    note = (f"{', '.join(users)} reads the feature columns ({', '.join(feature_columns)}), so "
            f"{'every method here is' if len(cals) > 1 else 'it is'} fitted and judged on the "
            f"{int(n_rows):,} rows rather than on score cells, which takes longer at this size.")
    return Path(False, "features", note)
