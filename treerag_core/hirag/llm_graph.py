"""The corpus graph from the LLM: the graph package's extractor over every leaf, cached by
content key in the index folder, checkpointed per leaf, resumable after a failure."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treerag_core.graph.build import build_graphs
from treerag_core.graph.extract_llm import BLOCK_CHARS, LLMGraphExtractor
from treerag_core.graph.store import graph_from_dict, graph_to_dict
from treerag_core.graph.types import LeafGraph
from treerag_core.hirag.corpus_graph import Extractor
from treerag_core.types import Chunk, Language, TreeNode, Usage

if TYPE_CHECKING:
    from treerag_core.index import CorpusIndex

# Append-only: one LLM leaf graph per line, written as soon as the leaf is done, so a build
# that dies midway keeps every call it paid for. Kept across re-index (store.save_index).
CACHE_FILE = ".hirag-graphs-cache.jsonl"


def cache_path(index_folder: str | Path) -> Path:
    return Path(index_folder) / CACHE_FILE


def load_graph_cache(index_folder: str | Path) -> dict[str, LeafGraph]:
    """Content key -> LLM leaf graph from the folder's cache; a torn or bad line is skipped
    (it only costs asking again)."""
    path = cache_path(index_folder)
    out: dict[str, LeafGraph] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
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
    tmp = path.with_name(path.name + ".tmp")
    lines = [json.dumps(graph_to_dict(g), ensure_ascii=False) for g in graphs]
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)


class _CountingClient:
    """Passes calls through to the real client and counts them (the manifest records calls)."""

    def __init__(self, client: Any) -> None:
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
    """The leaf graphs of one LLM extraction run and what it cost.

    `graphs` maps leaf id to graph (LLM, or offline for `fallback_leaves` after a failure);
    `usage` and `llm_calls` count only calls made in this run, `cached` the leaves reused.
    """

    graphs: dict[str, LeafGraph]
    model: str
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cached: int = 0
    fallback_leaves: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def llm_graphs(self) -> list[LeafGraph]:
        return [g for _, g in sorted(self.graphs.items()) if g.extractor.startswith("llm:")]

    def extractor(self) -> Extractor:
        """An `Extractor` for `build_corpus_graph` giving each document its leaves' graphs
        (node ids are "<leaf id>#c<n>", so the leaves of a document never collide)."""
        by_doc: dict[str, list[LeafGraph]] = {}
        for _, graph in sorted(self.graphs.items()):
            by_doc.setdefault(graph.doc_id, []).append(graph)

        def extract(chunks: Sequence[Chunk], language: Language) -> tuple[list, list]:
            graphs = by_doc.get(chunks[0].doc_id, []) if chunks else []
            nodes = [c for g in graphs for c in g.concepts]
            edges = [r for g in graphs for r in g.relations]
            return nodes, edges

        return extract


def extract_corpus_llm(
    index: CorpusIndex,
    client: Any,
    model: str,
    *,
    cache: Mapping[str, LeafGraph] | None = None,
    folder: str | Path | None = None,
    block_chars: int = BLOCK_CHARS,
    progress: Callable[[int, int], None] | None = None,
) -> LLMExtraction:
    """Every leaf of the index through the LLM extractor, ~`block_chars` of text per call.

    A leaf whose content key is in `cache` (content key -> graph) is not sent again. With
    `folder`, each new LLM graph is appended to the folder's cache as soon as it is made.
    The first API error stops the calls: the leaves left get offline graphs and are noted,
    and the next run with the cache resumes with exactly those leaves.
    """
    counting = _CountingClient(client)
    llm = LLMGraphExtractor(counting, model, block_chars)
    made: set[str] = set()

    def extract(leaf: TreeNode, chunks: Sequence[Chunk], language: Language) -> LeafGraph:
        graph = llm(leaf, chunks, language)
        if graph.extractor.startswith("llm:"):
            made.add(leaf.node_id)
            if folder is not None:
                append_graph_cache(folder, graph)
        return graph

    languages = {d.doc_id: d.language for d in index.documents}
    graphs = build_graphs(
        index.nodes,
        index.chunks,
        languages,
        1,  # every leaf with text: the corpus graph covers the whole corpus
        previous=dict(cache or {}),
        extractor=extract,
        extractor_version=llm.version,
        progress=progress,
    )
    cached = sum(1 for k, g in graphs.items() if g.extractor.startswith("llm:") and k not in made)
    notes = []
    if llm.failure is not None:
        notes.append(
            f"LLM graph extraction stopped ({llm.failure.reason}): {llm.failure}; "
            f"{len(llm.fallback_leaves)} of {len(graphs)} leaves got offline graphs; "
            "build again to resume (extracted leaves are cached)"
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
