"""Index time: a graph for every leaf over the threshold, reused while the leaf is unchanged."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from treerag_core.base.types import Chunk, Language, TreeNode
from treerag_core.strategies.graph.extract import EXTRACTOR_VERSION, build_leaf_graph, content_key
from treerag_core.strategies.graph.types import LeafGraph, Span

# extractor(leaf, chunks, language) -> LeafGraph: the LLM extractor plugs in here.
LeafExtractor = Callable[[TreeNode, Sequence[Chunk], Language], LeafGraph]


def offline_extractor(leaf: TreeNode, chunks: Sequence[Chunk], language: Language) -> LeafGraph:
    return build_leaf_graph(leaf.node_id, leaf.doc_id, chunks, language)


def long_leaves(nodes: Mapping[str, TreeNode], min_chars: int) -> list[TreeNode]:
    """Leaves of at least `min_chars` characters, in node id order; none when min_chars <= 0."""
    if min_chars <= 0:
        return []
    return sorted(
        (n for n in nodes.values() if n.is_leaf and n.end - n.start >= min_chars),
        key=lambda n: n.node_id,
    )


def build_graphs(
    nodes: Mapping[str, TreeNode],
    chunks: Sequence[Chunk],
    languages: Mapping[str, Language],
    min_chars: int,
    previous: Mapping[str, LeafGraph] | None = None,
    extractor: LeafExtractor | None = None,
    extractor_version: str = EXTRACTOR_VERSION,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, LeafGraph]:
    """{leaf id: graph} for the long leaves; a previous graph with the same content key is kept.

    `languages` maps doc id to language. Leaf ids change when an earlier document changes
    (ids run across the corpus), so reuse is by content key (chunk texts, offsets and
    extractor) and a reused graph is relabelled to the leaf's new id.
    """
    extract = extractor or offline_extractor
    by_key = {g.content_key: g for g in (previous or {}).values()}
    leaf_chunks: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        leaf_chunks.setdefault(chunk.source_node_id, []).append(chunk)
    todo = [leaf for leaf in long_leaves(nodes, min_chars) if leaf_chunks.get(leaf.node_id)]
    out: dict[str, LeafGraph] = {}
    for done, leaf in enumerate(todo, start=1):
        mine = leaf_chunks[leaf.node_id]
        old = by_key.get(content_key(mine, extractor_version))
        if old is not None and old.doc_id == leaf.doc_id:
            out[leaf.node_id] = relabel(old, leaf.node_id)
        else:
            out[leaf.node_id] = extract(leaf, mine, languages[leaf.doc_id])
        if progress is not None:
            progress(done, len(todo))
    return out


def relabel(graph: LeafGraph, leaf_id: str) -> LeafGraph:
    """The same graph under another leaf id: concept ids are "<leaf id>#c<n>" and chunk ids
    "<leaf id>_chunk_<n>", so both are renamed."""
    old = graph.leaf_id
    if old == leaf_id:
        return graph

    def node(node_id: str) -> str:
        return leaf_id + node_id[len(old) :]

    def spans(items: tuple[Span, ...]) -> tuple[Span, ...]:
        return tuple(
            replace(s, chunk_ids=tuple(leaf_id + c[len(old) :] for c in s.chunk_ids)) for s in items
        )

    return replace(
        graph,
        leaf_id=leaf_id,
        concepts=tuple(
            replace(c, node_id=node(c.node_id), mentions=spans(c.mentions)) for c in graph.concepts
        ),
        relations=tuple(
            replace(r, source=node(r.source), target=node(r.target), evidence=spans(r.evidence))
            for r in graph.relations
        ),
    )


def concept_names(graphs: Mapping[str, LeafGraph]) -> list[str]:
    """Every concept name, leaves in id order: the rows of the concept vector matrix."""
    return [c.name for leaf_id in sorted(graphs) for c in graphs[leaf_id].concepts]


def split_vectors(graphs: Mapping[str, LeafGraph], matrix: np.ndarray) -> dict[str, np.ndarray]:
    """Cut the concept vector matrix back into one block per leaf (rows as `concept_names`)."""
    out: dict[str, np.ndarray] = {}
    row = 0
    for leaf_id in sorted(graphs):
        n = len(graphs[leaf_id].concepts)
        out[leaf_id] = matrix[row : row + n]
        row += n
    if row != len(matrix):
        raise ValueError(f"{len(matrix)} concept vectors for {row} concepts")
    return out
