"""calibdash: calibration of binary classifiers, as a toolkit and a dashboard.

The package never imports streamlit: everything the dashboard shows is
computed here and can be used from a notebook or the command line.
"""
from .errors import DataError, NotFittedError
from .data import load_scores, ScoreSet

__version__ = "0.1.0"
__all__ = ["DataError", "NotFittedError", "load_scores", "ScoreSet", "__version__"]
