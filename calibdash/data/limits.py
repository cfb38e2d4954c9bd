"""The limits a table must respect: its size in bytes and its number of usable rows."""
from __future__ import annotations

__all__ = ["DEFAULT_MAX_BYTES", "MIN_ROWS"]

#: Largest file accepted, as ``server.maxUploadSize = 200`` (MB) in .streamlit/config.toml.
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
#: Fewest usable rows a score set may have.
MIN_ROWS = 20


def megabytes(n: int) -> str:
    """``n`` bytes as ``"12.3 MB"``, for messages."""
    return f"{n / (1024 * 1024):.1f} MB"
