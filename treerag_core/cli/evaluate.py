"""`eval`: measure retrieval quality on a question set (the API's `evaluate`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from treerag_core import EvalConfig, evaluate, milvus_eval_index, strategy_names, terminal_safe
from treerag_core.base.errors import SettingsError
from treerag_core.base.names import DEFAULT_COLLECTION, StrategyName
from treerag_core.base.progress import PlainProgress
from treerag_core.base.settings import QuerySettings
from treerag_core.cli.options import (
    add_index_options,
    add_retrieval_options,
    add_vector_store_options,
    index_settings,
    llm_client,
    positive_int,
    print_milvus_push,
    settings_from_args,
)
from treerag_core.cli.progress import progress_bars


def add_parser(sub) -> None:
    p = sub.add_parser("eval", help="measure retrieval quality on a question set")
    p.add_argument("--data", required=True, help="a folder with docs/ and questions.jsonl")
    p.add_argument(
        "--strategy",
        default=f"{StrategyName.TREERAG},{StrategyName.FLAT_HYBRID}",
        help="comma-separated, from: " + ", ".join(strategy_names()),
    )
    p.add_argument(
        "--scope",
        choices=("doc", "corpus"),
        default="doc",
        help="doc: each question searches its own documents; corpus: the whole set "
        "(default %(default)s)",
    )
    p.add_argument(
        "--limit", type=positive_int, default=None, help="only the first N (>= 1) usable questions"
    )
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--llm", action="store_true", help="allow LLM calls (see --provider)")
    p.add_argument(
        "--cache",
        default="data/eval-cache",
        help="where built indexes are cached (default %(default)s, under the working directory)",
    )
    add_index_options(p)
    add_retrieval_options(p)
    p.add_argument(
        "--top-k",
        type=int,
        default=50,
        help="passages kept per question, walked by the budget metrics (default %(default)s)",
    )
    add_vector_store_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from treerag_core.evaluation import (
        LOCATOR_KEYS,
        difference_table,
        markdown_table,
        routing_summary,
        write_report,
    )
    from treerag_core.llm import api_key_for

    strategies = tuple(s.strip() for s in args.strategy.split(",") if s.strip())
    settings = index_settings(args, embedder=args.embedder)
    # --strategy is a list here (the strategies to compare), not one query setting.
    flags = argparse.Namespace(**{**vars(args), "strategy": None})
    query = settings_from_args(flags, QuerySettings().set("answer.final_top_k", 10))
    try:
        config = EvalConfig(
            strategies=strategies,
            scope=args.scope,
            limit=args.limit,
            use_llm=args.llm,
            top_k=args.top_k,
            index_settings=settings,
            query_settings=query,
        )
    except ValueError as exc:  # an unknown strategy, --top-k < 1
        raise SettingsError(str(exc)) from exc
    if args.llm:  # no key (or server) would make every +llm row the local one: refuse now
        llm_client(args, "--llm")
    tty = sys.stderr.isatty()
    index_update, index_close = progress_bars()  # building the set's index, when not cached
    bar = tqdm(total=0, desc="evaluating", unit="run", file=sys.stderr, disable=not tty)
    plain = PlainProgress(sys.stderr, units={"evaluating": "runs"})

    def progress(done: int, total: int) -> None:
        index_close()  # the index is built (or loaded) once the first run is done
        if not tty:
            plain.update("evaluating", done, total)
            return
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        index = None
        if args.vector_store == "milvus":  # the set's index, pushed (once) and attached
            named = None if args.milvus_collection == DEFAULT_COLLECTION else args.milvus_collection
            index, pushed = milvus_eval_index(
                args.data, settings, args.cache, args.milvus_uri, named, index_update
            )
            print_milvus_push(pushed)
        report = evaluate(
            Path(args.data),
            config,
            cache_dir=Path(args.cache),
            progress=progress,
            api_key=api_key_for(query.llm.provider) if args.llm else None,
            index=index,
            index_progress=index_update,
        )
    finally:
        index_close()
        bar.close()
    if args.out:
        write_report(Path(args.out), report)
    print(markdown_table(report))
    differences = difference_table(report)
    if differences:  # only when a baseline ran beside the strategies
        print("Paired differences from the baselines (bootstrap 95% interval; bold: excludes 0):\n")
        print(differences)
    routing = routing_summary(report)
    if routing:
        print(f"Routing: {routing} (the others searched every document in scope).\n")
    if args.llm:
        print("Locators on the same questions (local vs LLM):\n")
        print(markdown_table(report, LOCATOR_KEYS))
    used = report["settings"]
    print(
        f"top-k {used['top_k']} passages per question (budget metrics walk them); "
        f"candidate window {used['candidate_window']} for every strategy; each strategy's "
        "latency is measured from a cold cache (query vectors and cross-encoder scores)"
    )
    print(f"n = questions scored; {_left_out_line(report, args.limit)}")
    for item in args.option or ():  # the rows above are not the defaults: say so
        print(terminal_safe(f"option: {item.strip()}"))
    for reason, count in report["skipped"].items():
        print(terminal_safe(f"skipped {count}x: {reason}"))
    _llm_fallback_note(report)
    if report["partial"]:
        print("(interrupted: partial report)")
        return 130  # as Ctrl-C anywhere else; the partial report is written above
    return 0


def _left_out_line(report: dict, limit: int | None) -> str:
    """What `left out` counts: the questions --limit walked; the whole set's beside it."""

    def listed(counts: dict) -> str:
        return ", ".join(f"{n} {why}" for why, n in counts.items() if n) or "none"

    whole = listed(report["left_out"])
    if limit is None:
        return f"left out of every mean: {whole}"
    walked = listed(report.get("left_out_considered", {}))
    return f"left out among the questions --limit walked: {walked} (whole set: {whole})"


def _llm_fallback_note(report: dict) -> None:
    """One stderr line per `+llm` row whose LLM locator fell back on some questions."""
    from treerag_core.evaluation import llm_fallback_notes

    for note in llm_fallback_notes(report):
        print(f"note: {note}", file=sys.stderr)
