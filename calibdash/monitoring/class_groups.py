"""Class-wise calibration within groups of rows (a segment, a period): what the Groups & time page's top-label view
cannot see, whether every class's probability, not only the top one, is calibrated in the group."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import DataError
from ..measures import class_measures as metrics

__all__ = ["classwise_ece_by_group"]


def classwise_ece_by_group(P, y, groups, order=None, n_bins: int = metrics.N_BINS, strategy: str = "uniform",
                           sample_weight=None) -> pd.Series:
    """The class-wise ECE (Kull et al. 2019, section 5) of each group's rows, a Series indexed by group (NaN without
    rows): ``(1/K) sum_k ECE_k(g)``, :func:`calibdash.measures.class_measures.classwise_ece` (average ``"mean"``, with
    ``P``, ``y``, ``n_bins``, ``strategy``, ``sample_weight``) on group ``g``'s rows alone (a class absent there still
    counts). ``groups``: each row's group; ``order``: the groups to report in this order (others left out), default all
    in order of appearance.
    """
    P, y, w = metrics.check_inputs(P, y, sample_weight)
    g = pd.Series(np.asarray(groups, dtype=object).reshape(-1))
    if g.size != y.size:
        raise DataError(f"the group column has {g.size} values but there are {y.size} rows.")
    order = list(pd.unique(g)) if order is None else list(order)
    out = {}
    for name in order:
        m = (g == name).to_numpy()
        out[name] = (metrics.classwise_ece(P[m], y[m], n_bins, strategy, sample_weight=None if w is None else w[m])
                     if m.any() else np.nan)
    return pd.Series(out, name="cwECE", dtype=float)
