"""``python -m calibdash runs list|show|export|delete|share`` and the ``--save NAME [--tag K=V]`` option of
``evaluate``, ``groups`` and ``drift``: the command line's side of the saved runs (:mod:`calibdash.io.runs`).

The command line reaches the workspace's folder and catalog directly, so it acts as the operator: without
``--user`` it sees and manages every run. A run saved here belongs to ``--owner`` (default ``CALIBDASH_USER``);
with no owner it is the server's own run, which every signed-in user sees (a nightly job's history).
"""
from __future__ import annotations

import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..core.errors import EnvironmentProblem, SettingsError
from ..io import export
from ..io.runs import Workspace
from .documents import reliability_document

__all__ = ["save_run", "cmd_runs"]


def _workspace(args) -> Workspace:
    return Workspace(args.workspace or None, catalog=args.catalog or None)


def tags_of(items) -> dict:
    tags = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"--tag takes KEY=VALUE, not {item!r}.")
        tags[key.strip()] = value.strip()
    return tags


def save_run(args, kind: str, results: dict, dataset: str, evaluation=None) -> None:
    """Save ``results`` (the command's JSON document) when ``--save`` was given, with an in-memory
    ``evaluation``'s fitted models and reliability bins, the ``--fail-above`` thresholds, and where a large
    source lives (its path or query and engine, never its rows); say where on stderr."""
    if not getattr(args, "save", None):
        return
    view = {"command": kind, "argv": sys.argv[1:],
            "thresholds": {name: value for name, value in getattr(args, "thresholds", None) or []}}
    engine = getattr(args, "engine", None)
    source = ({"engine": engine, **{k: getattr(args, k, None) for k in ("file", "database", "table", "query")}}
              if engine and engine != "memory" else None)
    models = diagrams = None
    if evaluation is not None:
        models = {m: json.loads(export.dumps(model)) for m, model in evaluation.models.items()}
        diagrams = reliability_document(evaluation)
    record = _workspace(args).save(name=args.save, kind=kind, dataset=dataset, results=results, view=view,
                                   models=models, source=source, diagrams=diagrams, tags=tags_of(args.tag),
                                   owner=args.owner, visibility="private" if args.owner else "all")
    print(f"saved run {record.id} ({record.name!r}, {record.bytes:,} bytes)", file=sys.stderr)


def _record_json(r) -> dict:
    return {"id": r.id, "name": r.name, "kind": r.kind, "dataset": r.dataset, "owner": r.owner or None,
            "visibility": r.visibility, "shared_with": list(r.shared_with), "saved_at": _when(r.saved_at),
            "bytes": r.bytes, "tags": r.tags, "headline": r.headline}


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_runs(args) -> int:
    ws = _workspace(args)
    if args.action == "list":
        tag = tuple(tags_of([args.tag]).items())[0] if args.tag else None
        records = ws.list(args.user, dataset=args.dataset, name=args.name, tag=tag, owner=args.owner, kind=args.kind)
        if args.json:
            print(json.dumps({"workspace": str(ws.folder), "runs": [_record_json(r) for r in records]}, indent=2))
        else:
            print(f"{len(records)} run(s) in {ws.folder}")
            for r in records:
                tags = " ".join(f"{k}={v}" for k, v in r.tags.items())
                print(f"{r.id}  {_when(r.saved_at)}  {r.kind:<8}  {r.name}  [{r.dataset}]  "
                      f"{r.owner or '(server)'}  {tags}".rstrip())
    elif args.action == "show":
        run = ws.open(args.id, args.user)
        print(json.dumps({"run": _record_json(run.record), "view": run.view, "results": run.results,
                          "models": run.models, "source": run.source} if args.json else _record_json(run.record),
                         indent=2))
    elif args.action == "export":
        run = ws.open(args.id, args.user)
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            written = [shutil.copy2(f, out / f.name) for f in sorted(run.folder.iterdir())]
        except OSError as exc:
            raise EnvironmentProblem(f"cannot write {out}: {exc.strerror or exc}.") from None
        _done(args, {"id": run.record.id, "files": [str(p) for p in written]}, f"wrote {len(written)} file(s) to {out}")
    elif args.action == "delete":
        ws.delete(args.id, args.user)
        _done(args, {"id": args.id, "deleted": True}, f"deleted run {args.id}")
    else:                                                   # share
        visibility = "all" if args.all else "private"
        r = ws.share(args.id, args.user, visibility, [u for u in (args.users or "").split(",") if u.strip()])
        _done(args, _record_json(r), f"run {r.id}: {visibility}" + (f", shared with {', '.join(r.shared_with)}"
                                                                        if r.shared_with else ""))
    return 0


def _done(args, document: dict, line: str) -> None:
    print(json.dumps(document, indent=2) if args.json else line)
