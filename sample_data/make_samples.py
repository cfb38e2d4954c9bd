"""Regenerate the sample data sets in sample_data/ with the package's generators.

    python sample_data/make_samples.py                    # writes next to this script
    python sample_data/make_samples.py --out DIR          # writes elsewhere
    python sample_data/make_samples.py circles_svm.csv    # only some files

The generators live in calibdash/samples/make.py (an installed calibdash,
which ships no CSV, writes the same files into a per-user cache on first
use). Everything is deterministic (fixed seeds, no download). See
sample_data/README.md.
"""
import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))    # this checkout's calibdash, not an installed copy

from calibdash.samples.make import GENERATORS, write_all  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    ap.add_argument("files", nargs="*", metavar="FILE", help=f"only these files, among {', '.join(GENERATORS)}")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.files) - set(GENERATORS))
    if unknown:
        ap.error(f"not a sample file: {', '.join(unknown)} (choose among {', '.join(GENERATORS)})")
    for path in write_all(args.out, args.files or None):
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
