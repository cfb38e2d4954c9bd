"""A fitted calibrator as SQL: calibrate scores where the data lives.

>>> from calibdash import calibrators
>>> from calibdash.calibrators.sql import to_sql
>>> cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
>>> print(to_sql(cal, score_column="score").expression)
CASE WHEN "score" IS NULL THEN NULL WHEN "score" < 0.25E0 THEN 0.0E0 ELSE 1.0E0 END

:func:`to_sql` turns a fitted calibrator (:func:`calibdash.io.sql.to_sql`: or a model file) into a :class:`SqlMap`: a
scalar SQL expression over the score column that equals ``calibrator.predict`` on every score in [0, 1] (NULL where
the score is NULL), plus, for large maps, small lookup tables written as ``VALUES`` lists. Dialects: ``"duckdb"``,
``"spark"`` and ``"ansi"`` (double-quoted names, ``DOUBLE PRECISION``, ``LN``/``EXP``, ``GREATEST``/``LEAST``, which
PostgreSQL, Snowflake, BigQuery, Trino, Redshift and Oracle all have).

Forms
-----
Each calibrator class's ``sql_map`` (:meth:`calibdash.calibrators.base.Calibrator.sql_map`) returns one of the forms
of :mod:`calibdash.core.sql_forms`, built from the fitted state its ``predict`` uses, or None (no SQL form); for a
class one cannot edit, :func:`register_sql` registers a converter from its model file's state.

:class:`ClosedForm`
    A formula. Platt: ``1 / (1 + exp(-(a logit(s) + b)))`` with the score clipped to ``[EPS, 1 - EPS]`` and
    ``logit(s) = ln(s) - log1p(-s)`` as ``platt.py`` computes it; DuckDB and ANSI SQL have no ``log1p``, so there it
    is Goldberg's accurate form ``ln(u) * x / (u - 1)`` with ``u = 1 + x`` (``x`` itself when ``u = 1``). A closed
    form thus agrees with ``predict`` to rounding, not bit for bit (``exp`` and ``ln`` of the engine and of numpy may
    differ in the last bit; measured: at most 9e-16 relative). Beta calibration and temperature scaling likewise.
    MBCT's closed form has no ``exp``: per tree, a nested ``CASE`` routes the row to its node with exactly its
    codes' comparisons (:func:`calibdash.calibrators._mbct_sql.mbct_form`); it equals ``predict`` bit for bit.
:class:`StepMap`
    ``levels[k]`` on ``cuts[k-1] <= s < cuts[k]``: exactly :func:`calibdash.core.step_maps.step_lookup` (a score on a
    cut takes the upper piece). Histogram, isotonic, BBQ, SBB, Venn-Abers. A point override ``x`` (BBQ's ``point_x``)
    is the piece ``[x, nextafter(x, +inf))``, which holds exactly the double ``x``. Up to :data:`CASE_MAX_STEPS`
    pieces the map is one ``CASE``; above, a lookup table of the pieces (``form="lookup"``) or a binary search of
    nested CASEs (``form="bisect"``: one expression, but engines evaluate a CASE of thousands of arms slowly). The
    table is joined on the bucket ``floor(s * g)`` (``g`` a power of 2 at least twice the pieces: an exact product),
    each piece listed once per bucket it meets, plus the range ``s >= lo AND s < hi``: a hash join, not a nested
    loop. Either way the comparisons are those ``searchsorted`` makes, so the result is the same double. The levels
    are clipped to [0, 1] beforehand, as ``predict`` clips its output.
:class:`LinearMap`
    Linear interpolation between knots (isotonic with linear interpolation, ABB, ENIR), or the same extended beyond
    the end knots (ELiTE), clipped to [0, 1]: :func:`calibdash.core.step_maps.interp` (the overflow-free
    ``np.interp`` of ``predict``) operation for operation: ``y[0]`` below ``x[0]``, ``y[-1]`` at or above ``x[-1]``,
    otherwise on ``x_j <= s < x_{j+1}`` the position ``t = (s - x_j) / (x_{j+1} - x_j)``, then ``y_{j+1}`` if
    ``t >= 1``, else ``y_j + t (y_{j+1} - y_j)`` kept between ``y_j`` and ``y_{j+1}``. No slope is formed, so knots
    closer than 1e-308 interpolate as any others; a score on a repeated knot takes its last copy's value. Small maps
    are a ``CASE``; large ones join a table of intervals as step maps do.

Floats are written as Python's shortest ``repr`` with an exponent (``0.1E0``), which every dialect reads as a DOUBLE
(a plain ``0.1`` would be a DECIMAL in DuckDB and Spark) rounding back to the same double; negative literals are
parenthesised (``x - (-0.5E0)``, never ``--``). A method without a SQL form, or a state the forms cannot hold (MBCT
categories of mixed types), raises :class:`SqlUnsupported`; :func:`calibdash.engines.apply.apply_model` then calls
``predict`` from the engine in batches.
"""
from __future__ import annotations

import json
from typing import Callable, Mapping

from ..core.errors import DataError, SettingsError
from ..core.sql_forms import CASE_MAX_STEPS, ClosedForm, LinearMap, SqlMap, SqlUnsupported, SqlWriter, StepMap, quote
from ..core.sql_forms.forms import closed_sql as _closed_sql
from ..core.sql_forms.forms import linear_sql as _linear_sql
from ..core.sql_forms.forms import step_sql as _step_sql
from ..core.sql_forms.writer import check_dialect as _check_dialect
from .base import Calibrator

__all__ = ["register_sql", "sql_methods", "to_sql"]

FORMS = ("auto", "case", "bisect", "lookup", "scalar")


Converter = Callable[[dict, dict], "ClosedForm | StepMap | LinearMap"]
_CONVERTERS: dict[str, Converter] = {}


def register_sql(name: str, converter: Converter) -> None:
    """Say how the calibrator registered as ``name`` is written as SQL, from outside its class (for a class one cannot
    edit; a registered converter is asked before the class's own ``sql_map``, and registering a name again replaces
    it). ``converter(state, params)`` returns a :class:`ClosedForm`, :class:`StepMap` or :class:`LinearMap` from the
    calibrator's ``_export_state()`` and ``get_params()``, or raises :class:`SqlUnsupported` for a state it cannot
    write."""
    if not callable(converter):
        raise SettingsError(f"the SQL converter of {name!r} must be callable.")
    _CONVERTERS[name] = converter


def sql_methods() -> list[str]:
    """Registry names whose class defines its own ``sql_map``, then names with a registered converter
    (:func:`to_sql` still raises :class:`SqlUnsupported` where a fitted state has no form)."""
    from . import classes
    names = [n for n, cls in classes().items() if cls.sql_map is not Calibrator.sql_map]
    return names + [n for n in _CONVERTERS if n not in names]


def to_sql(calibrator, score_column: str = "score", dialect: str = "duckdb",
           feature_columns: Mapping[str, str | None] | None = None, form: str = "auto",
           max_case: int = CASE_MAX_STEPS) -> SqlMap:
    """The calibrator as SQL over the column ``score_column``.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted binary calibrator (a model file: :func:`calibdash.io.sql.to_sql`).
    score_column : str, default "score"
        Column holding the scores, in [0, 1] (already mapped by the logistic function if the model was fitted on
        margins: see ``fitted_on``).
    dialect : {"duckdb", "spark", "ansi"}, default "duckdb"
    feature_columns : mapping, optional
        Feature-aware methods (MBCT): the model's feature name -> the SQL column holding it (default: the same name);
        None for a feature that is absent (coded unseen on every row, as ``predict`` without it).
    form : {"auto", "scalar", "case", "bisect", "lookup"}, default "auto"
        For step and linear maps: one flat CASE up to ``max_case`` pieces (:data:`CASE_MAX_STEPS`), above it a lookup
        table ("auto") or a binary search written as nested CASEs ("scalar"); or the form asked for. The lookup form's
        join need not keep the rows' order; the other forms do. Scores must lie in [0, 1] or be NULL.

    Raises
    ------
    SqlUnsupported
        The method has no SQL form, or this fitted state cannot be written.
    SettingsError
        Unknown dialect or form.
    """
    _check_dialect(dialect)
    if form not in FORMS:
        raise SettingsError(f"form must be one of {', '.join(FORMS)}; got {form!r}.")
    if not isinstance(calibrator, Calibrator):
        raise DataError(f"to_sql takes a fitted calibrator (a model file: calibdash.io.sql.to_sql), "
                        f"not {type(calibrator).__name__}.")
    calibrator._check_fitted()
    method = type(calibrator).name
    if method in _CONVERTERS:                                           # a registered converter, else sql_map
        state = json.loads(json.dumps(calibrator._export_state()))      # exactly what a model file holds
        shape = _CONVERTERS[method](state, calibrator.get_params())
    else:
        shape = calibrator.sql_map()
    if shape is None:
        raise SqlUnsupported(f"{method} cannot be written as SQL (its class declares no SQL form; the methods "
                             f"that can: {', '.join(sql_methods())}); apply it with predict instead.")
    feats = {k: (None if v is None else quote(v, dialect)) for k, v in dict(feature_columns or {}).items()}
    writer = SqlWriter(dialect, quote(score_column, dialect), feats)
    if isinstance(shape, StepMap):
        return _step_sql(shape, writer, form, method, score_column, max_case)
    if isinstance(shape, LinearMap):
        return _linear_sql(shape, writer, form, method, score_column, max_case)
    if isinstance(shape, ClosedForm):
        return _closed_sql(shape, writer, method, score_column)
    raise SqlUnsupported(f"the SQL form of {method} is a {type(shape).__name__}, not a form of calibdash.io.sql.")
