"""The parser (one sub-command per module) and `main`: library errors become one line, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from treerag_core import terminal_safe
from treerag_core.base.errors import TreeRAGError
from treerag_core.cli import (
    evaluate,
    index,
    interactive,
    labels,
    milvus_push,
    qdrant_push,
    query,
    tune,
)

# Each command module: add_parser(sub) declares its flags, run(args) calls the API.
COMMANDS = (index, query, evaluate, qdrant_push, milvus_push, interactive, tune, labels)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m treerag_core",
        description="TreeRAG: locate sections on the heading tree, retrieve inside them, answer.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
    except ValueError as exc:  # a bad TREERAG_* variable read for a default
        print(f"error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except TreeRAGError as exc:
        print(f"error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
