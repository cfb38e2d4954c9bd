"""calibdash's calibrators inside scikit-learn (``Pipeline``, ``cross_val_score``, ``GridSearchCV``, ``clone``):
:class:`CalibratedClassifier`, modelled on ``CalibratedClassifierCV`` (the README's "Use it from scikit-learn" maps
the parameters and gives the agreement measured on the same folds).

Two classes: any binary method (another method's hyperparameters are refused at ``fit``) on the estimator's
``predict_proba``, else its ``decision_function`` through the logistic function. K classes (or a multi-class
method's name on two): a K-class method of :mod:`calibdash.calibrators`; a binary method's bare name means its
one-vs-rest composite (``"isotonic"`` is ``"ovr:isotonic"``, as scikit-learn's), a name that is both
(``"temperature"``) the multi-class method. ``response_method="auto"`` gives each method the output its paper
calibrates (``input_form``: ``decision_function`` as logits for Guo et al.'s scalings, ``predict_proba`` for
Dirichlet calibration and the composites), else the other. One-vs-rest given logits calibrates their softmax, where
scikit-learn calibrates each ``decision_function`` column by itself.
"""
from __future__ import annotations

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
from .core.errors import SettingsError

__all__ = ["CalibratedClassifier"]

#: Probabilities are kept this far from 0 and 1 in ``decision_function`` (a finite logit).
_EPS = 1e-15

#: What ``response_method`` takes: the form of each method's paper, or the one named.
RESPONSE_METHODS = ("auto", "predict_proba", "decision_function")


def _default_estimator():
    from sklearn.svm import LinearSVC

    return LinearSVC()


class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """A classifier whose probabilities are calibrated by a calibdash method (binary or K-class).

    Parameters
    ----------
    estimator : classifier, default None
        The classifier whose scores are calibrated (``LinearSVC()`` when None); fitted already with ``"prefit"``.
    method : str, default "isotonic"
        A binary calibdash method or, for K classes, a multi-class one (module docstring).
    cv : int, cross-validation splitter, iterable or "prefit", default 5
        How rows are divided between estimator and calibrator, as ``CalibratedClassifierCV``.
    ensemble : bool, default True
        One (estimator, calibrator) pair per fold, probabilities averaged (True), or one calibrator on the
        out-of-fold scores and the estimator refitted on all rows (False).
    features : "all", list of str or int, or None, default "all"
        Columns of ``X`` passed to a feature-aware method (MBCT); None passes none.
    response_method : {"auto", "predict_proba", "decision_function"}, default "auto"
        Which output of the estimator is calibrated (module docstring); binary methods take ``predict_proba``
        when there is one unless ``"decision_function"`` is named.
    **method_params
        Hyperparameters of ``method`` (for example ``ess=5`` for BBQ).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted (with ``"prefit"``: the estimator's); with two, ``classes_[1]`` is positive.
    calibrated_pairs_ : list of (estimator, calibrator)
        The fitted pairs whose probabilities are averaged.
    calibration_method_ : str
        The method fitted (``"ovr:isotonic"`` for ``method="isotonic"`` on K classes).
    score_source_ : {"predict_proba", "decision_function"}
        Where the scores came from.
    n_features_in_, feature_names_in_
        As scikit-learn sets them.
    """

    def __init__(self, estimator=None, method: str = "isotonic", cv=5, ensemble: bool = True,
                 features="all", response_method: str = "auto", **method_params):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble
        self.features = features
        self.response_method = response_method
        for name, value in method_params.items():
            setattr(self, name, value)
        self._method_param_names = tuple(sorted(method_params))

    def _method_params(self) -> dict:
        return {name: getattr(self, name) for name in getattr(self, "_method_param_names", ())}

    def get_params(self, deep: bool = True) -> dict:
        """The parameters, the method's hyperparameters included."""
        return {**super().get_params(deep=deep), **self._method_params()}

    def set_params(self, **params):
        known = set(super().get_params(deep=False))
        extra = {k: v for k, v in params.items() if k not in known and "__" not in k}
        for name, value in extra.items():
            setattr(self, name, value)
        self._method_param_names = tuple(sorted(set(getattr(self, "_method_param_names", ())) | set(extra)))
        rest = {k: v for k, v in params.items() if k not in extra}
        return super().set_params(**rest) if rest else self

    def _multiclass_name(self, n_classes: int) -> str | None:
        """The multi-class method to fit (module docstring), or None for a binary calibrator."""
        if not isinstance(self.method, str):
            raise SettingsError(f"method must be a calibdash method name, got {type(self.method).__name__}.")
        binary = self.method in calibrators.classes()
        if binary and n_classes == 2:
            return None
        if self.method.partition(":")[0] in calibrators.classes("classes"):
            return self.method
        if binary:
            return f"ovr:{self.method}"
        raise SettingsError(f"unknown method {self.method!r}: binary methods are "
                            f"{', '.join(calibrators.available())}; multi-class ones "
                            f"{', '.join(calibrators.available('classes', expand=False))} (ovr and top_label take a "
                            "binary method after a colon: ovr:isotonic).")

    def _calibrator(self):
        """A new calibrator of ``calibration_method_`` (set by ``fit``) with the method's hyperparameters."""
        params = self._method_params()
        if not self._is_multiclass:
            return calibrators.get(self.calibration_method_, **params)
        if "logits" in params:
            raise SettingsError("logits is not a hyperparameter here: the adapter sets it from the estimator's "
                                "output (choose that output with response_method).")
        logits = self.score_source_ == "decision_function"
        return calibrators.get(self.calibration_method_, "classes", logits=logits, **params)

    @property
    def _is_multiclass(self) -> bool:
        """Whether the fitted method is a multi-class one (all but a binary name on two classes)."""
        return self.classes_.size > 2 or self.calibration_method_ not in calibrators.classes()

    def _response(self, estimator, name: str | None) -> str:
        """``"predict_proba"`` or ``"decision_function"``: what ``response_method`` asks of ``estimator``."""
        if self.response_method not in RESPONSE_METHODS:
            raise SettingsError(f"response_method must be one of {', '.join(RESPONSE_METHODS)}, "
                                f"got {self.response_method!r}.")
        has = {r: hasattr(estimator, r) for r in RESPONSE_METHODS[1:]}
        if not any(has.values()):
            raise SettingsError(f"{type(estimator).__name__} has neither predict_proba nor decision_function.")
        if self.response_method != "auto":
            if not has[self.response_method]:
                raise SettingsError(f"response_method={self.response_method!r} but {type(estimator).__name__} "
                                    f"has no {self.response_method}.")
            return self.response_method
        wanted = "predict_proba"
        if name is not None and calibrators.get_class(name, "classes").input_form == "logits":
            wanted = "decision_function"
        return wanted if has[wanted] else next(r for r in has if r != wanted)

    def _scores(self, estimator, X) -> np.ndarray:
        if self._is_multiclass:
            return self._table(estimator, X)
        if self.score_source_ == "predict_proba":
            proba = np.asarray(estimator.predict_proba(X), dtype=float)
            column = int(np.flatnonzero(np.asarray(estimator.classes_) == self.classes_[1])[0])
            return np.clip(proba[:, column], 0.0, 1.0)
        return expit(np.asarray(estimator.decision_function(X), dtype=float).reshape(-1))

    def _table(self, estimator, X) -> np.ndarray:
        """The estimator's K columns in ``classes_`` order: probabilities (0 for a class it never saw) or logits
        (a binary margin ``d`` as ``(0, d)``, whose softmax is ``(1 - expit(d), expit(d))``)."""
        seen = np.asarray(estimator.classes_)
        where = np.searchsorted(self.classes_, seen)
        if not np.isin(seen, self.classes_).all():
            raise ValueError(f"the estimator's classes {seen.tolist()[:10]} are not among the classes of y "
                             f"{self.classes_.tolist()[:10]}.")
        k = self.classes_.size
        if self.score_source_ == "predict_proba":
            out = np.zeros((_num_samples(X), k))
            out[:, where] = np.clip(np.asarray(estimator.predict_proba(X), dtype=float), 0.0, 1.0)
            return out
        if seen.size != k:
            raise ValueError(f"the estimator was fitted on {seen.size} of the {k} classes (a training fold "
                             "lacked some); its decision_function then has no logit for the others. Use folds "
                             "whose training rows hold every class (StratifiedKFold, fewer folds) or "
                             "response_method='predict_proba'.")
        d = np.asarray(estimator.decision_function(X), dtype=float)
        if d.ndim == 1 or d.shape[1] == 1:
            d = d.reshape(-1)
            return np.column_stack([np.zeros_like(d), d])
        if d.shape[1] != k:
            raise ValueError(f"the estimator's decision_function has {d.shape[1]} columns for {k} classes "
                             "(one-vs-one?); the calibrator needs one logit per class (decision_function_shape="
                             "'ovr', or response_method='predict_proba').")
        return d

    def _feature_frame(self, X) -> pd.DataFrame | None:
        if self.features is None:
            return None
        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X)).add_prefix("x")
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

    def _fit_calibrator(self, cal, scores, labels, X, sample_weight):
        if self._is_multiclass:
            return cal.fit(scores, labels, sample_weight=sample_weight)
        features = self._feature_frame(X) if cal.uses_features else None
        return cal.fit(scores, labels, features, sample_weight=sample_weight)

    def _calibrated(self, cal, scores, X) -> np.ndarray:
        """One calibrator's probabilities: (n, K) for a multi-class one, (n,) of ``classes_[1]`` else."""
        if self._is_multiclass:
            return cal.predict_proba(scores)
        return cal.predict(scores, self._feature_frame(X) if cal.uses_features else None)

    def _check_X(self, X, reset: bool):
        """A DataFrame stays one (MBCT's columns, feature names); anything else becomes a dense 2-D array."""
        if isinstance(X, pd.DataFrame):
            validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        return validate_data(self, X, reset=reset, accept_sparse=False, ensure_all_finite=False, dtype=None)

    @staticmethod
    def _rows(X, idx):
        return X.iloc[idx] if hasattr(X, "iloc") else X[idx]

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the estimator(s) and calibrator(s).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes; with two, the larger label (``classes_[1]``) is the positive one.
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
            raise ValueError(f"CalibratedClassifier needs at least two classes in y; it has one class only "
                             f"({np.unique(y)[:1].tolist()}).")
        if type_of_target(y) not in ("binary", "multiclass"):
            raise ValueError(f"CalibratedClassifier calibrates binary or multiclass targets; y is {type_of_target(y)}.")
        if len(y) != _num_samples(X):
            raise ValueError(f"X has {_num_samples(X)} rows but y has {len(y)}.")
        prefit = isinstance(self.cv, str) and self.cv == "prefit"
        base = self.estimator if self.estimator is not None else _default_estimator()
        if prefit:
            check_is_fitted(base)
            self.classes_ = np.asarray(base.classes_)
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            if unknown.size:
                raise ValueError(f"y holds classes the prefit estimator does not know: {unknown.tolist()[:10]}.")
        else:
            self.classes_ = np.unique(y)
        name = self._multiclass_name(self.classes_.size)
        self.score_source_ = self._response(base, name)
        self.calibration_method_ = self.method if name is None else name
        labels = (np.searchsorted(self.classes_, y) if self._is_multiclass
                  else (y == self.classes_[1]).astype(np.int8))
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        self._calibrator()                                   # unknown method or hyperparameter: fail early

        def fit_estimator(idx):
            est = clone(base)
            kw = dict(fit_params)
            if sample_weight is not None and has_fit_parameter(est, "sample_weight"):
                kw["sample_weight"] = sample_weight[idx]
            return est.fit(self._rows(X, idx), y[idx], **kw)

        def fit_calibrator(est, idx):
            Xi = self._rows(X, idx)
            w = None if sample_weight is None else sample_weight[idx]
            return self._fit_calibrator(self._calibrator(), self._scores(est, Xi), labels[idx], Xi, w)

        everything = np.arange(y.size)
        if prefit:
            self.calibrated_pairs_ = [(base, fit_calibrator(base, everything))]
            return self
        splitter = check_cv(self.cv, y, classifier=True)
        folds = list(splitter.split(X, y))
        if self.ensemble:            # each fold's estimator fitted, then its calibrator, fold after fold
            fitted = ((fit_estimator(train), test) for train, test in folds)
            self.calibrated_pairs_ = [(est, fit_calibrator(est, test)) for est, test in fitted]
            return self
        parts = [(test, self._scores(fit_estimator(train), self._rows(X, test))) for train, test in folds]
        scores = np.empty((y.size,) + parts[0][1].shape[1:])
        for test, part in parts:
            scores[test] = part
        cal = self._fit_calibrator(self._calibrator(), scores, labels, X, sample_weight)
        self.calibrated_pairs_ = [(fit_estimator(everything), cal)]
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated probabilities, shape (n_samples, n_classes), columns in ``classes_`` order, rows summing to 1."""
        check_is_fitted(self, "calibrated_pairs_")
        X = self._check_X(X, reset=False)
        p = sum(self._calibrated(cal, self._scores(est, X), X) for est, cal in self.calibrated_pairs_)
        p = np.asarray(p, dtype=float) / len(self.calibrated_pairs_)
        return p if p.ndim == 2 else np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The class with the largest calibrated probability (ties: the first in ``classes_``)."""
        p = self.predict_proba(X)
        return self.classes_[(p[:, 1] > 0.5).astype(int) if p.shape[1] == 2 else np.argmax(p, axis=1)]

    @available_if(lambda self: hasattr(self.estimator if self.estimator is not None else _default_estimator(),
                                       "decision_function"))
    def decision_function(self, X) -> np.ndarray:
        """Two classes: the calibrated log-odds ``logit(P(classes_[1]))``; K classes: the calibrated
        log-probabilities (floored at ``log 1e-15``). Offered where the estimator has one (ROC curves, scoring)."""
        p = self.predict_proba(X)
        if p.shape[1] == 2:
            return logit(np.clip(p[:, 1], _EPS, 1.0 - _EPS))
        return np.log(np.maximum(p, _EPS))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.allow_nan = False
        return tags

    @property
    def calibrators_(self) -> list:
        """The fitted calibrators, one per pair."""
        check_is_fitted(self, "calibrated_pairs_")
        return [cal for _, cal in self.calibrated_pairs_]
