"""The command line that gives Groups & time's numbers: ``python -m calibdash groups`` / ``drift`` at the page's
settings, shown under each table (the page and the commands measure the same keyed cells the same way).

Only for a binary upload or sample (the file by its name) and a large source of files (its path or glob under
the data root, ``--engine duckdb``); a K-class table's top-label reduction and a large source's table or query
have no equivalent command here (None).
"""
from __future__ import annotations

import shlex

import streamlit as st

from calibdash.cli.monitor import PERIOD_WORDS
from calibdash.evaluation.scheme import Scheme
from pages.parts.fitting import is_large

__all__ = ["PROGRAM", "COMMAND_CAPTION", "source_args", "groups_argv", "drift_argv", "caption"]

#: How the command is started.
PROGRAM = ("python", "-m", "calibdash")
#: Label values the command takes as the positive class without ``--positive``.
_DEFAULT_POSITIVE = ("1", "1.0", "True", "true")
#: Schemes the ``groups --fix`` command can divide rows by (by a hash of their position).
FIX_SCHEMES = ("split", "kfold")


def source_args(problem) -> list | None:
    """The command's source and column arguments for the page's data (a
    :class:`pages.parts.segments_problem.Problem`), or None when there is no equivalent."""
    if problem.classes is not None:
        return None
    ss = problem.ss
    if is_large(ss):
        from pages.parts.large_source import SPEC

        spec = st.session_state.get(SPEC) or {}
        if spec.get("kind") != "files":
            return None
        out = [spec["path"].strip(), "--engine", "duckdb"]
    else:
        out = [ss.name]
    out += ["--score", str(ss.score), "--label", str(ss.label_column)]
    if str(ss.positive_label) not in _DEFAULT_POSITIVE:
        out += ["--positive", str(ss.positive_label)]
    return out


def _measures(n_bins: int, n_boot: int, seed: int) -> list:
    return ["--n-bins", str(n_bins), "--boot", str(n_boot), "--seed", str(seed)]


def groups_argv(source: list, column: str, n_bins: int, n_boot: int, seed: int, *, fix: str | None = None,
                scheme: Scheme | None = None) -> list:
    """``groups`` at the page's settings; with ``fix`` (and a ``scheme`` the command can draw) the calibrator that
    fixes the groups too."""
    argv = [*PROGRAM, "groups", *source, "--by", column, *_measures(n_bins, n_boot, seed)]
    if fix and scheme is not None and scheme.kind in FIX_SCHEMES:
        argv += ["--fix", fix, "--scheme", scheme.kind]
        argv += (["--test-size", f"{scheme.test_size:g}"] if scheme.kind == "split"
                 else ["--folds", str(scheme.n_folds)])
    return argv


def drift_argv(source: list, column: str, freq: str, n_bins: int, n_boot: int, seed: int, method: str) -> list:
    """``drift`` at the page's settings (``freq``: a period of :data:`calibdash.monitoring.keyed.PERIODS` or "auto")."""
    period = {v: k for k, v in PERIOD_WORDS.items()}[freq]
    return [*PROGRAM, "drift", *source, "--time", column, "--period", period, *_measures(n_bins, n_boot, seed),
            "--method", method]


#: The caption above a shown command (tests find the command by it).
COMMAND_CAPTION = "The same numbers on the command line (add `--json` for records):"


def caption(box, argv: list | None) -> None:
    """The command under a table, in ``box`` (nothing when there is no equivalent).

    The command is shown as code (``st.code``, a code block whose text is never read as Markdown), so the
    text a user copies is exactly ``shlex.join(argv)``, which a POSIX shell splits back into ``argv``
    whatever quotes, backticks, ``$(...)`` or line breaks a column or file name holds. Inside a Markdown
    code span such a name could end the span, and a copied command run what the name spelled.
    """
    if argv:
        box.caption(COMMAND_CAPTION)
        box.code(shlex.join(argv), language="bash", wrap_lines=True)
