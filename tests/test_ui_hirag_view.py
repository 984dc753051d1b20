"""The HiRAG view: a legible neighbourhood with the question's entities, path and communities
lit, and one table per context section (AppTest over a small script)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app_helpers import graph_data
from treerag_core.base.types import ContextSection
from ui.ask.hirag_view import (
    MAX_NODES,
    PALETTE,
    graph_store_for,
    is_hirag_trace,
    neighbourhood,
    section_table,
)


def _sections() -> list[ContextSection]:
    entities = ContextSection(
        "entities",
        "Entities",
        "",
        (
            {"rank": 1, "entity": "Router", "key": "router", "description": "d"},
            {"rank": 2, "entity": "Expert", "key": "expert", "description": "d"},
        ),
    )
    relations = ContextSection(
        "relations",
        "Relations",
        "",
        ({"source": "Router", "target": "Expert", "source_key": "router", "target_key": "expert"},),
    )
    path = ContextSection(
        "path",
        "Bridge path",
        "",
        (
            {"step": 1, "path": "router → gate → expert", "nodes": ["router", "gate", "expert"]},
            {"step": 2, "path": "no path", "nodes": []},
        ),
    )
    members = [f"m{i}" for i in range(100)]
    reports = ContextSection(
        "reports", "Community reports", "", ({"community": "L1-0", "entity_keys": members},)
    )
    return [entities, relations, reports, path]


def test_neighbourhood_lights_entities_path_and_communities_and_stays_small():
    view = neighbourhood(_sections())
    ids = [n["id"] for n in view.nodes]
    assert ids[:3] == ["router", "gate", "expert"]  # the path first
    assert len(ids) == MAX_NODES and view.left_out == 103 - MAX_NODES
    by_id = {n["id"]: n for n in view.nodes}
    assert by_id["router"]["color"]["background"] == PALETTE["entity"]
    assert by_id["gate"]["borderWidth"] == 4  # on the path
    assert by_id["m0"]["color"]["background"] != PALETTE["other"]  # a community member
    path_edges = [e for e in view.edges if e["width"] == 4]
    assert {(e["from"], e["to"]) for e in path_edges} == {("gate", "router"), ("expert", "gate")}
    assert view.communities == ["L1-0"]
    assert list(section_table(_sections()[0]).columns) == ["rank", "entity", "description"]


def test_app_renders_graph_and_tables():
    at = AppTest.from_file("apps/hirag_view_app.py", default_timeout=60).run()
    assert not at.exception
    frames = [df.value for df in at.dataframe]
    assert len(frames) == 4  # entities, relations, reports, path
    assert "entity" in frames[0].columns and "title" in frames[2].columns
    graph = next(el for el in at.get("component_instance"))
    nodes = graph_data(graph)["nodes"]
    # The neighbourhood fills the cap (64 found, 4 left out, and the page says so) ...
    assert len(nodes) == MAX_NODES == 60
    assert any("4 more nodes not drawn" in c.value for c in at.caption)
    # ... and every one of the question's top entities is drawn, lit.
    lit = [n for n in nodes if n["color"]["background"] == PALETTE["entity"]]
    assert len(lit) == len(frames[0]) == 20
    at.selectbox[0].select("hirag-naive").run()
    assert not at.exception and not at.dataframe
    assert "no graph context" in at.info[0].value


def test_is_hirag_trace():
    assert is_hirag_trace(_sections()) and not is_hirag_trace([])


def _paper_index():
    """A fresh in-memory index (no folder): the session's shared indexes may have been saved
    to a folder, and a HiRAG graph built there, by other tests."""
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder

    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing")
    return build_index(sample_sources(["test_paper.md"]), settings, embedder), embedder


def test_graph_store_for_an_index_without_a_graph_says_why_and_never_builds(monkeypatch):
    from treerag_core.strategies.hirag import build as hirag_build

    monkeypatch.setattr(hirag_build, "_CACHE", {})  # no graph another test built in memory
    index, _ = _paper_index()
    store, why = graph_store_for(index)
    assert store is None and "this index has no HiRAG graph" in why
    assert hirag_build._CACHE == {}  # nothing was built


def test_graph_store_for_an_index_with_a_graph_returns_its_store(monkeypatch):
    from treerag_core.strategies.hirag import build as hirag_build

    monkeypatch.setattr(hirag_build, "_CACHE", {})
    index, embedder = _paper_index()
    built = hirag_build.hirag_for(index, embedder=embedder)  # in memory: the index has no folder
    store, why = graph_store_for(index)
    assert why == "" and store is built.store
    assert store.has_node(next(iter(store.nx_graph.nodes)))


def test_a_corrupt_hirag_build_is_named_not_shown_as_missing(tmp_path):
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import load_index, save_index
    from treerag_core.strategies.hirag import build as hirag_build
    from treerag_core.strategies.hirag.build import build_hirag
    from treerag_core.strategies.hirag.store import save_hirag

    folder = tmp_path / "index"
    embedder = get_embedder("hashing")
    built = build_index(
        sample_sources(["test_paper.md"]), IndexSettings(embedder="hashing"), embedder
    )
    save_index(built, folder)
    index = load_index(folder)
    save_hirag(build_hirag(index, embedder), folder)
    hirag_build._CACHE.clear()  # read the folder, not memory
    store, why = graph_store_for(index)
    assert store is not None and why == ""
    (folder / "hirag" / "graph.json").write_text("{broken", encoding="utf-8")
    hirag_build._CACHE.clear()
    store, why = graph_store_for(index)
    assert store is None and "graph.json is corrupt" in why
