"""The ``evaluate`` and ``report`` commands: the held-out comparison of calibrators on one file, binary or
K-class, in memory or on the cells an engine aggregates, printed as a table or JSON (:func:`cmd_evaluate`, one
path for every problem) or written as the one-page HTML report (:mod:`calibdash.report`)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..evaluation import bootstrap as cboot
from .. import benchmark, engines, measures, report
from ..core.errors import DataError, SettingsError
from ..evaluation.holdout import Scheme, evaluate_cells, evaluate_classes, evaluate_score_set
from ..evaluation.methods import DEFAULT_METHODS, parse_params, resolve
from ..core.validation import choose_positive
from .file_problem import (class_methods, columns_text, engine_class_source, open_table, refuse_binary_options,
                           refuse_class_methods, scheme_of, shared_prefix)
from .engine_jobs import aggregate, engine_for, engine_source, head_rows, in_job, source_labels
from .documents import CLASS_BINNING, evaluation_facts
from .runs import save_run
from .output import (class_key, evaluate_json, four_places, intervals_json, jsonable, print_intervals, print_json,
                     report_written, sentence, source_name, validation_json)

__all__ = []

#: Methods ``evaluate`` and ``report`` fit unless told otherwise (:data:`calibdash.evaluation.methods.DEFAULT_METHODS`).
EVALUATE_METHODS = DEFAULT_METHODS
#: Paired resamples of ``evaluate --measures``' intervals unless ``--boot`` says otherwise (the Compare page's).
MEASURES_BOOT = 100

def check_split(has_split, engine: str | None) -> None:
    """DataError for ``--scheme column`` on rows with no split column (where an engine reads them: none named)."""
    if not has_split:
        raise DataError("--scheme column needs a split column" + (": name it with --split." if engine else
                                                                   " in the file."))


def _engine_facts(src, engine: str, scheme: Scheme, cells, classes=None) -> dict:
    """What ``evaluate --json`` says of rows an engine read into ``cells``, and of what it checked of them where they
    live: the ``classes`` (binary, None: the label's negative and positive values, which it finds), the positive
    one, the validation block."""
    labs = source_labels(src, engine, 3 if classes is None else len(classes) + 1)   # refused: more values
    found = {class_key(v): int(n) for v, n in zip(labs["label"], labs["rows"])}
    n, pos, mapped = sum(found.values()), None, {}
    if classes is None:
        pos, neg = choose_positive(list(labs["label"]), src.positive, column=src.label)
        classes = [neg, pos]
        lo, hi = float(labs["score_min"].min()), float(labs["score_max"].max())
        mapped = {src.score: (lo, hi)} if src.transform_name == "logistic" or (
            src.transform_name is None and (lo < 0 or hi > 1)) else {}
    counts = {c: found.get(class_key(c), 0) for c in classes}
    said = (", ".join(f"{counts[c]:,} of class {jsonable(c)!r}" for c in classes) if pos is None else
            f"{counts[pos]:,} positive ({jsonable(pos)!r}), {counts[neg]:,} negative ({jsonable(neg)!r})")
    messages = [f"Rows where they live are checked, not dropped: a missing {'class value' if pos is None else 'score'}"
                " or label is refused.", f"Label column {src.label!r}: {said}; {n:,} rows used."]
    messages += [] if pos is None else [f"Active score column {src.score!r}."]
    if mapped:
        messages.append(f"Score column {src.score!r} ranges from {lo:.4g} to {hi:.4g}: mapped by the logistic "
                        "function 1/(1+exp(-s)).")
    return dict(file=source_name(src), label=src.label, classes=classes, positive=pos,
                scheme=scheme.describe(on_cells=True), cells=cells.describe(),
                validation=validation_json(rows_read=n, class_counts=counts, mapped=mapped, messages=messages))


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


@dataclass
class _Fitted:
    """A problem's evaluation ``ev``, the keywords of :func:`.output.evaluate_json` that tell it (``facts``), the
    head's start (``named``: the rows and the columns judged), the intervals ``boot`` and ``verdict``, and the
    ``models`` of an evaluation in memory, which a saved run keeps."""

    ev: object
    facts: dict
    named: str
    boot: object = None
    verdict: str | None = None
    models: object = None


def _binary(args, opened, scheme: Scheme, engine: str | None) -> _Fitted:
    """A binary problem fitted in memory (on its rows or score cells) or on the score cells an engine aggregates."""
    first_rows = (lambda: None if args.table or args.query else head_rows(args.file, args.label))
    refuse_class_methods(args.methods, first_rows if opened is None else opened.frame, args,
                         args.file or "the source")
    cals = resolve(args.methods, parse_params(args.param))
    if engine and any(c.uses_features for c in cals.values()):
        raise SettingsError("a feature-aware method (MBCT) needs the rows: use --engine memory on a file that fits.")
    names = _measure_names(args.measures)
    if engine:
        data = engine_source(args, split=args.split)
        check_split(scheme.kind != "column" or data.split, engine)
        cells = aggregate(data, scheme, engine, args.memory_limit)
        ev = evaluate_cells(cells, cals, scheme)
        facts = dict(_engine_facts(data, engine, scheme, cells), score=data.score, rows_judged=ev.n_judged,
                     binning=ev.binning)
    else:
        data = opened.score_set(args)
        check_split(scheme.kind != "column" or data.split_column, engine)
        ev = evaluate_score_set(data, cals, scheme, cells=args.cells)
        facts = evaluation_facts(data, ev, scheme)
    boot = _measures(ev, names, MEASURES_BOOT if args.boot is None else args.boot) if names else None
    named = f"{data.describe() if engine else data.name}: score {data.score!r}"     # an engine's rows: in full
    return _Fitted(ev, facts, named, boot, models=None if engine else ev)


def _classes(args, data, scheme: Scheme, engine: str | None) -> _Fitted:
    """A K-class problem fitted in memory (with ``--boot N``: paired intervals and the verdict) or where an engine
    reads its rows: fitted on a sample, judged on cells (:func:`calibdash.engines.class_fit.evaluate_class_source`)."""
    from ..engines.class_fit import evaluate_class_source

    refuse_binary_options(args)
    n_boot = getattr(args, "boot", None)
    if engine and n_boot is not None:
        raise SettingsError("--boot resamples the judged rows, which stay where they live with --engine "
                            f"{engine}; drop --boot, or evaluate a file that fits with --engine memory.")
    if n_boot is not None and int(n_boot) < 2:
        raise SettingsError(f"--boot must be at least 2 on a K-class file, got {n_boot}.")
    if engine:
        check_split(scheme.kind != "column" or data.source.split, engine)
    methods, params = class_methods(args, len(data.columns))
    if not engine:
        ev = evaluate_classes(data.scores(), data.labels, methods, scheme, split=data.split, classes=data.classes,
                              params=params)
        boot = (cboot.bootstrap_multiclass(ev.predictions, ev.labels, n_boot=int(n_boot), seed=scheme.seed)
                if n_boot is not None else None)
        verdict = (cboot.verdict(boot, labels=report.default_labels(list(ev.predictions), ev.models))
                   if boot is not None else None)
        return _Fitted(ev, evaluation_facts(data, ev, scheme), f"{data.name}: {columns_text(data)}", boot, verdict, ev)
    res = in_job(f"Evaluating {data.source.describe()} with {engine}", lambda job: evaluate_class_source(
        data, scheme=scheme, engine=engine, methods=methods, params=params, memory_limit=args.memory_limit,
        job=job))
    facts = dict(_engine_facts(data.source, engine, scheme, res.cells, data.classes), class_columns=data.columns,
                 prefix=shared_prefix(data.columns), logits=data.logits, rows_judged=res.cells.n_rows,
                 binning=CLASS_BINNING)
    return _Fitted(res, facts, f"{facts['file']}: {columns_text(data)}")


def cmd_evaluate(args) -> int:
    """Fit the chosen calibrators and print their held-out metrics: one path for every problem, binary or K-class,
    in memory or where an engine reads the rows (what differs comes from :func:`_binary` and :func:`_classes`).
    With ``--json`` one record (with the intervals and the verdict); else the head, the messages (what loading
    said in memory; a binary problem's cells), the metrics table, the binning line, the intervals and the
    verdict. With ``--save`` the record is kept as a run, with the models fitted in memory (:func:`.runs.save_run`)."""
    scheme, engine = scheme_of(args), engine_for(args)
    opened = open_table(args, engine)
    k_rows = opened.classes if opened is not None else engine_class_source(args)
    f = _classes(args, k_rows, scheme, engine) if k_rows is not None else _binary(args, opened, scheme, engine)
    out = evaluate_json(f.ev, engine=engine or engines.find(out_of_core=False), **f.facts)
    if f.boot is not None:
        out["intervals"] = intervals_json(f.boot)
    if f.verdict is not None:
        out["verdict"] = f.verdict
    save_run(args, "evaluate", out, out["file"], f.models)
    if args.json:
        print_json(out)
        return 0
    print(f"{f.named}, label {out['label']!r}; {out['scheme']}; {out['rows_judged']:,} rows judged"
          + (f" (aggregated by {engine})" if engine else ""))
    said = [] if engine else out["validation"]["messages"]
    for msg in [*said, *([out["cells"]] if out["cells"] and k_rows is None else []), *out["notes"]]:
        print(f"  · {sentence(msg)}")
    print(f.ev.metrics.to_string(float_format=four_places))
    print(f"{out['binning'] if k_rows is not None else 'ECE and MCE: ' + out['binning']}.")
    if f.boot is not None:
        phrase = measures.best_phrase if k_rows is None else benchmark.CLASS_MEASURES.best_phrase
        print_intervals(f.boot, "More measures" if k_rows is None else "Intervals",
                        lambda name: phrase(name).removesuffix(" is better"))   # "lower", "0 is ideal"
    if f.verdict is not None:
        print(f"\nVerdict: {f.verdict}")
    return 0


def cmd_report(args) -> int:
    """Write the one-page HTML report of the held-out comparison ``evaluate`` prints."""
    opened = open_table(args, None)
    scheme, cs = scheme_of(args), opened.classes
    how = dict(title=args.title, include_plotlyjs="cdn" if args.plotlyjs == "cdn" else True)
    if cs is not None:
        refuse_binary_options(args)
        methods, params = class_methods(args, cs.k)
        text = report.report_for_class_set(cs, methods, scheme, params=params, **how)
        name = f"{cs.name} ({cs.k} classes)"
    else:
        refuse_class_methods(args.methods, opened.frame, args, opened.info.name)
        ss = opened.score_set(args)
        check_split(scheme.kind != "column" or ss.split_column, None)
        text, name = report.report_for_score_set(ss, args.methods, scheme, params=parse_params(args.param),
                                                 cells=args.cells, diagram=args.diagram, **how), ss.name
    report_written(text, args, name)
    return 0
