"""`index`: build or update an index folder from documents (the API's `index_folder`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from treerag_core import (
    DEFAULT_MAX_CLUSTER_SIZE,
    HiragBuildSettings,
    IndexLLM,
    IndexRun,
    NoDocumentsError,
    count_noun,
    graphs_of,
    index_folder,
    push_to_milvus,
    reusable_embeddings,
    terminal_safe,
)
from treerag_core import corpus_stats as corpus_stats_of
from treerag_core.base.config import DEFAULT_MAX_FILE_BYTES, MB, IndexSettings
from treerag_core.base.errors import IndexBusyError, TreeRAGError
from treerag_core.cli.options import (
    add_index_flag,
    add_index_options,
    add_llm_options,
    add_vector_store_options,
    index_settings,
    llm_client,
    max_file_bytes_of,
    print_milvus_push,
)
from treerag_core.cli.progress import progress_bars


def add_parser(sub) -> None:
    p = sub.add_parser("index", help="build or update an index folder from documents")
    p.add_argument(
        "--input",
        nargs="+",
        required=True,
        help="files or folders (.md .markdown .txt .pdf .docx .html .htm)",
    )
    p.add_argument(
        "--output",
        required=True,
        help="index folder; it becomes an index of exactly the --input documents: documents "
        "of an earlier run there that are not among them are removed, unchanged ones reuse "
        "their vectors (written atomically; one run at a time per folder)",
    )
    p.add_argument("--mock", action="store_true", help="hashing embedder: no model load")
    add_index_options(p)
    add_vector_store_options(p)
    p.add_argument(
        "--replace",
        action="store_true",
        help="with --vector-store milvus: replace a collection that holds another index",
    )
    p.add_argument(
        "--llm-summaries",
        action="store_true",
        help="one-line section summaries from the LLM (the --provider key, or a local "
        "--base-url; cached)",
    )
    p.add_argument(
        "--max-file-mb",
        type=float,
        default=None,
        help="skip files larger than this (default: TREERAG_MAX_FILE_MB, else "
        f"{DEFAULT_MAX_FILE_BYTES / MB:g})",
    )
    # HiRAG's index part; its family declaration should own these flags.
    p.add_argument(
        "--hirag",
        action="store_true",
        help="also build the HiRAG corpus graph, communities and reports (the hirag-* strategies)",
    )
    p.add_argument(
        "--hirag-llm",
        action="store_true",
        help="HiRAG with the LLM: --hirag-llm-graph and --hirag-llm-reports (implies --hirag)",
    )
    p.add_argument(
        "--hirag-llm-graph",
        action="store_true",
        help="HiRAG entities and relations from the LLM (the --provider key or --base-url; "
        "one call per ~6,000 characters of consecutive sections, cached in the folder; a failure "
        "keeps what was extracted and the next run resumes)",
    )
    p.add_argument(
        "--hirag-llm-reports",
        action="store_true",
        help="community reports from the LLM (the --provider key or --base-url; batched, cached)",
    )
    p.add_argument(
        "--hirag-max-cluster-size",
        type=int,
        default=DEFAULT_MAX_CLUSTER_SIZE,
        help="largest HiRAG community before it is split again (default %(default)s)",
    )
    p.add_argument(
        "--llm-graphs",
        action="store_true",
        help="extract graph entities and relations with the LLM (the --provider key or "
        "--base-url; cached per leaf; a failure keeps what was extracted)",
    )
    add_index_flag(p, "max_pages")
    p.add_argument(
        "--carry-edits",
        action="store_true",
        help="apply tree corrections stored for an earlier version of a file (same name, "
        "other bytes) by heading text, and keep them for the new bytes",
    )
    add_llm_options(p)
    p.set_defaults(func=run)


def _hirag_llm_flags(args: argparse.Namespace) -> tuple[bool, bool]:
    """(LLM graph, LLM reports) asked for: --hirag-llm is both."""
    return (
        args.hirag_llm or args.hirag_llm_graph,
        args.hirag_llm or args.hirag_llm_reports,
    )


def _hirag_settings(args: argparse.Namespace) -> HiragBuildSettings | None:
    """`--hirag*` as the HiRAG build settings; None without them."""
    graph_llm, reports_llm = _hirag_llm_flags(args)
    if not (args.hirag or graph_llm or reports_llm):
        return None
    return HiragBuildSettings(
        max_cluster_size=args.hirag_max_cluster_size,
        llm_reports=reports_llm,
        llm_graph=graph_llm,
    )


def _index_llm(settings: IndexSettings, args: argparse.Namespace) -> IndexLLM | None:
    """The LLM the flags ask for; a missing key (or endpoint) fails before any work, named
    by the flag that asked for it."""
    if settings.llm_graphs and settings.graph_min_leaf_chars <= 0:
        raise TreeRAGError(
            "--llm-graphs needs --graph-min-leaf-chars N (graphs are off by default)"
        )
    for wanted, flag in (
        (settings.llm_summaries, "--llm-summaries"),
        (settings.llm_graphs, "--llm-graphs"),
        (any(_hirag_llm_flags(args)), "--hirag-llm*"),
    ):
        if wanted:
            client, llm = llm_client(args, flag)
            return IndexLLM(client, llm.locate_model)
    return None


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    embedder_name = "hashing" if args.mock and not args.embedder else args.embedder
    settings = index_settings(
        args,
        embedder=embedder_name,
        max_file_bytes=max_file_bytes_of(args.max_file_mb),
        max_pages=args.max_pages,
        llm_summaries=args.llm_summaries,
        llm_graphs=args.llm_graphs,
    )
    hirag = _hirag_settings(args)
    llm = _index_llm(settings, args)
    update, close = progress_bars()
    try:
        result = index_folder(
            args.input,
            output,
            settings,
            llm=llm,
            hirag=hirag,
            progress=update,
            carry_edits=args.carry_edits,
        )
    except IndexBusyError:
        raise IndexBusyError(
            f"another index run is writing to {output}; wait for it or pick another --output"
        ) from None
    except NoDocumentsError as exc:
        close()
        _print_skipped(exc.rejected, exc.notes)
        print("error: no readable document among the inputs", file=sys.stderr)
        return 2
    finally:
        close()
    _print_skipped(result.rejected, [])
    for note in result.notes:
        print(terminal_safe(f"note: {note}"), file=sys.stderr)
    if result.hirag is not None:
        _print_hirag(result.hirag)
    if args.vector_store == "milvus":
        pushed = push_to_milvus(result.index, args.milvus_uri, args.milvus_collection, args.replace)
        print_milvus_push(pushed)
    _print_summary(result, output)
    return 0


def _print_skipped(rejected: Sequence, notes: Sequence[str]) -> None:
    for bad in rejected:
        print(terminal_safe(f"skipped {bad.name}: {_reason(bad)}"), file=sys.stderr)
    for note in notes:
        print(terminal_safe(f"note: {note}"), file=sys.stderr)


def _print_summary(result: IndexRun, output: Path) -> None:
    index, previous = result.index, result.previous
    stats = corpus_stats_of(index)
    print(
        f"indexed {count_noun(stats['documents'], 'document')}: "
        f"{count_noun(stats['nodes'], 'node')}, "
        f"{stats['leaves']} {'leaf' if stats['leaves'] == 1 else 'leaves'}, "
        f"{count_noun(stats['chunks'], 'chunk')}, longest leaf "
        f"{stats['longest_leaf_chars']} chars, embedder {index.embedder_name}, "
        f"{result.seconds:.1f} s -> {output}"
    )
    if previous is not None:
        print(_changes_line(previous, index, result.embedder, output))
    _print_graph_summary(index, result.graph_llm)
    if result.rejected:
        print(f"{count_noun(len(result.rejected), 'file')} skipped (see above)")


def _print_hirag(meta: dict) -> None:
    counts, usage, graph = meta["counts"], meta["report_usage"], meta["graph_usage"]
    print(
        f"HiRAG graph: {counts['entities']} entities ({meta['extractor']} extractor), "
        f"{counts['relations']} relations, {counts['communities']} communities on "
        f"{counts['levels']} levels, {meta['seconds']['total']:.1f} s; "
        f"graph tokens in {graph['input_tokens']} out {graph['output_tokens']} "
        f"(${graph['cost_usd']:.4f}, {meta['graph_llm_calls']} calls, "
        f"{meta['graph_cached']} batches cached); report tokens in {usage['input_tokens']} "
        f"out {usage['output_tokens']} (${usage['cost_usd']:.4f})"
    )


def _reason(bad) -> str:
    """A rejected input's reason without its leading name or path (the line names it)."""
    head, sep, rest = bad.reason.partition(": ")
    same = head == bad.name or head.endswith(("/" + bad.name, os.sep + bad.name))
    return rest if sep and same else bad.reason


def _names(names: Sequence[str], shown: int = 3) -> str:
    """`a, b, c and 4 more`: a few names, the rest counted."""
    head = ", ".join(names[:shown])
    return f"{head} and {len(names) - shown} more" if len(names) > shown else head


def _changes_line(previous, index, embedder, output: Path) -> str:
    """What this run changed against the index that was in `output`: documents added,
    updated (new content), unchanged (their vectors reused, or re-embedded when the
    embedder or chunking changed) and removed (named: the folder holds exactly the inputs)."""
    before = {d.name: d for d in previous.documents}
    after = {d.name: d for d in index.documents}
    added = [n for n in after if n not in before]
    updated = [n for n in after if n in before and after[n].sha256 != before[n].sha256]
    same = [n for n in after if n in before and after[n].sha256 == before[n].sha256]
    removed = sorted(n for n in before if n not in after)
    reused = _vectors_reused(previous, index, embedder, same)
    parts = [f"{len(added)} added", f"{len(updated)} updated"]
    if reused == len(same):
        parts.append(f"{len(same)} unchanged (vectors reused)")
    else:
        parts.append(
            f"{len(same)} unchanged ({reused} reused their vectors, {len(same) - reused} "
            "re-embedded: the embedder or chunking changed)"
        )
    parts.append(f"{len(removed)} removed" + (f" ({_names(removed)})" if removed else ""))
    return f"changes against the previous index in {output}: " + ", ".join(parts)


def _vectors_reused(previous, index, embedder, names: list[str]) -> int:
    """How many of the documents `names` build_index gave the previous index's vectors (its
    own rule: same embedder, same chunking, same chunk texts); one pass over the chunks."""
    cached = reusable_embeddings(previous, index.settings, embedder)
    texts: dict[str, list[str]] = {}
    for chunk in index.chunks:
        texts.setdefault(chunk.doc_id, []).append(chunk.text)
    docs = {d.name: d for d in index.documents}
    return sum(
        1
        for name in names
        if (hit := cached.get(docs[name].sha256)) is not None
        and hit[0] == texts.get(docs[name].doc_id, [])
    )


def _print_graph_summary(index, extractor) -> None:
    """Per-leaf graph statistics (the hub check: max degree), and what the LLM cost."""
    leaf_graphs = graphs_of(index)
    if leaf_graphs is None:
        return
    graphs = sorted(leaf_graphs.values(), key=lambda g: g.leaf_id)
    print(
        f"graphs: {len(graphs)} leaves of >= {index.settings.graph_min_leaf_chars} chars, "
        f"{sum(len(g.concepts) for g in graphs)} nodes, "
        f"{sum(len(g.relations) for g in graphs)} edges, "
        f"{sum(g.build_seconds for g in graphs):.2f} s"
    )
    for g in graphs:
        stats = g.stats()
        path = index.nodes[g.leaf_id].heading_path
        print(
            f"  {g.leaf_id} {stats['nodes']:>4} nodes {stats['edges']:>5} edges "
            f"max degree {stats['max_degree']:>3} {stats['build_seconds'] * 1000:>7.1f} ms "
            f"{stats['extractor']}  {g.doc_id} > {path}"
        )
    if extractor is not None:
        usage = extractor.usage
        cost = f"${usage.cost_usd:.4f}" if usage.cost_known else "cost unknown (no price)"
        print(
            f"LLM graphs: {usage.input_tokens} input + {usage.output_tokens} output tokens, {cost}"
        )
        if extractor.failure is not None:
            print(
                f"note: LLM graph extraction failed ({extractor.failure}); "
                f"{len(extractor.fallback_leaves)} leaves got offline graphs; run the same "
                "command again to resume",
                file=sys.stderr,
            )
