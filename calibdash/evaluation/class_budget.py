"""Bounds on K-class work, checked before it starts: how many classes, and how much work each method may do.

A fit's cost by family (:func:`family`): ``"scalar"`` (temperature) ``K n`` a gradient; ``"diagonal"`` (vector
scaling) the same, for many more gradients; ``"full"`` (matrix, Dirichlet) ``K^2 n`` per Newton step, ``K^3``
numbers held and a 31-fit penalty search; ``"ovr"`` ``K`` binary fits of ``n`` rows plus each one's fixed cost
(:data:`BINARY_FIT_ROWS`); ``"top_label"`` ``K n`` and ``K + 1`` binary fits. :func:`fitting` leaves out a method
whose :func:`work` passes its :data:`WORK_LIMITS`, naming the limit; any table over :data:`MAX_CLASSES` classes or
:data:`MAX_CELLS` probabilities is refused. The limits give one fit about a minute of CPU on this
project's 2-core server (vector scaling of 26,000 x 1,000 logits 6 s, one-vs-rest isotonic of the same 3 s, matrix
scaling of 10,000 x 100 18 s; fixed costs at 20,000 rows: isotonic 0.005 s, SBB 0.5 s, ABB 1.0 s, ELiTE 0.8 s).
"""
from __future__ import annotations

from typing import Iterable

from ..core import limits
from ..core.errors import DataError
from ..calibrators.multiclass.linear import MAX_FULL_CLASSES

__all__ = ["check_table", "fitting", "check_bootstrap"]

#: The most classes any K-class evaluation takes (ImageNet's 1,000): the one number the upload's check
#: (:data:`calibdash.core.limits.MAX_CLASSES`) refuses a table by, so a table read is a table evaluated.
MAX_CLASSES = limits.MAX_CLASSES
#: The most probabilities (rows x classes) of a table any K-class evaluation takes: 400 MB per copy in float64
#: (ImageNet's 50,000 validation rows x 1,000 classes).
MAX_CELLS = 50_000_000
#: The most classes of a full K x K map (matrix scaling, Dirichlet calibration): the solver's own refusal
#: (:data:`calibdash.calibrators.multiclass.linear.MAX_FULL_CLASSES`; its preconditioner holds ``K (K + 1)^2`` numbers,
#: 127 MB at 250 classes, 8 GB at 1,000), checked here before any work so a page leaves the method out.
FULL_MAX_K = MAX_FULL_CLASSES
#: The most work of one fit, per family (see the module's docstring for the unit of each).
WORK_LIMITS = {"scalar": 50_000_000, "diagonal": 50_000_000, "full": 200_000_000, "ovr": 50_000_000,
               "top_label": 50_000_000}
#: What each family's work counts, for the messages.
UNITS = {"scalar": "K x n", "diagonal": "K x n", "full": "K^2 x n", "ovr": "K x (n + a binary fit's fixed cost)",
         "top_label": "K x n + (K + 1) binary fits' fixed cost"}
#: The fixed cost of one binary fit, in rows (binary methods not listed: none), for the composites' work:
#: SBB, ABB and ELiTE spend 0.5 to 1 s on any fit (at 20,000 rows isotonic regression takes 0.005 s).
BINARY_FIT_ROWS = {"sbb": 500_000, "abb": 1_000_000, "elite": 1_000_000}
#: The most work of the paired bootstrap (judged rows x (K + 6) statistics x methods): 300,000 judged rows x
#: 10 classes x 5 methods (2.4e7) took 18.5 s.
BOOTSTRAP_LIMIT = 50_000_000


def family(method: str) -> str:
    """The cost family of a K-class method: ``"scalar"``, ``"diagonal"``, ``"full"``, ``"ovr"`` or ``"top_label"``
    (SettingsError for an unknown method)."""
    from .. import calibrators
    cls = calibrators.get_class(method, "classes")
    prefix = method.split(":", 1)[0]
    if prefix in calibrators.composites():
        return prefix
    return getattr(cls, "matrix", None) or "scalar"


def work(method: str, n: int, k: int) -> int:
    """The work of one fit of ``method`` on ``n`` rows of ``k`` classes, in its family's unit (:data:`UNITS`); the
    parametric maps see at most ``MAX_FIT_ROWS`` rows."""
    from ..calibrators import get_class
    from .holdout import MAX_FIT_ROWS
    fam = family(method)
    rows = min(int(n), MAX_FIT_ROWS) if getattr(get_class(method, "classes"), "parametric", False) else int(n)
    k = int(k)
    fixed = BINARY_FIT_ROWS.get(method.partition(":")[2].strip(), 0)
    if fam == "full":
        return k * k * rows
    if fam == "ovr":
        return k * (rows + fixed)
    if fam == "top_label":
        return k * rows + (k + 1) * fixed
    return k * rows


def check_table(n: int, k: int) -> None:
    """Refuse (DataError naming the limit) a K-class table too large for any method: over :data:`MAX_CLASSES`
    classes or :data:`MAX_CELLS` probabilities."""
    if int(k) > MAX_CLASSES:
        raise DataError(f"{int(k):,} classes are more than this server fits ({MAX_CLASSES:,}, the most of any "
                        "K-class evaluation); group the rarest classes or keep fewer class columns.")
    if int(n) * int(k) > MAX_CELLS:
        raise DataError(f"{int(n):,} rows x {int(k):,} classes are {int(n) * int(k):,} probabilities, more than "
                        f"this server evaluates at once ({MAX_CELLS:,}); use a sample of "
                        f"{MAX_CELLS // max(int(k), 1):,} rows or fewer.")


def _over(method: str, n: int, k: int) -> str | None:
    """Why ``method`` does not fit on ``n`` x ``k`` (one clause), or None when it does."""
    fam = family(method)
    if fam == "full" and int(k) > FULL_MAX_K:
        return f"a full K x K map takes at most {FULL_MAX_K} classes, here {int(k):,}"
    w = work(method, n, k)
    if w > WORK_LIMITS[fam]:
        return f"its work ({UNITS[fam]}) is {w:,.0f}, over its limit of {WORK_LIMITS[fam]:,}"
    return None


def fitting(methods: Iterable[str], n: int, k: int) -> tuple[list[str], dict[str, str]]:
    """``(the methods that fit, {method: why not} for the others)`` on ``n`` rows of ``k`` classes, each kept in
    the order given. Raises as :func:`check_table` when the table itself is too large."""
    check_table(n, k)
    why = [(m, _over(m, n, k)) for m in methods]
    return [m for m, w in why if w is None], {m: w for m, w in why if w is not None}


def check_bootstrap(n: int, k: int, methods: int) -> None:
    """Refuse (DataError) paired bootstrap intervals of ``methods`` methods on ``n`` judged rows of ``k`` classes
    over :data:`BOOTSTRAP_LIMIT`."""
    w = int(n) * (int(k) + 6) * int(methods)
    if w > BOOTSTRAP_LIMIT:
        raise DataError(f"bootstrap intervals of {int(methods)} methods on {int(n):,} judged rows x {int(k):,} "
                        f"classes are {w:,} units of work (rows x (K + 6) x methods), over this server's limit of "
                        f"{BOOTSTRAP_LIMIT:,}; fewer methods or rows get intervals.")
