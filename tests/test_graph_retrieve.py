"""Graph as a third retriever: its column added to the heading-aware order, and its context."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import LocatedLeaf
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.search.structure import structured_scores
from treerag_core.strategies.graph.context import graph_sections, path_text
from treerag_core.strategies.graph.part import graphs_of
from treerag_core.strategies.graph.retrieve import (
    FusionParams,
    add_graph,
    graph_hits,
    search_leaves,
    with_graph,
)
from treerag_core.strategies.graph.search import search_graph

QUESTION = "用人单位违反竞业限制约定应当支付什么违约金？"


@pytest.fixture(scope="module")
def law():
    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=2000)
    index = build_index(sample_sources(["劳动合同法(2012-12-28).md"]), settings, embedder)
    return index, embedder


def test_add_graph_is_a_bonus_for_weighted_and_rrf():
    fused = np.array([0.5, 0.4, 0.1])
    graph = np.array([0.0, 1.0, 0.5])
    np.testing.assert_allclose(add_graph(fused, graph, FusionParams()), [0.5, 0.7, 0.25])
    rrf = add_graph(fused, graph, FusionParams(method="rrf", rrf_k=60))
    np.testing.assert_allclose(rrf, [0.5, 0.4 + 0.3 / 61, 0.1 + 0.3 / 62])


def test_graph_column_is_per_leaf_and_lifts_graph_chunks(law):
    index, embedder = law
    leaf_id = sorted(graphs_of(index))[0]
    located = [LocatedLeaf(leaf_id, index.nodes[leaf_id].heading_path, QUESTION)]
    found = search_leaves(index, located, QUESTION, embedder.embed_query, tokenize)
    assert list(found.results) == [leaf_id]
    assert [s.kind for s in found.sections] == ["graph", "graph-stage"]
    scores = structured_scores(
        index,
        None,
        embedder.embed_query(QUESTION),
        tokenize(QUESTION),
        dense_weight=0.5,
        section_weight=0.0,
    )
    boosted, column = with_graph(index, scores, found.results, FusionParams())
    leaf_of = [index.chunks[int(r)].source_node_id for r in scores.rows]
    assert column.max() == pytest.approx(1.0)
    assert all(v == 0 for v, leaf in zip(column, leaf_of, strict=True) if leaf != leaf_id)
    np.testing.assert_allclose(boosted.score, scores.score + 0.3 * column)
    best = found.results[leaf_id].chunk_scores[0][0]
    hits = graph_hits(index, boosted, column, found.results, 40, QUESTION)
    assert best in {h.chunk.chunk_id for h in hits}
    for h in hits:
        assert (h.graph is not None) == (h.chunk.source_node_id == leaf_id)
        assert h.pool_fused == pytest.approx(h.fused + 0.3 * (h.graph or 0.0))


def test_an_index_without_graphs_asks_for_a_rebuild(law):
    index, embedder = law
    bare = build_index(
        sample_sources(["劳动合同法(2012-12-28).md"]), IndexSettings(embedder="hashing"), embedder
    )
    with pytest.raises(IndexFormatError, match="rebuild it to add graphs"):
        search_leaves(bare, [], QUESTION, embedder.embed_query, tokenize)
    # The same law indexed with graphs answers the same call (nothing located: no results).
    assert graphs_of(bare) is None and graphs_of(index)
    assert search_leaves(index, [], QUESTION, embedder.embed_query, tokenize).results == {}


def test_sections_give_paths_with_evidence_and_a_stage_record(law):
    index, _ = law
    leaf_id = sorted(graphs_of(index))[0]
    graph = graphs_of(index)[leaf_id]
    result = search_graph(graph, QUESTION, "zh", tokenize)
    leaf = index.nodes[leaf_id]
    paths, stage = graph_sections(graph, result, index.texts[leaf.doc_id], leaf.heading_path)
    assert paths.kind == "graph" and len(paths.rows) == len(result.paths) > 0
    names = {c.node_id: c.name for c in graph.concepts}
    first = result.paths[0]
    assert paths.rows[0]["path"] == path_text(first, names)
    assert "—co-occurs with→" in paths.rows[0]["path"]
    assert set(paths.chunk_ids) <= {c.chunk_id for c in index.chunks}
    assert "evidence: [" in paths.text
    assert stage.kind == "graph-stage" and stage.text == ""
    assert [r["concept"] for r in stage.rows[: len(result.matches)]] == [
        m.name for m in result.matches
    ]
    assert "matched concepts" in stage.title
    tokens = estimate_tokens(paths.text)
    assert tokens > 0 and stage.title.endswith(f", ~{tokens} context tokens")


def test_a_citation_of_the_graph_paths_maps_to_their_leaf(law):
    from treerag_core.answer.citations import parse_citations
    from treerag_core.answer.synthesis import synthesis_prompt

    index, _ = law
    leaf_id = sorted(graphs_of(index))[0]
    graph, leaf = graphs_of(index)[leaf_id], index.nodes[leaf_id]
    result = search_graph(graph, QUESTION, "zh", tokenize)
    paths, _ = graph_sections(graph, result, index.texts[leaf.doc_id], leaf.heading_path)
    assert paths.title == leaf.heading_path and paths.text.startswith("图路径")
    prompt = synthesis_prompt(QUESTION, [], "zh", [paths])
    assert f"来源: {leaf.heading_path}\n图路径" in prompt
    answer = f"应当支付违约金。[来源: {paths.title}]"
    [citation] = parse_citations(answer, [], {n: x.heading_path for n, x in index.nodes.items()})
    assert citation.node_ids == (leaf_id,)
