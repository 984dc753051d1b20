"""Graphs at index time: long leaves only, stored with the index, reused when unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError
from treerag_core.index.corpus import build_index, corpus_stats
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.strategies.graph.build import relabel
from treerag_core.strategies.graph.part import (
    GRAPH_VECTORS,
    LeafGraphs,
    graph_vectors_of,
    graphs_of,
)
from treerag_core.strategies.graph.part import PART as GRAPH_PART

DOCS = ["1908.10461.md", "劳动合同法(2012-12-28).md"]


@pytest.fixture(scope="module")
def graph_index():
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=2000)
    return build_index(sample_sources(DOCS), settings, get_embedder("hashing"))


def test_only_leaves_over_the_threshold_get_a_graph(graph_index):
    graphs = graphs_of(graph_index)
    assert graphs
    for leaf in graph_index.leaves():
        assert (leaf.node_id in graphs) == (leaf.end - leaf.start >= 2000)
    for leaf_id, graph in graphs.items():
        assert graph_vectors_of(graph_index)[leaf_id].shape == (
            len(graph.concepts),
            graph_index.dim,
        )
        assert graph.language == graph_index.document(graph.doc_id).language
    stats = corpus_stats(graph_index)
    assert stats["graphs"] == len(graphs)
    assert stats["graph_max_degree"] == max(g.max_degree for g in graphs.values())


def test_zero_threshold_builds_no_graphs():
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=0)
    index = build_index(sample_sources(["1908.10461.md"]), settings, get_embedder("hashing"))
    assert graphs_of(index) is None
    with pytest.raises(ValueError, match="graph_min_leaf_chars"):
        IndexSettings(graph_min_leaf_chars=-1)


def test_graphs_round_trip_with_the_index(graph_index, tmp_path):
    save_index(graph_index, tmp_path / "idx")
    loaded = load_index(tmp_path / "idx")
    assert graphs_of(loaded) == graphs_of(graph_index)
    for leaf_id, vectors in graph_vectors_of(graph_index).items():
        assert graph_vectors_of(loaded)[leaf_id].dtype == np.float32
        np.testing.assert_allclose(graph_vectors_of(loaded)[leaf_id], vectors, atol=1e-3)
    np.save(tmp_path / "idx" / GRAPH_VECTORS, np.zeros((3, 5), np.float32))
    with pytest.raises(IndexFormatError, match=GRAPH_VECTORS):
        load_index(tmp_path / "idx")


def test_unchanged_leaves_reuse_their_graphs_even_under_new_ids(graph_index):
    marker = replace(next(iter(graphs_of(graph_index).values())), build_seconds=123.0)
    graphs = LeafGraphs({**graphs_of(graph_index), marker.leaf_id: marker}, {})
    previous = replace(graph_index, parts={**graph_index.parts, GRAPH_PART: graphs})
    # A new first document shifts every node id of the others.
    sources = sample_sources(["zh_sample.md"]) + sample_sources(DOCS)
    rebuilt = build_index(sources, graph_index.settings, get_embedder("hashing"), previous=previous)
    reused = [g for g in graphs_of(rebuilt).values() if g.build_seconds == 123.0]
    assert len(reused) == 1 and reused[0].leaf_id != marker.leaf_id
    assert reused[0] == relabel(marker, reused[0].leaf_id)
    chunk_ids = {c.chunk_id for c in rebuilt.chunks}
    assert all(set(c.chunk_ids) <= chunk_ids for c in reused[0].concepts)


def test_cli_index_summary_lists_each_leaf_graph(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO, SAMPLES

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANTHROPIC_API_KEY": ""}
    # A paper with two leaves of >= 1400 chars (a statute's leaves are its short articles).
    doc = str(SAMPLES / "1908.10461.md")
    base = [sys.executable, "-m", "treerag_core", "index", "--input", doc, "--mock"]
    out = subprocess.run(
        [*base, "--output", str(tmp_path / "g"), "--graph-min-leaf-chars", "1400"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "graphs: 2 leaves of >= 1400 chars" in out.stdout
    assert out.stdout.count("max degree") == 2 and "offline" in out.stdout
    keyless = subprocess.run(
        [*base, "--output", str(tmp_path / "k"), "--llm-graphs", "--graph-min-leaf-chars", "2000"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert keyless.returncode == 2 and "--llm-graphs needs ANTHROPIC_API_KEY" in keyless.stderr
