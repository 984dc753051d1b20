"""The vector stores: ids that cannot collide, filters, and FAISS and Qdrant agreeing."""

from __future__ import annotations

import numpy as np
import pytest

from treerag_core.base.errors import VectorStoreError
from treerag_core.index.vectors.base import VectorPoint, VectorQuery, VectorStore, point_id
from treerag_core.index.vectors.faiss_store import FaissStore, FlatGroup
from treerag_core.index.vectors.qdrant_store import QdrantStore, sparse_vector, token_id
from treerag_core.strategies.drilldown.layers import layer_points


def _points(dim: int = 8) -> list[VectorPoint]:
    rng = np.random.default_rng(0)
    return [
        VectorPoint("document", "d1", "0001", rng.normal(size=dim), tokens=("api", "key")),
        VectorPoint("parent", "d1", "7", rng.normal(size=dim), tokens=("api", "key")),
        VectorPoint("child", "d1", "7", rng.normal(size=dim), "7", tokens=("api", "secret")),
        VectorPoint("child", "d1", "8", rng.normal(size=dim), "7", tokens=("console",)),
        VectorPoint("child", "d2", "9", rng.normal(size=dim), "11", tokens=("other",)),
    ]


def test_point_ids_differ_by_kind_and_are_stable():
    # Seed 001 gives parent 7 and child 7 the same number: here they cannot collide.
    assert point_id("parent", "d1", "7") != point_id("child", "d1", "7")
    # Stable across processes and releases: a re-push must replace its points in a store
    # filled by an earlier run, so the id is pinned (a UUIDv5 of "child:d1:7").
    assert point_id("child", "d1", "7") == "7a82d959-d546-516e-8bca-2f0a8724eae6"
    assert point_id("child", "d1", "7") != point_id("child", "d2", "7")
    with pytest.raises(ValueError, match="kind must be one of"):
        point_id("section", "d1", "7")  # type: ignore[arg-type]


def test_query_validates():
    with pytest.raises(ValueError, match="limit must be > 0"):
        VectorQuery(np.zeros(3), "child", limit=0)
    with pytest.raises(ValueError, match="kind must be one of"):
        VectorQuery(np.zeros(3), "chunk")  # type: ignore[arg-type]


def test_flat_group_scores_every_row_in_order():
    vectors = np.eye(3, dtype=np.float32)
    scores = FlatGroup(vectors, 3).scores(np.array([0.0, 1.0, 0.0], dtype=np.float32))
    assert scores.tolist() == [0.0, 1.0, 0.0]
    assert FlatGroup(np.zeros((0, 3)), 3).scores(np.ones(3)).shape == (0,)


@pytest.mark.parametrize("make", [lambda: FaissStore(8), lambda: QdrantStore.in_memory(8)])
def test_stores_filter_like_seed_001(make):
    store = make()
    assert isinstance(store, VectorStore)
    points = _points()
    store.upsert(points)
    store.upsert(points[:2])  # the same ids again replace, never duplicate
    assert store.count() == 5 and store.count("child") == 3 and store.count("parent") == 1
    query = points[2].vector
    hits = store.search(VectorQuery(query, "child", limit=10))
    assert hits[0].item_id == "7" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    only_parent = store.search(VectorQuery(query, "child", limit=10, parent_ids=("7",)))
    assert {h.item_id for h in only_parent} == {"7", "8"}
    assert all(h.parent_id == "7" for h in only_parent)
    in_doc = store.search(VectorQuery(query, "child", limit=10, doc_ids=("d2",)))
    assert [h.item_id for h in in_doc] == ["9"]
    assert [h.kind for h in store.search(VectorQuery(query, "parent", limit=10))] == ["parent"]


def test_faiss_and_qdrant_agree_on_a_real_index(hashing_index):
    points = layer_points(hashing_index)
    faiss_store, qdrant = FaissStore(hashing_index.dim), QdrantStore.in_memory(hashing_index.dim)
    faiss_store.upsert(points)
    qdrant.upsert(points)
    assert qdrant.count("document") == len(hashing_index.documents)
    assert qdrant.count("child") == len(hashing_index.chunks)
    qvec = points[-1].vector
    for kind in ("document", "parent", "child"):
        a = faiss_store.search(VectorQuery(qvec, kind, limit=5))
        b = qdrant.search(VectorQuery(qvec, kind, limit=5))
        assert [h.item_id for h in a] == [h.item_id for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)


def test_qdrant_hybrid_finds_a_term_match_that_dense_misses():
    store = QdrantStore.in_memory(4)
    store.upsert(
        [
            VectorPoint("child", "d", "near", np.array([1, 0, 0, 0.0]), "p", tokens=("alpha",)),
            VectorPoint("child", "d", "term", np.array([0, 1, 0, 0.0]), "p", tokens=("密钥",)),
        ]
    )
    query = np.array([1, 0.1, 0, 0.0])
    dense = store.search(VectorQuery(query, "child", limit=1))
    hybrid = store.search(VectorQuery(query, "child", limit=2, tokens=("密钥",)))
    assert dense[0].item_id == "near"
    assert {h.item_id for h in hybrid} == {"near", "term"}  # fused: both lists contribute
    sparse = store.search(VectorQuery(np.array([0, 0, 1, 0.0]), "child", limit=1, tokens=("密钥",)))
    assert sparse[0].item_id == "term"


def test_sparse_vectors_are_stable_and_saturate():
    vec = sparse_vector(["a", "a", "b"])
    assert vec.indices == sorted([token_id("a"), token_id("b")])
    weights = dict(zip(vec.indices, vec.values, strict=True))
    assert weights[token_id("a")] > weights[token_id("b")] > 0
    assert weights[token_id("a")] < 2 * weights[token_id("b")]  # saturated, not linear
    assert sparse_vector(["a", "a"], query=True).values == [1.0]
    assert token_id("密钥") == token_id("密钥") < 2**31


def test_qdrant_rejects_a_collection_of_another_size_and_bad_urls():
    store = QdrantStore.in_memory(8)
    with pytest.raises(VectorStoreError, match="dense size 8, not 4"):
        QdrantStore(store.client, 4)
    with pytest.raises(VectorStoreError, match="must start with http"):
        QdrantStore.from_url("localhost:6333", 8)


def test_qdrant_names_a_point_that_qdrant_push_did_not_write():
    from qdrant_client import models

    store = QdrantStore.in_memory(8)
    vector = [1.0] + [0.0] * 7
    # Another tool's point in the same collection: a "child" with no doc_id.
    point = models.PointStruct(id=1, vector={"dense": vector}, payload={"type": "child"})
    store.client.upsert(store.collection, points=[point], wait=True)
    query = VectorQuery(np.asarray(vector), "child", limit=5)
    with pytest.raises(VectorStoreError, match=r"holds point 1 with a malformed payload"):
        store.search(query)
    with pytest.raises(VectorStoreError, match="malformed payload"):
        store.search(VectorQuery(np.asarray(vector), "child", limit=5, tokens=("api",)))


def test_faiss_store_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="expected \\(8,\\)"):
        FaissStore(8).upsert([VectorPoint("child", "d", "c", np.zeros(3), "p")])
