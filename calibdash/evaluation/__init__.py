"""Judging calibrators on held-out rows: the scheme, the split, the cross-fit, the cells, the bootstrap, the verdict."""

from .scheme import Scheme
from .holdout import evaluate, evaluate_cells

__all__ = ["Scheme", "evaluate", "evaluate_cells"]
