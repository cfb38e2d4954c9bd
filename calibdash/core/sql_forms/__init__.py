"""The SQL forms a calibrator's ``sql_map`` returns and the :class:`SqlMap` they become (:mod:`.forms`), the
dialect's literals and names they are written with (:mod:`.writer`); :mod:`calibdash.io.sql` turns calibrators and
model files into SQL and says why each form's SQL equals ``predict``."""
from .forms import CASE_MAX_STEPS, ClosedForm, LinearMap, Lookup, SqlMap, StepMap
from .writer import DIALECTS, SqlUnsupported, SqlWriter, literal, quote

__all__ = ["CASE_MAX_STEPS", "ClosedForm", "LinearMap", "StepMap", "Lookup", "SqlMap", "DIALECTS",
           "SqlUnsupported", "SqlWriter", "literal", "quote"]
