"""How rows are divided between fitting and judging: :class:`Scheme`, and the split column's rule.

A module of its own, below :mod:`calibdash.evaluation` and the engines
(:mod:`calibdash.engines`), so that an engine can plan a scheme's parts
without importing the evaluation. :mod:`calibdash.evaluation` re-exports
every name here (``from calibdash.evaluation import Scheme`` keeps working);
its module docstring says what each kind means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["Scheme", "KINDS", "TRAIN_WORDS", "TEST_WORDS", "column_parts"]

TRAIN_WORDS = frozenset({"train", "training", "calib", "calibration", "cal", "fit", "dev"})
TEST_WORDS = frozenset({"test", "testing", "holdout", "hold-out", "valid", "validation", "val", "eval"})
KINDS = ("split", "column", "kfold", "insample")


@dataclass(frozen=True)
class Scheme:
    """How rows are divided between fitting and judging (see the module docstring).

    Parameters
    ----------
    kind : {"split", "column", "kfold", "insample"}, default "split"
    test_size : float, default 0.3
        Held-out fraction for ``"split"``.
    seed : int, default 0
        Seed of the split or of the fold shuffle.
    n_folds : int, default 5
        K for ``"kfold"``.
    train_value : str, optional
        For ``"column"``: the split column's value marking training rows
        (every other value is then held out).
    """

    kind: str = "split"
    test_size: float = 0.3
    seed: int = 0
    n_folds: int = 5
    train_value: str | None = None

    def describe(self, on_cells: bool = False) -> str:
        """One line for the sidebar and reports; ``on_cells``: rows divided by their hashed position
        (:mod:`calibdash.cells`), not stratified by label."""
        how = "Random split by row hash" if on_cells else "Stratified split"
        if self.kind == "split":
            return (f"{how}: {100 * (1 - self.test_size):.0f}% fit / "
                    f"{100 * self.test_size:.0f}% held out (seed {self.seed})")
        if self.kind == "column":
            return "The file's split column" + (f" (train = {self.train_value!r})" if self.train_value else "")
        if self.kind == "kfold":
            return f"{self.n_folds}-fold cross-fitting{' by row hash' if on_cells else ''} (seed {self.seed})"
        if self.kind == "insample":
            return "In-sample: fitted and judged on the same rows (optimistic)"
        return self.kind


def column_parts(split: np.ndarray, train_value: str | None) -> np.ndarray:
    """Boolean mask of training rows from a split column: the value ``train_value`` marks them, or else the
    words of :data:`TRAIN_WORDS` (every value must then name a part: one of :data:`TRAIN_WORDS` or
    :data:`TEST_WORDS`, case and surrounding spaces aside).

    Raises
    ------
    DataError
        No row has ``train_value``, or a value names neither part.
    """
    vals = pd.Series(split).astype(str).str.strip()
    if train_value is not None:
        mask = (vals == str(train_value)).to_numpy()
        if not mask.any():
            raise DataError(f"no row of the split column has the value {train_value!r}; "
                            f"its values are {sorted(vals.unique())[:10]}.")
        return mask
    low = vals.str.lower()
    is_train = low.isin(TRAIN_WORDS).to_numpy()
    is_test = low.isin(TEST_WORDS).to_numpy()
    unknown = sorted(vals[~(is_train | is_test)].unique())
    if unknown:
        raise DataError(
            f"the split column has values {unknown[:10]} that name neither a training part "
            f"({', '.join(sorted(TRAIN_WORDS))}) nor a test part ({', '.join(sorted(TEST_WORDS))}); "
            "choose which value marks the training rows."
        )
    return is_train
