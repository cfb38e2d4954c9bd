"""Write the golden outputs of every case from the code checked out: ``python tests/golden/make_golden.py [NAME ...]``."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.golden.cases import CASES, OUTPUTS, run_case  # noqa: E402


def main(names: list[str]) -> None:
    OUTPUTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or sorted(CASES):
            (OUTPUTS / f"{name}.txt").write_text(run_case(name, Path(tmp)), encoding="utf-8")
            print(name, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
