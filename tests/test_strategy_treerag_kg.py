"""The treerag-kg strategy: graph leaves get a third score column, paths reach the answer."""

from __future__ import annotations

import pytest

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocatedLeaf, LocateResult
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.strategies import QueryContext, get_strategy
from treerag_core.strategies.graph.part import graphs_of
from treerag_core.strategies.graph.search import GraphSearchOptions
from treerag_core.strategies.treerag.structured import StructureOptions

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
    picked = tuple(LocatedLeaf(x.node_id, x.heading_path, QUESTION) for x in longest)
    return LocateResult(picked, locator="manual")  # a pick: the window is cut to these leaves


def test_registered_with_its_options():
    strategy = get_strategy("treerag-kg")
    assert strategy.options_type is GraphSearchOptions
    assert strategy.reads_structure and strategy.locates and not strategy.needs_gold_leaves


def test_graph_leaves_get_a_graph_column_paths_and_a_stage(ctx_for):
    ctx = ctx_for(2000)
    located = _located(ctx)
    retrieval = get_strategy("treerag-kg").retrieve(ctx, located)
    scope, *graph_groups = retrieval.groups
    assert scope.kind == "scope" and scope.hits == retrieval.candidates
    graph_leaves = [leaf.node_id for leaf in located.leaves if leaf.node_id in graphs_of(ctx.index)]
    assert len(graph_leaves) == 2  # two long leaves, one short
    assert [g.leaf_id for g in graph_groups] == graph_leaves
    assert all(g.kind == "graph" for g in graph_groups)
    for hit in retrieval.candidates:
        assert (hit.graph is not None) == (hit.chunk.source_node_id in graph_leaves)
    picked = {leaf.node_id for leaf in located.leaves}
    assert {h.chunk.source_node_id for h in retrieval.candidates} <= picked
    assert [h.pooled_rank for h in retrieval.candidates] == list(
        range(1, len(retrieval.candidates) + 1)
    )
    assert len(retrieval.candidates) <= ctx.settings.retrieve.candidate_window
    paths = [s for s in retrieval.sections if s.kind == "graph"]
    stages = [s for s in retrieval.sections if s.kind == "graph-stage"]
    assert len(paths) == len(stages) == 2
    assert all("—co-occurs with→" in s.text for s in paths)
    for path, stage in zip(paths, stages, strict=True):  # the stage counts what the paths add
        assert stage.title.endswith(f", ~{estimate_tokens(path.text)} context tokens")
        assert estimate_tokens(path.text) > 0


def test_weight_zero_keeps_the_treerag_order(ctx_for):
    off = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(graph_weight=0.0)
    )
    ctx = ctx_for(2000, off)
    located = _located(ctx)
    kg = get_strategy("treerag-kg").retrieve(ctx, located)
    plain = get_strategy("treerag").retrieve(ctx, located)
    assert [h.chunk.chunk_id for h in kg.candidates] == [h.chunk.chunk_id for h in plain.candidates]
    assert [h.pool_fused for h in kg.candidates] == [h.pool_fused for h in plain.candidates]


def test_in_pool_adds_the_graph_column_to_the_heading_aware_score(ctx_for):
    added = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(in_pool=True)
    )
    ctx = ctx_for(2000, added)
    located = _located(ctx)
    kg = get_strategy("treerag-kg").retrieve(ctx, located)
    for hit in kg.candidates:
        assert hit.pool_fused == pytest.approx(hit.fused + 0.3 * (hit.graph or 0.0))
    pooled = [h.pool_fused for h in kg.candidates]
    assert pooled == sorted(pooled, reverse=True)
    assert any(h.graph for h in kg.candidates)


def test_an_index_without_graphs_asks_for_a_rebuild(ctx_for):
    ctx = ctx_for(0)
    with pytest.raises(IndexFormatError, match="rebuild it to add graphs"):
        get_strategy("treerag-kg").retrieve(ctx, _located(ctx))


def test_pipeline_run_gives_paths_to_the_trace_and_the_extractive_answer(ctx_for):
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine, run

    ctx = ctx_for(2000)
    engine = Engine(index=ctx.index, embedder=get_embedder("hashing"), api_key=None)
    leaves = [g for g in sorted(graphs_of(ctx.index))]
    trace = run(engine, QUESTION, QuerySettings(strategy="treerag-kg"), leaves=leaves)
    kinds = [s.kind for s in trace.sections]
    assert kinds.count("graph") == len(leaves) and kinds.count("graph-stage") == len(leaves)
    assert any(h.graph is not None for h in trace.reranked)
    assert "图路径:" in trace.answer and "—co-occurs with→" in trace.answer
    plain = run(engine, QUESTION, QuerySettings(strategy="treerag"), leaves=leaves)
    assert plain.sections == [] and "图路径" not in plain.answer


def test_by_default_the_graph_reorders_only_inside_each_leaf(ctx_for):
    assert GraphSearchOptions().in_pool is False
    settings = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(graph_weight=1.0)
    )
    ctx = ctx_for(2000, settings)
    located = _located(ctx)
    kg = get_strategy("treerag-kg").retrieve(ctx, located)
    plain = get_strategy("treerag").retrieve(ctx, located)
    assert any(h.graph for h in kg.candidates)

    def per_leaf(hits):
        out: dict[str, list[float]] = {}
        for h in hits:
            out.setdefault(h.chunk.source_node_id, []).append(round(h.pool_fused, 9))
        return out

    # Every leaf holds the same slots (scores) in the window as under treerag ...
    assert per_leaf(kg.candidates) == per_leaf(plain.candidates)
    # ... but the graph changed which chunks hold them somewhere.
    assert [h.chunk.chunk_id for h in kg.candidates] != [h.chunk.chunk_id for h in plain.candidates]
    assert len([s for s in kg.sections if s.kind == "graph"]) == 2


def test_local_locate_reads_treerags_structure_options(ctx_for):
    settings = QuerySettings(strategy="treerag-kg").with_option(
        "treerag-kg", GraphSearchOptions(graph_weight=0.5)
    )
    inputs = get_strategy("treerag-kg").locate_inputs(settings, "local")
    assert inputs["route_documents"] == 2 and inputs["section_weight"] == 0.0  # the defaults
    # Moving treerag's own structure options moves treerag-kg's step 1 inputs with them.
    moved = settings.with_option(
        "treerag", StructureOptions(section_weight=0.3, route_documents=1, route_check=False)
    )
    inputs = get_strategy("treerag-kg").locate_inputs(moved, "local")
    assert (inputs["section_weight"], inputs["route_documents"], inputs["route_check"]) == (
        0.3,
        1,
        False,
    )
    assert inputs == get_strategy("treerag").locate_inputs(moved.with_(strategy="treerag"), "local")
