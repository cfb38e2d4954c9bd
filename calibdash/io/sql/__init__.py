"""A saved model as SQL: :func:`calibdash.calibrators.sql.to_sql` on a model file too (:mod:`calibdash.calibrators.sql`
says how each form's SQL equals ``predict``)."""
from __future__ import annotations

from .. import export
from ...calibrators import sql
from ...core.errors import DataError
from ...core.sql_forms import SqlMap, SqlUnsupported, SqlWriter, literal, quote

__all__ = ["SqlUnsupported", "SqlWriter", "to_sql", "literal", "quote"]


def to_sql(calibrator_or_model, *args, **kwargs) -> SqlMap:
    """:func:`calibdash.calibrators.sql.to_sql` (its other arguments and errors) on a fitted calibrator, a loaded
    model (:func:`calibdash.io.export.read_model`), or a binary model file's path or text (a DataError for anything
    else or a damaged file, an EnvironmentProblem for an unreadable one)."""
    return sql.to_sql(export.load_model(calibrator_or_model, "to_sql", DataError).calibrator, *args, **kwargs)
