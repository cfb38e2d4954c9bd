"""What every diagram shares: the :class:`Diagram` base its data class extends, the bin-count rule (``n_bins="auto"``:
:data:`AUTO_RULE`; :func:`auto_bin_count`, :func:`describe_rule`), the names."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from ..core.errors import DataError, SettingsError

__all__ = []

#: Resamples of a band (the default of both ``smoothed_curve_band`` and ``corp_band``; ``relplot`` and
#: ``reliabilitydiag`` also draw 100 by default).
N_BOOT = 100
#: A figure's title when none is given: the diagram's own (:attr:`Diagram.title`).
DEFAULT_TITLE = object()
#: A figure's default height, in pixels.
HEIGHT = 520


@dataclass(frozen=True)
class Diagram:
    """Base of every diagram's data: a frozen dataclass extending it implements ``caption(names=None) -> str`` and
    ``figure(*, names=None, title=DEFAULT_TITLE, ...)`` (importing plotly there only) and sets the attributes below."""

    #: Its name (the registry key; the CLI's ``--diagram`` takes it in lower case).
    kind: ClassVar[str] = ""
    #: Its figure's default title.
    title: ClassVar[str] = ""
    #: ``"binary"``: its classmethod ``prepare(predictions, labels, weights=None, **options)`` takes a DataFrame with
    #: one column of scores per method (one of :data:`calibdash.diagrams.KINDS`, offered by the report and the CLI);
    #: ``"classes"``: its ``prepare`` takes each method's (n, K) probabilities.
    problem: ClassVar[str] = "binary"
    #: Its place among the diagrams of its problem.
    position: ClassVar[float] = 0.0

    def caption(self, names: Mapping[str, str] | None = None) -> str:  # pragma: no cover - every kind has its own
        raise NotImplementedError

    def figure(self, **kw):  # pragma: no cover - every kind has its own
        raise NotImplementedError

    def _title(self, title):
        return self.title if title is DEFAULT_TITLE else title


#: The bins choice that asks for the stated rule's count.
AUTO = "auto"
#: The rule behind ``auto``.
AUTO_RULE = "cuberoot"
#: The rules of :func:`auto_bin_count`.
BIN_RULES = ("cuberoot", "sqrt", "min_count")
#: The counts of every rule are clipped to [MIN_BINS, MAX_BINS]: one bin shows nothing, and more than 100
#: cannot be told apart in a chart.
MIN_BINS, MAX_BINS = 2, 100
#: Each rule as the caption names it (``n`` the rows, ``min_count`` the rows a bin must hold).
RULE_TEXT = {"cuberoot": "cube root of n = {n:,} rows",
             "sqrt": "square root of n = {n:,} rows",
             "min_count": "at least {min_count:,} rows per bin, n = {n:,} rows"}
#: Each rule in a few words (the bins widget's ``auto`` entry) and in a sentence (its help).
RULE_SHORT = {"cuberoot": "cube root of n", "sqrt": "square root of n", "min_count": "rows per bin"}
RULE_SENTENCE = {
    "cuberoot": f"the cube root of the number of rows (rounded up, {MIN_BINS} to {MAX_BINS} bins)",
    "sqrt": f"the square root of the number of rows (rounded up, {MIN_BINS} to {MAX_BINS} bins)",
    "min_count": f"as many equal-count bins as keep min_count rows in each ({MIN_BINS} to {MAX_BINS} bins)",
}
#: Each binning strategy in words.
BINNINGS = {"quantile": "equal-count", "uniform": "equal-width"}


def _bin_counts(n, rule, min_count) -> tuple[int, int, int, int]:
    """``(n, min_count, count, clipped count)``: the arguments checked, the rule's count and that count clipped to
    [:data:`MIN_BINS`, :data:`MAX_BINS`] (the cube root exact, with no floating-point cube root)."""
    if rule not in BIN_RULES:
        raise SettingsError(f"rule must be one of {BIN_RULES}, got {rule!r}.")
    if int(min_count) != min_count or min_count < 1:
        raise SettingsError(f"min_count must be a whole number of at least 1, got {min_count}.")
    try:
        n_rows = int(math.floor(float(n)))
    except (TypeError, ValueError):
        raise DataError(f"n must be a number of rows, got {n!r}.") from None
    if n_rows < 1:
        raise DataError(f"n must be at least 1 row, got {n}.")
    if rule == "cuberoot":
        raw = max(0, round(n_rows ** (1.0 / 3.0)))
        while raw ** 3 < n_rows:
            raw += 1
        while raw > 0 and (raw - 1) ** 3 >= n_rows:
            raw -= 1
    else:
        raw = math.isqrt(n_rows - 1) + 1 if rule == "sqrt" else n_rows // int(min_count)
    return n_rows, int(min_count), raw, int(min(MAX_BINS, max(MIN_BINS, raw)))


def auto_bin_count(n, rule: str = "cuberoot", min_count: int = 100) -> int:
    """A stated number of bins for a binned reliability diagram, clipped to [:data:`MIN_BINS`, :data:`MAX_BINS`].

    Rules (``n`` the number of rows, the total weight for weighted data):

    ``"cuberoot"`` (default)
        ``ceil(n^(1/3))``: 1,000 rows give 10 bins, 1,728 give 12. The number of bins of order ``n^(1/3)`` is what BBQ
        (Naeini, Cooper & Hauskrecht 2015) centres its range of binnings on, after the minimax rate of fixed-width
        histogram classifiers (Scott & Nowak 2003; Klemelä 2009); it also balances a bin's squared bias (``~1/B^2``)
        against its variance (``~B/n``) for a smooth calibration curve.
    ``"sqrt"``
        ``ceil(sqrt(n))``, the common histogram default; more and noisier bins.
    ``"min_count"``
        ``floor(n / min_count)``: as many equal-count bins as keep at least ``min_count`` rows in each (each bin's
        observed frequency then has a standard error of at most ``0.5 / sqrt(min_count)``).

    Rules made for densities of unbounded data (Freedman-Diaconis, Scott) are not offered: they size bins by the
    spread of the scores, which for probabilities piled up near 0 or 1 gives bins with almost no rows.
    """
    return _bin_counts(n, rule, min_count)[3]


def describe_rule(n, rule: str = "cuberoot", min_count: int = 100) -> str:
    """One line for a chart: ``"12 bins (cube root of n = 1,728 rows)"`` (the rule's :data:`RULE_TEXT`)."""
    n_rows, min_count, raw, bins = _bin_counts(n, rule, min_count)
    what = RULE_TEXT[rule].format(n=n_rows, min_count=min_count)
    if raw > bins:
        what += f", capped at {MAX_BINS}"
    elif raw < bins:
        what += f", raised to the minimum of {MIN_BINS}"
    return f"{bins} bin{'s' if bins != 1 else ''} ({what})"


def bin_count(n_bins, labels, sample_weight=None) -> tuple[int, str]:
    """``(bin count, caption text)`` of a bins choice: a count (``"10 bins"``) or :data:`AUTO`, which is
    :data:`AUTO_RULE` on the rows (the weights' sum when weighted): ``"auto: 12 bins (cube root of ...)"``."""
    if n_bins == AUTO:
        n = float(np.sum(sample_weight)) if sample_weight is not None else float(len(labels))
        return auto_bin_count(n, AUTO_RULE), "auto: " + describe_rule(n, AUTO_RULE)
    return int(n_bins), f"{int(n_bins)} bins"


def display_names(names: Mapping[str, str] | None, keys) -> dict[str, str]:
    """Key -> display name for each of ``keys``: ``names``' entry, else the key itself."""
    names = dict(names or {})
    return {k: names.get(k, k) for k in keys}


def class_labels(k: int, names: Sequence[str] | None = None) -> list[str]:
    """``names`` as K strings (checked), or ``"class 0"``, ``"class 1"``, ... when None."""
    if names is None:
        return [f"class {i}" for i in range(k)]
    names = [str(n) for n in names]
    if len(names) != k:
        raise DataError(f"class_names has {len(names)} names but the probabilities have {k} classes.")
    return names


def check_strategy(strategy: str) -> None:
    """SettingsError unless ``strategy`` is one of :data:`BINNINGS`."""
    if strategy not in BINNINGS:
        raise SettingsError(f"strategy must be one of {tuple(BINNINGS)}, got {strategy!r}.")


#: The house layout's bottom margin (calibdash.figures.layout.base_layout), where the legend sits.
_LEGEND_MARGIN = 120


def legend_margin(fig, n_entries: int, height: int) -> None:
    """Room under the plot for a legend of long entries, one a line: the house legend grows upward from the figure's
    bottom, so margin and figure grow alike and the plot keeps its size."""
    need = 70 + 24 * n_entries
    if n_entries > 1 and need > _LEGEND_MARGIN:
        fig.update_layout(margin=dict(b=need), height=height + need - _LEGEND_MARGIN)


def columns(predictions, labels, sample_weight):
    """``(key, p, y, w)`` of each column of ``predictions``: float predictions, labels, float weights or None."""
    y = np.asarray(labels)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
    for col in predictions.columns:
        yield str(col), predictions[col].to_numpy(dtype=float), y, w
