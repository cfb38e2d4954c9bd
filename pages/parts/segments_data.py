"""Groups & time's numbers: the keyed cells of the page's data, and every measure of them, cached.

The page computes **keyed cells** (:class:`calibdash.monitoring.keyed.KeyedCells`) once per data, key column, key
settings and scheme, and every view from them through :mod:`calibdash.monitoring.keyed.per_key`:

* an upload or a sample: :func:`calibdash.monitoring.keyed.from_rows.keyed_cells` of the ScoreSet's rows, the rows' parts
  those of the evaluation scheme (:func:`calibdash.evaluation.holdout.cell_parts`, by row position, as every engine
  draws them), kept in a cache bounded by bytes; no copy of the rows is kept;
* a large source: the keyed aggregation runs as a job on the data root's connection
  (:func:`pages.parts.large_source.keyed_or_stop`), its cells kept in a bounded store.

Each measure is cached on the cells' identity (:class:`Cells` ``.id``) and its settings, so the same
cells give the same numbers as ``python -m calibdash groups`` / ``drift`` on the same rows.
"""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from calibdash.core.limits import MAX_GROUP_VALUES, limit_name
from calibdash.core.errors import SettingsError
from calibdash.evaluation.holdout import cell_parts
from calibdash.monitoring.groups import column_for_rows
from calibdash.monitoring.keyed import Key, KeyedCells
from calibdash.monitoring.keyed import per_key as kmeasures
from calibdash.monitoring.keyed.from_rows import keyed_cells
from calibdash.evaluation.scheme import Scheme
from pages.parts import bounded_cache
from pages.parts.fitting import is_large

__all__ = ["Cells", "check_group_values", "keyed", "by_key", "fix_keys", "over_periods", "staleness_of",
           "group_diagram_rows"]


class Cells(NamedTuple):
    """Keyed cells and the text identifying them (data, key, scheme) for the caches of their measures."""

    id: str
    kc: KeyedCells


def check_group_values(values: pd.Series, key: Key) -> None:
    """Refuse a group column of text with more than :data:`~calibdash.core.limits.MAX_GROUP_VALUES` distinct
    values, counted in one pass (a hash of the values) before any work per group; a column of numbers is cut
    into quantile groups whatever its distinct values, and a period key counts periods, not values."""
    if key.kind != "group" or (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)):
        return
    n = len(values.cat.categories) if isinstance(values.dtype, pd.CategoricalDtype) else values.nunique()
    if n > MAX_GROUP_VALUES:
        raise SettingsError(f"{key.column} has {n:,} distinct values, more than the {MAX_GROUP_VALUES:,} a group "
                            f"column may have {limit_name('MAX_GROUP_VALUES')}, and far more than the "
                            f"{key.max_groups} groups that can be compared side by side: choose a column of "
                            "fewer values, or bin this one into fewer.")


@bounded_cache.cache_data(show_spinner="Summarising the rows into keyed score cells…", max_entries=16,
                          budget="segments_data.rows_keyed")
def _rows_keyed(data_key: str, key: Key, scheme: Scheme | None, _ss) -> KeyedCells:
    part = None if scheme is None else cell_parts(_ss.n_rows, scheme, _ss.split)
    values = column_for_rows(_ss, key.column)
    check_group_values(values, key)
    return keyed_cells(_ss.scores, _ss.labels, values, key, part)


def keyed(ss, key: Key, scheme: Scheme | None = None) -> Cells:
    """The keyed cells of ``ss`` (a ScoreSet, or a large source's LargeData) by ``key``, parts from ``scheme``
    (None: one part). On a large source the page shows the job's progress and stops until they are kept.

    Raises
    ------
    DataError, SettingsError
        As :func:`calibdash.monitoring.keyed.from_rows.keyed_cells` (uploads; a large source's job says why it stopped), and
        a group column of text past :data:`~calibdash.core.limits.MAX_GROUP_VALUES` distinct values
        (:func:`check_group_values`).
    """
    if is_large(ss):
        from pages.parts.large_source import keyed_or_stop

        return Cells(*keyed_or_stop(key, scheme))
    data_key = ss.content_key()
    return Cells(f"{data_key}|{key!r}|{scheme!r}", _rows_keyed(data_key, key, scheme, ss))


@bounded_cache.cache_data(show_spinner="Measuring every group…", max_entries=32, budget="segments_data.by_key")
def _by_key(cells_id: str, n_bins: int, n_boot: int, seed: int, _kc):
    return kmeasures.by_key(_kc, n_bins=n_bins, n_boot=n_boot, seed=seed)


def by_key(cells: Cells, n_bins: int, n_boot: int, seed: int):
    """:func:`calibdash.monitoring.keyed.per_key.by_key` of ``cells``, cached."""
    return _by_key(cells.id, n_bins, n_boot, seed, cells.kc)


@bounded_cache.cache_data(show_spinner="Fitting the calibrators on the fitting cells…", max_entries=32,
                          budget="segments_data.fix_keys")
def _fix_keys(cells_id: str, method: str, scheme: Scheme, n_bins: int, n_boot: int, seed: int, _kc):
    return kmeasures.fix_keys(_kc, method, scheme, n_bins=n_bins, n_boot=n_boot, seed=seed)


def fix_keys(cells: Cells, method: str, scheme: Scheme, n_bins: int, n_boot: int, seed: int):
    """:func:`calibdash.monitoring.keyed.per_key.fix_keys` of ``cells`` (whose parts come from ``scheme``), cached."""
    return _fix_keys(cells.id, method, scheme, n_bins, n_boot, seed, cells.kc)


@bounded_cache.cache_data(show_spinner="Measuring every period…", max_entries=32, budget="segments_data.over_periods")
def _over_periods(cells_id: str, n_bins: int, n_boot: int, seed: int, _kc):
    return kmeasures.over_periods(_kc, n_bins=n_bins, n_boot=n_boot, seed=seed)


def over_periods(cells: Cells, n_bins: int, n_boot: int, seed: int):
    """:func:`calibdash.monitoring.keyed.per_key.over_periods` of ``cells``, cached."""
    return _over_periods(cells.id, n_bins, n_boot, seed, cells.kc)


@bounded_cache.cache_data(show_spinner="Fitting a calibrator on every period…", max_entries=32,
                          budget="segments_data.staleness")
def _staleness_of(cells_id: str, method: str, n_bins: int, _kc):
    return kmeasures.staleness_of(_kc, method, n_bins=n_bins)


def staleness_of(cells: Cells, method: str, n_bins: int):
    """:func:`calibdash.monitoring.keyed.per_key.staleness_of` of ``cells``, cached."""
    return _staleness_of(cells.id, method, n_bins, cells.kc)


def group_diagram_rows(cells: Cells, name: str) -> tuple[pd.DataFrame, object, object]:
    """``(scores frame, labels, weights)`` of group ``name``'s cells as weighted rows, for a reliability
    diagram of that group alone (one point per cell side, never per row)."""
    c = cells.kc.of(cells.kc.labels.index(name))
    p, y, w = c.weighted_predictions(c.score)
    return pd.DataFrame({str(name): p}), y, w
