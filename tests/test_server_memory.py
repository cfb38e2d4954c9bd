"""The server's allocator settings (pages/parts/memory.py), each in a fresh interpreter: a pool is per process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = ("from pages.parts import memory; import pyarrow as pa; memory.use_system_allocator(); "
         "print(pa.default_memory_pool().backend_name, memory.give_back())")


def _probe(**env) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env={**clean, **env}, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split()


def test_the_server_makes_the_system_allocator_arrows_pool():
    backend, trimmed = _probe()
    assert backend == "system"
    assert trimmed == ("True" if sys.platform.startswith("linux") else trimmed)


def test_an_operators_choice_of_pool_is_kept():
    assert _probe(ARROW_DEFAULT_MEMORY_POOL="jemalloc")[0] in ("jemalloc", "system")   # system: built without it
    assert _probe(ARROW_DEFAULT_MEMORY_POOL="mimalloc")[0] == "mimalloc"
