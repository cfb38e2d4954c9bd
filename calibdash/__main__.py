"""``python -m calibdash``: the command line of :mod:`calibdash.cli`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
