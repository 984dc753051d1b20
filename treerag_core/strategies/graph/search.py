"""Query time in one leaf graph: match the question, find the key subgraph, score chunks.

Matching is lexical (the question's own terms and tokens against concept names) and by
meaning (the question vector against the stored concept-name vectors). The key subgraph is
personalised PageRank from the matched concepts plus the cheapest paths between them; both
are bounded and deterministic (ties broken by node order, never by set order). Chunks score
by the PageRank mass of the concepts they mention and the edges they support.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from treerag_core.base.types import Language
from treerag_core.strategies.graph.extract import normalise, terms_of
from treerag_core.strategies.graph.types import Concept, ConceptRelation, LeafGraph

MIN_WALK_WEIGHT = 0.05  # an edge with PMI <= 0 (independent terms) is barely walkable


@dataclass(frozen=True)
class GraphSearchOptions:
    """How graph search runs; the `treerag-kg` strategy's own settings."""

    graph_weight: float = 0.3  # the graph column's weight in fusion (added to dense+BM25)
    max_seeds: int = 8  # matched concepts that seed the walk
    dense_min: float = 0.5  # cosine a concept name needs to match by meaning alone
    damping: float = 0.85  # PageRank: chance of following an edge rather than restarting
    iterations: int = 50
    max_hops: int = 4  # longest path kept between two matched concepts
    max_paths: int = 8
    top_nodes: int = 15  # concepts reported (and lit) besides the seeds
    # False (default): the graph reorders chunks only inside their own leaf, each leaf keeping
    # its scores against the others. True: the column is added to the scope-wide order, where
    # it lifts long leaves over short-leaf gold (laws: -5.2 points Recall@1000c in corpus
    # scope); measured in docs/graphs.md.
    in_pool: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.graph_weight <= 1.0:
            raise ValueError(f"graph_weight must be in [0, 1], but got {self.graph_weight}")
        if self.max_seeds <= 0 or self.max_paths < 0 or self.top_nodes < 0:
            raise ValueError("max_seeds must be > 0; max_paths and top_nodes >= 0")
        if not 0.0 < self.damping < 1.0:
            raise ValueError(f"damping must be in (0, 1), but got {self.damping}")
        if self.max_hops < 1 or self.iterations < 1:
            raise ValueError("max_hops and iterations must be >= 1")


@dataclass(frozen=True)
class ConceptMatch:
    """A concept the question names: how it matched and how strongly (0..1)."""

    node_id: str
    name: str
    score: float
    how: str  # exact | lexical | dense


@dataclass(frozen=True)
class GraphPath:
    """A chain of relations between matched concepts (or a seed and its best neighbour)."""

    nodes: tuple[str, ...]
    edges: tuple[ConceptRelation, ...]
    score: float


@dataclass(frozen=True)
class GraphResult:
    """What graph search found in one leaf; every view of the graph stage reads this."""

    leaf_id: str
    matches: tuple[ConceptMatch, ...]
    ranks: tuple[tuple[str, float], ...]  # (concept id, PageRank) best first, seeds included
    paths: tuple[GraphPath, ...]
    chunk_scores: tuple[tuple[str, float], ...]  # (chunk id, graph score) best first, > 0 only
    seconds: float = 0.0

    @property
    def edges_used(self) -> tuple[ConceptRelation, ...]:
        return tuple(dict.fromkeys(e for p in self.paths for e in p.edges))

    @property
    def lit_nodes(self) -> tuple[str, ...]:
        """Concepts to light: matches, path nodes, then the best ranked."""
        seen = [m.node_id for m in self.matches] + [n for p in self.paths for n in p.nodes]
        seen += [n for n, _ in self.ranks]
        return tuple(dict.fromkeys(seen))


# ---- matching ---------------------------------------------------------------------------------

_TOKENS: dict[tuple[str, str], list[frozenset[str]]] = {}
_TOKENS_LOCK = threading.Lock()


def _concept_tokens(graph: LeafGraph, tokenize: Callable[[str], list[str]]) -> list[frozenset[str]]:
    """Content tokens of each concept name, computed once per graph (keyed by content)."""
    key = (graph.leaf_id, graph.content_key)
    cached = _TOKENS.get(key)
    if cached is None:
        cached = [frozenset(tokenize(c.name)) for c in graph.concepts]
        with _TOKENS_LOCK:
            if len(_TOKENS) > 4096:  # bounded across long sessions and many indexes
                _TOKENS.clear()
            _TOKENS[key] = cached
    return cached


def _match_concepts(
    graph: LeafGraph,
    keys: set[str],
    q_tokens: frozenset[str],
    names: list[frozenset[str]],
    sims: np.ndarray | None,
    options: GraphSearchOptions,
) -> tuple[ConceptMatch, ...]:
    """The concepts the question names, best first (at most `options.max_seeds`).

    exact: a question term (`keys`, normalised) is the concept's key (1.0). lexical: a share
    of the concept's tokens (`names`) appear in the question's (`q_tokens`), more for more
    shared tokens (at most 0.9). dense: the concept name's vector is within `dense_min`
    cosine of the question's (`sims`).
    """
    found: list[tuple[float, int, str]] = []
    for i, concept in enumerate(graph.concepts):
        score, how = 0.0, ""
        if concept.key in keys:
            score, how = 1.0, "exact"
        elif names[i] and (shared := len(names[i] & q_tokens)):
            score, how = 0.9 * (shared / len(names[i])) * (1 - 0.5**shared), "lexical"
        if sims is not None and sims[i] >= options.dense_min and sims[i] > score:
            score, how = float(sims[i]), "dense"
        if score > 0:
            found.append((score, i, how))
    found.sort(key=lambda t: (-t[0], t[1]))
    return tuple(
        ConceptMatch(graph.concepts[i].node_id, graph.concepts[i].name, round(s, 4), how)
        for s, i, how in found[: options.max_seeds]
    )


# ---- walking ----------------------------------------------------------------------------------


def _adjacency(graph: LeafGraph) -> np.ndarray:
    """Symmetric walk weights (every relation walkable both ways: evidence reads either way)."""
    index = {c.node_id: i for i, c in enumerate(graph.concepts)}
    n = len(graph.concepts)
    adj = np.zeros((n, n), dtype=np.float64)
    for rel in graph.relations:
        a, b = index[rel.source], index[rel.target]
        w = max(rel.weight, MIN_WALK_WEIGHT)
        adj[a, b] = max(adj[a, b], w)
        adj[b, a] = max(adj[b, a], w)
    return adj


def personalised_pagerank(
    adj: np.ndarray, seeds: np.ndarray, damping: float, iterations: int
) -> np.ndarray:
    """PageRank restarting at `seeds` (a distribution); dangling nodes restart too."""
    out_weight = adj.sum(axis=1)
    transition = np.divide(
        adj, out_weight[:, None], out=np.zeros_like(adj), where=out_weight[:, None] > 0
    )
    dangling = out_weight == 0
    rank = seeds.copy()
    for _ in range(iterations):
        new = damping * (rank @ transition + rank[dangling].sum() * seeds) + (1 - damping) * seeds
        if np.abs(new - rank).sum() < 1e-10:
            rank = new
            break
        rank = new
    return rank


def _neighbours(adj: np.ndarray) -> list[list[tuple[int, float]]]:
    """Each node's (neighbour, cost 1/weight), as plain Python numbers (fast to walk)."""
    return [[(int(j), 1.0 / float(row[j])) for j in np.flatnonzero(row)] for row in adj]


def _cheapest_paths_from(
    neighbours: list[list[tuple[int, float]]], start: int
) -> dict[int, list[int]]:
    """Dijkstra from `start` with cost 1/weight: {node: path}. Ties go to fewer hops, then
    lower node numbers, so the same graph always gives the same paths."""
    best: dict[int, tuple[float, int]] = {start: (0.0, 0)}
    parent: dict[int, int] = {}
    heap: list[tuple[float, int, int]] = [(0.0, 0, start)]
    done: set[int] = set()
    while heap:
        cost, hops, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for nxt, step in neighbours[node]:
            candidate = (cost + step, hops + 1)
            if nxt not in done and candidate < best.get(nxt, (float("inf"), 0)):
                best[nxt] = candidate
                parent[nxt] = node
                heapq.heappush(heap, (candidate[0], candidate[1], nxt))
    paths: dict[int, list[int]] = {}
    for node in done:
        path = [node]
        while path[-1] != start:
            path.append(parent[path[-1]])
        paths[node] = path[::-1]
    return paths


def search_graph(
    graph: LeafGraph,
    question: str,
    language: Language,
    tokenize: Callable[[str], list[str]],
    query_vector: np.ndarray | None = None,
    concept_vectors: np.ndarray | None = None,
    options: GraphSearchOptions = GraphSearchOptions(),
) -> GraphResult:
    """Matched concepts, their key subgraph (PageRank + paths) and each chunk's graph score."""
    began = time.perf_counter()
    keys = {normalise(m.surface, language) for m in terms_of(question, language)}
    sims = None
    if query_vector is not None and concept_vectors is not None and len(concept_vectors):
        sims = concept_vectors @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
    names = _concept_tokens(graph, tokenize)
    matches = _match_concepts(graph, keys, frozenset(tokenize(question)), names, sims, options)
    if not matches or not graph.concepts:
        return GraphResult(graph.leaf_id, matches, (), (), (), time.perf_counter() - began)
    concepts = graph.concepts
    index = {c.node_id: i for i, c in enumerate(concepts)}
    adj = _adjacency(graph)
    seeds = np.zeros(len(concepts))
    for m in matches:
        seeds[index[m.node_id]] = m.score
    seeds /= seeds.sum()
    rank = personalised_pagerank(adj, seeds, options.damping, options.iterations)
    order = sorted(range(len(concepts)), key=lambda i: (-rank[i], i))
    top = [i for i in order if rank[i] > 0][: len(matches) + options.top_nodes]
    paths = _paths(graph, adj, rank, [index[m.node_id] for m in matches], options)
    scores = _chunk_scores(concepts, rank, paths, index)
    return GraphResult(
        leaf_id=graph.leaf_id,
        matches=matches,
        ranks=tuple((concepts[i].node_id, round(float(rank[i]), 6)) for i in top),
        paths=tuple(paths),
        chunk_scores=scores,
        seconds=time.perf_counter() - began,
    )


def _edge_lookup(graph: LeafGraph) -> dict[tuple[str, str], ConceptRelation]:
    out: dict[tuple[str, str], ConceptRelation] = {}
    for rel in graph.relations:  # the strongest relation per pair, either direction
        for pair in ((rel.source, rel.target), (rel.target, rel.source)):
            if pair not in out or rel.weight > out[pair].weight:
                out[pair] = rel
    return out


def _paths(
    graph: LeafGraph,
    adj: np.ndarray,
    rank: np.ndarray,
    seeds: list[int],
    options: GraphSearchOptions,
) -> list[GraphPath]:
    """Cheapest paths between matched concepts, then each seed's best-ranked neighbour."""
    if options.max_paths == 0:
        return []
    ids = [c.node_id for c in graph.concepts]
    edges = _edge_lookup(graph)
    found: dict[tuple[int, ...], GraphPath] = {}
    bridges: set[tuple[int, ...]] = set()  # paths joining two matched concepts rank first

    def add(nodes: list[int], bridge: bool) -> None:
        key = tuple(nodes) if nodes[0] < nodes[-1] else tuple(reversed(nodes))
        if bridge:
            bridges.add(key)
        if key in found:
            return
        hops = tuple(edges[(ids[a], ids[b])] for a, b in pairwise(nodes))
        score = float(np.mean([rank[i] for i in nodes]))
        found[key] = GraphPath(tuple(ids[i] for i in nodes), hops, round(score, 6))

    neighbours = _neighbours(adj)
    for x, a in enumerate(seeds[:-1]):
        reach = _cheapest_paths_from(neighbours, a)
        for b in seeds[x + 1 :]:
            path = reach.get(b)
            if path is not None and len(path) - 1 <= options.max_hops:
                add(path, bridge=True)
    for a in seeds:
        if neighbours[a]:
            best = min((j for j, _ in neighbours[a]), key=lambda j: (-rank[j], j))
            add([a, best], bridge=False)
    ordered = sorted(found, key=lambda k: (k not in bridges, -found[k].score, k))
    return [found[k] for k in ordered[: options.max_paths]]


def _chunk_scores(
    concepts: tuple[Concept, ...],
    rank: np.ndarray,
    paths: list[GraphPath],
    index: dict[str, int],
) -> tuple[tuple[str, float], ...]:
    """A chunk gains the PageRank of every concept it mentions, and both ends' PageRank for
    every used edge it supports (the sentences that tie two concepts together)."""
    scores: dict[str, float] = {}
    for i, concept in enumerate(concepts):
        if rank[i] > 0:
            for chunk_id in concept.chunk_ids:
                scores[chunk_id] = scores.get(chunk_id, 0.0) + float(rank[i])
    for edge in dict.fromkeys(e for p in paths for e in p.edges):
        bonus = float(rank[index[edge.source]] + rank[index[edge.target]])
        for chunk_id in edge.chunk_ids:
            scores[chunk_id] = scores.get(chunk_id, 0.0) + bonus
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple((cid, round(s, 6)) for cid, s in ordered if s > 0)
