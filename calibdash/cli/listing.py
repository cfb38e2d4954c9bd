"""The ``methods`` command: the registered calibrators (:func:`calibdash.calibrators.classes`) with their
papers and hyperparameters."""
from __future__ import annotations

from .. import calibrators

__all__ = ["cmd_methods"]


def cmd_methods(args) -> int:
    """List the registered calibrators with their papers and hyperparameters."""
    for name, cls in calibrators.classes().items():
        hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
        print(f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}")
    return 0
