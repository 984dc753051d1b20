"""Hierarchical Leiden: deterministic, size-bounded levels, parents and children consistent."""

from __future__ import annotations

from hirag_fixtures import two_cliques

from treerag_core.strategies.graph.extract import extract_offline
from treerag_core.strategies.hirag.communities import Community, communities_of, detect_communities
from treerag_core.strategies.hirag.corpus_graph import CorpusGraph, build_corpus_graph


def test_two_cliques_are_two_communities():
    communities = detect_communities(two_cliques(), max_cluster_size=10)
    assert sorted(c.entity_keys for c in communities) == [
        tuple(f"a{i}" for i in range(6)),
        tuple(f"b{i}" for i in range(6)),
    ]
    a = next(c for c in communities if "a0" in c.entity_keys)
    assert a.relation_count == 15 and a.level == 0 and a.parent is None
    assert a.chunk_ids == ("a-chunk",)


def test_no_relations_no_communities():
    assert detect_communities(CorpusGraph((), ())) == ()


def test_real_graph_levels_bounded_and_deterministic(hashing_index):
    index = hashing_index
    languages = {d.doc_id: d.language for d in index.documents}
    graph = build_corpus_graph(index.chunks, languages, extract_offline, index.texts)
    first = detect_communities(graph, max_cluster_size=10, seed=7)
    assert first == detect_communities(graph, max_cluster_size=10, seed=7)
    assert len({c.level for c in first}) >= 2  # several levels
    by_id = {c.community_id: c for c in first}
    for c in first:
        for child in c.children:
            assert by_id[child].parent == c.community_id
            assert set(by_id[child].entity_keys) <= set(c.entity_keys)
    # Every leaf community (no children) respects the size unless Leiden cannot split it.
    leaves = [c for c in first if not c.children]
    assert sum(len(c.entity_keys) <= 10 for c in leaves) / len(leaves) > 0.9
    assert Community.from_dict(first[0].to_dict()) == first[0]


def test_communities_of_filters_levels():
    communities = detect_communities(two_cliques())
    assert [c.level for c in communities_of(communities, 0)["a0"]] == [0]
