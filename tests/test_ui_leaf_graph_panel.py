"""The Documents page's leaf graphs: per-leaf stats, the inspector's graph and its lit trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import graph_data, open_app
from tests.conftest import keyless_app, sample_sources
from treerag_core import leaf_graph_search
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.pipeline import Engine, run
from treerag_core.strategies.graph.part import graph_vectors_of, graphs_of
from treerag_core.strategies.graph.search import search_graph
from ui.common.graph_view import FONT_PX, wrap_label
from ui.common.leaf_graph_panel import edge_table, graph_stats_frame, node_table

REPO = Path(__file__).resolve().parents[1]
LAW = "劳动合同法(2012-12-28).md"
QUESTION = "用人单位违反竞业限制约定应当支付什么违约金？"


@pytest.fixture(scope="module")
def law():
    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=2000)
    return build_index(sample_sources([LAW]), settings, embedder), embedder


def test_labels_wrap_cjk_and_english_in_short_lines():
    assert wrap_label("用人单位违反竞业限制约定") == "用人单位违反竞业\n限制约定"
    assert wrap_label("neural machine translation") == "neural machine\ntranslation"
    cut = wrap_label("one two three four five six seven eight nine ten eleven twelve")
    assert cut.count("\n") == 2 and cut.endswith("…")
    assert all(len(line) <= 16 for line in cut.split("\n"))


def test_stats_frame_has_a_row_per_graph_leaf(law):
    index, _ = law
    frame = graph_stats_frame(index, LAW)
    assert list(frame["leaf"]) == sorted(graphs_of(index))
    for row in frame.to_dict("records"):
        graph = graphs_of(index)[row["leaf"]]
        assert (row["nodes"], row["edges"]) == (len(graph.concepts), len(graph.relations))
        assert row["max degree"] == graph.max_degree and row["extractor"] == "offline"
        assert row["characters"] >= 2000 and row["cost"] == "" and row["tokens"] is None
    assert graph_stats_frame(index, "other.md").empty


def test_leaf_graph_search_replays_step_2s_search_and_lights_the_tables(law):
    index, embedder = law
    engine = Engine(index=index, embedder=embedder, api_key=None)
    leaf_id = sorted(graphs_of(index))[0]
    trace = run(engine, QUESTION, QuerySettings(strategy="treerag-kg"), leaves=[leaf_id])
    result = leaf_graph_search(index, trace, leaf_id, engine.query_vector)
    graph = graphs_of(index)[leaf_id]
    expected = search_graph(
        graph,
        QUESTION,
        "zh",
        tokenize,
        engine.query_vector(QUESTION),
        graph_vectors_of(index)[leaf_id],
    )
    assert result is not None and result.matches == expected.matches
    assert result.paths == expected.paths
    other = sorted(graphs_of(index))[1]
    assert leaf_graph_search(index, trace, other, engine.query_vector) is None  # not searched
    plain = run(engine, QUESTION, QuerySettings(strategy="treerag"), leaves=[leaf_id])
    assert leaf_graph_search(index, plain, leaf_id, engine.query_vector) is None
    nodes = node_table(graph, result)
    lit = nodes[nodes["lit"] != ""]
    assert len(nodes) == len(graph.concepts) and list(lit.index) == list(range(len(lit)))
    assert any(role.startswith("question") for role in lit["lit"])
    edges = edge_table(graph, result)
    assert edges["used"].sum() == len(result.edges_used) > 0
    assert edges["used"].iloc[0]
    assert (node_table(graph, None)["lit"] == "").all()


def _leaf_graph_data(at: AppTest) -> dict | None:
    for element in at.get("component_instance"):
        data = graph_data(element)
        if data["nodes"] and "role" in data["nodes"][0]:
            return data
    return None


def test_documents_inspector_shows_the_leaf_graph_lit_by_the_last_question(tmp_path):
    with keyless_app(tmp_path):  # no key or endpoint of the machine's (OpenAI's too)
        _leaf_graph_lit_by_the_last_question()


def _leaf_graph_lit_by_the_last_question() -> None:
    at = open_app("pages/documents.py", timeout=120)
    law_bytes = (REPO / "sample_docs" / LAW).read_bytes()
    at.file_uploader[0].set_value([(LAW, law_bytes, "text/markdown")]).run()
    assert not at.exception, at.exception
    assert any("No leaf knowledge graphs in your workspace" in c.value for c in at.caption)
    # Rebuild with graphs for leaves from 2,000 characters.
    next(n for n in at.number_input if n.label.startswith("Knowledge graphs")).set_value(2000)
    next(b for b in at.button if b.label == "Rebuild").click().run()
    assert not at.exception, at.exception
    index = at.session_state["ws_index"]
    assert graphs_of(index) and index.settings.graph_min_leaf_chars == 2000
    [stats] = [d.value for d in at.dataframe if "max degree" in d.value.columns]
    assert sorted(stats["leaf"]) == sorted(graphs_of(index))
    # Inspect a long leaf: its graph is drawn beside the node and edge tables, nothing lit.
    leaf_id = sorted(graphs_of(index))[0]
    at.session_state[at.session_state["doc_graph_key"]] = leaf_id
    at.run()
    assert not at.exception, at.exception
    data = _leaf_graph_data(at)
    assert data is not None and {n["role"] for n in data["nodes"]} == {"plain"}
    assert all(n["font"]["size"] >= FONT_PX for n in data["nodes"])
    assert any("Knowledge graph of this leaf" in m.value for m in at.markdown)
    assert any("concept" in d.value.columns and "degree" in d.value.columns for d in at.dataframe)
    assert any("relation" in d.value.columns for d in at.dataframe)
    short = next(n for n in index.leaves() if 0 < n.end - n.start < 2000)
    at.session_state[at.session_state["doc_graph_key"]] = short.node_id
    at.run()
    assert _leaf_graph_data(at) is None
    assert any("No knowledge graph for this leaf" in c.value for c in at.caption)
    at.session_state[at.session_state["doc_graph_key"]] = leaf_id
    at.run()
    # The Ask page's last question searched this leaf's graph: the same view is lit.
    engine = Engine(index=index, embedder=get_embedder("hashing"), api_key=None)
    trace = run(engine, QUESTION, QuerySettings(strategy="treerag-kg"), leaves=[leaf_id])
    at.session_state["ask_trace"] = trace
    at.session_state["ask_trace_corpus"] = (
        f"ws:{at.session_state['ws_id']}:{at.session_state['ws_version']}"
    )
    at.run()
    assert not at.exception, at.exception
    data = _leaf_graph_data(at)
    assert "match" in {n["role"] for n in data["nodes"]}
    assert any(e["used"] for e in data["edges"])
    assert any("Lit for the last question" in c.value for c in at.caption)
    [paths] = [d.value for d in at.dataframe if "hops" in d.value.columns]
    assert len(paths) > 0 and paths["path"].str.contains("—co-occurs with→").all()
