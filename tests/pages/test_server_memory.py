"""The server's allocator settings (pages/parts/memory.py), each in a fresh interpreter: a pool is per process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: pyarrow's pool before and after the server's choice, and whether freed memory was given back.
PROBE = ("from pages.parts import memory; import pyarrow as pa; before = pa.default_memory_pool().backend_name; "
         "memory.use_system_allocator(); print(before, pa.default_memory_pool().backend_name, memory.give_back())")


def _probe(**env) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env={**clean, **env}, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split()


def test_the_server_makes_the_system_allocator_arrows_pool():
    _, after, trimmed = _probe()
    assert after == "system"
    if sys.platform.startswith("linux"):
        assert trimmed == "True"                      # glibc's malloc_trim was called


def test_an_operators_choice_of_pool_is_kept():
    """With ARROW_DEFAULT_MEMORY_POOL set, whatever pool pyarrow gave (mimalloc where it was built with it) stays."""
    before, after, _ = _probe(ARROW_DEFAULT_MEMORY_POOL="mimalloc")
    assert before == "mimalloc" or before == "system"     # "system": this pyarrow was built without mimalloc
    assert after == before
