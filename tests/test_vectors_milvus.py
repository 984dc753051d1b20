"""The Milvus backend against a real engine: Milvus Lite, started once for this module.

Every strategy family runs with its chunk searches served by the engine (dense and BM25)
and is compared with the in-process FAISS + BM25 path on the same index; then the bad cases:
an unreachable URI, another embedder or dimension, a build killed midway, hostile filter
values.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import VectorStoreError
from treerag_core.base.settings import QuerySettings
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import HashingEmbedder, get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.attach import attach_store
from treerag_core.index.vectors.base import VectorQuery
from treerag_core.index.vectors.milvus_store import MilvusStore
from treerag_core.pipeline import Engine, run
from treerag_core.search.retrieval import search_leaf
from treerag_core.strategies.drilldown.layers import ensure_layers as layers_of
from treerag_core.strategies.drilldown.milvus_push import attach_milvus, push_milvus

REPO = Path(__file__).resolve().parents[1]
SETTINGS = QuerySettings().set("llm.enabled", False).set("rerank.enabled", False)
QUESTIONS = ("How does the router choose an expert?", "劳动合同什么时候可以解除？")


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """One Milvus Lite engine (a .db under tmp) for the whole module: it starts in seconds."""
    return str(tmp_path_factory.mktemp("milvus") / "engine.db")


@pytest.fixture(scope="module")
def served(hashing_index, uri):
    """(in-process index, the same index served by Milvus): a copy, so the session's shared
    index never has a store attached."""
    index = copy.copy(hashing_index)
    for cache in ("_faiss", "_bm25", "_doc_stats", "_scopes", "_structure"):
        setattr(index, cache, {})  # its own caches: nothing computed in process is reused
    store = MilvusStore.open(uri, index.dim, "main")
    assert push_milvus(index, store).status == "built"
    attach_milvus(index, store)
    yield hashing_index, index, store
    attach_store(index, None)


def both(served, question, strategy, **kwargs):
    plain, on_milvus, _ = served
    embedder = get_embedder("hashing")
    runs = []
    for index in (plain, on_milvus):
        engine = Engine(index=index, embedder=embedder, api_key=None)
        runs.append(run(engine, question, SETTINGS, strategy=strategy, synthesize=False, **kwargs))
    return runs


def ids(hits) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


def test_push_is_idempotent_and_the_engine_holds_every_point(served):
    plain, _, store = served
    assert push_milvus(plain, store).status == "unchanged"
    assert store.count("child") == len(plain.chunks)
    assert store.count("document") == len(plain.documents)
    assert store.count("parent") == len(layers_of(plain).parent_ids)
    stored = store.stored_vectors("document")  # listed exactly, not searched
    assert set(stored) == {(d.doc_id, d.root_id) for d in plain.documents}
    assert all(v.shape == (plain.dim,) for v in stored.values())


@pytest.mark.parametrize("strategy", ["flat-hybrid", "flat-dense", "flat-bm25"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_flat_strategies_equal_in_process_over_the_corpus(served, strategy, question):
    # Over the whole corpus the engine's BM25 statistics are the in-process ones (one
    # collection = the corpus) and FLAT cosine is exact: same hits, same scores.
    a, b = both(served, question, strategy)
    assert ids(a.candidates) == ids(b.candidates) and a.candidates
    for x, y in zip(a.candidates, b.candidates, strict=True):
        assert y.dense == pytest.approx(x.dense, abs=1e-5)
        assert y.bm25 == pytest.approx(x.bm25, rel=1e-4, abs=1e-5)
        assert y.fused == pytest.approx(x.fused, abs=1e-4)


def test_per_leaf_search_is_a_leaf_filter(served):
    # treerag's picked leaves (a manual pick here) and the per-leaf hybrid search of step 2
    # (`search_leaf`, the oracle's) both become a leaf filter in the engine.
    plain, on_milvus, _ = served

    def about_routers(leaf: str) -> bool:
        return any("router" in plain.chunks[r].text.lower() for r in plain.leaf_rows(leaf))

    big = [n.node_id for n in plain.leaves() if len(plain.leaf_rows(n.node_id)) >= 3]
    leaves = sorted(big, key=lambda leaf: not about_routers(leaf))[:3]  # matching ones first
    a, b = both(served, QUESTIONS[0], "treerag", leaves=leaves)
    assert ids(a.reranked) == ids(b.reranked)
    assert b.reranked and {h.chunk.source_node_id for h in b.reranked} <= set(leaves)
    embedder = get_embedder("hashing")
    matched = 0
    for leaf in leaves:
        group = search_leaf(
            on_milvus, leaf, QUESTIONS[0], SETTINGS.retrieve, embedder.embed_query, tokenize
        )
        assert group.hits and {h.chunk.source_node_id for h in group.hits} == {leaf}
        # every chunk of the leaf: the same cosine, and BM25 with the leaf's document's
        # statistics on both paths: the same numbers
        qvec = embedder.embed_query(QUESTIONS[0])
        rows, dense, bm25 = plain.score_leaf(leaf, qvec, tokenize(QUESTIONS[0]))
        rows_m, dense_m, bm25_m = on_milvus.score_leaf(leaf, qvec, tokenize(QUESTIONS[0]))
        assert np.array_equal(rows, rows_m)
        np.testing.assert_allclose(dense_m, dense, atol=1e-5)
        assert bm25_m.dtype == bm25.dtype and np.array_equal(bm25_m, bm25)
        matched += int(bm25.any())
    assert matched


@pytest.mark.parametrize("question", QUESTIONS)
def test_treerag_and_flat_structured_rank_as_in_process(served, question):
    # Heading path + passage BM25 comes from the engine's second BM25 field.
    for strategy in ("treerag", "flat-structured"):
        a, b = both(served, question, strategy)
        assert ids(a.reranked) == ids(b.reranked) and b.reranked


def test_drilldown_layers_are_type_filtered_searches(served):
    plain, _, store = served
    qvec = get_embedder("hashing").embed_query(QUESTIONS[0])
    docs = store.search(VectorQuery(qvec, "document", limit=50))
    assert {h.kind for h in docs} == {"document"} and len(docs) == len(plain.documents)
    one = plain.documents[0].doc_id
    parents = store.search(VectorQuery(qvec, "parent", limit=500, doc_ids=(one,)))
    assert parents and {(h.kind, h.doc_id) for h in parents} == {("parent", one)}
    leaf = parents[0].item_id
    children = store.search(VectorQuery(qvec, "child", limit=50, parent_ids=(leaf,)))
    assert {h.parent_id for h in children} == {leaf}
    assert len(children) == len(plain.leaf_rows(leaf))
    for question in QUESTIONS:
        a, b = both(served, question, "drilldown")
        # Layers 1-2 (documents, parents) pick the same sections; layer 3 ranks their
        # passages with BM25 over each section's document's statistics on both paths.
        picked = [leaf.node_id for leaf in a.locate.leaves]
        assert [leaf.node_id for leaf in b.locate.leaves] == picked and picked
        assert {h.chunk.source_node_id for h in b.reranked} <= set(picked)
        assert_same_hits(a.reranked, b.reranked)


# (question, its document): English and Chinese, each searched inside its own document
IN_DOCUMENT = (
    (QUESTIONS[0], "test_paper.md"),
    (QUESTIONS[1], "劳动合同法(2012-12-28).md"),
)


def assert_same_hits(a, b) -> None:
    """Same chunks in the same order with the same scores (cosine: FLAT, float32)."""
    assert ids(a) == ids(b) and a
    for x, y in zip(a, b, strict=True):
        assert y.dense == pytest.approx(x.dense, abs=1e-5)
        assert y.bm25 == pytest.approx(x.bm25, rel=1e-6, abs=1e-9)
        assert y.fused == pytest.approx(x.fused, abs=1e-4)
        assert (y.pool_fused is None) == (x.pool_fused is None)
        assert y.pool_fused == pytest.approx(x.pool_fused, abs=1e-4)


@pytest.mark.parametrize("strategy", ["flat-hybrid", "treerag", "drilldown"])
@pytest.mark.parametrize(("question", "doc"), IN_DOCUMENT)
def test_document_scope_equals_in_process(served, strategy, question, doc):
    # A question's document is narrower than the collection: the engine serves its term
    # rows and BM25 is scored here with that document's statistics, as in process.
    a, b = both(served, question, strategy, scope=[doc])
    assert_same_hits(a.candidates, b.candidates)
    assert_same_hits(a.reranked, b.reranked)
    assert {h.chunk.doc_id for h in b.reranked} == {doc}
    if strategy == "treerag":
        assert [x.node_id for x in a.locate.leaves] == [x.node_id for x in b.locate.leaves]


def test_bm25_statistics_follow_one_rule(served):
    # bm25_scope: a leaf's document, a scope's documents, the corpus for None or every
    # document; the engine serves the corpus's BM25 itself, the rest from the scope's rows.
    plain, on_milvus, store = served
    docs = sorted(d.doc_id for d in plain.documents)
    leaf = next(n.node_id for n in plain.leaves(docs[0]) if len(plain.leaf_rows(n.node_id)))
    assert plain.bm25_scope(leaf_id=leaf) == (docs[0],)
    assert plain.bm25_scope([docs[1], docs[0], docs[1]]) == (docs[0], docs[1])
    assert plain.bm25_scope(None) is None and plain.bm25_scope(docs) is None
    qvec = get_embedder("hashing").embed_query(QUESTIONS[1])
    q_tokens = tokenize(QUESTIONS[1])
    for scope in (None, docs, docs[-2:], [docs[-1]]):  # the last two: Chinese
        rows, _, bm25 = plain.score_scope(scope, qvec, q_tokens)
        rows_m, _, bm25_m = on_milvus.score_scope(scope, qvec, q_tokens)
        assert np.array_equal(rows, rows_m) and bm25.any()
        np.testing.assert_allclose(bm25_m, bm25, rtol=1e-5, atol=1e-6)
    # a narrow scope's rows are one filtered query, kept for a few scopes only
    assert len(store._scope_terms) <= 8
    assert all(key[0] != tuple(docs) for key in store._scope_terms)


def test_hirag_chunk_store_is_served(served):
    a, b = both(served, QUESTIONS[0], "hirag-naive")
    assert ids(a.reranked) == ids(b.reranked) and b.reranked
    for x, y in zip(a.reranked, b.reranked, strict=True):
        assert y.dense == pytest.approx(x.dense, abs=1e-5)


def test_hits_carry_the_trace_payload(served):
    _, _, store = served
    rows = store.client.query(store.chunks, filter='kind == "child"', output_fields=["*"], limit=3)
    plain = served[0]
    for row in rows:
        chunk = plain.chunks[row["row"]]
        assert (row["item_id"], row["doc_id"], row["parent_id"]) == (
            chunk.chunk_id,
            chunk.doc_id,
            chunk.source_node_id,
        )
        assert (row["start"], row["end"], row["content"]) == (chunk.start, chunk.end, chunk.text)
        assert row["heading_path"] == chunk.heading_path and row["page_start"] == -1


def test_an_unreachable_uri_is_one_named_error(tmp_path):
    with pytest.raises(
        VectorStoreError, match=re.escape("could not connect to http://127.0.0.1:9")
    ):
        MilvusStore.open("http://127.0.0.1:9", 8, timeout=2)
    with pytest.raises(VectorStoreError, match="does not exist"):
        MilvusStore.open(str(tmp_path / "missing" / "x.db"), 8)
    with pytest.raises(VectorStoreError, match=r"ending in \.db"):
        MilvusStore.open(str(tmp_path / "x.sqlite"), 8)


def _tiny(embedder, names=("a.md", "b.md")):
    texts = (
        "# Alpha\n\n## Routing\n\nThe router picks an expert for each token.\n\n"
        "## Training\n\nWe train for fifty epochs with Adam.\n",
        "# 合同\n\n## 解除\n\n劳动者提前三十日以书面形式通知用人单位，可以解除劳动合同。\n",
    )
    docs = [SourceDocument(n, t) for n, t in zip(names, texts, strict=True)]
    return build_index(docs, IndexSettings(embedder=embedder.name), embedder)


def test_another_dimension_or_embedder_is_refused(served, uri):
    plain, _, _ = served
    narrow = _tiny(HashingEmbedder(dim=64))
    store = MilvusStore.open(uri, 64, "main")
    with pytest.raises(VectorStoreError, match="holds 384-d vectors, this index 64-d"):
        attach_milvus(narrow, store)
    with pytest.raises(VectorStoreError, match=r"serves another index.*--replace"):
        push_milvus(narrow, store)
    # Same dimension, another model (the probe vector differs): refused as well.
    other = _tiny(get_embedder("multilingual"))
    wide = MilvusStore.open(uri, other.dim, "other_model")
    push_milvus(_tiny(HashingEmbedder(dim=other.dim)), wide)
    other_model = re.escape("'hashing', this index 512-d from 'multilingual'")
    with pytest.raises(VectorStoreError, match=other_model):
        attach_milvus(other, wide)
    assert MilvusStore.open(uri, plain.dim, "main").count("child") == len(plain.chunks)


_KILLED_BUILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.corpus import SourceDocument, build_index
    from treerag_core.strategies.drilldown.milvus_push import push_milvus
    from treerag_core.index.vectors.milvus_store import MilvusStore

    text = "# A\\n\\n## One\\n\\nalpha beta gamma.\\n\\n## Two\\n\\ndelta epsilon zeta.\\n"
    index = build_index([SourceDocument("a.md", text)], IndexSettings(embedder="hashing"),
                        get_embedder("hashing"))
    store = MilvusStore.open(sys.argv[1], index.dim, "killed")
    # Every row is written; the process dies where the manifest would be written.
    store.write_manifest = lambda manifest: os.kill(os.getpid(), signal.SIGKILL)
    push_milvus(index, store)
    """
)


def test_a_build_killed_midway_is_detected_and_rebuilt(tmp_path):
    db = tmp_path / "killed.db"
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_BUILD, str(db), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    text = "# A\n\n## One\n\nalpha beta gamma.\n\n## Two\n\ndelta epsilon zeta.\n"
    index = build_index(
        [SourceDocument("a.md", text)], IndexSettings(embedder="hashing"), get_embedder("hashing")
    )
    store = MilvusStore.open(str(db), index.dim, "killed")
    assert store.state()[0] == "partial" and store.count("child") == len(index.chunks)
    with pytest.raises(VectorStoreError, match="half-written"):
        attach_milvus(index, store)
    report = push_milvus(index, store)
    assert report.status == "rebuilt" and "half-written" in report.note
    attach_milvus(index, store)
    try:
        rows, dense, _ = index.score_scope(None, np.ones(index.dim), ["alpha"])
        assert len(rows) == len(index.chunks) and dense.any()
    finally:
        attach_store(index, None)


def test_filter_values_with_quotes_and_injection_are_escaped(uri):
    hostile = ('x" or doc_id != "', "back\\slash'.md")
    index = _tiny(get_embedder("hashing"), names=hostile)
    store = MilvusStore.open(uri, index.dim, "hostile")
    push_milvus(index, store)
    attach_milvus(index, store)
    try:
        for doc_id in hostile:
            rows, dense, bm25 = index.score_scope([doc_id], np.ones(index.dim), ["router"])
            assert len(rows) and {index.chunks[r].doc_id for r in rows} == {doc_id}
            assert dense.any() and (bm25.max() > 0) == (doc_id == hostile[0])  # its router
            hits = store.search(
                VectorQuery(np.ones(index.dim), "child", limit=50, doc_ids=(doc_id,))
            )
            assert hits and {h.doc_id for h in hits} == {doc_id}
        parents = store.search(
            VectorQuery(np.ones(index.dim), "parent", limit=50, doc_ids=(hostile[0],))
        )
        assert parents and {h.doc_id for h in parents} == {hostile[0]}
    finally:
        attach_store(index, None)
