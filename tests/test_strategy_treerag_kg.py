"""The treerag-kg strategy: graph leaves get a third score column, paths reach the answer."""

from __future__ import annotations

import pytest
from conftest import sample_sources

from treerag_core.config import IndexSettings
from treerag_core.embedders import get_embedder
from treerag_core.errors import IndexFormatError
from treerag_core.graph.search import GraphSearchOptions
from treerag_core.index import build_index
from treerag_core.settings import QuerySettings
from treerag_core.strategies import QueryContext, get_strategy
from treerag_core.text import tokenize
from treerag_core.types import LocatedLeaf, LocateResult

QUESTION = "用人单位违反竞业限制约定应当支付什么违约金？"


@pytest.fixture(scope="module")
def ctx_for():
    embedder = get_embedder("hashing")
    sources = sample_sources(["劳动合同法(2012-12-28).md"])

    def make(graph_min_leaf_chars: int, settings: QuerySettings | None = None) -> QueryContext:
        index = build_index(
            sources,
            IndexSettings(embedder="hashing", graph_min_leaf_chars=graph_min_leaf_chars),
            embedder,
        )
        return QueryContext(
            index=index,
            question=QUESTION,
            language="zh",
            settings=settings or QuerySettings(strategy="treerag-kg"),
            scope=None,
            query_vector=embedder.embed_query,
            tokenize=tokenize,
        )

    return make


def _located(ctx: QueryContext, n: int = 3) -> LocateResult:
    longest = sorted(ctx.index.leaves(), key=lambda node: node.start - node.end)[:n]
    return LocateResult(tuple(LocatedLeaf(x.node_id, x.heading_path, QUESTION) for x in longest))


def test_registered_with_its_options():
    strategy = get_strategy("treerag-kg")
    assert strategy.options_type is GraphSearchOptions
    assert strategy.reads_structure and strategy.locates and not strategy.needs_gold_leaves


def test_graph_leaves_get_a_graph_column_paths_and_a_stage(ctx_for):
    ctx = ctx_for(2000)
    located = _located(ctx)
    retrieval = get_strategy("treerag-kg").retrieve(ctx, located)
    kinds = {g.leaf_id: g.kind for g in retrieval.groups}
    assert set(kinds.values()) == {"graph", "leaf"}  # two long leaves, one short
    for group in retrieval.groups:
        assert all((h.graph is not None) == (group.kind == "graph") for h in group.hits)
    assert [h.pooled_rank for h in retrieval.candidates] == list(
        range(1, len(retrieval.candidates) + 1)
    )
    assert len(retrieval.candidates) <= ctx.settings.retrieve.candidate_window
    paths = [s for s in retrieval.sections if s.kind == "graph"]
    stages = [s for s in retrieval.sections if s.kind == "graph-stage"]
    assert len(paths) == len(stages) == 2
    assert all("—co-occurs with→" in s.text for s in paths)


def test_weight_zero_keeps_the_treerag_order(ctx_for):
    off = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(graph_weight=0.0)
    )
    ctx = ctx_for(2000, off)
    retrieval = get_strategy("treerag-kg").retrieve(ctx, _located(ctx))
    for group in retrieval.groups:
        fused = [h.fused for h in group.hits]
        assert fused == sorted(fused, reverse=True)
        assert all(
            h.fused == pytest.approx(0.5 * h.dense_norm + 0.5 * h.bm25_norm) for h in group.hits
        )


def test_an_index_without_graphs_asks_for_a_rebuild(ctx_for):
    ctx = ctx_for(0)
    with pytest.raises(IndexFormatError, match="rebuild it to add graphs"):
        get_strategy("treerag-kg").retrieve(ctx, _located(ctx))


def test_pipeline_run_gives_paths_to_the_trace_and_the_extractive_answer(ctx_for):
    from treerag_core.embedders import get_embedder
    from treerag_core.pipeline import Engine, run

    ctx = ctx_for(2000)
    engine = Engine(index=ctx.index, embedder=get_embedder("hashing"), api_key=None)
    leaves = [g for g in sorted(ctx.index.graphs)]
    trace = run(engine, QUESTION, QuerySettings(strategy="treerag-kg"), leaves=leaves)
    kinds = [s.kind for s in trace.sections]
    assert kinds.count("graph") == len(leaves) and kinds.count("graph-stage") == len(leaves)
    assert any(h.graph is not None for h in trace.reranked)
    assert "图路径:" in trace.answer and "—co-occurs with→" in trace.answer
    plain = run(engine, QUESTION, QuerySettings(strategy="treerag"), leaves=leaves)
    assert plain.sections == [] and "图路径" not in plain.answer


def test_graph_out_of_the_pool_ranks_the_pool_like_treerag(ctx_for):
    settings = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(in_pool=False)
    )
    ctx = ctx_for(2000, settings)
    retrieval = get_strategy("treerag-kg").retrieve(ctx, _located(ctx))
    assert any(h.graph for h in retrieval.candidates)
    pooled = [h.pool_fused for h in retrieval.candidates]
    assert pooled == sorted(pooled, reverse=True)
    from treerag_core.graph.retrieve import FusionParams, pool_with_graph

    plain = pool_with_graph([g.hits for g in retrieval.groups], FusionParams(graph_weight=0.0), 40)
    assert [h.chunk.chunk_id for h in retrieval.candidates] == [h.chunk.chunk_id for h in plain]
