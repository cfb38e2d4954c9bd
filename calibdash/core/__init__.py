"""What every layer uses: typed errors, input checks, the one logistic solver, safe text, the registry scan, jobs."""

__version__ = "0.1.0"
