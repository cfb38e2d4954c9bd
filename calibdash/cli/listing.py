"""The ``methods`` command: the registered calibrators with their papers and hyperparameters."""
from __future__ import annotations

from .. import calibrators
from ..calibrators import multiclass

__all__ = []


def _line(name: str, cls) -> str:
    hps = ", ".join(f"{h.name}={h.default!r}" for h in cls.hyperparams)
    return f"{name:<10} {cls.label} — {cls.paper}\n{'':<10} hyperparameters: {hps or 'none'}"


def cmd_methods(args) -> int:
    """List the calibrators; with ``--multiclass``, the multi-class ones, a composite as ``prefix:<binary>``."""
    if not getattr(args, "multiclass", False):
        for name, cls in calibrators.classes().items():
            print(_line(name, cls))
        return 0
    print("Multi-class calibrators (K-class files; ovr:<binary> and top_label:<binary> wrap any binary calibrator "
          "above that reads no features, and take its hyperparameters too):")
    for name, cls in multiclass.classes().items():
        print(_line(f"{name}:<binary>" if name in multiclass.COMPOSITES else name, cls))
    return 0
