"""What the pages call each method (its label, its menu entry, the labels of a table's rows), and the choice of
the positive class among a label column's values, by the rule the API and the command line use."""
from __future__ import annotations

from calibdash import calibrators
from calibdash.core.errors import SettingsError
from calibdash.evaluation.methods import RAW
from calibdash.core.validation import choose_positive, label_values

__all__ = ["method_label", "method_menu_label", "method_labels", "menu_label", "positive_class_options", "MAX_LABEL_OPTIONS"]

#: At most this many label values are offered in the positive-class menu.
MAX_LABEL_OPTIONS = 20


def method_label(method: str) -> str:
    """"BBQ" for ``"bbq"``: the registered class's label, else its name."""
    return calibrators.get_class(method).label or method


def menu_label(method: str, label: str, summary: str) -> str:
    """Label and summary, for menus: "BBQ — Bayesian binning into quantiles" (the label alone when the summary
    says nothing more; the name when there is no label)."""
    return f"{label} — {summary}" if summary and summary not in label else (label or method)


def method_menu_label(method: str) -> str:
    """Label and summary, for menus: "BBQ — Bayesian binning into quantiles"."""
    cls = calibrators.get_class(method)
    return menu_label(method, cls.label, cls.summary)


def method_labels(keys, label=None) -> dict:
    """Key -> label for a table's rows: "Uncalibrated" for the raw scores, a key that names no method as is.

    ``label``: how a method is named (default :func:`method_label`, the binary calibrators').
    """
    label = label or method_label
    out = {}
    for k in keys:
        if k == RAW:
            out[k] = "Uncalibrated"
        else:
            try:
                out[k] = label(k)
            except SettingsError:
                out[k] = k
    return out


def positive_class_options(values, chosen=None) -> tuple[list[str], int]:
    """The positive-class menu: the label's distinct values as text (sorted, at most
    :data:`MAX_LABEL_OPTIONS`) and the index of ``chosen`` (a :class:`~calibdash.data.ScoreSet`'s
    ``positive_label``), or, without it, of the value :func:`calibdash.core.validation.choose_positive` picks,
    the rule of ``load_scores``, the API's ``pos_label`` default and the command line's ``--positive``.

    The text of a value is what the loader matches a chosen positive against (``"1.0"`` finds ``1.0``).
    """
    found = label_values(values)
    options = [str(v) for v in found][:MAX_LABEL_OPTIONS]
    if chosen is None and len(found) == 2:
        chosen = choose_positive(found)[0]
    text = None if chosen is None else str(chosen)
    return options, options.index(text) if text in options else 0
