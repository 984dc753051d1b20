"""Graph search: matching, personalised PageRank, paths, chunk scores, determinism, bounds."""

from __future__ import annotations

import numpy as np
import pytest

from treerag_core.base.types import TreeNode
from treerag_core.index.tokens import tokenize
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.strategies.graph.extract import build_leaf_graph
from treerag_core.strategies.graph.search import (
    GraphSearchOptions,
    personalised_pagerank,
    search_graph,
)

TEXT = (
    "The graph encoder reads dependency trees. Dependency trees come from the parser.\n\n"
    "The parser was trained on treebanks. Treebanks are expensive to annotate.\n\n"
    "The decoder writes summaries. Summaries are scored with ROUGE."
)


@pytest.fixture(scope="module")
def graph():
    leaf = TreeNode("0002", "d", "Leaf", 1, TEXT, 0, len(TEXT), "Leaf")
    return build_leaf_graph("0002", "d", chunk_leaf(leaf, TEXT, 90, 20, 5), "en")


def _id(graph, name):
    return next(c.node_id for c in graph.concepts if c.name.lower() == name)


def test_match_is_exact_then_lexical_then_dense(graph):
    matches = search_graph(graph, "Which treebanks train the parser?", "en", tokenize).matches
    assert [(m.name.lower(), m.how) for m in matches][:2] == [
        ("parser", "exact"),
        ("treebanks", "exact"),
    ]
    lexical = search_graph(graph, "How are trees used?", "en", tokenize).matches
    assert lexical and lexical[0].how == "lexical" and 0 < lexical[0].score < 1
    vectors = np.zeros((len(graph.concepts), 3), np.float32)
    vectors[[i for i, c in enumerate(graph.concepts) if c.name == "ROUGE"], 0] = 1.0
    dense = search_graph(
        graph, "evaluation metric", "en", tokenize, np.array([1, 0, 0], np.float32), vectors
    ).matches
    assert [(m.name, m.how, m.score) for m in dense] == [("ROUGE", "dense", 1.0)]
    assert search_graph(graph, "nothing relevant here", "en", tokenize).matches == ()


def test_pagerank_restarts_at_seeds_and_sums_to_one():
    adj = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float)
    rank = personalised_pagerank(adj, np.array([1.0, 0, 0]), 0.85, 100)
    assert rank.sum() == pytest.approx(1.0)
    assert rank[0] > rank[2] and rank[1] > rank[2]


def test_paths_join_matched_concepts_and_chunks_are_scored(graph):
    result = search_graph(graph, "How does the graph encoder relate to treebanks?", "en", tokenize)
    enc, banks = _id(graph, "graph encoder"), _id(graph, "treebanks")
    bridge = result.paths[0]
    assert {bridge.nodes[0], bridge.nodes[-1]} == {enc, banks} and len(bridge.nodes) >= 3
    for a, b, rel in zip(bridge.nodes, bridge.nodes[1:], bridge.edges, strict=False):
        assert {rel.source, rel.target} == {a, b}
    assert set(result.edges_used) >= set(bridge.edges)
    scores = dict(result.chunk_scores)
    assert scores and all(s > 0 for s in scores.values())
    assert list(scores.values()) == sorted(scores.values(), reverse=True)
    again = search_graph(graph, "How does the graph encoder relate to treebanks?", "en", tokenize)
    assert again.paths == result.paths and again.chunk_scores == result.chunk_scores


def test_options_bound_the_search(graph):
    question = "graph encoder treebanks parser"
    free = search_graph(graph, question, "en", tokenize)
    assert (len(free.matches), len(free.paths), len(free.ranks)) == (3, 6, 6)  # room to cut
    opts = GraphSearchOptions(max_seeds=1, max_paths=1, top_nodes=2)
    result = search_graph(graph, question, "en", tokenize, options=opts)
    # One seed, one path, and the seed plus two more concepts ranked.
    assert (len(result.matches), len(result.paths), len(result.ranks)) == (1, 1, 3)
    with pytest.raises(ValueError, match="graph_weight"):
        GraphSearchOptions(graph_weight=2.0)
