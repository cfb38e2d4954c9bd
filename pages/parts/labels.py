"""What the pages call each method (its label, its menu entry, the labels of a table's rows), and the choice of
the positive class among a label column's values, by the rule the API and the command line use."""
from __future__ import annotations

from calibdash import calibrators, multiclass
from calibdash.errors import SettingsError
from calibdash.methods import RAW
from calibdash.validation import choose_positive, label_values

__all__ = ["method_label", "method_menu_label", "method_labels", "positive_class_options", "MAX_LABEL_OPTIONS",
           "class_method", "class_method_label", "class_method_labels"]

#: At most this many label values are offered in the positive-class menu.
MAX_LABEL_OPTIONS = 20


def method_label(method: str) -> str:
    """"BBQ" for ``"bbq"``: the registered class's label, else its name."""
    return calibrators.get_class(method).label or method


def method_menu_label(method: str) -> str:
    """Label and summary, for menus: "BBQ — Bayesian binning into quantiles"."""
    cls = calibrators.get_class(method)
    return f"{cls.label} — {cls.summary}" if cls.summary and cls.summary not in cls.label else (cls.label or method)


def method_labels(keys) -> dict:
    """Key -> label for a table's rows: "Uncalibrated" for the raw scores, a key that names no method as is."""
    out = {}
    for k in keys:
        if k == RAW:
            out[k] = "Uncalibrated"
        else:
            try:
                out[k] = method_label(k)
            except SettingsError:
                out[k] = k
    return out


def class_method(method: str):
    """What a multi-class method's name stands for, as the pages read it (label, hyperparameters, colour): the
    class for a plain method, an unfitted instance for a composite (``ovr:isotonic``), whose label and
    hyperparameters come from its binary method."""
    if ":" in method:
        return multiclass.get(method)
    return multiclass.get_class(method)


def class_method_label(method: str) -> str:
    """"One-vs-rest isotonic regression" for ``"ovr:isotonic"``: a multi-class method's label, else its name."""
    return class_method(method).label or method


def class_method_labels(keys) -> dict:
    """Key -> label for a multi-class table's rows: "Uncalibrated" for the raw probabilities."""
    out = {}
    for k in keys:
        try:
            out[k] = "Uncalibrated" if k == RAW else class_method_label(k)
        except SettingsError:
            out[k] = k
    return out


def positive_class_options(values, chosen=None) -> tuple[list[str], int]:
    """The positive-class menu: the label's distinct values as text (sorted, at most
    :data:`MAX_LABEL_OPTIONS`) and the index of ``chosen`` (a :class:`~calibdash.data.ScoreSet`'s
    ``positive_label``), or, without it, of the value :func:`calibdash.validation.choose_positive` picks,
    the rule of ``load_scores``, the API's ``pos_label`` default and the command line's ``--positive``.

    The text of a value is what the loader matches a chosen positive against (``"1.0"`` finds ``1.0``).
    """
    found = label_values(values)
    options = [str(v) for v in found][:MAX_LABEL_OPTIONS]
    if chosen is None and len(found) == 2:
        chosen = choose_positive(found)[0]
    text = None if chosen is None else str(chosen)
    return options, options.index(text) if text in options else 0
