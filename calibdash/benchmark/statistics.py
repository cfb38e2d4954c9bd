"""A benchmark's statistics: means over repeats, ranks per data set, the Friedman test and Holm's procedure,
from a unit table (:func:`summarise`), so another ranking metric, reference or alpha needs no refitting."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..core.errors import SettingsError
from ..evaluation.holdout import UNCALIBRATED, Scheme
from . import rank_tests
from .outcome import BINARY, BenchmarkResult, Catalogue

__all__ = []

#: The metric ranked unless another is chosen.
DEFAULT_METRIC = "ECE"
#: Significance level of the Friedman test and Holm's procedure.
DEFAULT_ALPHA = 0.05


def default_reference(methods: Sequence[str]) -> str:
    """BBQ when it takes part (the papers' reference), else the first calibrator, else the raw scores."""
    others = [m for m in methods if m != UNCALIBRATED]
    return "bbq" if "bbq" in others else next(iter(others), UNCALIBRATED)


def summarise(units: pd.DataFrame, *, metric: str = DEFAULT_METRIC, reference: str | None = None,
              alpha: float = DEFAULT_ALPHA, n_folds: int = Scheme().n_folds, repeats: int | None = None,
              seed: int = 0, planned: int | None = None, methods: Sequence[str] | None = None,
              datasets: Sequence[str] | None = None, catalogue: Catalogue = BINARY) -> BenchmarkResult:
    """Means, ranks, Friedman and Holm from a unit table (as :attr:`BenchmarkResult.units`).

    Only complete (data set, repeat) blocks (every method present) count; a data set with none is left out and
    named in ``notes``. ``units`` has the columns dataset, repeat, seed, method and the metrics; ``metric`` is
    ranked; ``reference`` defaults to :func:`default_reference`; ``n_folds``, ``repeats``, ``seed``, ``planned``,
    ``methods`` and ``datasets`` are recorded (the last two fix the display order, default: order of appearance);
    ``catalogue`` (default: the binary measures) says what the units hold and their directions.

    Raises
    ------
    SettingsError
        ``metric`` was not computed, or ``reference`` is not a method of the benchmark.
    """
    metric_names = [m for m in catalogue.names if m in units.columns]
    if metric not in metric_names:
        raise SettingsError(f"metric {metric!r} was not computed; choose from {', '.join(metric_names)}.")
    methods = list(methods) if methods is not None else list(dict.fromkeys(units["method"]))
    all_datasets = list(datasets) if datasets is not None else list(dict.fromkeys(units["dataset"]))
    notes: list[str] = []
    counts = units.groupby(["dataset", "repeat"])["method"].nunique()
    full = {blk for blk, c in counts.items() if c == len(methods)}
    keep = units[[(d, r) in full for d, r in zip(units["dataset"], units["repeat"])]]
    done = [d for d in all_datasets if d in set(keep["dataset"])]
    missing = [d for d in all_datasets if d not in done]
    if missing:
        notes.append(f"Left out (no complete results yet): {', '.join(missing)}.")
    reps = keep.groupby("dataset")["repeat"].nunique()
    if len(set(reps.tolist())) > 1:
        notes.append("Data sets were averaged over different numbers of repeats: "
                     + ", ".join(f"{d} {reps[d]}" for d in done) + ".")
    means = keep.groupby(["dataset", "method"])[metric_names].mean()
    if done:
        means = means.reindex(pd.MultiIndex.from_product([done, methods], names=["dataset", "method"]))
    if not catalogue.rankable(metric):
        raise SettingsError(f"{metric} is the same for every method of a data set: rank by another metric.")
    lower = catalogue.direction(metric)
    ranked_names = [m for m in metric_names if catalogue.rankable(m)]

    def pivot(name: str) -> pd.DataFrame:
        if not done:
            return pd.DataFrame(columns=methods, dtype=float)
        t = means[name].unstack("method").reindex(index=done, columns=methods)
        t.index.name, t.columns.name = "dataset", "method"
        return t

    table = pivot(metric)
    if done:
        ranks = rank_tests.rank_table(catalogue.oriented(metric, table), True)
        undefined = [m for m in ranked_names if m != metric and not np.isfinite(pivot(m).to_numpy(float)).all()]
        if undefined:
            notes.append("Not ranked, as some method has no value on some data set (a measure these predictions "
                         f"do not define, such as ICI on a step calibrator's ties): {', '.join(undefined)}.")
        ranked_names = [m for m in ranked_names if m not in undefined]
        rank_summary = pd.DataFrame({m: rank_tests.average_ranks(catalogue.oriented(m, pivot(m)), True)
                                     for m in ranked_names})
    else:
        ranks = table.copy()
        rank_summary = pd.DataFrame(index=methods, columns=ranked_names, dtype=float)
    rank_summary.index.name = "method"
    avg = ranks.mean(axis=0) if done else pd.Series(np.nan, index=methods)
    avg.name = "average rank"
    ref = reference or default_reference(methods)
    if ref not in methods:
        raise SettingsError(f"reference method {ref!r} is not in the benchmark ({', '.join(methods)}).")
    fried = holm = None
    by_metric = pd.DataFrame(columns=["chi2_F", "F_F", "df1", "df2", "p", "critical", "reject"], dtype=float)
    if len(done) >= 2 and len(methods) >= 2:
        fried = rank_tests.friedman_from_ranks(avg.to_numpy(), len(done), alpha)
        rows = {}
        for m in ranked_names:
            f = rank_tests.friedman_from_ranks(rank_summary[m].to_numpy(), len(done), alpha)
            rows[m] = {"chi2_F": f.chi2, "F_F": f.ff, "df1": f.ff_df1, "df2": f.ff_df2, "p": f.ff_p,
                       "critical": f.critical, "reject": f.reject}
        by_metric = pd.DataFrame.from_dict(rows, orient="index")
        holm = rank_tests.holm(avg, len(done), ref, alpha)
        holm["significant"] = holm["reject"] & fried.reject
    by_metric.index.name = "metric"
    return BenchmarkResult(
        units=units.reset_index(drop=True), means=means, metric=metric, lower_is_better=lower, table=table,
        ranks=ranks, average_ranks=avg, rank_summary=rank_summary, friedman=fried,
        friedman_by_metric=by_metric, reference=ref, holm=holm, alpha=float(alpha), n_folds=int(n_folds),
        repeats=int(repeats if repeats is not None else (units["repeat"].nunique() if len(units) else 0)),
        seed=int(seed), methods=methods, datasets=done,
        planned=int(planned if planned is not None else len(units)), notes=notes, catalogue=catalogue)
