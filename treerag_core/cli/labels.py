"""`labels`: export or import a workspace's labelled questions (the eval-set format)."""

from __future__ import annotations

import argparse
from pathlib import Path

from treerag_core import terminal_safe
from treerag_core.base.errors import SettingsError
from treerag_core.cli.tune import labels_file, open_engine
from treerag_core.evaluation.labels import LabelStore, export_set, import_rows


def add_parser(sub) -> None:
    p = sub.add_parser("labels", help="export or import a workspace's labelled questions")
    p.add_argument(
        "action", choices=("export", "import"), help="export the labels, or import a file"
    )
    p.add_argument("path", help="export: a folder to write; import: a questions.jsonl")
    p.add_argument("--index", required=True, help="the index the labels are about")
    p.add_argument("--labels", default=None, help="the labels file (default: beside --index)")
    p.add_argument("--embedder", default=None, help="the index's embedder (st:FOLDER models)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    engine = open_engine(args)
    store = LabelStore(labels_file(args))
    if args.action == "export":
        n = export_set(engine.index, store.load(), Path(args.path))
        print(f"exported {n} labelled question(s) and their documents to {args.path}")
        return 0
    source = Path(args.path)
    if not source.is_file():
        raise SettingsError(f"no questions file at {source}: give a questions.jsonl to import")
    result = import_rows(engine.index, source.read_bytes(), args.path)
    result = store.merge_import(result)
    print(f"imported into {store.path}: {result.summary()}")
    for qid, start in result.not_verbatim:
        print(f"  not verbatim: {terminal_safe(qid)}: {terminal_safe(start)!r}…")
    return 0
