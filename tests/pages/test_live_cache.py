"""The pages' cache of row-sized values kept as they are (pages.parts.bounded_cache.live_cache), and a ScoreSet
that holds no second copy of its table's rows."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from calibdash.data import build_score_set
from pages.parts import bounded_cache
from pages.parts.bounded_cache import live_bytes, live_cache


def test_live_bytes_counts_arrays_frames_and_containers_once_each():
    a = np.zeros(1000)                                   # 8,000 bytes
    pair = (a, a)                                        # the same array twice holds it once
    assert live_bytes(pair) == sys.getsizeof(pair) + 8000
    df = pd.DataFrame({"x": np.arange(500, dtype=np.int64)})
    assert live_bytes(df) == df.memory_usage(deep=True, index=True).sum() >= 4000
    assert live_bytes({"k": a}) == sys.getsizeof({"k": a}) + sys.getsizeof("k") + 8000
    assert live_bytes(a, {id(a)}) == 0                   # what the caller says is counted elsewhere


def test_live_cache_hands_back_the_same_object_and_keys_on_the_named_arguments():
    made = []

    @live_cache(max_size="1MB", max_entries=8)
    def make(key: str, n: int, _unhashed=None):
        made.append(key)
        return np.ones(n, dtype=np.uint8)

    first = make("a", 1000, _unhashed=object())
    again = make("a", 1000, _unhashed=object())          # the _-argument is not part of the key
    assert again is first and made == ["a"]              # no copy per call: the value itself
    assert make.held() == 1000
    make.clear()
    assert make.held() == 0 and make("a", 1000) is not first and made == ["a", "a"]


def test_live_cache_drops_the_least_recently_used_to_stay_under_its_bytes_and_entries():
    made = []

    @live_cache(max_size=1_000_000, max_entries=3)
    def make(key: str, n: int):
        made.append(key)
        return np.ones(n, dtype=np.uint8)

    for key in "abc":                                    # 3 x 0.4 MB > 1 MB: "a" goes when "c" comes
        make(key, 400_000)
    assert make.held() == 800_000
    make("b", 400_000)                                   # kept; now the most recently used
    make("a", 400_000)                                   # computed again; "c", the least recent, goes
    assert made == ["a", "b", "c", "a"]
    make("b", 400_000)
    assert made.count("b") == 1
    big = make("big", 2_000_000)                         # over the limit: returned, never stored...
    assert big.sum() == 2_000_000 and make.held() == 800_000
    make("big", 2_000_000)
    assert made.count("big") == 2                        # ...so computed again
    for key in "xyz":                                    # small entries: the entry count binds
        make(key, 10)
    make("b", 400_000)
    assert made.count("b") == 2 and make.held() <= 1_000_000


def test_live_cache_does_not_keep_a_failure():
    calls = []

    @live_cache(max_size="1MB", max_entries=4)
    def fail(key: str):
        calls.append(key)
        raise ValueError("no")

    for _ in range(2):
        with pytest.raises(ValueError):
            fail("k")
    assert calls == ["k", "k"] and fail.held() == 0


def test_a_score_set_of_usable_rows_shares_its_table_columns():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"score": rng.uniform(size=1000), "label": rng.integers(0, 2, 1000),
                       "device": rng.choice(["app", "web"], 1000), "age": rng.integers(18, 80, 1000)})
    ss = build_score_set(df, score="score", label="label", features=["device", "age"])
    pd.testing.assert_frame_equal(ss.features, df[["device", "age"]])
    assert np.shares_memory(ss.features["age"].to_numpy(), df["age"].to_numpy())   # a view, not a copy
    with_gap = df.assign(score=df["score"].where(np.arange(1000) != 7))             # row 7 is not usable
    ss2 = build_score_set(with_gap, score="score", label="label", features=["device", "age"])
    pd.testing.assert_frame_equal(ss2.features, df[["device", "age"]].drop(index=7).reset_index(drop=True))


def test_the_score_set_cache_weighs_what_a_score_set_adds_to_its_table():
    from pages.parts import source

    df = pd.DataFrame({"score": np.linspace(0.01, 0.99, 1000), "label": np.arange(1000) % 2,
                       "device": np.where(np.arange(1000) % 3 == 0, "app", "web")})
    ss = build_score_set(df, score="score", label="label", features=["device"])
    # the scores (8 bytes a row) and the labels (1 byte a row); the table and its feature view are the tables'
    assert 9000 <= source._score_set_bytes(ss) < 9000 + 20_000
    assert bounded_cache.live_bytes(ss) > source._score_set_bytes(ss) + df.memory_usage(deep=True).sum() - 1


# -- one budget for every cache (pages.parts.cache_budget) ----------------------------------------------------
def test_every_cache_of_the_pages_has_a_share_of_the_one_budget_and_the_shares_add_up():
    import re
    from pathlib import Path

    from pages.parts import cache_budget

    root = Path(__file__).resolve().parents[2] / "pages"
    sources = {p: p.read_text() for p in root.rglob("*.py") if p.name not in ("bounded_cache.py", "cache_budget.py")}
    named = [n for text in sources.values() for n in re.findall(r'budget="([^"]+)"', text)]
    assert sorted(named) == sorted(cache_budget.SHARES)           # each share used once, no cache without one
    assert not [p for p, text in sources.items() if re.search(r"\bmax_size=", text)]
    assert sum(cache_budget.SHARES.values()) == cache_budget.REFERENCE == 1536
    assert cache_budget.total({}) == cache_budget.DEFAULT_TOTAL == 1536 * 1024 ** 2
    for given, expected in (("800MB", 800 * 1024 ** 2), ("1.5GB", 1536 * 1024 ** 2), ("104857600", 100 * 1024 ** 2)):
        env = {cache_budget.ENV_CACHE_BYTES: given}
        assert cache_budget.total(env) == expected
        assert sum(cache_budget.size(n, env) for n in cache_budget.SHARES) <= expected
    # at the default, a share in MB is its size
    assert cache_budget.size("source.tables", {}) == 273 * 1024 ** 2


@pytest.mark.parametrize("given", ["lots", "12KB", "-5"])
def test_a_cache_budget_that_is_not_a_size_is_refused_naming_the_variable(given):
    from calibdash.core.errors import EnvironmentProblem
    from pages.parts import cache_budget

    with pytest.raises(EnvironmentProblem, match="CALIBDASH_CACHE_BYTES"):
        cache_budget.total({cache_budget.ENV_CACHE_BYTES: given})


_FILL_EVERY_CACHE = r'''
import importlib, inspect, json, pkgutil
from types import SimpleNamespace
import numpy as np
import pages.parts
for m in pkgutil.iter_modules(pages.parts.__path__):
    importlib.import_module(f"pages.parts.{m.name}")
from pages.parts import bounded_cache, cache_budget

def args_of(fn, i):
    names = [p for p in inspect.signature(fn).parameters if not p.startswith("_")]
    return [f"fill-{i}-{p}" for p in names]

for name, cache in bounded_cache.CACHES.items():
    piece = cache.max_size // 3 + 1                      # three never fit: the oldest must go
    for i in range(6):
        # what a cache weighing a table's reading expects (raw, features: counted elsewhere), holding the bytes
        value = SimpleNamespace(raw=None, features=None, payload=np.full(piece, i, dtype=np.uint8))
        if hasattr(cache, "put"):
            cache.put(value, *args_of(cache, i))
        else:
            cache.fill(value, *args_of(cache, i))
    too_big = SimpleNamespace(raw=None, features=None, payload=np.zeros(cache.max_size + 1, dtype=np.uint8))
    (cache.put if hasattr(cache, "put") else cache.fill)(too_big, *args_of(cache, 99))
print(json.dumps({"total": cache_budget.total(), "held": {n: [c.held(), c.max_size] for n, c in
                                                           bounded_cache.CACHES.items()}}))
'''


def test_filling_every_cache_keeps_their_total_within_the_one_budget(tmp_path):
    """Every cache of pages.parts filled past its share (a fresh server process with a 48 MB budget): each holds
    at most its share and all together at most the total, by their own accounting (live caches: bytes in
    memory; st.cache_data: the stored bytes Streamlit counts)."""
    import json
    import os
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "CALIBDASH_CACHE_BYTES": "48MB", "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", _FILL_EVERY_CACHE], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    held = got["held"]
    assert got["total"] == 48 * 1024 ** 2
    assert {"source.tables", "classes.fits", "classes.boot", "fitting.evaluate_one",
            "large_source.cells"} <= set(held)                       # live caches, cache_data and stores alike
    for name, (now, limit) in held.items():
        assert now <= limit, name
    total = sum(now for now, _ in held.values())
    assert total <= got["total"]
    # the fill reached the caches: the largest ones hold at least two of their thirds
    assert held["source.tables"][0] >= 2 * held["source.tables"][1] // 3
    assert held["fitting.evaluate_one"][0] >= 2 * held["fitting.evaluate_one"][1] // 3
