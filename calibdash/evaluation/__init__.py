"""Judging calibrators on held-out rows: the scheme, the split, the cross-fit, the cells, the bootstrap, the verdict."""

from .scheme import Scheme
from .holdout import UNCALIBRATED, Evaluation, evaluate, evaluate_cells, evaluate_problem

__all__ = ["Scheme", "UNCALIBRATED", "Evaluation", "evaluate", "evaluate_cells", "evaluate_problem"]
