"""Small hand-made extractions for the HiRAG tests (the real extractor has its own tests)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from treerag_core.strategies.hirag.corpus_graph import merge_extractions


@dataclass(frozen=True)
class Node:
    name: str
    key: str
    chunk_ids: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    weight: float
    description: str
    chunk_ids: tuple[str, ...]


def two_cliques(bridge: bool = True):
    """Two 6-cliques (a*, b*) joined by one weak edge a0-b0 when `bridge`."""
    nodes = [
        Node(f"{p}{i}", f"{p}{i}", (f"{p}-chunk",), f"about {p}{i}") for p in "ab" for i in range(6)
    ]
    edges = [
        Edge(x, y, 1.0, f"{x} with {y}", (f"{x[0]}-chunk",))
        for p in "ab"
        for x, y in combinations([f"{p}{i}" for i in range(6)], 2)
    ]
    if bridge:
        edges.append(Edge("a0", "b0", 0.1, "the bridge", ("bridge-chunk",)))
    return merge_extractions([(nodes, edges)])
