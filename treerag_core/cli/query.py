"""`query`: answer one question, printing every step as it completes."""

from __future__ import annotations

import argparse
import sys

from treerag_core import (
    Engine,
    ask,
    attach_milvus,
    attach_qdrant,
    get_strategy,
    json_terminal_safe,
    open_index,
    render_footer,
    render_header,
    render_retrieval,
    terminal_safe,
    trace_to_json,
)
from treerag_core.base.errors import VectorStoreError
from treerag_core.base.settings import QuerySettings
from treerag_core.cli.options import (
    RERANK_CHINESE,
    add_query_options,
    base_settings,
    drilldown_options,
    llm_settings,
    settings_from_args,
)


def add_parser(sub) -> None:
    p = sub.add_parser("query", help="answer one question, printing every step")
    p.add_argument("--query", required=True, help="the question")
    p.add_argument("--leaves", default=None, help="override step 1: comma-separated leaf ids")
    add_query_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = query_settings(args)
    engine = open_engine(args)
    leaves = [x.strip() for x in args.leaves.split(",") if x.strip()] if args.leaves else None
    print_notes(args, settings)
    answer(engine, args.query, settings, leaves, args.json)
    return 0


def query_settings(args: argparse.Namespace) -> QuerySettings:
    return settings_from_args(args, base_settings(args))  # --settings FILE, else the defaults


def open_engine(args: argparse.Namespace) -> Engine:
    """The engine over --index, with the key of the provider the flags choose (none with
    --mock), and --qdrant's collection attached."""
    named = getattr(args, "embedder", None)
    if args.mock:
        engine = open_index(args.index, api_key=None, embedder_name=named)
    else:
        from treerag_core.llm import api_key_for

        key = api_key_for(llm_settings(args).provider)
        engine = open_index(args.index, api_key=key, embedder_name=named)
    if getattr(args, "qdrant", None):
        import os

        if not os.environ.get("QDRANT_URL", ""):
            raise VectorStoreError("--qdrant needs QDRANT_URL (e.g. http://localhost:6333)")
        attach_qdrant(engine, args.qdrant)
    if getattr(args, "vector_store", "faiss") == "milvus":  # every chunk search on the engine
        attach_milvus(engine, args.milvus_uri, args.milvus_collection)
    return engine


def answer(engine: Engine, question: str, settings: QuerySettings, leaves, as_json: bool) -> None:
    """Ask, printing each step as its event arrives (or the whole trace as JSON at the end)."""
    trace = None
    for event in ask(engine, question, settings, leaves=leaves):
        trace = event.trace
        if as_json:
            continue
        if event.kind == "located":
            print(render_header(trace), end="", flush=True)
        elif event.kind == "reranked":
            print(render_retrieval(trace, RERANK_CHINESE), end="", flush=True)
        elif event.kind == "delta":
            print(terminal_safe(event.delta), end="", flush=True)
    assert trace is not None
    if as_json:  # json escapes C0 controls itself; C1 and bidi controls need the same
        print(json_terminal_safe(trace_to_json(trace)))
    else:
        off_by = "" if settings.llm.enabled else "--mock"  # the CLI's only way to switch it off
        print(render_footer(trace, off_by), end="")


def unused_option_notes(args: argparse.Namespace, settings: QuerySettings) -> list[str]:
    """One line per option the user gave that the chosen strategy does not use (its
    declarations in strategies/base.py), and for a --top-k the candidate window caps."""
    strategy = get_strategy(settings.strategy)
    name, notes = strategy.name, []
    given = {flag for flag in ("leaves", "locator", "max_leaves") if getattr(args, flag, None)}
    if "leaves" in given and not strategy.locates:
        notes.append(f"--leaves is not used: {name} does not locate sections")
    for flag in sorted(given & {"locator", "max_leaves"}):
        option = "--" + flag.replace("_", "-")
        if not strategy.uses_locator:
            notes.append(f"{option} is not used: {name} has no section locator")
        elif "leaves" in given:
            notes.append(f"{option} is not used: --leaves picks the sections")
    if getattr(args, "drilldown_layers", None) and strategy.options_type is not drilldown_options():
        notes.append(f"--drilldown-layers is not used: only drilldown reads it, not {name}")
    for item in getattr(args, "option", None) or ():
        owner = item.partition(".")[0].strip()
        if owner != name:
            notes.append(f"--option {item.strip()} is not used: only {owner} reads it, not {name}")
    effective = strategy.effective_settings(settings).retrieve
    for flag, value, runs in (
        ("--dense-weight", getattr(args, "dense_weight", None), effective.dense_weight),
        ("--fusion", getattr(args, "fusion", None), effective.fusion),
    ):
        if value is not None and value != runs:
            notes.append(f"{flag} {value} is not used: {name} runs with {runs}")
    top_k, window = settings.answer.final_top_k, settings.retrieve.candidate_window
    if getattr(args, "top_k", None) is not None and settings.answer.context_chars:
        notes.append("--top-k is not used: --context-chars fills the answer's context instead")
    elif top_k > window:
        notes.append(
            f"--top-k {top_k} is capped at the candidate window, {window}; "
            f"raise --candidate-window to keep more"
        )
    return notes


def print_notes(args: argparse.Namespace, settings: QuerySettings) -> None:
    for note in unused_option_notes(args, settings):
        print(terminal_safe(f"note: {note}"), file=sys.stderr)
