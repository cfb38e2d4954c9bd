"""Figures as PNG or SVG bytes, for downloads: plotly renders them through Kaleido, which drives the machine's
Chromium (Kaleido's own browser download is never used); one browser is kept running after the first image."""
from __future__ import annotations

import atexit
import threading

import plotly.graph_objects as go

from ..core.errors import EnvironmentProblem, SettingsError

__all__ = ["FORMATS", "available", "figure_bytes"]

FORMATS = ("png", "svg")
_lock = threading.Lock()
_server_started = False


def _ensure_server() -> None:
    global _server_started
    if _server_started:
        return
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    atexit.register(kaleido.stop_sync_server, silence_warnings=True)
    _server_started = True


def figure_bytes(fig: go.Figure, fmt: str = "png", width: int = 900, height: int = 600, scale: float = 2.0) -> bytes:
    """Render ``fig`` as PNG or SVG.

    Raises
    ------
    SettingsError
        If the format is not one of :data:`FORMATS`.
    EnvironmentProblem
        If Kaleido or a Chromium browser is missing (the message says how to install them).
    """
    if fmt not in FORMATS:
        raise SettingsError(f"image format must be one of {FORMATS}, got {fmt!r}.")
    try:
        with _lock:
            _ensure_server()
            return fig.to_image(format=fmt, width=width, height=height, scale=scale if fmt == "png" else 1)
    except ImportError:
        raise EnvironmentProblem("PNG/SVG export needs the kaleido package: pip install -r requirements.txt.") from None
    except Exception as exc:  # kaleido raises its own errors when no browser can be started
        raise EnvironmentProblem("PNG/SVG export needs a Chromium browser (Debian: apt-get install chromium): "
                                 f"{exc}") from None


def available() -> str | None:
    """None when PNG/SVG export can work here, else the reason (for the UI to show)."""
    import shutil

    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "PNG/SVG export needs the kaleido package (pip install -r requirements.txt)."
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")):
        return "PNG/SVG export needs a Chromium browser (Debian: apt-get install chromium)."
    return None
