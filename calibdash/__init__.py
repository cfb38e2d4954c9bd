"""calibdash: calibration of binary classifiers, as a toolkit and a dashboard.

The package never imports streamlit: everything the dashboard shows is
computed here and can be used from a notebook or the command line.

Where things are: :mod:`calibdash.calibrators` fits (one calibrator per
module), :mod:`calibdash.explain` explains a fitted calibrator as plain data
(one module per method), :mod:`calibdash.figures` draws (plotly, one module
per method for the inner workings); :mod:`calibdash.data` reads and
validates files, :mod:`calibdash.metrics` measures, :mod:`calibdash.evaluation.holdout`
judges on held-out rows, :mod:`calibdash.evaluation.methods` turns a user's choice of
methods into calibrators, :mod:`calibdash.cli` is the command line.
"""
from .core.errors import (CalibdashError, DataError, EnvironmentProblem, NotFittedError, ProgrammingError,
                     SettingsError)
from .core import __version__
from .data import load_scores, ScoreSet

__all__ = ["CalibdashError", "DataError", "SettingsError", "EnvironmentProblem", "ProgrammingError",
           "NotFittedError", "load_scores", "ScoreSet", "__version__"]
