"""The three-layer drill-down: each layer filtered by the one above, on FAISS and on Qdrant."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from treerag_core.base.errors import VectorStoreError
from treerag_core.base.settings import FusionArgs
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.qdrant_store import QdrantStore
from treerag_core.strategies.drilldown.layers import layer_points
from treerag_core.strategies.drilldown.search import (
    DrilldownOptions,
    child_hits,
    context_sections,
    document_scores,
    drill_down,
    parent_scores,
)

LAW = "劳动合同法(2012-12-28).md"
QUESTION = "劳动者解除劳动合同需要提前多少天书面通知用人单位？"


def _q(text: str):
    return get_embedder("hashing").embed_query(text), tokenize(text)


def test_options_validate():
    with pytest.raises(ValueError, match=r"documents must be in 1\.\.50"):
        DrilldownOptions(documents=0)
    with pytest.raises(ValueError, match="doc_signal must be one of"):
        DrilldownOptions(doc_signal="title")
    seed = DrilldownOptions(1, 1, 3, "summary", "summary")
    assert (seed.documents, seed.parents, seed.children) == (1, 1, 3)


def test_document_scores_rank_the_law_first_for_a_labour_question(hashing_index):
    qvec, tokens = _q(QUESTION)
    scores = document_scores(hashing_index, qvec, tokens, keep=2)
    assert scores[0].item_id == LAW and [c.chosen for c in scores[:3]] == [True, True, False]
    assert len(scores) == len(hashing_index.documents)
    assert scores[0].score >= scores[1].score >= scores[-1].score
    scoped = document_scores(hashing_index, qvec, tokens, scope=["test_paper.md"])
    assert [c.item_id for c in scoped] == ["test_paper.md"]
    by_passage = document_scores(hashing_index, qvec, tokens, signal="passages")
    assert by_passage[0].item_id == LAW and by_passage[0].passage is not None


def test_each_layer_stays_inside_the_one_above(hashing_index):
    qvec, tokens = _q(QUESTION)
    parents = parent_scores(hashing_index, qvec, tokens, [LAW], keep=2)
    assert {hashing_index.nodes[c.item_id].doc_id for c in parents} == {LAW}
    assert sum(c.chosen for c in parents) == 2
    chosen = [c.item_id for c in parents if c.chosen]
    hits = child_hits(hashing_index, qvec, tokens, chosen, keep=4, question=QUESTION)
    assert 0 < len(hits) <= 4 and {h.chunk.source_node_id for h in hits} <= set(chosen)
    assert [h.pooled_rank for h in hits] == list(range(1, len(hits) + 1))
    assert child_hits(hashing_index, qvec, tokens, []) == ()


def test_drill_down_finds_the_thirty_days_article_and_labels_three_layers(hashing_index):
    qvec, tokens = _q(QUESTION)
    seed = DrilldownOptions(1, 1, 3, "summary", "summary")
    result = drill_down(hashing_index, QUESTION, qvec, tokens, seed)
    assert result.chosen_documents == [LAW]
    assert "解除" in hashing_index.nodes[result.chosen_parents[0]].heading_path
    assert any("提前三十日" in h.chunk.text for h in result.children)
    sections = context_sections(hashing_index, result, "zh")
    assert [s.title for s in sections] == ["文档摘要", "父块上下文", "相关段落"]
    assert sections[0].text.startswith("中华人民共和国劳动合同法")
    assert sections[2].chunk_ids == tuple(h.chunk.chunk_id for h in result.children)
    assert sections[2].text == "" and "提前三十日" in " ".join(r["text"] for r in sections[2].rows)
    assert sections[0].rows[0]["chosen"] and not sections[0].rows[1]["chosen"]
    en = context_sections(hashing_index, result, "en")
    assert [s.kind for s in en] == ["document", "parent", "passages"]
    assert en[0].title == "Document summary"


def test_qdrant_backend_gives_the_same_drill_down(hashing_index):
    store = QdrantStore.in_memory(hashing_index.dim)
    store.upsert(layer_points(hashing_index))
    qvec, tokens = _q(QUESTION)
    # By summaries, every score comes from the same vectors: the two backends must agree.
    options = DrilldownOptions(2, 2, 5, "summary", "summary")
    params = FusionArgs("rrf", 0.5, 60)
    faiss = drill_down(hashing_index, QUESTION, qvec, tokens, options, params)
    qdrant = drill_down(hashing_index, QUESTION, qvec, tokens, options, params, store=store)
    assert qdrant.chosen_documents == faiss.chosen_documents
    assert qdrant.chosen_parents == faiss.chosen_parents
    assert [h.chunk.chunk_id for h in qdrant.children] == [h.chunk.chunk_id for h in faiss.children]


def test_qdrant_serves_the_passage_signal_with_its_own_hybrid_search(hashing_index):
    store = QdrantStore.in_memory(hashing_index.dim)
    store.upsert(layer_points(hashing_index))
    qvec, tokens = _q(QUESTION)
    result = drill_down(hashing_index, QUESTION, qvec, tokens, DrilldownOptions(), store=store)
    assert result.chosen_documents[0] == LAW and result.documents[0].passage > 0
    assert any("提前三十日" in h.chunk.text for h in result.children)


SUMMARY_ONLY = DrilldownOptions(2, 2, 5, "summary", "summary")


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("document", SUMMARY_ONLY),
        ("parent", SUMMARY_ONLY),
        ("child", SUMMARY_ONLY),  # the child layer
        ("child", DrilldownOptions()),  # the passage signal of the document layer
    ],
)
def test_a_store_answering_with_ids_this_index_lacks_is_named(hashing_index, kind, options):
    points = layer_points(hashing_index)
    field = "doc_id" if kind == "document" else "item_id"
    foreign = [
        replace(p, **{field: "other:" + getattr(p, field)}) if p.kind == kind else p for p in points
    ]
    store = QdrantStore.in_memory(hashing_index.dim)
    store.upsert(foreign)
    qvec, tokens = _q(QUESTION)
    with pytest.raises(
        VectorStoreError, match=f"answered with {kind} 'other:.*pushed from another"
    ):
        drill_down(hashing_index, QUESTION, qvec, tokens, options, store=store)


def test_a_question_with_no_signal_scores_zero_on_both_signals(hashing_index):
    # A zero vector and no tokens: the own and passage scores tie at 0 in each layer, and
    # fusion.minmax keeps a tie at 0 as 0 (the order, all ties, is the layer's own order).
    qvec = np.zeros(hashing_index.dim, dtype=np.float32)
    docs = document_scores(hashing_index, qvec, [], signal="both", keep=2)
    assert [c.score for c in docs] == [0.0] * len(hashing_index.documents)
    assert [c.item_id for c in docs] == [d.doc_id for d in hashing_index.documents]
    parents = parent_scores(hashing_index, qvec, [], [LAW], signal="both")
    assert parents and all(c.score == 0.0 for c in parents)


class LeakyStore(QdrantStore):
    """A store that ignores the document filter (a bug, or a collection's stale payload)."""

    def search(self, query):
        return super().search(replace(query, doc_ids=None))


def test_the_hybrid_pass_checks_its_hits_without_listing_the_scope(hashing_index, monkeypatch):
    from treerag_core.strategies.drilldown.search import best_passages

    store = QdrantStore.in_memory(hashing_index.dim)
    store.upsert(layer_points(hashing_index))
    qvec, tokens = _q(QUESTION)
    whole = best_passages(hashing_index, qvec, tokens, FusionArgs(), None, store)

    def every_chunk_listed(scope):
        raise AssertionError("a query listed every chunk of its scope")

    monkeypatch.setattr(hashing_index, "scope_rows", every_chunk_listed)
    assert best_passages(hashing_index, qvec, tokens, FusionArgs(), None, store) == whole
    by_doc, _ = best_passages(hashing_index, qvec, tokens, FusionArgs(), [LAW], store)
    assert set(by_doc) == {LAW}
    leaky = LeakyStore.in_memory(hashing_index.dim)
    leaky.upsert(layer_points(hashing_index))
    other = next(d.doc_id for d in hashing_index.documents if d.doc_id != LAW)
    with pytest.raises(VectorStoreError, match=r"answered with child '.*pushed from another"):
        best_passages(hashing_index, qvec, tokens, FusionArgs(), [other], leaky)
