"""One-vs-rest calibration: one binary calibrator per class, then rows renormalised.

This module also holds :class:`BinaryComposite`, what every composite method
(one-vs-rest here, top-label in :mod:`.top_label`) shares: the binary method
it wraps, ``make``, the per-instance label, hyperparameters, colour and order,
and the fitted sub-models with their JSON states.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from .... import calibrators
from ...state import State, calibrator_from, state_of
from ...base import Calibrator, HyperParam
from ....core.errors import SettingsError
from ..base import MulticlassCalibrator, Scores

__all__ = ["OneVsRestCalibrator", "BinaryComposite"]

#: A fitted sub-model: a binary calibrator, or the constant rate of a problem a binary
#: calibrator cannot fit (one class only, by weight).
SubModel = Calibrator | float


class ZeroProbabilityWarning(UserWarning):
    """A composite's fitted map gives some class probability exactly 0 in some rows (its ``notes_`` say
    which and why): a held-out row of that class there has an infinite log-loss."""


def class_list(ks) -> str:
    """Classes by column index: ``"column 2"``, ``"columns 2, 5 and 7"``; past ten, the first ten and how
    many more."""
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
    """A class attribute that a composite's instances derive from their binary method.

    Read on the class (``OneVsRestCalibrator.order``, the registry's sort) it is ``on_class(cls)``;
    read on an instance it is ``derive(cls, binary_class)`` with the instance's binary method's
    class (``on_class(cls)`` again when that name is not a binary calibrator).
    """

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

    Subclasses set ``name`` (the prefix of ``"<name>:<binary>"``), ``prefix`` (the words before
    the binary method's label), ``base_order`` and ``darken`` (how the binary method's colour is
    shaded), take ``binary`` and ``params`` as their first constructor arguments and fit their
    sub-models with :meth:`_fit_binary`.

    Per instance, ``label`` is the prefix and the binary method's label (``"One-vs-rest
    isotonic regression"``), ``hyperparams`` the binary method's then the composite's own
    (``own_hyperparams``), ``color`` the binary method's colour shaded by ``darken``, and
    ``order`` ``base_order`` plus the binary method's order / 1000, so composites list after
    the scaling family, each in the binary methods' order. Read on the class (the registry's
    sort), they are the prefix, the composite's own hyperparameters, None and ``base_order``
    (:class:`PerBinary`). Binary methods that use features
    (MBCT) are refused: a multi-class table has no feature columns to give them.
    """

    prefix = ""
    base_order = 1000.0
    darken = 0.0
    own_hyperparams: tuple[HyperParam, ...] = ()

    label = PerBinary(lambda cls: cls.prefix, lambda cls, b: f"{cls.prefix} {_lower_first(b.label)}")
    hyperparams = PerBinary(lambda cls: tuple(cls.own_hyperparams),
                            lambda cls, b: tuple(b.hyperparams) + tuple(cls.own_hyperparams))
    color = PerBinary(lambda cls: None, lambda cls, b: None if b.color is None else shade(b.color, cls.darken))
    order = PerBinary(lambda cls: cls.base_order, _order)

    # -- building ----------------------------------------------------------------------------
    @classmethod
    def binary_class(cls, binary: str) -> type[Calibrator]:
        """The binary calibrator class ``binary`` names, checked to work inside a composite.

        Raises
        ------
        SettingsError
            ``binary`` is not a binary calibrator's name, or it names one that uses features.
        """
        if not isinstance(binary, str) or binary not in calibrators.classes():
            usable = [n for n in calibrators.available() if not calibrators.get_class(n).uses_features]
            raise SettingsError(f"{cls.name} wraps a binary calibrator; {binary!r} is none. "
                                f"It takes: {', '.join(usable)}.")
        found = calibrators.get_class(binary)
        if found.uses_features:
            raise SettingsError(f"{cls.name}:{binary} is not available: {binary} uses feature columns, "
                                "which a multi-class probability table does not have.")
        return found

    @classmethod
    def own_params(cls) -> list[str]:
        """The composite's own constructor arguments (those besides ``binary`` and ``params``)."""
        names = list(inspect.signature(cls.__init__).parameters)
        return [n for n in names if n not in ("self", "binary", "params")]

    @classmethod
    def make(cls, binary: str, **params) -> "BinaryComposite":
        """``cls`` wrapping ``binary`` (what :func:`calibdash.calibrators.multiclass.get` calls for ``"<name>:<binary>"``).

        ``params`` are the binary method's constructor arguments and the composite's own
        (:meth:`own_params`), mixed.

        Raises
        ------
        SettingsError
            ``binary`` is unknown or uses features, or a parameter is neither (the message names it).
        """
        bcls = cls.binary_class(binary)
        own = set(cls.own_params())
        theirs = {h.name for h in bcls.hyperparams} | set(bcls().get_params())
        unknown = set(params) - own - theirs
        if unknown:
            raise SettingsError(f"{cls.name}:{binary} has no hyperparameter {sorted(unknown)}; it takes "
                                f"{sorted(own | theirs)}.")
        inner = {k: v for k, v in params.items() if k not in own}
        return cls(binary=binary, params=inner or None, **{k: v for k, v in params.items() if k in own})

    def spec(self) -> tuple[str, dict]:
        """``("<name>:<binary>", params)``: what :func:`calibdash.calibrators.multiclass.get` takes to build this
        calibrator again: every parameter of the binary method (its defaults included) and the
        composite's own, in one dict."""
        own = {k: v for k, v in self.get_params(deep=False).items() if k not in ("binary", "params")}
        return f"{self.name}:{self.binary}", {**self.new_binary().get_params(deep=False), **own}

    def new_binary(self) -> Calibrator:
        """A new, unfitted binary calibrator with this composite's ``params``."""
        self.binary_class(self.binary)
        return calibrators.get(self.binary, **dict(self.params or {}))

    # -- fitting -----------------------------------------------------------------------------
    def _fit_binary(self, s: np.ndarray, t: np.ndarray, w: np.ndarray | None) -> SubModel:
        """The binary calibrator fitted on scores ``s`` and 0/1 outcomes ``t`` (weights ``w``), or,
        when one outcome has no row (no weight), the observed rate (0.0 or 1.0): a binary
        calibrator needs both outcomes, and with one only, every binning and isotonic fit would
        give that rate."""
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
        """Keep ``notes`` as ``notes_`` (in the model file too) and warn each
        (:class:`ZeroProbabilityWarning`): what the fitted map does that a user must not miss."""
        self.notes_ = list(notes)
        for note in notes:
            warnings.warn(f"{self.name}:{self.binary}: {note}", ZeroProbabilityWarning, stacklevel=4)

    def _notes_state(self) -> dict:
        return {"notes": list(self.notes_)}

    def _import_notes(self, state: State) -> None:
        """``notes_`` from the file (absent in files written before there were notes: none)."""
        notes = state.list("notes") if "notes" in state else []
        if not all(isinstance(n, str) for n in notes):
            raise state.error("'notes' must be a list of strings")
        self.notes_ = notes

    # -- the file ------------------------------------------------------------------------------
    @staticmethod
    def model_state(model: SubModel) -> dict:
        """A sub-model as a file entry: ``{"state": {...}}`` (the binary calibrator's state, as
        :func:`calibdash.calibrators.state.state_of` writes it) or ``{"rate": r}``."""
        if isinstance(model, Calibrator):
            return {"state": state_of(model)}
        return {"rate": float(model)}

    def class_entries(self, state: State, key: str) -> list[State]:
        """File entry ``key``: a list of objects, one per class (``n_classes_``, which
        :mod:`calibdash.io.export` sets before ``_import_state`` runs)."""
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
        return calibrator_from(self.binary, dict(self.params or {}), entry.object("state"),
                                      f"{entry.where}:")


class OneVsRestCalibrator(BinaryComposite):
    """One-vs-rest calibration (Zadrozny & Elkan, 2002): a binary calibrator per class, rows renormalised.

    For each class ``k`` the binary method is fitted on the pairs ``(P[:, k], y == k)`` with the
    rows' weights; a row's calibrated probabilities are the K binary predictions ``q_k`` divided
    by their sum, ``q_k / sum_j q_j`` (Zadrozny & Elkan's normalisation, as scikit-learn's
    ``CalibratedClassifierCV`` does). A row where every class gets 0 becomes uniform, 1/K each
    (:func:`calibdash.calibrators.multiclass.base.normalise_rows`, scikit-learn's choice since its PR #19421).

    The scores. ``P[:, k]`` is the class's column exactly as given (clipped at 1; with logits, the
    softmax's), not divided by its row's sum (:attr:`calibdash.calibrators.multiclass.base.Scores.columns`): the
    binary method sees the numbers the binary method given that column sees, so equal scores stay
    equal (rows rounded to 2 decimals, float32 rows, whose sums are not 1) and probabilities given as
    the softmax of logits are the same numbers as those logits. Every step is per class, and the
    row's division by its sum is symmetric in the classes, so permuting the columns permutes the
    output (to the rounding of the row's sum, whose terms are added in another order).

    Zeros: no floor. The normalisation keeps exact zeros: a class whose binary map is 0 at a score
    (isotonic regression or histogram binning below the class's lowest positive rows, on few rows
    of the class) gets probability 0 in every row scored there, and a held-out row of that class
    there has an infinite log-loss (with 5 rows a class, about 1 held-out row in 6 of that class
    falls below all 5). A fit where that happens at a training score, or where a class is absent
    (0 everywhere) or in every row (every other class 0 everywhere), says so: a
    :class:`ZeroProbabilityWarning` and a sentence in ``notes_``, kept in the model file. The map is
    not changed: it is scikit-learn's, and a floor would be a new smoothing that the binary method
    does not have; a binary method that smooths (Platt, beta, BBQ) has no such zeros.

    A class absent from the fitted labels (no row of it, or only rows of weight 0) cannot be
    fitted by a binary calibrator, which needs both outcomes; it gets its observed rate, 0, in
    every row. Likewise a class present in every row (with weight) gets 1, so each row
    normalises to that class. That is what the binning and isotonic fits would give on one
    outcome, and what scikit-learn's isotonic one-vs-rest gives for an absent class.

    With ``logits=True`` the binary calibrators see the softmax probabilities ``softmax(Z)[:, k]``
    (binary calibrators take scores in [0, 1]), the same numbers as ``softmax(Z)`` given as
    probabilities; a logit-based binary method such as Platt
    scaling then takes their logit, clipped at 1e-12 (:data:`calibdash.calibrators.platt.EPS`).

    Sample weights: each binary fit gets the rows' weights, so a row of whole weight ``w``
    counts as ``w`` rows exactly when the binary method's fit does (every binary method is
    tested for it).

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
        What the fitted map does with exact zeros (see "Zeros" above); empty when it gives none at the
        training scores.
    """

    name = "ovr"
    prefix = "One-vs-rest"
    base_order = 1000.0
    darken = 0.0
    summary = "a binary calibrator per class, rows renormalised"
    paper = ("Zadrozny & Elkan (2002), Transforming classifier scores into accurate multiclass "
             "probability estimates")

    def __init__(self, binary: str = "isotonic", params: dict | None = None, logits: bool = False):
        self.binary = binary
        self.params = params
        self.logits = logits

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
                         f"map at some training scores, with {span} rows of the class (by weight). One-vs-rest does not floor: a row scored there gets probability 0 for "
                         "the class, and a held-out row of that class there has an infinite log-loss. A binary "
                         "method that smooths (platt, beta, bbq) or more rows a class avoids it.")
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
        """Per class, its binary calibrator's state or its rate (:meth:`BinaryComposite.model_state`),
        and the fit's notes."""
        return {"models": [self.model_state(m) for m in self.models_], **self._notes_state()}

    def _import_state(self, state: State) -> None:
        self.models_ = [self.model_from(entry) for entry in self.class_entries(state, "models")]
        self._import_notes(state)
