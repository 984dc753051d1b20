"""The corpus graph from the LLM: the graph package's extractor over batches of leaves, cached
by content key in the index folder, checkpointed per batch, resumable after a failure."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from treerag_core.base.artifacts import present, read_text
from treerag_core.base.atomic import write_atomic
from treerag_core.base.types import Chunk, Language, TreeNode, Usage
from treerag_core.strategies.graph.extract import chunks_covering, content_key, segments
from treerag_core.strategies.graph.extract_llm import BLOCK_CHARS, LLMGraphExtractor
from treerag_core.strategies.graph.store import graph_from_dict, graph_to_dict
from treerag_core.strategies.graph.types import LeafGraph, Span
from treerag_core.strategies.hirag.corpus_graph import Extractor

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex
    from treerag_core.llm import LLMClient

# Append-only: one LLM batch graph per line, written as soon as the batch is done, so a build
# that dies midway keeps every call it paid for. Kept across re-index (store.save_index).
CACHE_FILE = ".hirag-graphs-cache.jsonl"


def cache_path(index_folder: str | Path) -> Path:
    return Path(index_folder) / CACHE_FILE


def load_graph_cache(index_folder: str | Path) -> dict[str, LeafGraph]:
    """Content key -> LLM leaf graph from the folder's cache; a torn or bad line is skipped
    (it only costs asking again)."""
    path = cache_path(index_folder)
    out: dict[str, LeafGraph] = {}
    if not present(path):
        return out
    # Bounded like every file in an index folder; a damaged or oversized cache is an
    # IndexFormatError (the caller shows it) rather than silently re-paying for every graph.
    text = read_text(path, "move it away to rebuild the graphs (their LLM calls are paid again)")
    for line in text.splitlines():
        try:
            graph = graph_from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if graph.extractor.startswith("llm:"):
            out[graph.content_key] = graph
    return out


def append_graph_cache(index_folder: str | Path, graph: LeafGraph) -> None:
    """Add one leaf graph to the cache and flush it to disk before the next call."""
    with cache_path(index_folder).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(graph_to_dict(graph), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def write_graph_cache(index_folder: str | Path, graphs: Sequence[LeafGraph]) -> None:
    """Rewrite the cache with exactly `graphs` (after a build: what it used), atomically."""
    path = cache_path(index_folder)
    lines = [json.dumps(graph_to_dict(g), ensure_ascii=False) for g in graphs]
    write_atomic(path, "".join(line + "\n" for line in lines))


class _CountingClient:
    """Passes calls through to the real client and counts them (the manifest records calls)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.provider = getattr(client, "provider", "")
        self.name = getattr(client, "name", "")
        self.calls = 0

    def complete(self, prefix: str, rest: str, model: str, max_tokens: int, json_mode=False):
        self.calls += 1
        return self.client.complete(prefix, rest, model, max_tokens, json_mode)

    def stream(self, prompt: str, model: str, max_tokens: int):
        return self.client.stream(prompt, model, max_tokens)


@dataclass(frozen=True)
class LLMExtraction:
    """The graphs of one LLM extraction run (one per batch of leaves) and what it cost.

    `graphs` maps a batch's first leaf id to its graph (LLM, or offline for
    `fallback_batches` after a failure); `usage` and `llm_calls` count only calls made in
    this run, `cached` the batches reused from the cache.
    """

    graphs: dict[str, LeafGraph]
    model: str
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cached: int = 0
    fallback_batches: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def llm_graphs(self) -> list[LeafGraph]:
        return [g for _, g in sorted(self.graphs.items()) if g.extractor.startswith("llm:")]

    def extractor(self) -> Extractor:
        """An `Extractor` for `build_corpus_graph` giving each document its batches' graphs
        (node ids are "<first leaf id>#c<n>", so the batches of a document never collide)."""
        by_doc: dict[str, list[LeafGraph]] = {}
        for _, graph in sorted(self.graphs.items()):
            by_doc.setdefault(graph.doc_id, []).append(graph)

        def extract(chunks: Sequence[Chunk], language: Language) -> tuple[list, list]:
            graphs = by_doc.get(chunks[0].doc_id, []) if chunks else []
            nodes = [c for g in graphs for c in g.concepts]
            edges = [r for g in graphs for r in g.relations]
            return nodes, edges

        return extract


def leaf_batches(
    nodes: Mapping[str, TreeNode], chunks: Sequence[Chunk], block_chars: int
) -> list[tuple[TreeNode, list[Chunk]]]:
    """Consecutive leaves of each document packed into batches of at most ~`block_chars`
    characters of text: one LLM call each (a longer leaf is a batch alone and its call is
    split by the extractor). Returns (first leaf, the batch's chunks) in document order.

    Packing is greedy in document order, so an edited leaf changes its own batch and may
    shift the later batches of the same document (those are asked again); other documents'
    batches keep their content keys.
    """
    by_leaf: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_leaf.setdefault(chunk.source_node_id, []).append(chunk)
    out: list[tuple[TreeNode, list[Chunk]]] = []
    size, doc = 0, None
    for leaf_id in sorted(by_leaf):
        leaf = nodes[leaf_id]
        mine = sorted(by_leaf[leaf_id], key=lambda c: c.start)
        chars = sum(len(text) for _, text in segments(mine))
        if out and doc == leaf.doc_id and size + chars <= block_chars:
            out[-1][1].extend(mine)
            size += chars
        else:
            out.append((leaf, list(mine)))
            size, doc = chars, leaf.doc_id
    return out


def rebase(graph: LeafGraph, first: TreeNode, chunks: Sequence[Chunk]) -> LeafGraph:
    """A cached graph for a batch of the same text and offsets under today's ids: node ids
    take the batch's first leaf id, and spans the ids of the chunks that hold them now
    (leaf and chunk ids run across the corpus, so they shift when another document changes)."""

    def node(node_id: str) -> str:
        return first.node_id + node_id[len(graph.leaf_id) :]

    def spans(items: tuple[Span, ...]) -> tuple[Span, ...]:
        return tuple(replace(s, chunk_ids=chunks_covering(s.start, s.end, chunks)) for s in items)

    return replace(
        graph,
        leaf_id=first.node_id,
        doc_id=first.doc_id,
        concepts=tuple(
            replace(c, node_id=node(c.node_id), mentions=spans(c.mentions)) for c in graph.concepts
        ),
        relations=tuple(
            replace(r, source=node(r.source), target=node(r.target), evidence=spans(r.evidence))
            for r in graph.relations
        ),
    )


def extract_corpus_llm(
    index: CorpusIndex,
    client: LLMClient,
    model: str,
    *,
    cache: Mapping[str, LeafGraph] | None = None,
    folder: str | Path | None = None,
    block_chars: int = BLOCK_CHARS,
    progress: Callable[[int, int], None] | None = None,
) -> LLMExtraction:
    """Every leaf of the index through the graph package's LLM extractor, in batches of
    consecutive leaves of ~`block_chars` characters (`leaf_batches`), one call per batch.

    A batch whose content key is in `cache` (content key -> graph) is not sent again. With
    `folder`, each new LLM graph is appended to the folder's cache as soon as it is made.
    The first API error stops the calls: the batches left get offline graphs and are noted,
    and the next run with the cache resumes with exactly those batches.
    """
    counting = _CountingClient(client)
    llm = LLMGraphExtractor(counting, model, block_chars)
    known = dict(cache or {})
    languages = {d.doc_id: d.language for d in index.documents}
    batches = leaf_batches(index.nodes, index.chunks, block_chars)
    graphs: dict[str, LeafGraph] = {}
    cached = 0
    for done, (first, chunks) in enumerate(batches, start=1):
        hit = known.get(content_key(chunks, llm.version))
        if hit is not None:
            graphs[first.node_id] = rebase(hit, first, chunks)
            cached += 1
        else:
            graph = llm(first, chunks, languages.get(first.doc_id, "en"))
            if folder is not None and graph.extractor.startswith("llm:"):
                append_graph_cache(folder, graph)
            graphs[first.node_id] = graph
        if progress is not None:
            progress(done, len(batches))
    notes = []
    if llm.failure is not None:
        notes.append(
            f"LLM graph extraction stopped ({llm.failure.reason}): {llm.failure}; "
            f"{len(llm.fallback_leaves)} of {len(batches)} batches got offline graphs; "
            "build again to resume (extracted batches are cached)"
        )
    return LLMExtraction(
        graphs,
        model,
        llm.usage,
        counting.calls,
        cached,
        tuple(llm.fallback_leaves),
        tuple(notes),
    )
