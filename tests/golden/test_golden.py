"""The outputs of the commands in ``cases.py`` are those kept in ``outputs/`` (issue 27: same answers before and after).

Text is compared exactly between numbers; numbers agree to 1e-12 relative (absolute below 1e-12), the room a sum
needs when its terms are added in another order. A deliberate change of answers regenerates the file with
``python tests/golden/make_golden.py NAME`` and says why in its commit.
"""
from __future__ import annotations

import re

import pytest

from tests.golden.cases import CASES, OUTPUTS, run_case

NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
TOLERANCE = 1e-12


def differences(expected: str, actual: str) -> list[str]:
    """Where two outputs differ beyond the tolerance: text between numbers, or numbers further apart than 1e-12."""
    found = []
    text_e, text_a = NUMBER.split(expected), NUMBER.split(actual)
    if text_e != text_a:
        for line_e, line_a in zip(expected.splitlines(), actual.splitlines()):
            if NUMBER.split(line_e) != NUMBER.split(line_a):
                found.append(f"text: {line_e.strip()[:160]!r} -> {line_a.strip()[:160]!r}")
                break
        else:
            found.append("text: the outputs have different lengths")
        return found
    for a, b in zip(NUMBER.findall(expected), NUMBER.findall(actual)):
        x, y = float(a), float(b)
        if abs(x - y) > TOLERANCE * max(1.0, abs(x), abs(y)):
            found.append(f"number: {a} -> {b}")
    return found


def test_differences_sees_a_changed_number_a_changed_word_and_allows_rounding():
    assert differences('{"ECE": 0.0312}', '{"ECE": 0.0312000000000000004}') == []
    assert differences('{"ECE": 0.0312}', '{"ECE": 0.0313}') == ["number: 0.0312 -> 0.0313"]
    assert differences('{"ECE": 1}', '{"MCE": 1}')[0].startswith("text:")
    assert differences("a 1 b", "a 1 b 2")[0].startswith("text:")


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_is_the_golden_one(name, tmp_path):
    expected = (OUTPUTS / f"{name}.txt").read_text(encoding="utf-8")
    actual = run_case(name, tmp_path)
    found = differences(expected, actual)
    assert not found, f"{name}: {len(found)} differences, first: {found[:5]}"
