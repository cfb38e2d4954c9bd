"""Errors shown plainly, one wording per kind (:mod:`calibdash.core.errors`), never a traceback."""
from __future__ import annotations

import logging

import streamlit as st

from calibdash.core.errors import DataError, EnvironmentProblem, SettingsError
from pages.parts.text import md

__all__ = ["HEADINGS", "SOMETHING_WENT_WRONG", "show_problem"]

log = logging.getLogger("calibdash.app")

#: Kind of error -> the heading of its message; the error's own text follows.
HEADINGS = {
    DataError: "This cannot be done with the current data",
    SettingsError: "This setting cannot be used",
    EnvironmentProblem: "This server lacks something needed here",
}
SOMETHING_WENT_WRONG = "Something went wrong"


def show_problem(exc: Exception, box=st) -> None:
    """An error box for ``exc`` in ``box``: the user's data, a setting, the server, or a bug (logged); its text
    (which may quote the data's names) shown literally, not as Markdown."""
    for kind, heading in HEADINGS.items():
        if isinstance(exc, kind):
            box.error(f"**{heading}:** {md(exc)}")
            return
    log.error("page failed", exc_info=exc)          # a bug (ProgrammingError or anything else)
    box.error(f"**{SOMETHING_WENT_WRONG}** ({type(exc).__name__}: {md(exc)}). "
              "The details are in the server log; please report them.")
