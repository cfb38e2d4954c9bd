"""One-vs-rest calibration, and :class:`BinaryComposite`, what every composite method (one-vs-rest, top-label)
shares: the binary method it wraps, its per-instance label, hyperparameters, colour and order, the sub-models."""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from .... import calibrators
from ...state import State, calibrator_from, state_of
from ...base import Calibrator, HyperParam, check_params
from ....core.errors import SettingsError
from ..base import MulticlassCalibrator, Scores

__all__ = ["OneVsRestCalibrator", "BinaryComposite"]

#: A fitted sub-model: a binary calibrator, or the constant rate of a problem of one outcome only (by weight).
SubModel = Calibrator | float


class ZeroProbabilityWarning(UserWarning):
    """A composite's fitted map gives some class probability exactly 0 in some rows (``notes_`` say which and why)."""


def class_list(ks) -> str:
    """``"column 2"``, ``"columns 2, 5 and 7"``; past ten, the first ten and how many more."""
    ks = [str(k) for k in ks]
    if len(ks) > 10:
        return "columns " + ", ".join(ks[:10]) + f" and {len(ks) - 10:,} more"
    return "column " + ks[0] if len(ks) == 1 else "columns " + ", ".join(ks[:-1]) + " and " + ks[-1]


def shade(color: str, amount: float) -> str:
    """``"#RRGGBB"`` mixed with black (``amount`` > 0) or white (``amount`` < 0) by ``|amount|``."""
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    target = 0.0 if amount > 0 else 255.0
    mixed = np.rint(rgb + abs(amount) * (target - rgb)).astype(int)
    return "#" + "".join(f"{v:02X}" for v in mixed)


class PerBinary:
    """A class attribute a composite's instances derive from their binary method: ``on_class(cls)`` on the class
    (the registry's sort) or for an unknown binary name, ``derive(cls, binary_class)`` on an instance."""

    def __init__(self, on_class, derive):
        self.on_class = on_class
        self.derive = derive

    def __get__(self, obj, owner):
        binary = None if obj is None else calibrators.classes().get(obj.binary)
        return self.on_class(owner) if binary is None else self.derive(owner, binary)


def _lower_first(label: str) -> str:
    """``"Isotonic regression"`` -> ``"isotonic regression"``; acronyms (``"BBQ"``, ``"ELiTE"``) unchanged."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def _order(cls, binary: type[Calibrator]) -> float:
    # binary orders are below 1000: the composite's own block keeps the binary methods' order
    return float(cls.base_order) + (999.0 if binary.order is None else float(binary.order)) / 1000.0


class BinaryComposite(MulticlassCalibrator):
    """Base of the composite methods: a multi-class calibrator built from a binary one.

    Subclasses set ``name`` (the prefix of ``"<name>:<binary>"``), ``prefix`` (the words before the binary method's
    label), ``base_order`` and ``darken`` (how the binary colour is shaded), take ``binary`` and ``params`` first and
    fit their sub-models with :meth:`_fit_binary`. Per instance, ``label``, ``hyperparams`` (the binary method's, then
    ``own_hyperparams``), ``color`` and ``order`` (``base_order`` plus the binary order / 1000: after the scaling
    family, in the binary methods' order) derive from the binary method (:class:`PerBinary`). Binary methods that use
    features (MBCT) are refused: a multi-class table has no feature columns to give them.
    """

    prefix = ""
    base_order = 1000.0
    darken = 0.0
    composite = True
    own_hyperparams: tuple[HyperParam, ...] = ()

    label = PerBinary(lambda cls: cls.prefix, lambda cls, b: f"{cls.prefix} {_lower_first(b.label)}")
    hyperparams = PerBinary(lambda cls: tuple(cls.own_hyperparams),
                            lambda cls, b: tuple(b.hyperparams) + tuple(cls.own_hyperparams))
    color = PerBinary(lambda cls: None, lambda cls, b: None if b.color is None else shade(b.color, cls.darken))
    order = PerBinary(lambda cls: cls.base_order, _order)

    @classmethod
    def binary_class(cls, binary: str) -> type[Calibrator]:
        """The binary calibrator class ``binary`` names; :class:`SettingsError` if none, or one that uses features."""
        if not isinstance(binary, str) or binary not in calibrators.classes():
            usable = [n for n, c in calibrators.classes().items() if not c.uses_features]
            raise SettingsError(f"{cls.name} wraps a binary calibrator; {binary!r} is none. "
                                f"It takes: {', '.join(usable)}.")
        found = calibrators.get_class(binary)
        if found.uses_features:
            raise SettingsError(f"{cls.name}:{binary} is not available: {binary} uses feature columns, "
                                "which a multi-class probability table does not have.")
        return found

    @classmethod
    def make(cls, binary: str, **params) -> "BinaryComposite":
        """``cls`` wrapping ``binary``, ``params`` the binary method's and the composite's own mixed (what
        :func:`calibdash.calibrators.get` calls); :class:`SettingsError` names an unknown one."""
        bcls = cls.binary_class(binary)
        own = set(inspect.signature(cls.__init__).parameters) - {"self", "binary", "params"}
        check_params(f"{cls.name}:{binary}", params, bcls, own)
        inner = {k: v for k, v in params.items() if k not in own}
        return cls(binary=binary, params=inner or None, **{k: v for k, v in params.items() if k in own})

    def spec(self) -> tuple[str, dict]:
        """``("<name>:<binary>", params)``: what :func:`calibdash.calibrators.get` takes to build this
        calibrator again, every parameter (the binary method's defaults included) in one dict."""
        own = {k: v for k, v in self.get_params(deep=False).items() if k not in ("binary", "params")}
        return f"{self.name}:{self.binary}", {**self.new_binary().get_params(deep=False), **own}

    def new_binary(self) -> Calibrator:
        """A new, unfitted binary calibrator with this composite's ``params``."""
        self.binary_class(self.binary)
        return calibrators.get(self.binary, **dict(self.params or {}))

    def _fit_binary(self, s: np.ndarray, t: np.ndarray, w: np.ndarray | None) -> SubModel:
        """The binary calibrator fitted on scores ``s`` and outcomes ``t``, or, when one outcome has no weight, the
        observed rate (0.0 or 1.0), what every binning and isotonic fit would give."""
        counted = np.ones(t.size, dtype=bool) if w is None else w > 0
        hit, miss = bool(np.any(counted & (t == 1))), bool(np.any(counted & (t == 0)))
        if not (hit and miss):
            return 1.0 if hit else 0.0
        return self.new_binary().fit(s, t, sample_weight=w)

    @staticmethod
    def apply(model: SubModel, s: np.ndarray) -> np.ndarray:
        """``model``'s probabilities at scores ``s`` (the constant for a rate)."""
        if isinstance(model, Calibrator):
            return model.predict(s)
        return np.full(s.shape, float(model))

    def _say(self, notes: list[str]) -> None:
        """Keep ``notes`` as ``notes_`` (in the model file too) and warn each (:class:`ZeroProbabilityWarning`)."""
        self.notes_ = list(notes)
        for note in notes:
            warnings.warn(f"{self.name}:{self.binary}: {note}", ZeroProbabilityWarning, stacklevel=4)

    def _import_notes(self, state: State) -> None:
        """``notes_`` from the file (none in older files)."""
        notes = state.list("notes") if "notes" in state else []
        if not all(isinstance(n, str) for n in notes):
            raise state.error("'notes' must be a list of strings")
        self.notes_ = notes

    @staticmethod
    def model_state(model: SubModel) -> dict:
        """A sub-model as a file entry: ``{"state": {...}}`` (:func:`~calibdash.calibrators.state.state_of`) or
        ``{"rate": r}``."""
        if isinstance(model, Calibrator):
            return {"state": state_of(model)}
        return {"rate": float(model)}

    def class_entries(self, state: State, key: str) -> list[State]:
        """File entry ``key``: a list of objects, one per class (``n_classes_``, already set)."""
        entries = state.records(key)
        if len(entries) != self.n_classes_:
            raise state.error(f"{key!r} must hold one model per class ({self.n_classes_}), got {len(entries)}")
        return entries

    def model_from(self, entry: State) -> SubModel:
        """The sub-model a file entry of :meth:`model_state` holds."""
        if "rate" in entry:
            rate = entry.number("rate")
            if not 0.0 <= rate <= 1.0:
                raise entry.error(f"'rate' must lie in [0, 1], got {rate!r}")
            return rate
        return calibrator_from(self.binary, dict(self.params or {}), entry.object("state"), f"{entry.where}:")


class OneVsRestCalibrator(BinaryComposite):
    """One-vs-rest calibration (Zadrozny & Elkan, 2002): a binary calibrator per class, rows renormalised.

    Class ``k``'s binary method is fitted on ``(P[:, k], y == k)`` with the rows' weights; a row's calibrated
    probabilities are the K binary predictions divided by their sum (Zadrozny & Elkan's normalisation, as
    scikit-learn's ``CalibratedClassifierCV``; a row of all zeros becomes uniform, as :func:`.base.normalise_rows`).
    ``P[:, k]`` is the column as given (:attr:`~calibdash.calibrators.multiclass.base.Scores.columns`), so equal
    scores stay equal; with logits, the softmax's (a logit-based binary method such as Platt's takes their logit,
    clipped at 1e-12). Permuting the columns permutes the output (to the rounding of the row's sum).

    Zeros: no floor. A class whose binary map is 0 at a score (isotonic regression or histogram binning below the
    class's lowest positive rows) gets probability 0 there, and a held-out row of it an infinite log-loss. A class
    absent from the labels (by weight) gets its rate, 0, everywhere; one in every row gets 1, so every row
    normalises to it (as scikit-learn's isotonic one-vs-rest). A fit where any of this happens says so
    (:class:`ZeroProbabilityWarning`, a sentence in ``notes_``, kept in the model file); the map, scikit-learn's,
    is not changed: a floor would be a smoothing the binary method does not have (Platt, beta and BBQ have no such
    zeros). A row of whole weight ``w`` counts as ``w`` rows exactly when the binary method's fit does.

    Parameters
    ----------
    binary : str, default "isotonic"
        The binary calibrator's registry name (any of :func:`calibdash.calibrators.available`
        except those that use features).
    params : dict, optional
        The binary calibrator's hyperparameters (default: its defaults).
    logits : bool, default False
        Whether ``P`` holds logits (softmaxed first) rather than probabilities.

    Attributes
    ----------
    models_ : list
        Per class, its fitted binary calibrator or its constant rate (a float).
    notes_ : list of str
        What the fitted map does with exact zeros (see "Zeros" above); empty when none at the training scores.
    """

    name = "ovr"
    prefix = "One-vs-rest"
    summary = "a binary calibrator per class, rows renormalised"
    paper = ("Zadrozny & Elkan (2002), Transforming classifier scores into accurate multiclass "
             "probability estimates")

    def __init__(self, binary: str = "isotonic", params: dict | None = None, logits: bool = False):
        self._keep(locals())

    def _fit(self, x: Scores, y: np.ndarray, w: np.ndarray | None) -> None:
        P = x.columns
        self.models_ = [self._fit_binary(P[:, k], (y == k).astype(np.int8), w) for k in range(x.k)]
        rows = np.bincount(y, weights=w, minlength=x.k)
        zero = [k for k, m in enumerate(self.models_)
                if isinstance(m, Calibrator) and np.any(m.predict(P[:, k]) == 0.0)]
        notes = []
        if zero:
            few = rows[zero]
            span = f"{few.min():g}" if few.min() == few.max() else f"{few.min():g} to {few.max():g}"
            notes.append(f"{len(zero):,} of {x.k:,} classes ({class_list(zero)}) get probability 0 from their binary "
                         f"map at some training scores, with {span} rows of the class (by weight). One-vs-rest does "
                         "not floor: a row scored there gets probability 0 for the class, and a held-out row of that "
                         "class there has an infinite log-loss. A binary method that smooths (platt, beta, bbq) or "
                         "more rows a class avoids it.")
        absent = [k for k, m in enumerate(self.models_) if not isinstance(m, Calibrator) and m == 0.0]
        if absent:
            notes.append(f"{len(absent):,} of {x.k:,} classes ({class_list(absent)}) do not occur in the fitted "
                         "labels (by weight): probability 0 in every row.")
        every = [k for k, m in enumerate(self.models_) if not isinstance(m, Calibrator) and m == 1.0]
        if every:
            notes.append(f"the class of {class_list(every)} is the label of every row (by weight): every other class "
                         "gets probability 0 in every row.")
        self._say(notes)

    def _predict(self, x: Scores) -> np.ndarray:
        P = x.columns
        return np.column_stack([self.apply(m, P[:, k]) for k, m in enumerate(self.models_)])

    def _export_state(self) -> dict:
        """Per class, its binary calibrator's state or its rate, and the fit's notes."""
        return {"models": [self.model_state(m) for m in self.models_], "notes": list(self.notes_)}

    def _import_state(self, state: State) -> None:
        self.models_ = [self.model_from(entry) for entry in self.class_entries(state, "models")]
        self._import_notes(state)
