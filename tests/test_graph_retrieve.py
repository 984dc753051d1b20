"""Graph as a third retriever: its column in leaf fusion, pooling, and the context it adds."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sample_sources

from treerag_core.config import IndexSettings
from treerag_core.embedders import get_embedder
from treerag_core.graph.context import graph_sections, path_text
from treerag_core.graph.retrieve import FusionParams, add_graph, leaf_hits, pool_with_graph
from treerag_core.graph.search import search_graph
from treerag_core.index import build_index
from treerag_core.text import tokenize

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


def test_leaf_hits_carry_the_graph_column_and_pool(law):
    index, embedder = law
    leaf_id = sorted(index.graphs)[0]
    graph = index.graphs[leaf_id]
    qvec = embedder.embed_query(QUESTION)
    result = search_graph(graph, QUESTION, "zh", tokenize, qvec, index.graph_vectors[leaf_id])
    params = FusionParams()
    hits = leaf_hits(index, leaf_id, qvec, tokenize(QUESTION), result, params, 8, QUESTION)
    plain = leaf_hits(
        index, leaf_id, qvec, tokenize(QUESTION), None, FusionParams(graph_weight=0.0), 8, QUESTION
    )
    assert len(hits) == 8 and all(h.graph is not None and 0 <= h.graph <= 1 for h in hits)
    assert all(h.graph is None for h in plain)
    best_graph = result.chunk_scores[0][0]
    assert best_graph in {h.chunk.chunk_id for h in hits}
    for h in hits:
        assert h.fused == pytest.approx(h.dense_norm * 0.5 + h.bm25_norm * 0.5 + 0.3 * h.graph)
    pooled = pool_with_graph([hits, plain], params)
    assert [h.pooled_rank for h in pooled] == list(range(1, len(pooled) + 1))


def test_sections_give_paths_with_evidence_and_a_stage_record(law):
    index, _ = law
    leaf_id = sorted(index.graphs)[0]
    graph = index.graphs[leaf_id]
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
    assert "matched concepts" in stage.title and "tokens" in stage.title
