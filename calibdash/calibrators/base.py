"""The contract every calibrator follows (scikit-learn's estimator conventions).

A calibrator maps a classifier's score in [0, 1] (and, for feature-aware methods, the row's features) to a calibrated
probability of the positive class. Hyperparameters are constructor arguments stored unchanged (so ``get_params``,
``set_params`` and ``clone`` work), declared as :class:`HyperParam` records for the UI's sliders. ``fit`` validates at
the edge and calls the subclass's ``_fit(s, y, features, w)`` (``w``: None for unit weights, else floats); ``predict``
calls ``_predict(s, features)``; learned state ends in ``_``. A row of weight ``w`` counts as ``w`` rows: integer
weights fit as the rows repeated (tested for every method), which is how score cells (count, positives) are fitted.

A method declares itself in its own class (adding one is adding files): its class attributes, its SQL form
(:meth:`Calibrator.sql_map`) and its model-file state: ``_export_state()`` returns the JSON-able dict ``predict``
needs (not the learning's by-products, which :mod:`calibdash.explain` recomputes), ``_import_state(state)`` restores
it from a :class:`calibdash.calibrators.state.State`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

import numpy as np
from sklearn.base import BaseEstimator

from ..core.errors import DataError, NotFittedError, ProgrammingError, SettingsError
from ..core.sql_forms import LinearMap, StepMap
from ..core.validation import check_labels, check_scores, check_weights

if TYPE_CHECKING:
    from ..core.sql_forms import ClosedForm

__all__ = ["Calibrator"]


@dataclass(frozen=True)
class HyperParam:
    """One tunable hyperparameter of a calibrator, as the UI shows it: the constructor argument ``name``, the paper's
    ``symbol`` shown on the slider (``"N'"``, ``"C"``, ``"λ"``), the widget ``kind`` (``"int"``, ``"float"``,
    ``"bool"``, ``"choice"``), the ``default`` (the constructor's), the slider range ``low`` to ``high`` (``int`` and
    ``float``) moving on a log scale if ``log``, the allowed ``choices`` of a ``"choice"``, and a one-line ``help``."""

    name: str
    symbol: str
    kind: str
    default: Any
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple | None = None
    help: str = ""

    def grid(self, n: int = 41) -> list:
        """Values a slider offers: integers in range, or a (log-)spaced grid."""
        if self.kind == "bool":
            return [False, True]
        if self.kind == "choice":
            return list(self.choices or ())
        vals = (np.geomspace if self.log else np.linspace)(float(self.low), float(self.high), n)
        if self.kind == "int":
            return sorted({int(round(v)) for v in vals} | {int(self.default)})
        return sorted({float(f"{v:.4g}") for v in vals} | {float(self.default)})


class Calibrator(BaseEstimator):
    """Base class: validation at the edge, learned state in ``_fit``.

    Class attributes
    ----------------
    name : str
        Registry key (``"platt"``).
    label : str
        Short display name (``"Platt scaling"``, ``"BBQ"``), used in legends and tables.
    summary : str
        A few words saying what the method does, shown beside the label in menus.
    paper : str
        Reference for the method, shown in the UI and README.
    hyperparams : tuple of HyperParam
        The tunable hyperparameters, in the order the UI shows them.
    uses_features : bool
        Whether ``features`` are used (MBCT); others ignore them.
    monotone : bool
        Whether every fitted map is non-decreasing in the score by construction (isotonic regression, temperature
        scaling, Venn-ABERS). False where the map can decrease: binning methods (per-bin frequencies), ELiTE, ENIR
        (monotone only at its isotonic end), MBCT, and Platt scaling and beta calibration, whose maps are
        non-decreasing exactly when the fitted slopes are non-negative, which the data decide.
    order : float or None
        Place in every list of methods (menus, tables, ``calibdash methods``): ascending ``order``, then the name; a
        class that declares none (None) follows those that do, alphabetically.
    color : str or None
        ``"#RRGGBB"``, the method's colour in every chart (:func:`calibdash.figures.palette.color_of`); None: one
        picked stably from its name.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    hyperparams: ClassVar[Sequence[HyperParam]] = ()
    uses_features: ClassVar[bool] = False
    monotone: ClassVar[bool] = False
    order: ClassVar[float | None] = None
    color: ClassVar[str | None] = None

    def _keep(self, args: dict) -> None:
        """Store the constructor's arguments (its ``locals()``) unchanged, where ``get_params`` reads them."""
        vars(self).update((k, v) for k, v in args.items() if k != "self")

    def fit(self, scores, labels, features=None, sample_weight=None, *, pos_label=None) -> "Calibrator":
        """Learn the calibration map from ``scores`` and ``labels``.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Classifier scores in [0, 1].
        labels : array-like of shape (n,)
            Outcomes: any two distinct values (0/1, -1/1, True/False, yes/no, two strings); both must occur.
        features : pandas.DataFrame, optional
            Per-row features; only feature-aware calibrators use them.
        sample_weight : array-like of shape (n,), optional
            Non-negative weight of each row (default 1): a row of weight ``w`` counts as ``w`` rows.
        pos_label : optional
            The label value of the positive class, whose probability ``predict`` gives; default
            :func:`calibdash.core.validation.choose_positive`'s rule (1, True, yes, ...; else the second value sorted).

        Returns
        -------
        self
        """
        if features is not None and not hasattr(features, "columns") and np.ndim(features) == 1:
            raise ProgrammingError("fit's third argument is features (a table of columns); a 1-D array there is "
                                   "almost surely weights: pass them as sample_weight=...")
        s = check_scores(scores)
        y = check_labels(labels, s.size, pos_label=pos_label)
        w = check_weights(sample_weight, s.size, y)
        self._fit(s, y, check_feature_rows(features, s.size), w)
        self.n_train_ = int(s.size)
        return self

    def predict(self, scores, features=None) -> np.ndarray:
        """Calibrated probabilities of the positive class, in [0, 1]."""
        self._check_fitted()
        s = check_scores(scores)
        return np.clip(np.asarray(self._predict(s, check_feature_rows(features, s.size)), dtype=float), 0.0, 1.0)

    def predict_proba(self, scores, features=None) -> np.ndarray:
        """Calibrated probabilities as scikit-learn's classifiers give them: shape (n, 2), column 1 ``predict``'s."""
        p = self.predict(scores, features)
        return np.column_stack([1.0 - p, p])

    def transform(self, scores, features=None) -> np.ndarray:
        """The calibrated scores as one column, shape (n, 1), for use inside a ``Pipeline``."""
        return self.predict(scores, features).reshape(-1, 1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True          # scores of shape (n,) ...
        tags.input_tags.two_d_array = False         # ... or (n, 1): never several columns
        tags.input_tags.allow_nan = False
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        return tags

    def sql_map(self) -> "ClosedForm | StepMap | LinearMap | None":
        """The fitted map as a form of :mod:`calibdash.io.sql` (what :func:`calibdash.io.sql.to_sql` writes): a step map
        (``StepMap``), a piecewise-linear map (``LinearMap``) or a formula (``ClosedForm``), built from the state
        ``predict`` uses so that the SQL equals ``predict``; or None (this default): no SQL form. Raises
        :class:`calibdash.io.sql.SqlUnsupported` for a fitted state the forms cannot hold.
        """
        return None

    def _fit(self, s: np.ndarray, y: np.ndarray, features, w: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, s: np.ndarray, features) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_train_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet: call fit() first.")


class CurveCalibrator(Calibrator):
    """A calibrator whose fitted map is one curve, declared by ``curve``: ``(x attribute, y attribute, x entry, y
    entry)`` (without the entries: its own ``_export_state``); ``steps``: a step map (``y[k]`` on ``x[k-1] <= s <
    x[k]``) or the points joined by lines, beyond the ends held (``ends="hold"``) or the end lines extended
    (``"extend"``); ``unit``: a file's y must lie in [0, 1]. The SQL form, ``predict`` (the form's ``evaluate``) and
    the model-file state follow from the declaration (or from ``_curve_map`` and the state methods, overridden)."""

    curve: ClassVar[tuple[str, ...]] = ()
    steps: ClassVar[bool] = True
    ends: ClassVar[str] = "hold"
    unit: ClassVar[bool] = False

    def _predict(self, s, features):
        return self._curve_map().evaluate(s)                # not sql_map(): a user or test may replace that

    def _curve_map(self) -> StepMap | LinearMap:
        x, y = getattr(self, self.curve[0]), getattr(self, self.curve[1])
        return StepMap(x, y) if self.steps else LinearMap(x, y, self.ends, self.ends)

    def sql_map(self) -> StepMap | LinearMap:
        return self._curve_map()

    def _export_state(self) -> dict:
        return {key: getattr(self, name).tolist() for key, name in zip(self.curve[2:], self.curve)}

    def _import_state(self, state) -> None:
        for name, v in zip(self.curve[:2], state.curve(*self.curve[2:], steps=self.steps, unit=self.unit)):
            setattr(self, name, v)


def check_setting(ok, value, message: str) -> None:
    """SettingsError ``"{message}, got {value!r}."`` unless ``ok(value)`` is true (a TypeError or ValueError: false)."""
    try:
        fine = bool(ok(value))
    except (TypeError, ValueError):
        fine = False
    if not fine:
        raise SettingsError(f"{message}, got {value!r}.")


def check_params(name: str, params, cls: type, more=()) -> None:
    """:class:`SettingsError` naming the ``params`` that are neither ``cls``'s hyperparameters nor in ``more``."""
    known = {h.name for h in cls.hyperparams} | set(cls().get_params()) | set(more)
    unknown = set(params) - known
    if unknown:
        raise SettingsError(f"{name} has no hyperparameter {sorted(unknown)}; it takes {sorted(known)}.")


def check_feature_rows(features, n: int):
    """``features`` unchanged, after checking it has ``n`` rows (None passes)."""
    if features is not None and len(features) != n:
        raise DataError(f"features has {len(features)} rows but scores has {n}.")
    return features
