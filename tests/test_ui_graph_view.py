"""The leaf graph view: lit concepts, paths and used edges, legible fonts, path table (AppTest)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app_helpers import graph_data
from ui.common.graph_view import FONT_PX, build_view

APP = Path(__file__).parent / "apps" / "leaf_graph_app.py"


def _graph_data(at: AppTest) -> dict:
    (element,) = at.get("component_instance")
    return graph_data(element)


def test_question_concepts_paths_and_edges_are_lit():
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    data = _graph_data(at)
    roles = {n["id"]: n["role"] for n in data["nodes"]}
    # A fixed leaf, question and offline extractor: the question's concepts are matched, the
    # paths between them and the ranked neighbours lit, the busiest others drawn plain.
    assert Counter(roles.values()) == {"match": 8, "path": 3, "ranked": 12, "plain": 17}
    matched = {n["label"] for n in data["nodes"] if n["role"] == "match"}
    assert {"用人单位", "竞业", "违约金"} <= matched
    # One legible size for every node (a projector needs >= 18 px).
    assert FONT_PX == 20 and {n["font"]["size"] for n in data["nodes"]} == {FONT_PX}
    used = [e for e in data["edges"] if e["used"]]
    assert len(used) == 11 and all(e["width"] > 1 for e in used)
    assert all(roles.get(e["from"]) and roles.get(e["to"]) for e in data["edges"])
    paths = at.dataframe[0].value
    assert list(paths.columns[:2]) == ["path", "hops"] and len(paths) == 8
    assert paths["path"].str.contains("—co-occurs with→").all()
    concepts = at.dataframe[1].value
    assert "用人单位" in set(concepts["concept"])


def test_without_a_question_nothing_is_lit_and_no_tables():
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.toggle[0].set_value(False).run()
    data = _graph_data(at)
    assert {n["role"] for n in data["nodes"]} == {"plain"}
    assert not any(e["used"] for e in data["edges"])
    assert len(at.dataframe) == 0


def test_view_caps_the_nodes_and_keeps_the_lit_ones():
    from treerag_core.strategies.graph.types import Concept, LeafGraph, Span

    concepts = tuple(
        Concept(f"L#c{i}", f"k{i}", f"concept {i}", (Span(0, 1, ("c",)),) * (i % 3 + 1))
        for i in range(1, 61)
    )
    graph = LeafGraph("L", "d", "x", "offline", "en", concepts, ())
    view = build_view(graph, None, max_nodes=10)
    assert len(view.nodes) == 10 and view.hidden == 50
