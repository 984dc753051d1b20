"""Command line: `python -m treerag_core index|query|interactive|eval|qdrant-push`; exit codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from treerag_core.base.config import DEFAULT_MAX_FILE_BYTES, MB, IndexSettings, max_file_bytes
from treerag_core.base.errors import LLMError, QueryError, SettingsError, TreeRAGError
from treerag_core.base.names import Fusion, Locator, Provider
from treerag_core.base.progress import PlainProgress
from treerag_core.base.settings import LLMSettings, QuerySettings
from treerag_core.records.terminal import count_noun, terminal_safe
from treerag_core.strategies import get_strategy, strategy_names
from treerag_core.strategies.drilldown.search import DrilldownOptions
from treerag_core.strategies.hirag.communities import DEFAULT_MAX_CLUSTER_SIZE

if TYPE_CHECKING:
    from treerag_core.llm import LLMClient

# Flags that set one query setting each: flag dest -> the setting's dotted path.
SETTING_FLAGS = {
    "top_k": "answer.final_top_k",
    "context_chars": "answer.context_chars",
    "dense_weight": "retrieve.dense_weight",
    "fusion": "retrieve.fusion",
    "candidate_window": "retrieve.candidate_window",
    "locator": "locate.locator",
    "max_leaves": "locate.max_leaves",
    "strategy": "strategy",
}
_QUERY = QuerySettings()  # the defaults the help texts quote
EMBEDDER_HELP = (
    "multilingual (bundled Universal Sentence Encoder, zh+en), minilm (bundled "
    "all-MiniLM-L6-v2, English), e5 (bundled multilingual-e5-small, ~100 languages, "
    "trained for retrieval; slower to index), hashing (deterministic, for --mock/tests), "
    "or st:FOLDER (a local sentence-transformers model)"
)


STAGE_LABELS = {
    "convert": "converting",
    "parse": "parsing",
    "embed": "embedding",
    "graph": "graphs",
    "index": "indexing",
}
STAGE_UNITS = {"convert": "files", "parse": "docs", "embed": "chunks", "index": "steps"}


def _progress_bars():
    """Bars on a terminal; plain periodic lines when stderr is a file or a pipe (CI, logs)."""
    if not sys.stderr.isatty():
        # PlainProgress hears the labels ("embedding"), so its units are keyed by label.
        units = {STAGE_LABELS.get(stage, stage): unit for stage, unit in STAGE_UNITS.items()}
        plain = PlainProgress(sys.stderr, units=units)

        def update_plain(stage: str, done: int, total: int) -> None:
            plain.update(STAGE_LABELS.get(stage, stage), done, total)

        return update_plain, lambda: None
    bars: dict[str, tqdm] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(
                total=total,
                desc=STAGE_LABELS.get(stage, stage),
                unit={"convert": "file", "parse": "doc", "embed": "chunk"}.get(stage, "step"),
                file=sys.stderr,
                leave=False,
            )
        bar.total = total
        bar.n = done
        bar.refresh()

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return update, close


def _llm_settings(args: argparse.Namespace, base: LLMSettings | None = None) -> LLMSettings:
    """The LLM access: `base`, then the environment's choice (`settings_from_env`), then flags.

    --provider, --base-url, --model (answer; for openai also locate unless --locate-model),
    --locate-model, --context-tokens. A custom OpenAI-compatible server needs a model name,
    from --model or TREERAG_LLM_MODEL (no default fits every server).
    """
    from treerag_core.llm import MODEL_ENV, OPENAI_DEFAULT_MODEL, base_url_for, settings_from_env

    base = base or LLMSettings()
    env_settings = settings_from_env()
    provider = getattr(args, "provider", None) or env_settings.provider
    changes: dict = {"provider": provider}
    if provider == env_settings.provider:
        changes.update(
            locate_model=env_settings.locate_model, answer_model=env_settings.answer_model
        )
    elif provider == Provider.OPENAI:
        changes.update(locate_model=OPENAI_DEFAULT_MODEL, answer_model=OPENAI_DEFAULT_MODEL)
    named = {}
    for flag, name in (
        ("base_url", "base_url"),
        ("model", "answer_model"),
        ("locate_model", "locate_model"),
        ("context_tokens", "context_tokens"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            named[name] = value
    if provider == Provider.OPENAI and "answer_model" in named:
        named.setdefault("locate_model", named["answer_model"])
    changes.update(named)
    try:
        llm = base.with_(**changes)
    except ValueError as exc:
        raise QueryError(str(exc)) from exc
    custom = llm.provider == Provider.OPENAI and base_url_for(llm) is not None
    if custom and "answer_model" not in named and not os.environ.get(MODEL_ENV, "").strip():
        raise QueryError(
            "an OpenAI-compatible server needs --model (the name it serves, e.g. llama3.2) "
            f"or {MODEL_ENV}"
        )
    return llm


def _llm_client(args: argparse.Namespace, flag: str) -> tuple[LLMClient, LLMSettings]:
    """The LLM client `flag` asked for and its settings; no key (or endpoint) is an error
    that names what is missing, raised before any document is indexed."""
    from treerag_core.llm import api_key_for, make_client

    llm = _llm_settings(args)
    client = make_client(llm, api_key_for(llm.provider))
    if client is None:
        raise LLMError(f"{flag} needs {_llm_needs(llm)}", reason="no_api_key")
    return client, llm


def _llm_needs(llm: LLMSettings) -> str:
    """What an index-time LLM option needs for `llm`'s provider, for its error message."""
    from treerag_core.llm import KEY_ENV

    need = KEY_ENV[llm.provider]
    return need + " or --base-url" if llm.provider == Provider.OPENAI else need


def _llm_summarizer(settings: IndexSettings, previous, args: argparse.Namespace):
    """The LLM summarizer when asked for; without an LLM that is an error, not a silent no."""
    if not settings.llm_summaries:
        return None
    from treerag_core.ingest.node_summaries_llm import make_llm_summarizer

    client, llm = _llm_client(args, "--llm-summaries")
    cache = previous.summary_cache if previous is not None else {}
    return make_llm_summarizer(client, llm.locate_model, cache)


def _hirag_llm_flags(args: argparse.Namespace) -> tuple[bool, bool]:
    """(LLM graph, LLM reports) asked for: --hirag-llm is both."""
    return (
        args.hirag_llm or args.hirag_llm_graph,
        args.hirag_llm or args.hirag_llm_reports,
    )


def _hirag_client(args: argparse.Namespace) -> tuple[LLMClient | None, str]:
    """The LLM client for --hirag-llm*, checked before any document is indexed."""
    if not any(_hirag_llm_flags(args)):
        return None, ""
    client, llm = _llm_client(args, "--hirag-llm*")
    return client, llm.locate_model


def _index_hirag(index, output: Path, args: argparse.Namespace, llm, embedder) -> None:
    """`--hirag`: the corpus graph, communities, reports and entity vectors, in the folder."""
    from treerag_core.strategies.hirag.build import HiragBuildSettings, build_into_folder

    client, model = llm
    graph_llm, reports_llm = _hirag_llm_flags(args)
    settings = HiragBuildSettings(
        max_cluster_size=args.hirag_max_cluster_size,
        llm_reports=reports_llm and client is not None,
        llm_graph=graph_llm and client is not None,
        report_model=model or HiragBuildSettings().report_model,
    )
    update, close = _progress_bars()
    try:
        hindex = build_into_folder(
            index,
            output,
            settings,
            client=client,
            progress=update,
            embedder=embedder,
        )
    finally:
        close()
    meta = hindex.meta
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
    for note in meta["notes"]:
        print(f"note: {note}", file=sys.stderr)


def _ktype_summarizer(settings: IndexSettings, previous, args: argparse.Namespace):
    """LLM K-Type document summaries with --llm-summaries (cached by content hash); called
    after `_llm_summarizer`, which already refused a missing key."""
    if not settings.llm_summaries:
        return None
    from treerag_core.strategies.drilldown.ktype import make_ktype_summarizer

    client, llm = _llm_client(args, "--llm-summaries")
    layers = previous.layers if previous is not None else None
    cache = layers.ktype_cache if layers is not None else {}
    return make_ktype_summarizer(client, llm.locate_model, cache)


def _max_file_bytes(flag_mb: float | None) -> int:
    """--max-file-mb, else TREERAG_MAX_FILE_MB, else the default; a bad value is an error."""
    if flag_mb is not None:
        if not flag_mb > 0:
            raise TreeRAGError(f"--max-file-mb must be > 0, but got {flag_mb}")
        return int(flag_mb * MB)
    try:
        return max_file_bytes()
    except ValueError as exc:
        raise TreeRAGError(str(exc)) from exc


def _index_settings(args: argparse.Namespace, embedder: str | None, **more) -> IndexSettings:
    """The tree and chunk flags that index and eval share, as IndexSettings; a value out of
    range is a SettingsError (one line, exit 2), not a traceback."""
    try:
        return IndexSettings(
            max_depth=args.max_depth,
            chunk_size=args.chunk_size,
            chunk_overlap=args.chunk_overlap,
            embedder=embedder or IndexSettings().embedder,
            graph_min_leaf_chars=args.graph_min_leaf_chars,
            **more,
        )
    except ValueError as exc:
        raise SettingsError(f"bad index settings: {exc}") from exc


def _positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (argparse prints the message and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 1, but got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, but got {value}")
    return value


def cmd_index(args: argparse.Namespace) -> int:
    from treerag_core.base.errors import IndexBusyError
    from treerag_core.index.store import run_lock

    output = Path(args.output)
    # Held from the first read to the last write: a second run refuses at its start instead
    # of both building and the last to finish silently replacing the other's index.
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(run_lock(output))
        except IndexBusyError:
            raise IndexBusyError(
                f"another index run is writing to {output}; wait for it or pick another --output"
            ) from None
        return _index_locked(args, output)


def _index_locked(args: argparse.Namespace, output: Path) -> int:
    from treerag_core.index.corpus import build_index, corpus_stats
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import load_index, save_index
    from treerag_core.ingest.documents import sources_from_paths
    from treerag_core.ingest.tree_edits import load_edits

    embedder_name = "hashing" if args.mock and not args.embedder else args.embedder
    settings = _index_settings(
        args,
        embedder=embedder_name,
        max_file_bytes=_max_file_bytes(args.max_file_mb),
        max_pages=args.max_pages,
        llm_summaries=args.llm_summaries,
        llm_graphs=args.llm_graphs,
    )
    started = time.perf_counter()
    # Tree corrections kept beside the index (tree_edits.json) are applied on every re-index.
    edits = load_edits(args.output)
    notes: list[str] = []
    update, close = _progress_bars()
    try:
        sources, rejected = sources_from_paths(
            args.input,
            settings.max_file_bytes,
            edits,
            settings.max_pages,
            notes,
            progress=lambda done, total: update("convert", done, total),
        )
    finally:
        close()
    for bad in rejected:
        print(terminal_safe(f"skipped {bad.name}: {_reason(bad)}"), file=sys.stderr)
    for note in notes:
        print(terminal_safe(f"note: {note}"), file=sys.stderr)
    if not sources:
        print("error: no readable document among the inputs", file=sys.stderr)
        return 2
    previous = None
    if (output / "manifest.json").is_file():
        try:
            previous = load_index(output)
        except TreeRAGError as exc:
            print(f"note: rebuilding from scratch ({exc})", file=sys.stderr)
    embedder = get_embedder(settings.embedder)
    summarizer = _llm_summarizer(settings, previous, args)
    ktype = _ktype_summarizer(settings, previous, args)
    graph_extractor = _llm_graph_extractor(settings, args)
    args.hirag = args.hirag or any(_hirag_llm_flags(args))
    hirag_llm = _hirag_client(args)  # a missing key fails before any work
    update, close = _progress_bars()
    try:
        try:
            index = build_index(
                sources,
                settings,
                embedder,
                previous=previous,
                progress=update,
                summarizer=summarizer,
                ktype_summarizer=ktype,
                graph_extractor=graph_extractor,
            )
        except LLMError as exc:
            print(f"note: LLM summaries failed ({exc}); using local summaries", file=sys.stderr)
            settings = replace(settings, llm_summaries=False)
            index = build_index(
                sources,
                settings,
                embedder,
                previous=previous,
                progress=update,
                graph_extractor=graph_extractor,
            )
    finally:
        close()
    # save_index keeps hirag/ and its checkpoint: the build reuses their LLM reports.
    save_index(index, output)
    if args.hirag:
        _index_hirag(index, output, args, hirag_llm, embedder)
    for note in index.layers.notes if index.layers is not None else ():
        print(f"note: {note}", file=sys.stderr)
    stats = corpus_stats(index)
    seconds = time.perf_counter() - started
    print(
        f"indexed {count_noun(stats['documents'], 'document')}: "
        f"{count_noun(stats['nodes'], 'node')}, "
        f"{stats['leaves']} {'leaf' if stats['leaves'] == 1 else 'leaves'}, "
        f"{count_noun(stats['chunks'], 'chunk')}, longest leaf "
        f"{stats['longest_leaf_chars']} chars, embedder {index.embedder_name}, "
        f"{seconds:.1f} s -> {output}"
    )
    if previous is not None:
        print(_changes_line(previous, index, embedder, output))
    _print_graph_summary(index, graph_extractor)
    if rejected:
        print(f"{count_noun(len(rejected), 'file')} skipped (see above)")
    return 0


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
    from treerag_core.index.corpus import reusable_embeddings

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


def cmd_qdrant_push(args: argparse.Namespace) -> int:
    import os

    from treerag_core.index.store import load_index
    from treerag_core.index.vectors.push import push_index
    from treerag_core.index.vectors.qdrant_store import QdrantStore

    url = args.url or os.environ.get("QDRANT_URL", "")
    if not url:
        print("error: give --url or set QDRANT_URL (e.g. http://localhost:6333)", file=sys.stderr)
        return 2
    index = load_index(args.index)
    store = QdrantStore.from_url(url, index.dim, args.collection)  # key: QDRANT_API_KEY
    started = time.perf_counter()
    counts = push_index(index, store)
    print(
        f"pushed {counts['document']} documents, {counts['parent']} parents, "
        f"{counts['child']} children to {url} collection {args.collection!r} "
        f"({store.count()} points there) in {time.perf_counter() - started:.1f} s"
    )
    return 0


def _llm_graph_extractor(settings: IndexSettings, args: argparse.Namespace):
    """The LLM graph extractor when asked for; without an LLM that is an error, not a silent no."""
    if not settings.llm_graphs:
        return None
    if settings.graph_min_leaf_chars <= 0:
        raise TreeRAGError(
            "--llm-graphs needs --graph-min-leaf-chars N (graphs are off by default)"
        )
    from treerag_core.strategies.graph.extract_llm import LLMGraphExtractor

    client, llm = _llm_client(args, "--llm-graphs")
    return LLMGraphExtractor(client, llm.locate_model)


def _print_graph_summary(index, extractor) -> None:
    """Per-leaf graph statistics (the hub check: max degree), and what the LLM cost."""
    if index.graphs is None:
        return
    graphs = sorted(index.graphs.values(), key=lambda g: g.leaf_id)
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


def _drilldown_layers(settings: QuerySettings, value: str) -> QuerySettings:
    """`--drilldown-layers D,P,C`: the per-layer limits, the other drill-down options kept."""
    from dataclasses import replace

    from treerag_core.strategies.drilldown.search import DrilldownOptions

    parts = value.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--drilldown-layers wants three whole numbers D,P,C, got {value!r}")
    documents, parents, children = (int(p) for p in parts)
    current = settings.option("drilldown", DrilldownOptions())
    layers = replace(current, documents=documents, parents=parents, children=children)
    return settings.with_option("drilldown", layers)


def settings_from_args(args: argparse.Namespace, base: QuerySettings) -> QuerySettings:
    """`base` with every query flag the user gave applied; a bad value is a QueryError."""
    settings = base
    try:
        for dest, path in SETTING_FLAGS.items():
            value = getattr(args, dest, None)
            if value is not None:
                settings = settings.set(path, value)
        if getattr(args, "no_rerank", False):
            settings = settings.set("rerank.enabled", False)
        if getattr(args, "drilldown_layers", None):
            settings = _drilldown_layers(settings, args.drilldown_layers)
        if getattr(args, "mock", False):
            settings = settings.set("llm.enabled", False)
        elif getattr(args, "llm", True):  # eval calls no LLM without --llm
            settings = settings.with_(llm=_llm_settings(args, settings.llm))
        get_strategy(settings.strategy)
    except ValueError as exc:  # a flag out of range is the user's to fix, not a traceback
        raise QueryError(str(exc)) from exc
    return settings


def _query_settings(args: argparse.Namespace) -> QuerySettings:
    return settings_from_args(args, QuerySettings())


def _engine(args: argparse.Namespace):
    from treerag_core.llm import api_key_for
    from treerag_core.pipeline import load_engine

    named = getattr(args, "embedder", None)
    if args.mock:
        engine = load_engine(args.index, api_key=None, embedder_name=named)
    else:
        key = api_key_for(_llm_settings(args).provider)
        engine = load_engine(args.index, api_key=key, embedder_name=named)
    if getattr(args, "qdrant", None):
        _attach_qdrant(engine.index, args.qdrant)
    return engine


def _attach_qdrant(index, collection: str) -> None:
    """`--qdrant COLLECTION`: the drill-down's vector searches go to the server at QDRANT_URL."""
    import os

    from treerag_core.base.errors import VectorStoreError
    from treerag_core.index.vectors.attach import attach_checked
    from treerag_core.index.vectors.qdrant_store import QdrantStore

    url = os.environ.get("QDRANT_URL", "")
    if not url:
        raise VectorStoreError("--qdrant needs QDRANT_URL (e.g. http://localhost:6333)")
    attach_checked(index, QdrantStore.from_url(url, index.dim, collection))


def _answer(engine, question: str, settings: QuerySettings, leaves, as_json: bool) -> None:
    from treerag_core.pipeline import run_stream
    from treerag_core.records.terminal import (
        json_terminal_safe,
        render_footer,
        render_header,
        render_retrieval,
    )
    from treerag_core.records.trace_json import trace_to_json

    trace = None
    for event in run_stream(engine, question, settings, leaves=leaves):
        trace = event.trace
        if as_json:
            continue
        if event.kind == "located":
            print(render_header(trace), end="", flush=True)
        elif event.kind == "reranked":
            print(render_retrieval(trace), end="", flush=True)
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
    if getattr(args, "drilldown_layers", None) and strategy.options_type is not DrilldownOptions:
        notes.append(f"--drilldown-layers is not used: only drilldown reads it, not {name}")
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


def _print_notes(args: argparse.Namespace, settings: QuerySettings) -> None:
    for note in unused_option_notes(args, settings):
        print(f"note: {note}", file=sys.stderr)


def cmd_query(args: argparse.Namespace) -> int:
    settings = _query_settings(args)
    engine = _engine(args)
    leaves = [x.strip() for x in args.leaves.split(",") if x.strip()] if args.leaves else None
    _print_notes(args, settings)
    _answer(engine, args.query, settings, leaves, args.json)
    return 0


def cmd_interactive(args: argparse.Namespace) -> int:
    engine = _engine(args)
    settings = _query_settings(args)
    _print_notes(args, settings)
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
            _answer(engine, line, settings, None, args.json)
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


def _add_llm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--provider",
        choices=Provider.values(),
        default=None,
        help="LLM API: anthropic (ANTHROPIC_API_KEY) or openai, i.e. any OpenAI-compatible "
        "server (OPENAI_API_KEY, may be empty for a local one). Default: openai when only "
        "OpenAI variables are set, else anthropic",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="the server, e.g. http://127.0.0.1:11434/v1 for Ollama "
        "(default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's API); the "
        "provider's key variable is sent to it (the explorer never does that)",
    )
    p.add_argument("--model", default=None, help="the answer model (openai: also locates)")
    p.add_argument("--locate-model", default=None, help="the model that picks sections")
    p.add_argument(
        "--context-tokens",
        type=int,
        default=None,
        help="the model's context window; the locate prompt is cut to fit it "
        f"(default {_QUERY.llm.context_tokens})",
    )


def _add_query_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", required=True, help="index folder made by `index`")
    p.add_argument(
        "--embedder",
        default=None,
        help="the index's embedder, named by you: needed for an st:FOLDER model (an index "
        "folder alone cannot choose which model folder is loaded; or set TREERAG_EMBEDDER)",
    )
    p.add_argument("--mock", action="store_true", help="no LLM call at all; everything else real")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    p.add_argument(
        "--top-k",
        type=int,
        default=None,
        help=f"chunks kept after rerank (default {_QUERY.answer.final_top_k})",
    )
    p.add_argument(
        "--context-chars", type=int, default=None, help="fill the answer's context to N chars"
    )
    p.add_argument(
        "--strategy", choices=strategy_names(runnable=True), default=None, help=_strategy_help()
    )
    p.add_argument(
        "--qdrant",
        default=None,
        metavar="COLLECTION",
        help="serve the drill-down's vector searches from this collection on the Qdrant "
        "server at QDRANT_URL (key: QDRANT_API_KEY), pushed with qdrant-push",
    )
    _add_shared_retrieval_options(p)


def _strategy_help() -> str:
    return "; ".join(f"{s}: {get_strategy(s).label}" for s in strategy_names(runnable=True))


def _add_shared_retrieval_options(p: argparse.ArgumentParser) -> None:
    """Options that query, interactive and eval share, declared once."""
    p.add_argument(
        "--dense-weight",
        type=float,
        default=None,
        help=f"0..1; BM25 gets 1 - this (default {_QUERY.retrieve.dense_weight})",
    )
    p.add_argument(
        "--fusion",
        choices=Fusion.values(),
        default=None,
        help="how dense and BM25 scores are combined: weighted (min-max, then --dense-weight), "
        "rrf (reciprocal rank), dbsf (mean ± 3 std) or union (the better of the two) "
        f"(default {_QUERY.retrieve.fusion})",
    )
    p.add_argument(
        "--locator",
        choices=Locator.values(),
        default=None,
        help="who picks the sections in step 1: auto (the LLM when one is configured, else "
        "local), llm, local (heading-aware ranking) or keyword (question terms against "
        f"headings) (default {_QUERY.locate.locator})",
    )
    p.add_argument(
        "--max-leaves",
        type=int,
        default=None,
        help=f"most sections step 1 picks, 1..5 (default {_QUERY.locate.max_leaves})",
    )
    p.add_argument(
        "--candidate-window",
        type=int,
        default=None,
        help=f"pooled candidates (default {_QUERY.retrieve.candidate_window})",
    )
    p.add_argument("--no-rerank", action="store_true", help="keep the fused order")
    p.add_argument(
        "--drilldown-layers",
        default=None,
        metavar="D,P,C",
        help="drilldown: documents, parent sections and child passages kept per layer "
        f"(default {_drilldown_default()}; the seed's is 1,1,3)",
    )
    _add_llm_options(p)


def _drilldown_default() -> str:
    layers = DrilldownOptions()
    return f"{layers.documents},{layers.parents},{layers.children}"


def _add_tree_options(p: argparse.ArgumentParser) -> None:
    """How documents become trees and chunks (index and eval)."""
    defaults = IndexSettings()
    p.add_argument(
        "--max-depth",
        type=int,
        default=defaults.max_depth,
        help="heading levels that become tree nodes; deeper headings stay in their section's "
        "text (default %(default)s)",
    )
    p.add_argument(
        "--chunk-size",
        type=int,
        default=defaults.chunk_size,
        help="most characters per chunk (default %(default)s)",
    )
    p.add_argument(
        "--chunk-overlap",
        type=int,
        default=defaults.chunk_overlap,
        help="characters shared by consecutive chunks (default %(default)s)",
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from treerag_core.evaluation.harness import EvalConfig, evaluate
    from treerag_core.evaluation.report import (
        LOCATOR_KEYS,
        difference_table,
        markdown_table,
        routing_summary,
        write_report,
    )
    from treerag_core.llm import api_key_for

    strategies = tuple(s.strip() for s in args.strategy.split(",") if s.strip())
    index_settings = _index_settings(args, embedder=args.embedder)
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
            index_settings=index_settings,
            query_settings=query,
        )
    except ValueError as exc:  # an unknown strategy, --top-k < 1
        raise SettingsError(str(exc)) from exc
    if args.llm:  # no key (or server) would make every +llm row the local one: refuse now
        _llm_client(args, "--llm")
    tty = sys.stderr.isatty()
    index_update, index_close = _progress_bars()  # building the set's index, when not cached
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
        report = evaluate(
            Path(args.data),
            config,
            cache_dir=Path(args.cache),
            progress=progress,
            api_key=api_key_for(query.llm.provider) if args.llm else None,
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
    for reason, count in report["skipped"].items():
        print(f"skipped {count}x: {reason}")
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
    """One stderr line per `+llm` row whose LLM locator fell back on some questions: the
    row is then (partly) the local locator's, which its numbers alone do not show."""
    for row, records in report["questions"].items():
        if not row.endswith("+llm") or not records:
            continue
        reasons: dict[str, int] = {}
        for record in records:
            for fallback in record["fallbacks"]:
                stage, _, reason = fallback.partition(":")
                if stage == "locate":
                    reasons[reason] = reasons.get(reason, 0) + 1
                    break
        if reasons:
            why = ", ".join(f"{reason} {n}x" for reason, n in reasons.items())
            print(
                f"note: the LLM locator was not used for {sum(reasons.values())} of "
                f"{len(records)} questions of {row} ({why}); those used the local locator",
                file=sys.stderr,
            )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m treerag_core",
        description="TreeRAG: locate sections on the heading tree, retrieve inside them, answer.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

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
    p.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    _add_tree_options(p)
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
        "--graph-min-leaf-chars",
        type=int,
        default=IndexSettings().graph_min_leaf_chars,
        help="leaves at least this long get a knowledge graph (0: none; default %(default)s)",
    )
    p.add_argument(
        "--llm-graphs",
        action="store_true",
        help="extract graph entities and relations with the LLM (the --provider key or "
        "--base-url; cached per leaf; a failure keeps what was extracted)",
    )
    p.add_argument(
        "--max-pages",
        type=int,
        default=IndexSettings().max_pages,
        help=f"skip PDFs with more pages than this (default {IndexSettings().max_pages})",
    )
    _add_llm_options(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("query", help="answer one question, printing every step")
    p.add_argument("--query", required=True, help="the question")
    p.add_argument("--leaves", default=None, help="override step 1: comma-separated leaf ids")
    _add_query_options(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("eval", help="measure retrieval quality on a question set")
    p.add_argument("--data", required=True, help="a folder with docs/ and questions.jsonl")
    p.add_argument(
        "--strategy",
        default="treerag,flat-hybrid",
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
        "--limit", type=_positive_int, default=None, help="only the first N (>= 1) usable questions"
    )
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--llm", action="store_true", help="allow LLM calls (see --provider)")
    p.add_argument(
        "--cache",
        default="data/eval-cache",
        help="where built indexes are cached (default %(default)s, under the working directory)",
    )
    p.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    _add_tree_options(p)
    _add_shared_retrieval_options(p)
    p.add_argument(
        "--graph-min-leaf-chars",
        type=int,
        default=IndexSettings().graph_min_leaf_chars,
        help="leaves at least this long get a knowledge graph (treerag-kg needs them; "
        "0: none; default %(default)s)",
    )
    p.add_argument(
        "--top-k",
        type=int,
        default=50,
        help="passages kept per question, walked by the budget metrics (default %(default)s)",
    )
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "qdrant-push", help="copy an index's documents, sections and chunks to a Qdrant server"
    )
    p.add_argument("--index", required=True, help="an index folder")
    p.add_argument(
        "--url", default=None, help="the server, e.g. http://localhost:6333 (QDRANT_URL)"
    )
    p.add_argument("--collection", default="treerag", help="collection name (default %(default)s)")
    p.set_defaults(func=cmd_qdrant_push)

    p = sub.add_parser("interactive", help="ask questions in a loop (history kept)")
    _add_query_options(p)
    p.set_defaults(func=cmd_interactive)

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
