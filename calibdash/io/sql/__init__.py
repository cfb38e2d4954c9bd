"""A fitted calibrator as SQL: calibrate scores where the data lives.

>>> from calibdash import calibrators
>>> from calibdash.io import sql
>>> cal = calibrators.get("histogram", n_bins=2).fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
>>> m = sql.to_sql(cal, score_column="score")
>>> print(m.expression)
CASE WHEN "score" IS NULL THEN NULL WHEN "score" < 0.25E0 THEN 0.0E0 ELSE 1.0E0 END
>>> print(m.select("my_table", keep_columns=["id"]))                  # doctest: +NORMALIZE_WHITESPACE
SELECT src."id", CASE WHEN src."score" IS NULL THEN NULL WHEN src."score" < 0.25E0 THEN 0.0E0
ELSE 1.0E0 END AS calibrated
FROM my_table AS src

:func:`to_sql` turns a calibrator (or a model file written by :mod:`calibdash.io.export`) into a :class:`SqlMap`: a
scalar SQL expression over the score column that equals ``calibrator.predict`` on every score in [0, 1] (NULL where
the score is NULL), plus, for large maps, small lookup tables written as ``VALUES`` lists. Three dialects:
``"duckdb"``, ``"spark"`` (Spark SQL) and ``"ansi"`` (double-quoted names, ``DOUBLE PRECISION``, ``LN``/``EXP``,
``GREATEST``/``LEAST``, which PostgreSQL, Snowflake, BigQuery, Trino, Redshift and Oracle all have).

Forms
-----
Each calibrator class says what its map is with its ``sql_map`` method
(:meth:`calibdash.calibrators.base.Calibrator.sql_map`): one of the three forms of :mod:`calibdash.core.sql_forms`,
built from the fitted state its ``predict`` uses, or None (no SQL form); for a class one cannot edit,
:func:`register_sql` registers a converter from its model file's state.

:class:`ClosedForm`
    A formula. Platt: ``1 / (1 + exp(-(a logit(s) + b)))`` with the score clipped to ``[EPS, 1 - EPS]``
    (``calibdash.calibrators.platt.EPS``) and ``logit(s) = ln(s) - log1p(-s)`` as ``platt.py`` computes it. DuckDB
    and ANSI SQL have no ``log1p``; there it is Goldberg's accurate form ``ln(u) * x / (u - 1)`` with ``u = 1 + x``
    (``x`` itself when ``u = 1``), within an ulp or two of ``log1p``. So a closed form agrees with ``predict`` to
    rounding, not bit for bit: ``exp`` and ``ln`` of the engine and of numpy may differ in the last bit (measured:
    at most 9e-16 relative, against 4e-15 allowed by the tests). Beta calibration and temperature scaling likewise.
    MBCT is a closed form too, without ``exp``: per tree, a nested ``CASE`` routes the row to its node (comparisons
    that are exactly those of its codes: :func:`calibdash.calibrators._mbct_sql.mbct_form`), whose line maps the
    previous output, clipped to [0, 1]; it equals ``predict`` bit for bit.
:class:`StepMap`
    ``levels[k]`` on ``cuts[k-1] <= s < cuts[k]``: exactly :func:`calibdash.core.step_maps.step_lookup`
    (``np.searchsorted(cuts, s, side="right")``: a score on a cut takes the upper piece). Histogram, isotonic
    (step), BBQ, SBB, Venn-Abers. A point override ``x`` (BBQ's ``point_x``) becomes the piece
    ``[x, nextafter(x, +inf))``, which holds exactly the double ``x``, so it needs no equality test. Up to
    :data:`CASE_MAX_STEPS` pieces the map is ``CASE WHEN s < c0 THEN l0 ... ELSE ln END``. Above, either a lookup
    table of the pieces (``form="lookup"``, the default) or a binary search written as nested CASEs
    (``form="bisect"``: one scalar expression, but engines evaluate a CASE of thousands of arms slowly). The lookup
    table is joined on a bucket of the score, ``floor(s * g)`` with ``g`` a power of 2 at least twice the pieces (an
    exact product), each piece listed once per bucket it meets, plus the range ``s >= lo AND s < hi``: a hash join
    rather than a nested loop. Either way the comparisons are the ones ``searchsorted`` makes, so the result is the
    same double. The levels are clipped to [0, 1] beforehand, as ``predict`` clips its output.
:class:`LinearMap`
    Linear interpolation between knots (isotonic with linear interpolation, ABB, ENIR), or the same with linear
    extension beyond the end knots (ELiTE), then clipped to [0, 1]. Equal to :func:`calibdash.core.step_maps.interp`
    (the overflow-free ``np.interp`` that ``predict`` uses) operation for operation: below ``x[0]`` the value is
    ``y[0]``, at or above ``x[-1]`` it is ``y[-1]``, otherwise, on ``x_j <= s < x_{j+1}``, the position
    ``t = (s - x_j) / (x_{j+1} - x_j)`` and then ``y_{j+1}`` if ``t >= 1``, else ``y_j + t (y_{j+1} - y_j)`` kept
    between ``y_j`` and ``y_{j+1}``, the differences computed in Python as numpy computes them. No slope is formed,
    so knots closer than 1e-308 interpolate as any others. A score equal to a repeated knot takes the value of its
    last copy. Small maps are a ``CASE``; large ones join a table of intervals as step maps do.

Floats are written as Python's shortest ``repr`` with an exponent (``0.1E0``), which every dialect reads as a
DOUBLE literal (a plain ``0.1`` would be a DECIMAL in DuckDB and Spark) rounding back to the same double; negative
literals are parenthesised (``x - (-0.5E0)``, never ``--``).

A method without a SQL form, or a state the forms cannot hold (MBCT categories of mixed types), raises
:class:`SqlUnsupported`; :func:`calibdash.engines.apply.apply_model` then falls back to calling ``predict`` from the
engine in vectorised batches.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Mapping

from ...core.errors import DataError, SettingsError
from ...core.sql_forms import CASE_MAX_STEPS, ClosedForm, LinearMap, SqlMap, SqlUnsupported, SqlWriter
from ...core.sql_forms import StepMap, literal, quote
from ...core.sql_forms.forms import closed_sql as _closed_sql
from ...core.sql_forms.forms import linear_sql as _linear_sql
from ...core.sql_forms.forms import step_sql as _step_sql
from ...core.sql_forms.writer import check_dialect as _check_dialect

__all__ = ["SqlUnsupported", "SqlWriter", "to_sql", "literal", "quote"]

FORMS = ("auto", "case", "bisect", "lookup", "scalar")


Converter = Callable[[dict, dict], "ClosedForm | StepMap | LinearMap"]
_CONVERTERS: dict[str, Converter] = {}


def register_sql(name: str, converter: Converter) -> None:
    """Say how the calibrator registered as ``name`` is written as SQL, from outside its class (for a class one
    cannot edit; a registered converter is asked before the class's own ``sql_map``).

    Parameters
    ----------
    name : str
        The calibrator's registry name (``Calibrator.name``).
    converter : callable
        ``converter(state, params)`` -> :class:`ClosedForm`, :class:`StepMap` or :class:`LinearMap`, where ``state``
        is the calibrator's ``_export_state()`` (what the model file holds) and ``params`` its ``get_params()``. It
        raises :class:`SqlUnsupported` for a state it cannot write. Registering a name again replaces it.
    """
    if not callable(converter):
        raise SettingsError(f"the SQL converter of {name!r} must be callable.")
    _CONVERTERS[name] = converter


def sql_methods() -> list[str]:
    """Registry names whose class defines its own ``sql_map``, then names with a registered converter
    (:func:`to_sql` still raises :class:`SqlUnsupported` where a fitted state has no form)."""
    from ... import calibrators
    from ...calibrators.base import Calibrator
    names = [n for n, cls in calibrators.classes().items() if cls.sql_map is not Calibrator.sql_map]
    return names + [n for n in _CONVERTERS if n not in names]


def _form(cal) -> "ClosedForm | StepMap | LinearMap | None":
    """The fitted calibrator's form: a registered converter's, else its own ``sql_map``'s."""
    method = type(cal).name
    if method in _CONVERTERS:
        state = json.loads(json.dumps(cal._export_state()))      # exactly what a model file holds
        return _CONVERTERS[method](state, cal.get_params())
    return cal.sql_map()


def _calibrator(model):
    """The fitted calibrator in ``model``: a Calibrator, an ExportedModel, a model file's path or text."""
    from .. import export
    from ...calibrators.base import Calibrator
    if isinstance(model, Calibrator):
        model._check_fitted()
        return model
    if isinstance(model, export.ExportedModel):
        return model.calibrator
    if isinstance(model, (bytes, bytearray)) or (isinstance(model, str) and model.lstrip().startswith("{")):
        return export.read_model(model, "binary").calibrator
    if isinstance(model, (str, Path)):
        try:
            text = Path(model).read_bytes()
        except OSError as exc:
            from ...core.errors import EnvironmentProblem
            raise EnvironmentProblem(f"cannot read the model file {model}: {exc.strerror or exc}.") from None
        return export.read_model(text, "binary").calibrator
    raise DataError(f"to_sql takes a fitted calibrator, an exported model or a model file, "
                    f"not {type(model).__name__}.")


def to_sql(calibrator_or_model, score_column: str = "score", dialect: str = "duckdb",
           feature_columns: Mapping[str, str | None] | None = None, form: str = "auto",
           max_case: int = CASE_MAX_STEPS) -> SqlMap:
    """The calibrator as SQL over the column ``score_column``.

    Parameters
    ----------
    calibrator_or_model : Calibrator, ExportedModel, path or str
        A fitted calibrator, a loaded model (:func:`calibdash.io.export.read_model`), or a model file's path or text.
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
    cal = _calibrator(calibrator_or_model)
    method = type(cal).name
    shape = _form(cal)
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
