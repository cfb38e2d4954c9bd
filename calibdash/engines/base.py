"""What an engine is: the interface every backend package implements and the registry finds.

An engine's package holds ``rows.aggregate`` (score cells and a row sample), ``keyed.aggregate_keyed``,
``classes.aggregate_classes`` / ``classes.class_rows`` and ``apply.apply``, imported when first used (so pyspark
loads only when Spark runs). Every engine gives the same cells on the same rows and refuses what the others
refuse with the same message (``tests/engines/test_engine_contract.py``). An engine's own options (a
connection, a session) are keywords the dispatchers pass through."""
from __future__ import annotations

import importlib

__all__ = []


class Engine:
    """One backend. Subclasses set the attributes (and may override :meth:`suits`, :meth:`read_head`,
    :meth:`label_counts`, :meth:`watched`); the methods call the package's modules. An instance holds no state.

    Attributes
    ----------
    name : str
        The registry name (``--engine NAME``); empty in abstract bases.
    label : str
        The name shown to people.
    order : float
        Place in :func:`calibdash.engines.available` (and so in the CLI's choices).
    out_of_core : bool
        Whether rows stay where they live (False: they are read into memory).
    by_default : bool
        Whether :func:`calibdash.engines.default_engine` may choose it (else only when asked).
    table_positions : bool
        Whether a table's rows have positions (a row id) to hash for k-fold and split schemes.
    catalog : bool
        Whether a table or query names the engine's own catalog (not a DuckDB database), so only the engine
        itself can read it (:func:`calibdash.engines.reader`).
    reads_heads : bool
        Whether it implements :meth:`read_head` and :meth:`label_counts` for files and DuckDB sources.
    dialect : str or None
        The SQL dialect of :mod:`calibdash.io.sql` it runs a model's SQL in (None: it runs ``predict``).
    session : str or None
        The keyword of its session option, when it needs one (the contract tests pass a session there).
    """

    name: str = ""
    label: str = ""
    order: float | None = None
    out_of_core: bool = True
    by_default: bool = True
    table_positions: bool = True
    catalog: bool = False
    reads_heads: bool = False
    dialect: str | None = None
    session: str | None = None

    def suits(self, source) -> bool:
        """Whether :func:`calibdash.engines.default_engine` takes this engine for ``source`` (None: a source
        not yet opened); only asked of engines with ``by_default``."""
        return True

    def _module(self, name: str):
        return importlib.import_module(f"{type(self).__module__}.{name}")

    def aggregate(self, source, scheme=None, **options):
        """Score cells of a :class:`~calibdash.engines.source.Source` (and with ``sample_rows`` a row sample):
        ``rows.aggregate``, as :func:`calibdash.engines.duckdb.rows.aggregate`."""
        return self._module("rows").aggregate(source, scheme, **options)

    def aggregate_keyed(self, source, key, scheme=None, **options):
        """Keyed cells (:class:`calibdash.monitoring.keyed.KeyedCells`): ``keyed.aggregate_keyed``."""
        return self._module("keyed").aggregate_keyed(source, key, scheme, **options)

    def aggregate_classes(self, csrc, scheme, **options):
        """K-class cells of a :class:`~calibdash.engines.classes.ClassSource`: ``classes.aggregate_classes``."""
        return self._module("classes").aggregate_classes(csrc, scheme, **options)

    def class_rows(self, csrc, scheme, **options):
        """A context manager giving the checked K-class rows (:class:`~calibdash.engines.classes.ClassRows`):
        ``classes.class_rows``."""
        return self._module("classes").class_rows(csrc, scheme, **options)

    def apply(self, cal, fitted_on: dict, files: list, fmt: str, out_path, score_column, form: str, **options
              ) -> tuple:
        """Write every row of ``files`` with a ``calibrated`` column to ``out_path``: ``apply.apply``, returning
        ``(score, n_rows, n_calibrated, form_used, via, mapped, replaced)`` for
        :func:`calibdash.engines.apply.apply_model`."""
        return self._module("apply").apply(cal, fitted_on, files, fmt, out_path, score_column, form, **options)

    def read_head(self, source, rows: int):
        """The first ``rows`` rows of ``source``, every column (for guessing roles)."""
        raise NotImplementedError(f"the {self.label} engine does not read a source's first rows.")

    def label_counts(self, source, limit: int):
        """Per label value (at most ``limit``, the most frequent): ``label``, ``rows``, ``score_min``,
        ``score_max`` (the finite scores' range), in one scan."""
        raise NotImplementedError(f"the {self.label} engine does not count a source's labels.")

    def watched(self, job, stack) -> dict:
        """Options that let ``job`` (:class:`calibdash.core.jobs.Job`) follow and stop this engine's work, their
        contexts entered on ``stack`` (:class:`contextlib.ExitStack`); none by default."""
        return {}
