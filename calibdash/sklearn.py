"""calibdash's calibrators inside scikit-learn: :class:`CalibratedClassifier`.

Modelled on scikit-learn's ``CalibratedClassifierCV``: a binary classifier
whose scores are calibrated by any calibdash method, usable in a
``Pipeline``, ``cross_val_score``, ``GridSearchCV`` and ``clone``.

>>> from sklearn.linear_model import LogisticRegression
>>> from calibdash.sklearn import CalibratedClassifier
>>> clf = CalibratedClassifier(LogisticRegression(), method="bbq", cv=5)   # doctest: +SKIP
>>> clf.fit(X, y).predict_proba(X_new)[:, 1]                                 # doctest: +SKIP

How it corresponds to ``CalibratedClassifierCV``
------------------------------------------------
==========================  ===========================================================
``CalibratedClassifierCV``  ``CalibratedClassifier``
==========================  ===========================================================
``estimator``               ``estimator`` (default ``LinearSVC()``, as scikit-learn)
``method="sigmoid"``        ``method="platt", smooth_targets=True`` (Platt's targets, as
                            scikit-learn's sigmoid)
``method="isotonic"``       ``method="isotonic", interpolation="linear"`` (scikit-learn
                            interpolates linearly and clips outside the training range)
``cv`` (int, splitter,      ``cv``, the same; ``"prefit"`` calibrates an already fitted
``"prefit"``)               ``estimator`` on the rows given to ``fit``
``ensemble``                ``ensemble``, the same: True keeps one (estimator, calibrator)
                            pair per fold and averages their probabilities; False fits
                            one calibrator on the out-of-fold scores and refits the
                            estimator on all rows
``n_jobs``                  not offered (calibrators are fast; folds run one by one)
==========================  ===========================================================

Any calibdash method can be chosen (``calibdash.calibrators.available()``),
with its hyperparameters as keyword arguments (``ess=5`` for BBQ);
``GridSearchCV`` can search ``method`` and each of them. Keyword arguments
that belong to another method than the chosen one are refused at ``fit``.

Scores: the estimator's ``predict_proba`` (positive column) when it has one,
else its ``decision_function`` mapped by the logistic function, as
:func:`calibdash.load_scores` maps margins (never min-max scaled).

Features: MBCT (the only feature-aware method) takes its features from ``X``:
``features="all"`` (default) passes every column, a list of column names (or
indices, for arrays) passes those.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import check_cv
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (_check_sample_weight, _num_samples, check_is_fitted, has_fit_parameter,
                                      validate_data)

from . import calibrators
from .errors import SettingsError

__all__ = ["CalibratedClassifier"]

#: Probabilities are kept this far from 0 and 1 in ``decision_function`` (a finite logit).
_EPS = 1e-15


def _default_estimator():
    from sklearn.svm import LinearSVC

    return LinearSVC()


def _has_decision_function(self) -> bool:
    est = self.estimator if self.estimator is not None else _default_estimator()
    return hasattr(est, "decision_function")


class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """A binary classifier whose probabilities are calibrated by a calibdash method.

    Parameters
    ----------
    estimator : classifier, default None
        The classifier whose scores are calibrated (``LinearSVC()`` when None).
        With ``cv="prefit"`` it must already be fitted.
    method : str, default "isotonic"
        A calibdash method (``calibdash.calibrators.available()``).
    cv : int, cross-validation splitter, iterable or "prefit", default 5
        How rows are divided between the estimator and the calibrator, as in
        ``CalibratedClassifierCV`` (stratified K-fold for an int).
    ensemble : bool, default True
        One (estimator, calibrator) pair per fold, probabilities averaged
        (True), or one calibrator on the out-of-fold scores (False).
    features : "all", list of str or int, or None, default "all"
        Columns of ``X`` passed to a feature-aware method (MBCT); None passes none.
    **method_params
        Hyperparameters of ``method`` (for example ``ess=5`` for BBQ).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two class labels; ``classes_[1]`` is the positive class.
    calibrated_pairs_ : list of (estimator, calibrator)
        The fitted pairs whose probabilities are averaged.
    score_source_ : {"predict_proba", "decision_function"}
        Where the scores came from (decision values are mapped by the logistic function).
    n_features_in_, feature_names_in_
        As scikit-learn sets them.
    """

    def __init__(self, estimator=None, method: str = "isotonic", cv=5, ensemble: bool = True,
                 features="all", **method_params):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble
        self.features = features
        for name, value in method_params.items():
            setattr(self, name, value)
        self._method_param_names = tuple(sorted(method_params))

    # -- parameters: the method's hyperparameters are parameters too -----------------------------
    def get_params(self, deep: bool = True) -> dict:
        out = super().get_params(deep=deep)
        for name in getattr(self, "_method_param_names", ()):
            out[name] = getattr(self, name)
        return out

    def set_params(self, **params):
        known = set(super().get_params(deep=False))
        extra = {k: v for k, v in params.items() if k not in known and "__" not in k}
        for name, value in extra.items():
            setattr(self, name, value)
        self._method_param_names = tuple(sorted(set(getattr(self, "_method_param_names", ())) | set(extra)))
        rest = {k: v for k, v in params.items() if k not in extra}
        return super().set_params(**rest) if rest else self

    def _method_params(self) -> dict:
        return {name: getattr(self, name) for name in getattr(self, "_method_param_names", ())}

    def _calibrator(self):
        if not isinstance(self.method, str):
            raise SettingsError(f"method must be a calibdash method name, got {type(self.method).__name__}.")
        return calibrators.get(self.method, **self._method_params())

    # -- scores and features ---------------------------------------------------------------------
    def _scores(self, estimator, X) -> np.ndarray:
        if hasattr(estimator, "predict_proba"):
            proba = np.asarray(estimator.predict_proba(X), dtype=float)
            column = int(np.flatnonzero(np.asarray(estimator.classes_) == self.classes_[1])[0])
            return np.clip(proba[:, column], 0.0, 1.0)
        values = np.asarray(estimator.decision_function(X), dtype=float).reshape(-1)
        return expit(values)

    def _feature_frame(self, X) -> pd.DataFrame | None:
        if self.features is None:
            return None
        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X))
        if not isinstance(X, pd.DataFrame):
            frame.columns = [f"x{j}" for j in range(frame.shape[1])]
        if isinstance(self.features, str):
            if self.features != "all":
                raise SettingsError(f"features must be 'all', a list of columns or None, got {self.features!r}.")
            return frame.reset_index(drop=True)
        cols = list(self.features)
        if not isinstance(X, pd.DataFrame):
            cols = [c if isinstance(c, str) else f"x{int(c)}" for c in cols]
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise SettingsError(f"features {missing} are not columns of X ({list(frame.columns)[:10]}).")
        return frame[cols].reset_index(drop=True)

    def _features_for(self, calibrator, X):
        return self._feature_frame(X) if calibrator.uses_features else None

    def _check_X(self, X, reset: bool):
        """A DataFrame stays one (MBCT's columns, scikit-learn's feature names); anything else becomes a
        dense 2-D array (sparse input is refused: calibdash's feature-aware method reads columns)."""
        if isinstance(X, pd.DataFrame):
            validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        return validate_data(self, X, reset=reset, accept_sparse=False, ensure_all_finite=False, dtype=None)

    @staticmethod
    def _rows(X, idx):
        return X.iloc[idx] if hasattr(X, "iloc") else X[idx]

    # -- fit / predict ------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the estimator(s) and calibrator(s).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes; the larger label (``classes_[1]``) is the positive one.
        sample_weight : array-like of shape (n_samples,), optional
            Passed to the estimator (when its ``fit`` takes it) and to the calibrator.
        **fit_params
            Passed to the estimator's ``fit``.

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError("CalibratedClassifier requires y to be passed, but the target y is None.")
        X = self._check_X(X, reset=True)
        y = np.asarray(y)
        check_classification_targets(y)
        if np.unique(y).size < 2:
            raise ValueError(f"CalibratedClassifier needs both classes in y; it has one class only "
                             f"({np.unique(y)[:1].tolist()}).")
        if type_of_target(y) != "binary":
            raise ValueError("Only binary classification is supported: CalibratedClassifier calibrates the "
                             f"scores of a binary classifier, and y is {type_of_target(y)}.")
        if len(y) != _num_samples(X):
            raise ValueError(f"X has {_num_samples(X)} rows but y has {len(y)}.")
        self.classes_ = np.unique(y)
        y01 = (y == self.classes_[1]).astype(np.int8)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        base = self.estimator if self.estimator is not None else _default_estimator()
        self.score_source_ = "predict_proba" if hasattr(base, "predict_proba") else "decision_function"
        self._calibrator()                                   # unknown method or hyperparameter: fail early

        def fit_estimator(idx):
            est = clone(base)
            kw = dict(fit_params)
            if sample_weight is not None and has_fit_parameter(est, "sample_weight"):
                kw["sample_weight"] = sample_weight[idx]
            return est.fit(self._rows(X, idx), y[idx], **kw)

        def fit_calibrator(est, idx):
            cal = self._calibrator()
            Xi = self._rows(X, idx)
            w = None if sample_weight is None else sample_weight[idx]
            return cal.fit(self._scores(est, Xi), y01[idx], self._features_for(cal, Xi), sample_weight=w)

        everything = np.arange(y.size)
        if isinstance(self.cv, str) and self.cv == "prefit":
            check_is_fitted(base)
            self.calibrated_pairs_ = [(base, fit_calibrator(base, everything))]
            return self
        splitter = check_cv(self.cv, y, classifier=True)
        folds = list(splitter.split(X, y))
        if self.ensemble:
            pairs = []
            for train, test in folds:
                est = fit_estimator(train)
                pairs.append((est, fit_calibrator(est, test)))
            self.calibrated_pairs_ = pairs
            return self
        scores = np.empty(y.size)
        for train, test in folds:
            est = fit_estimator(train)
            scores[test] = self._scores(est, self._rows(X, test))
        cal = self._calibrator()
        cal.fit(scores, y01, self._features_for(cal, X), sample_weight=sample_weight)
        self.calibrated_pairs_ = [(fit_estimator(everything), cal)]
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated probabilities, shape (n_samples, 2), columns in ``classes_`` order."""
        check_is_fitted(self, "calibrated_pairs_")
        X = self._check_X(X, reset=False)
        p = np.zeros(_num_samples(X))
        for est, cal in self.calibrated_pairs_:
            p += cal.predict(self._scores(est, X), self._features_for(cal, X))
        p /= len(self.calibrated_pairs_)
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The class with the larger calibrated probability (ties: ``classes_[0]``)."""
        p = self.predict_proba(X)[:, 1]
        return self.classes_[(p > 0.5).astype(int)]

    @available_if(_has_decision_function)
    def decision_function(self, X) -> np.ndarray:
        """The calibrated log-odds ``logit(P(classes_[1]))``: positive where ``predict`` says ``classes_[1]``.

        Offered where the estimator has a ``decision_function``, as scikit-learn's
        tools that look for one (ROC curves, ``roc_auc`` scoring) expect.
        """
        p = self.predict_proba(X)[:, 1]
        return logit(np.clip(p, _EPS, 1.0 - _EPS))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = False
        return tags

    @property
    def calibrators_(self) -> Sequence:
        """The fitted calibrators, one per pair."""
        check_is_fitted(self, "calibrated_pairs_")
        return [cal for _, cal in self.calibrated_pairs_]
