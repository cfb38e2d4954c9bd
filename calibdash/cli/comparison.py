"""The ``evaluate`` and ``report`` commands: the held-out comparison of calibrators on one file, binary or
K-class, in memory or on the cells an engine aggregates, printed as a table or JSON (:func:`_emit`, one shape
for every path) or written as the one-page HTML report (:mod:`calibdash.report`)."""
from __future__ import annotations

import warnings

import numpy as np

from ..evaluation import bootstrap as cboot
from .. import benchmark, measures, report
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import Scheme, evaluate_cells, evaluate_classes, evaluate_score_set
from ..evaluation.methods import DEFAULT_METHODS, parse_params, resolve
from ..core.validation import choose_positive
from .file_problem import (class_methods, columns_text, engine_class_source, open_table, refuse_binary_options,
                           refuse_class_methods, scheme_of, shared_prefix)
from .engine_jobs import aggregate, engine_for, engine_source, head_rows, in_job, source_labels
from .documents import CLASS_BINNING, evaluation_document, judged_text
from .runs import save_run
from .output import (class_key, evaluate_json, four_places, intervals_json, jsonable, metrics_json, print_intervals,
                     print_json, report_written, sentence, source_name, validation_json)

__all__ = []

#: Methods ``evaluate`` and ``report`` fit unless told otherwise (:data:`calibdash.evaluation.methods.DEFAULT_METHODS`).
EVALUATE_METHODS = DEFAULT_METHODS
#: Paired resamples of ``evaluate --measures``' intervals unless ``--boot`` says otherwise (the Compare page's).
MEASURES_BOOT = 100

def check_split(ss, args) -> None:
    if args.scheme == "column" and not ss.split_column:
        raise DataError("--scheme column needs a split column in the file.")


def _engine_validation(src, engine: str) -> tuple[list, object, dict]:
    """What an engine checked of the rows where they live: the label's (negative, positive) values, the positive
    one, and the validation block."""
    labs = source_labels(src, engine, 3)                  # the engine refused any other than two values
    pos, neg = choose_positive(list(labs["label"]), src.positive, column=src.label)
    counts = {class_key(v): int(n) for v, n in zip(labs["label"], labs["rows"])}
    lo, hi = float(labs["score_min"].min()), float(labs["score_max"].max())
    mapped = {src.score: (lo, hi)} if src.transform_name == "logistic" or (
        src.transform_name is None and (lo < 0 or hi > 1)) else {}
    n = sum(counts.values())
    n_pos, n_neg = counts[class_key(pos)], counts[class_key(neg)]
    messages = ["Rows where they live are checked, not dropped: a missing score or label is refused.",
                f"Label column {src.label!r}: {n_pos:,} positive ({jsonable(pos)!r}), {n_neg:,} negative "
                f"({jsonable(neg)!r}); {n:,} rows used.", f"Active score column {src.score!r}."]
    if mapped:
        messages.append(f"Score column {src.score!r} ranges from {lo:.4g} to {hi:.4g}: mapped by the logistic "
                        "function 1/(1+exp(-s)).")
    return [neg, pos], pos, validation_json(rows_read=n, class_counts={neg: n_neg, pos: n_pos}, mapped=mapped,
                                            messages=messages)


def _measure_names(arg: str | None) -> tuple[str, ...] | None:
    """``--measures``: None when not asked, every measure for ``all``, else the listed ones (any case)."""
    if arg is None:
        return None
    if arg.strip().lower() in ("", "all"):
        return measures.MEASURE_NAMES
    by_lower = {m.lower(): m for m in measures.MEASURE_NAMES}
    names = [by_lower.get(x.strip().lower(), x.strip()) for x in arg.split(",") if x.strip()]
    return measures.check_names(names)


def _measures(ev, names, n_boot: int) -> cboot.BootstrapResult:
    """The further measures of ``ev``'s judged rows (or cells) with paired Poisson-bootstrap intervals, as the
    Compare page's "More measures"."""
    if int(n_boot) < 1:
        raise SettingsError(f"--boot must be at least 1, got {n_boot}.")
    n = ev.weights if ev.weights is not None else np.ones(len(ev.labels))
    with warnings.catch_warnings():          # a resample where a measure is undefined is NaN, and left out
        warnings.simplefilter("ignore", RuntimeWarning)
        return cboot.bootstrap_measures(ev.predictions, n, n * ev.labels, names, n_boot=int(n_boot))


def _evaluate_engine(args, cals, scheme: Scheme, engine: str) -> int:
    """``evaluate`` where the rows live: the engine aggregates them into score cells, the fits run on those."""
    if any(c.uses_features for c in cals.values()):
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    names = _measure_names(args.measures)
    src = engine_source(args, split=args.split)
    if scheme.kind == "column" and not src.split:
        raise DataError("--scheme column needs a split column: name it with --split.")
    cells = aggregate(src, scheme, engine, args.memory_limit)
    ev = evaluate_cells(cells, cals, scheme)
    scheme_text = scheme.describe(on_cells=True)
    boot = _measures(ev, names, MEASURES_BOOT if args.boot is None else args.boot) if names else None
    classes_, pos, validation = _engine_validation(src, engine)
    out = evaluate_json(file=source_name(src), engine=engine, label=src.label, classes=classes_, positive=pos,
                        score=src.score, rows_judged=ev.n_judged, scheme=scheme_text, cells=cells.describe(),
                        notes=ev.notes, binning=ev.binning, validation=validation, metrics=metrics_json(ev))
    head = (f"{src.describe()}: score {src.score!r}, label {src.label!r}; {scheme_text}; {ev.n_judged:,} rows judged "
            f"(aggregated by {engine})")
    return _emit(args, out, head, [cells.describe(), *ev.notes], ev.metrics, f"ECE and MCE: {ev.binning}", boot)


def _best_word(phrase):
    """Which value of a measure is best, in a word or two ("lower", "0 is ideal"), from its ``phrase(name)``."""
    return lambda name: phrase(name).removesuffix(" is better")


def _emit(args, out: dict, head: str, messages, metrics, binning: str, boot=None, heading: str = "More measures",
          best=_best_word(measures.best_phrase), verdict: str | None = None, evaluation=None) -> int:
    """``evaluate``'s output for any problem and path: ``out`` (with the intervals of ``boot`` and the
    ``verdict``) as JSON with ``--json``; else the head, the messages, the ``metrics`` table, the ``binning``
    line, the intervals under ``heading`` (``best(name)``: which value is best; default, the binary measures')
    and the verdict. With ``--save`` the JSON is kept as a run, with the in-memory ``evaluation``'s models
    (:func:`.runs.save_run`)."""
    if boot is not None:
        out["intervals"] = intervals_json(boot)
    if verdict is not None:
        out["verdict"] = verdict
    save_run(args, "evaluate", out, out["file"], evaluation)
    if args.json:
        print_json(out)
        return 0
    print(head)
    for msg in messages:
        print(f"  · {sentence(msg)}")
    print(metrics.to_string(float_format=four_places))
    print(f"{binning}.")
    if boot is not None:
        print_intervals(boot, heading, best)
    if verdict is not None:
        print(f"\nVerdict: {verdict}")
    return 0


def cmd_evaluate(args) -> int:
    """Fit the chosen calibrators and print their held-out metrics (a table, or JSON)."""
    scheme = scheme_of(args)
    engine = engine_for(args)
    opened = open_table(args, engine)
    if opened is not None and opened.classes is not None:
        return _evaluate_classes(args, opened.classes, scheme)
    if opened is None and (csrc := engine_class_source(args)) is not None:
        return _evaluate_class_source(args, csrc, scheme, engine)
    first_rows = (lambda: None if args.table or args.query else head_rows(args.file, args.label))
    refuse_class_methods(args.methods, first_rows if opened is None else opened.frame, args,
                         args.file or "the source")
    cals = resolve(args.methods, parse_params(args.param))
    if engine:
        return _evaluate_engine(args, cals, scheme, engine)
    names = _measure_names(args.measures)
    ss = opened.score_set(args)
    check_split(ss, args)
    ev = evaluate_score_set(ss, cals, scheme, cells=args.cells)
    boot = _measures(ev, names, MEASURES_BOOT if args.boot is None else args.boot) if names else None
    out = evaluation_document(ss, ev, scheme)
    judged, scheme_text, how = judged_text(ev, scheme)
    head = f"{ss.name}: score {ss.score!r}, label {ss.label_column!r}; {scheme_text}; {judged:,} rows judged"
    return _emit(args, out, head, ss.report.messages + ([how] if how else []) + list(ev.notes), ev.metrics,
                 f"ECE and MCE: {ev.binning}", boot, evaluation=ev)


def _evaluate_classes(args, cs, scheme: Scheme) -> int:
    """``evaluate`` of a K-class table in memory; with ``--boot N`` paired intervals and the verdict."""
    refuse_binary_options(args)
    n_boot = getattr(args, "boot", None)
    if n_boot is not None and int(n_boot) < 2:
        raise SettingsError(f"--boot must be at least 2 on a K-class file, got {n_boot}.")
    methods, params = class_methods(args, cs.k)
    ev = evaluate_classes(cs.scores(), cs.labels, methods, scheme, split=cs.split, classes=cs.classes, params=params)
    boot = (cboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=int(n_boot), seed=scheme.seed)
            if n_boot is not None else None)
    verdict = (cboot.verdict(boot, labels=report.default_labels(list(ev.predictions), ev.models))
               if boot is not None else None)
    out = evaluation_document(cs, ev, scheme)
    judged, scheme_text = out["rows_judged"], out["scheme"]
    head = f"{cs.name}: {columns_text(cs)}, label {cs.label_column!r}; {scheme_text}; {judged:,} rows judged"
    return _emit(args, out, head, [*cs.report.messages, *ev.notes], ev.metrics, CLASS_BINNING, boot, "Intervals",
                 _best_word(benchmark.CLASS_MEASURES.best_phrase), verdict, evaluation=ev)


def _evaluate_class_source(args, csrc, scheme: Scheme, engine: str) -> int:
    """``evaluate`` on K-class rows where they live: the methods fitted on a sample, the judged rows aggregated
    into cells by the engine (:func:`calibdash.engines.class_fit.evaluate_class_source`)."""
    from ..engines.class_fit import evaluate_class_source

    refuse_binary_options(args)
    if getattr(args, "boot", None) is not None:
        raise SettingsError("--boot resamples the judged rows, which stay where they live with --engine "
                            f"{engine}; drop --boot, or evaluate a file that fits with --engine memory.")
    if scheme.kind == "column" and not csrc.source.split:
        raise DataError("--scheme column needs a split column: name it with --split.")
    methods, params = class_methods(args, len(csrc.columns))
    res = in_job(f"Evaluating {csrc.source.describe()} with {engine}", lambda job: evaluate_class_source(
        csrc, scheme=scheme, engine=engine, methods=methods, params=params, memory_limit=args.memory_limit,
        job=job))
    judged, scheme_text = res.cells.n_rows, scheme.describe(on_cells=True)
    name, label = source_name(csrc.source), csrc.source.label
    labs = source_labels(csrc.source, engine, len(csrc.classes) + 1)
    found = {class_key(v): int(n) for v, n in zip(labs["label"], labs["rows"])}
    counts = {c: found.get(class_key(c), 0) for c in csrc.classes}
    n = sum(found.values())
    messages = ["Rows where they live are checked, not dropped: a missing class value or label is refused.",
                f"Label column {label!r}: " + ", ".join(f"{counts[c]:,} of class {jsonable(c)!r}"
                                                        for c in csrc.classes) + f"; {n:,} rows used."]
    out = evaluate_json(file=name, engine=engine, label=label, classes=csrc.classes, class_columns=csrc.columns,
                        prefix=shared_prefix(csrc.columns), logits=csrc.logits, rows_judged=judged,
                        scheme=scheme_text, cells=res.cells.describe(), notes=res.notes, binning=CLASS_BINNING,
                        validation=validation_json(rows_read=n, class_counts=counts, mapped={}, messages=messages),
                        metrics=metrics_json(res))
    head = (f"{name}: {columns_text(csrc)}, label {label!r}; {scheme_text}; {judged:,} rows judged "
            f"(aggregated by {engine})")
    return _emit(args, out, head, res.notes, res.metrics, CLASS_BINNING)


def cmd_report(args) -> int:
    """Write the one-page HTML report of the held-out comparison ``evaluate`` prints."""
    opened = open_table(args, None)
    scheme, cs = scheme_of(args), opened.classes
    plotlyjs = "cdn" if args.plotlyjs == "cdn" else True
    if cs is not None:
        refuse_binary_options(args)
        methods, params = class_methods(args, cs.k)
        text = report.report_for_class_set(cs, methods, scheme, params=params, title=args.title,
                                           include_plotlyjs=plotlyjs)
        name = f"{cs.name} ({cs.k} classes)"
    else:
        refuse_class_methods(args.methods, opened.frame, args, opened.info.name)
        ss = opened.score_set(args)
        check_split(ss, args)
        text = report.report_for_score_set(ss, args.methods, scheme, params=parse_params(args.param),
                                           cells=args.cells, title=args.title, diagram=args.diagram,
                                           include_plotlyjs=plotlyjs)
        name = ss.name
    report_written(text, args, name)
    return 0
