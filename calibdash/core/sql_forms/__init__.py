"""The SQL forms of a fitted map and their writers, below the calibrators that build them.

A calibrator's ``sql_map`` returns a :class:`ClosedForm`, :class:`StepMap` or :class:`LinearMap`
(:mod:`.forms`), built with the dialect's literals and quoted names (:mod:`.writer`); written out, a form
becomes a :class:`SqlMap` with its :class:`Lookup` tables (:mod:`.lookup`). Turning a calibrator or a model
file into SQL (``to_sql``, ``register_sql``, ``sql_methods``) is :mod:`calibdash.io.sql`, which also
says what each form computes and why its SQL equals ``predict``.
"""
from .forms import CASE_MAX_STEPS, ClosedForm, LinearMap, StepMap
from .lookup import Lookup, SqlMap
from .writer import DIALECTS, SqlUnsupported, SqlWriter, literal, quote

__all__ = ["CASE_MAX_STEPS", "ClosedForm", "LinearMap", "StepMap", "Lookup", "SqlMap", "DIALECTS",
           "SqlUnsupported", "SqlWriter", "literal", "quote"]
