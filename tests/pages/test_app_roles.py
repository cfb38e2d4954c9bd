"""The Data page when the guessed score column is refused: the user names the columns there.

A two-class file whose only score column is named after the negative class (``p_0`` with a 0/1 label) is
refused as guessed (:func:`calibdash.data.roles.check_guessed_score`: its numbers would read upside
down). The page must not end there: it offers the label and score selectors, and a column the user names
is used as it is.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.pages.test_app import DATA, errors, start, upload


def _negative_only_csv(n: int = 400, seed: int = 3) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p1 = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p1).astype(int)
    p0 = 1.0 - p1
    body = "label,p_0\n" + "".join(f"{b},{a:.6f}\n" for a, b in zip(p0, y))
    return body.encode(), p0, y


@pytest.fixture
def refused():
    data, p0, y = _negative_only_csv()
    at = upload(start(DATA), "negative_only.csv", data)
    return at


def test_a_refused_guess_shows_the_column_selectors(refused):
    at = refused
    assert not at.exception, [e.value for e in at.exception]
    assert "cannot be used" in errors(at)
    assert at.selectbox(key=_key(at, "score")).value is None
    assert "p_0" in at.selectbox(key=_key(at, "score")).options


def test_a_score_the_user_names_is_read_as_it_is(refused):
    at = refused
    at.selectbox(key=_key(at, "score")).set_value("p_0").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, errors(at)
    # the page went on to the column roles with the user's score
    assert any(s.label.startswith("Score") and s.value == "p_0" for s in at.selectbox)
    assert any("Validation report" == h.value for h in at.subheader)


def _key(at, role: str) -> str:
    """The role selector's widget key (``source.role_key(sha, role)``: ``role.<role>.<sha>``)."""
    for s in at.selectbox:
        if s.key and s.key.startswith(f"role.{role}."):
            return s.key
    raise AssertionError(f"no {role} selector; keys: {[s.key for s in at.selectbox]}")
