"""Every page draws the golden figures and tables on the samples (issue 27: same answers before and after).

Each golden figure and table must be matched by one of the page's, by content: the JSON text exactly between
numbers and the numbers to 1e-12 (``test_golden.differences``). Keys and the order of parts may change; the count
may not: a figure more or less is a change a person sees.
"""
from __future__ import annotations

import json

import pytest

from tests.conftest import APPTEST_TIMEOUT
from tests.golden.pages import CASES, page_parts, read_golden
from tests.golden.test_golden import differences


def _text(part) -> str:
    return json.dumps(part, indent=1, sort_keys=True, allow_nan=True)


def unmatched(expected: list, actual: list) -> list[str]:
    """The golden parts no actual part matches (each actual part matches at most one), and the actual extras."""
    left = [_text(a) for a in actual]
    missing = []
    for part in map(_text, expected):
        hit = next((i for i, a in enumerate(left) if a == part or not differences(part, a)), None)
        if hit is None:
            close = min(left, key=lambda a: len(differences(part, a)) if len(a) == len(part) else 10 ** 9,
                        default="")
            missing.append(f"{part[:200]!r}; nearest differences: {differences(part, close)[:3]}")
        else:
            left.pop(hit)
    return missing + [f"extra: {a[:200]!r}" for a in left]


def test_unmatched_pairs_parts_by_content_not_by_order():
    assert unmatched([{"x": [1, 2]}, {"y": 0.5}], [{"y": 0.5 + 1e-15}, {"x": [1, 2]}]) == []
    assert len(unmatched([{"x": [1, 2]}], [{"x": [1, 3]}])) == 2          # the golden one missing, one extra
    assert unmatched([], [{"x": 1}]) == ["extra: '{\\n \"x\": 1\\n}'"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_page_draws_the_golden_figures_and_tables(name):
    golden = json.loads(read_golden(name))
    actual = json.loads(json.dumps(page_parts(name, APPTEST_TIMEOUT), allow_nan=True))
    assert actual["errors"] == golden["errors"]
    problems = unmatched(golden["figures"], actual["figures"]) + unmatched(golden["tables"], actual["tables"])
    assert not problems, f"{name}: {len(problems)} parts differ: {problems[:3]}"
