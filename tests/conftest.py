"""Shared test fixtures and paths."""
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_file(*parts) -> Path:
    """A file of the shared reference data, or skip when shared/ is not beside the repo."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data {path} is not available (shared/ must sit beside the repo)")
    return path


@pytest.fixture
def noisy():
    """5,000 scores whose true probability is score**2 (over-confident): (scores, labels)."""
    rng = np.random.default_rng(42)
    s = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < s ** 2).astype(int)
    return s, y
