"""Bridge path: the key-entity order is fixed, legs chain, a missing path is recorded."""

from __future__ import annotations

from hirag_fixtures import two_cliques

from treerag_core.strategies.hirag.communities import detect_communities
from treerag_core.strategies.hirag.paths import find_path_with_required_nodes, key_entities
from treerag_core.strategies.hirag.store import NetworkXGraphStore


def test_key_entities_follow_rank_and_community_order():
    graph = two_cliques()
    communities = {c.community_id: c for c in detect_communities(graph)}
    membership = {k: c.community_id for c in communities.values() for k in c.entity_keys}
    ranked = ["b3", "a1", "b1", "a2", "a4"]
    assert key_entities(ranked, communities, membership, top_m=2) == ("b3", "b1", "a1", "a2")
    assert key_entities(ranked, communities, membership, top_m=2) == key_entities(
        list(ranked), dict(communities), dict(membership), top_m=2
    )


def test_chained_path_crosses_the_bridge():
    store = NetworkXGraphStore(two_cliques())
    path = find_path_with_required_nodes(store, ["a3", "b4"])
    assert path.nodes == ("a3", "a0", "b0", "b4")
    assert path.no_path == () and ("a0", "b0") in path.hops


def test_no_path_is_recorded_and_the_walk_continues():
    store = NetworkXGraphStore(two_cliques(bridge=False))
    path = find_path_with_required_nodes(store, ["a1", "b2", "b3", "unknown"])
    assert path.required == ("a1", "b2", "b3")  # unknown entities are dropped first
    assert path.no_path == (("a1", "b2"),)
    assert path.nodes == ("a1", "b2", "b3")
    assert [leg.found for leg in path.legs] == [False, True]
