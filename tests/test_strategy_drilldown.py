"""The `drilldown` strategy on the plug-in contract: locate = upper layers, retrieve = passages."""

from __future__ import annotations

from dataclasses import replace

import pytest

from treerag_core.base.errors import QueryError
from treerag_core.base.settings import QuerySettings
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.attach import attach_store, store_for
from treerag_core.index.vectors.qdrant_store import QdrantStore
from treerag_core.strategies import get_strategy
from treerag_core.strategies.base import QueryContext
from treerag_core.strategies.drilldown.layers import layer_points
from treerag_core.strategies.drilldown.search import DrilldownOptions

QUESTION = "劳动者解除劳动合同需要提前多少天书面通知用人单位？"


def _ctx(index, settings=None, **kw) -> QueryContext:
    embedder = get_embedder("hashing")
    return QueryContext(
        index=index,
        question=QUESTION,
        language="zh",
        settings=settings or QuerySettings(strategy="drilldown"),
        scope=None,
        query_vector=embedder.embed_query,
        tokenize=tokenize,
        **kw,
    )


def test_registered_with_its_options():
    strategy = get_strategy("drilldown")
    assert strategy.options_type is DrilldownOptions and strategy.locates
    inputs = strategy.locate_inputs(QuerySettings(), "drilldown")
    assert inputs["documents"] == DrilldownOptions().documents and inputs["fusion"] == "weighted"


def test_locate_then_retrieve(hashing_index):
    strategy = get_strategy("drilldown")
    settings = QuerySettings(strategy="drilldown").with_option(
        "drilldown", DrilldownOptions(documents=1, parents=2, children=4)
    )
    ctx = _ctx(hashing_index, settings)
    located = strategy.locate(ctx)
    assert located.locator == "drilldown" and len(located.leaves) == 2
    assert "Document layer" in located.thinking and located.inputs["parents"] == 2
    got = strategy.retrieve(ctx, located)
    assert 0 < len(got.candidates) <= 4
    assert [g.kind for g in got.groups] == ["layer", "layer"]
    assert sum(len(g.hits) for g in got.groups) == len(got.candidates)
    assert [s.kind for s in got.sections] == ["document", "parent", "passages"]
    chosen = [r["id"] for r in got.sections[1].rows if r["chosen"]]
    assert chosen == [leaf.node_id for leaf in located.leaves]
    # The document layer is also the trace's shared routing table (every document in scope).
    table = located.document_scores
    assert len(table) == len(hashing_index.documents) and located.documents == (table[0].doc_id,)
    assert [s.kept for s in table] == [True] + [False] * (len(table) - 1)
    assert table[0].doc_id == got.sections[0].rows[0]["id"] and table[0].passage is not None


def test_manual_leaves_are_refused(hashing_index):
    with pytest.raises(QueryError, match="picks its own sections"):
        get_strategy("drilldown").locate(_ctx(hashing_index, leaves=["0001"]))


def test_an_attached_qdrant_store_serves_the_same_answer(hashing_index):
    strategy = get_strategy("drilldown")
    seed = DrilldownOptions(1, 1, 3, "summary", "summary")  # scores from the same vectors
    ctx = _ctx(hashing_index, QuerySettings().with_option("drilldown", seed))
    plain = strategy.retrieve(ctx, strategy.locate(ctx))
    store = QdrantStore.in_memory(hashing_index.dim)
    store.upsert(layer_points(hashing_index))
    attach_store(hashing_index, store)
    try:
        assert store_for(hashing_index) is store
        served = strategy.retrieve(ctx, strategy.locate(ctx))
    finally:
        attach_store(hashing_index, None)
    assert store_for(hashing_index) is None
    ids = [h.chunk.chunk_id for h in served.candidates]
    assert ids == [h.chunk.chunk_id for h in plain.candidates]


def test_through_the_pipeline_with_step_one_reused_when_only_children_change(hashing_index):
    from treerag_core.pipeline import Engine, rerun, run

    engine = Engine(hashing_index, get_embedder("hashing"), api_key=None)
    # Three parents and one child, so that more children have more passages to show (a
    # section may hold a single chunk, as a statute's article does with --article-leaves).
    seed = DrilldownOptions(1, 3, 1, "summary", "summary")
    settings = QuerySettings(strategy="drilldown").set("rerank.enabled", False)
    settings = settings.with_option("drilldown", seed)
    trace = run(engine, QUESTION, settings, synthesize=False)
    assert trace.strategy == "drilldown" and trace.locate.locator == "drilldown"
    assert [s.kind for s in trace.sections] == ["document", "parent", "passages"]
    assert len(trace.candidates) == 1
    more = settings.with_option("drilldown", replace(seed, children=6))
    again = rerun(engine, trace, more, synthesize=False)
    assert again.locate is trace.locate  # the upper layers did not change: step 1 reused
    assert len(again.candidates) > len(trace.candidates)
    other_docs = settings.with_option("drilldown", replace(seed, documents=2))
    assert rerun(engine, trace, other_docs, synthesize=False).locate is not trace.locate


def test_synthesis_reads_the_three_layers_in_order_and_falls_back_to_extractive(hashing_index):
    from treerag_core.answer.synthesis import synthesis_prompt
    from treerag_core.pipeline import Engine, run

    engine = Engine(hashing_index, get_embedder("hashing"), api_key=None)
    seed = DrilldownOptions(1, 1, 3, "summary", "summary")
    settings = QuerySettings(strategy="drilldown").set("rerank.enabled", False)
    trace = run(engine, QUESTION, settings.with_option("drilldown", seed))
    prompt = synthesis_prompt(QUESTION, trace.reranked, "zh", trace.sections)
    summary = prompt.index("[证据1] 来源: 文档摘要")
    parent = prompt.index("[证据2] 来源: 父块上下文")
    first_passage = prompt.index(f"[证据3] 来源: {trace.reranked[0].chunk.heading_path}")
    assert summary < parent < first_passage
    assert "核心知识模块" in prompt[summary:parent]  # the K-Type summary, in the seed's words
    # No key: the cited extractive answer, from the chosen section's passages.
    assert trace.answer_usage.input_tokens == 0
    assert "提前三十日" in trace.answer and trace.citations
    assert all(c.supported for c in trace.citations)
