"""The operator's settings for server-side work: the data root of large sources and the bounds on jobs.

Read from Streamlit's secrets (the variables' names in lower case, e.g.
``calibdash_data_root``), else from the environment (``CALIBDASH_DATA_ROOT``,
``CALIBDASH_MAX_JOBS``, ...; :func:`calibdash.data.guard.data_root_from_env`,
:func:`calibdash.core.jobs.limits_from_env`).
"""
from __future__ import annotations

import functools
import os
import tempfile

import streamlit as st

from calibdash.core import jobs
from calibdash.data.guard import ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, ENV_VAR, DataRoot, data_root_from_env
from calibdash.core.errors import EnvironmentProblem

__all__ = ["secrets", "data_root", "available", "registry"]

SETTINGS = (ENV_VAR, ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT, jobs.ENV_MAX_JOBS, jobs.ENV_JOB_TIMEOUT, jobs.ENV_JOB_LEASE,
            jobs.ENV_MAX_QUEUED)


def secrets() -> dict:
    """The operator's settings in Streamlit's secrets (``calibdash_data_root``, ``calibdash_max_jobs``, ...)."""
    try:
        return {k.lower(): st.secrets.get(k.lower()) for k in SETTINGS if st.secrets.get(k.lower()) is not None}
    except Exception:  # noqa: BLE001 - no secrets.toml (or an unreadable one): the environment decides
        return {}


@functools.lru_cache(maxsize=4)
def _root(given: tuple, environ: tuple) -> DataRoot | None:
    given = dict(given)
    return data_root_from_env(given.get(ENV_VAR.lower()), environ=dict(environ), given=given,
                              spill_directory=tempfile.gettempdir())


def data_root() -> DataRoot | None:
    """The operator's data root (secrets ``calibdash_data_root``, else ``CALIBDASH_DATA_ROOT``), or None: off.

    One :class:`DataRoot` per configuration, so its private spill directory is made once.

    Raises
    ------
    EnvironmentProblem
        The configured directory does not exist, is not a directory, or is ``/``; a limit is not a size.
    """
    given = tuple(sorted((k, str(v)) for k, v in secrets().items()))
    return _root(given, tuple((k, os.environ.get(k, "")) for k in (ENV_VAR, ENV_MEMORY_LIMIT, ENV_SPILL_LIMIT)))


def available() -> bool:
    """Whether the operator turned large sources on (also when the root is misconfigured: the Data page says so)."""
    try:
        return data_root() is not None
    except EnvironmentProblem:
        return True


def _session_alive(owner) -> bool | None:
    """Whether the session of ``owner`` is still connected (asked when its lease expires), or None: unknown."""
    try:
        from streamlit import runtime

        return runtime.exists() and runtime.get_instance().is_active_session(str(owner).split("/")[0])
    except Exception:  # noqa: BLE001 - no runtime (tests): the lease decides
        return None


def registry() -> jobs.JobRegistry:
    """The server's jobs (:func:`calibdash.core.jobs.shared_registry`), with the operator's current limits."""
    return jobs.shared_registry(jobs.limits_from_env(given=secrets()), alive=_session_alive)
