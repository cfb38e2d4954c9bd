"""Deprecated old name of :mod:`calibdash.measures.calibration` (and the binning and MVCE it used to hold): import
from :mod:`calibdash.measures` (names here forward, with a warning)."""
from .core.deprecation import forwarding
from .measures import binning, calibration, mvce as _mvce

__getattr__ = forwarding(__name__, calibration, binning, _mvce, names=frozenset({
    "bin_assignments", "ece", "mce", "rmse", "brier", "log_loss", "auc", "accuracy", "mvce", "pud",
    "reliability_table", "summary", "METRIC_NAMES", "LOWER_IS_BETTER", "DEFAULT_N_BINS", "DEFAULT_STRATEGY",
    "STRATEGIES", "binning_label", "MVCE_MAX_ROWS", "check_binning", "partition_views", "binned_errors",
    "mvce_of_moments", "row_views", "LOG_LOSS_EPS", "squared_errors", "log_losses", "hits", "group_auc"}))
