"""`interactive`: ask questions in a loop, with a history."""

from __future__ import annotations

import argparse
import sys

from treerag_core import terminal_safe
from treerag_core.base.errors import TreeRAGError
from treerag_core.cli.options import add_query_options
from treerag_core.cli.query import answer, open_engine, print_notes, query_settings


def add_parser(sub) -> None:
    p = sub.add_parser("interactive", help="ask questions in a loop (history kept)")
    add_query_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    engine = open_engine(args)
    settings = query_settings(args)
    print_notes(args, settings)
    history: list[str] = []
    # With --json, stdout carries only the traces (one JSON document per question).
    talk = sys.stderr if args.json else sys.stdout
    print(
        "TreeRAG interactive: ask a question; :history lists past ones; :q, Ctrl-D or Ctrl-C ends.",
        file=talk,
    )
    while True:
        try:
            line = _prompt("treerag> ", talk).strip()
        except (EOFError, KeyboardInterrupt):
            print(file=talk)
            return 0
        if line in (":q", ":quit", "exit"):
            return 0
        if not line:
            continue
        if line == ":history":
            for n, past in enumerate(history, start=1):
                print(f"{n:3d}  {terminal_safe(past)}", file=talk)
            continue
        history.append(line)
        try:
            answer(engine, line, settings, None, args.json)
        except TreeRAGError as exc:  # a bad question must not end the session
            print(f"error: {terminal_safe(str(exc))}", file=talk)
        except KeyboardInterrupt:
            print("\n(interrupted)", file=talk)


def _prompt(text: str, talk) -> str:
    """input(text), with the prompt on `talk` (input() itself always writes it to stdout)."""
    if talk is sys.stdout:
        return input(text)
    print(text, end="", file=talk, flush=True)
    return input()
