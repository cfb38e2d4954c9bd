"""The calibrator class the scaling family shares: fit on the log-scores, predict ``softmax(W x + b)``."""
from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
import pandas as pd

from ...core.errors import DataError, SettingsError
from .base import MulticlassCalibrator, Scores
from .linear import check_size, fit_linear
from .linear_map import LinearForm, n_parameters, predict_linear, unpack
from .penalty_search import TooFewRowsError, penalty_grid, select_penalty

__all__ = []


class PenaltyFallbackWarning(UserWarning):
    """The penalty could not be chosen by cross-validation; the stated fixed strengths were used."""


class ScalingCalibrator(MulticlassCalibrator):
    """What the scaling family shares: fit :func:`~calibdash.calibrators.multiclass.linear.fit_linear` on the
    log-scores (or log-probabilities), predict ``softmax(W x + b)``, export ``W`` and ``b``.

    A subclass declares ``matrix`` (the form of ``W``; default full), ``bias`` (default True), ``on_log_probabilities``
    (Dirichlet) and ``default_penalty``, and ``input_form`` where it calibrates other scores than logits; its
    constructor may take ``reg``, ``lam``, ``mu``, ``select`` (choose them by
    :func:`~calibdash.calibrators.multiclass.penalty_search.select_penalty`), ``lambdas``/``mus``, ``n_folds``,
    ``seed``.

    Degenerate data. A class no row of positive weight names keeps the fitted temperature's map and a probability above
    0. Labels of one class only are refused by the vector and full maps (they carry nothing about one class against
    another); temperature scaling fits them (its factor runs to a bound). With fewer distinct rows than folds the
    constructor's ``lam`` and ``mu`` are used, and a :class:`PenaltyFallbackWarning` and ``penalty_note_`` say so.

    Attributes (fitted)
    -------------------
    theta_ : ndarray
        W's free entries (1, K or K*K, row-major) then b (if any).
    lambda_, mu_ : float
        The penalty strengths used (chosen or fixed; 0 without a penalty).
    cv_grid_, cv_losses_, cv_n_iter_ : list of (lambda, mu), ndarray, list of int; or None
        The grid searched, each point's held-out log-loss, the solver iterations of each fit of the search in order
        (None when nothing was searched).
    coef_, intercept_ : ndarray
        W as a K x K matrix (``1/T`` times the identity for temperature, the diagonal for vector scaling) and b
        (zeros without one), as ``theta_`` holds them.
    path_ : DataFrame or None
        The cross-validated search: the held-out log-loss against lambda, a column per mu, the chosen lambda marked
        (``chosen``); None when nothing was searched.
    penalty_note_ : str or None
        Why the penalty was not chosen by cross-validation when it was asked to be (None otherwise).
    absent_classes_ : tuple of int
        The classes no fitting row names (their parameters kept at the temperature map's).
    nll_, n_iter_, converged_, stop_ : float, int, bool, str
        The final fit's weighted mean negative log-likelihood on the training rows, its Newton steps, whether it met
        the stopping rule (a warning says when not), what ended it (``"gtol"``, ``"ftol"``, ``"floating-point
        limit"``, ...).
    """

    matrix: ClassVar[str] = "full"
    bias: ClassVar[bool] = True
    parametric: ClassVar[bool] = True
    input_form: ClassVar[str] = "logits"
    on_log_probabilities: ClassVar[bool] = False
    default_penalty: ClassVar[str | None] = None

    @property
    def coef_(self) -> np.ndarray:
        w, _ = unpack(self.theta_, self._form(), int(self.n_classes_))
        return w if w.ndim == 2 else np.diag(np.broadcast_to(w, (int(self.n_classes_),))).astype(float)

    @property
    def intercept_(self) -> np.ndarray:
        return unpack(self.theta_, self._form(), int(self.n_classes_))[1]

    @property
    def path_(self) -> pd.DataFrame | None:
        if self.cv_grid_ is None:
            return None
        grid = pd.DataFrame(self.cv_grid_, columns=["lambda", "mu"]).assign(loss=np.asarray(self.cv_losses_))
        if grid["lambda"].is_unique:            # one mu per lambda: mu = lambda (the authors' default), or L2's 0
            path = grid[["lambda", "loss"]].rename(columns={"loss": "held-out log-loss"}).sort_values("lambda")
        else:
            path = grid.pivot(index="lambda", columns="mu", values="loss")
            path.columns = [f"held-out log-loss (mu={m:g})" for m in path.columns]
            path = path.reset_index()
        return path.reset_index(drop=True).assign(chosen=lambda d: d["lambda"] == self.lambda_)

    def _form(self) -> LinearForm:
        return LinearForm(self.matrix, self.bias, getattr(self, "reg", self.default_penalty))

    def _inputs(self, x: Scores) -> np.ndarray:
        return x.log_probabilities if self.on_log_probabilities else x.log_scores

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:
        form = self._form()
        check_size(form, x.k, self.label)
        present = np.unique(y if w is None else y[w > 0])
        if form.matrix != "scalar" and present.size < 2:
            raise DataError(f"{self.label} needs labels of at least two classes; the fitting rows name only "
                            f"class {int(present[0]) if present.size else '(none)'}. Temperature scaling can be "
                            "fitted on them.")
        X = self._inputs(x)
        lam, mu = float(getattr(self, "lam", 0.0) or 0.0), float(getattr(self, "mu", 0.0) or 0.0)
        if form.penalty is not None and not (np.isfinite(lam) and np.isfinite(mu) and lam >= 0 and mu >= 0):
            raise SettingsError(f"lambda and mu must be finite and >= 0, got {lam} and {mu}.")
        self.cv_grid_, self.cv_losses_, self.cv_n_iter_, self.penalty_note_ = None, None, None, None
        if form.penalty is not None and getattr(self, "select", False):
            grid = penalty_grid(form.penalty, self.lambdas, self.mus)
            iters: list = []
            try:
                lam, mu, losses = select_penalty(X, y, w, form, grid, int(self.n_folds), int(self.seed),
                                                 n_iter=iters)
                self.cv_grid_, self.cv_losses_ = grid, losses
            except TooFewRowsError as exc:
                self.penalty_note_ = f"{exc} Used the fixed lambda={lam:g}, mu={mu:g} (the lam and mu given)."
                warnings.warn(f"{self.label}: {self.penalty_note_}", PenaltyFallbackWarning, stacklevel=3)
            self.cv_n_iter_ = iters
        if form.penalty is None:
            lam = mu = 0.0
        fit = fit_linear(X, y, w, form, lam, mu, what=f"{self.label}'s map")
        self.theta_, self.lambda_, self.mu_, self.absent_classes_ = fit.theta, lam, mu, fit.absent
        self.nll_, self.n_iter_, self.converged_, self.stop_ = fit.nll, fit.n_iter, fit.converged, fit.stop

    def _predict(self, x: Scores) -> np.ndarray:
        return predict_linear(self._inputs(x), self.theta_, self._form())

    def _n_weights(self) -> int:
        return n_parameters(LinearForm(self.matrix, False), int(self.n_classes_))

    def _export_state(self) -> dict:
        """W's entries (``weights``: 1, K or K*K numbers, row-major) and the intercepts (``bias``, if any)."""
        m = self._n_weights()
        state = {"weights": [float(v) for v in self.theta_[:m]]}
        return {**state, "bias": [float(v) for v in self.theta_[m:]]} if self.bias else state

    def _import_state(self, state) -> None:
        """Restore :meth:`_export_state` (``n_classes_`` is already set from the file)."""
        parts = [state.array("weights", size=self._n_weights())]
        self.theta_ = np.concatenate(parts + ([state.array("bias", size=int(self.n_classes_))] if self.bias else []))
