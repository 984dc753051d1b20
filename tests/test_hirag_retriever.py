"""The retriever's modes on a hand-made graph: entity search, budgets, communities, no-path."""

from __future__ import annotations

import numpy as np
import pytest
from hirag_fixtures import Edge, Node, two_cliques

from treerag_core.base.types import Chunk
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.strategies.hirag.build import entity_text
from treerag_core.strategies.hirag.communities import detect_communities
from treerag_core.strategies.hirag.corpus_graph import CorpusGraph, merge_extractions
from treerag_core.strategies.hirag.reports import build_reports
from treerag_core.strategies.hirag.retriever import (
    HiragOptions,
    HiragRetriever,
    Mode,
    budget_chunks,
    path_text,
    within_budget,
)
from treerag_core.strategies.hirag.store import HiragIndex

EMBEDDER = get_embedder("hashing")


def retriever(bridge: bool, graph: CorpusGraph | None = None) -> HiragRetriever:
    graph = two_cliques(bridge) if graph is None else graph
    communities = detect_communities(graph)
    texts = [entity_text(e.name, e.description) for e in graph.entities]
    hindex = HiragIndex(
        graph,
        communities,
        build_reports(communities, graph, "en").reports,
        EMBEDDER.embed(texts),
        [tokenize(t) for t in texts],
        {"fingerprint": "test"},
    )
    chunks = [
        Chunk(cid, f"text of {cid}", "n1", "Doc", doc, 0, 10)
        for cid, doc in (("a-chunk", "A.md"), ("b-chunk", "B.md"), ("bridge-chunk", "A.md"))
    ]
    return HiragRetriever(hindex, chunks)


def ask(r: HiragRetriever, mode: Mode, question: str, options=None, scope=None):
    return r.retrieve(
        mode, EMBEDDER.embed_query(question), tokenize(question), options or HiragOptions(), scope
    )


def test_local_finds_entities_relations_and_units():
    got = ask(retriever(True), Mode.LOCAL, "about a3", HiragOptions(top_k=2))
    assert got.entities[0].entity.key == "a3" and len(got.entities) == 2
    kinds = [s.kind for s in got.sections]
    assert kinds == ["entities", "relations"]
    # The relations are the two found entities' edges, each once: a3's five in its clique
    # (one is a0), a0's other four and a0's bridge to the other clique (b0).
    edges = {frozenset((r.source, r.target)) for r in got.relations}
    assert len(edges) == len(got.relations) == 10
    a3_a0 = {frozenset(("a3", x)) for x in ("a0", "a1", "a2", "a4", "a5")}
    assert edges == a3_a0 | {frozenset(("a0", x)) for x in ("a1", "a2", "a4", "a5", "b0")}
    assert got.unit_ids[0] == "a-chunk"


def test_global_reports_of_the_top_entities_communities():
    got = ask(retriever(True), Mode.GLOBAL, "about b2", HiragOptions(top_k=1))
    (section,) = got.sections
    assert section.kind == "reports" and len(section.rows) == 1
    assert "b2" in section.rows[0]["entity_keys"]
    assert ask(retriever(True), Mode.GLOBAL, "b2", HiragOptions(top_k=1, level=0)).sections


def test_bridge_crosses_communities_and_is_deterministic():
    r = retriever(True)
    first = ask(r, Mode.BRIDGE, "a3 and b4", HiragOptions(top_k=2))
    again = ask(r, Mode.BRIDGE, "a3 and b4", HiragOptions(top_k=2))
    assert first.path == again.path and first.sections == again.sections
    assert set(first.path.nodes) >= {"a3", "a0", "b0", "b4"}
    assert "bridge-chunk" in first.unit_ids and not first.notes


def test_no_path_is_a_note_and_a_row():
    got = ask(retriever(False), Mode.BRIDGE, "a3 and b4", HiragOptions(top_k=2))
    assert got.notes and got.notes[0].startswith("bridge: no path")
    (section,) = got.sections
    assert any(row["path"] == "no path" for row in section.rows)
    assert "(no path)" in path_text(got.path, str)


def test_hi_has_every_section_and_scope_filters():
    got = ask(retriever(True), Mode.HI, "a3 and b4", HiragOptions(top_k=4))
    assert [s.kind for s in got.sections] == ["entities", "relations", "reports", "path"]
    scoped = ask(retriever(True), Mode.HI, "a3 and b4", HiragOptions(top_k=4), scope=["B.md"])
    assert scoped.entities and all(e.entity.key.startswith("b") for e in scoped.entities)
    assert set(scoped.unit_ids) == {"b-chunk"}


def test_relations_cite_only_their_passages_in_scope():
    """A relation found in two documents: a scoped question's section cites only its own."""
    nodes = [Node(f"a{i}", f"a{i}", ("a-chunk",), f"about a{i}") for i in range(3)]
    edges = [
        Edge(x, y, 1.0, f"{x} with {y}", ("a-chunk", "b-chunk"))
        for x, y in (("a0", "a1"), ("a1", "a2"), ("a0", "a2"))
    ]
    r = retriever(True, merge_extractions([(nodes, edges)]))
    everywhere = ask(r, Mode.LOCAL, "about a1", HiragOptions(top_k=2))
    assert everywhere.sections[1].chunk_ids == ("a-chunk", "b-chunk")
    scoped = ask(r, Mode.LOCAL, "about a1", HiragOptions(top_k=2), scope=["A.md"])
    assert scoped.sections[1].kind == "relations" and scoped.sections[1].chunk_ids == ("a-chunk",)


def test_naive_has_no_graph_context_and_no_entities_is_a_note():
    assert ask(retriever(True), Mode.NAIVE, "a1").sections == ()
    got = ask(retriever(True), Mode.LOCAL, "a1", scope=["C.md"])
    assert got.unit_ids == () and got.notes


def test_options_are_validated():
    with pytest.raises(ValueError, match="top_k"):
        HiragOptions(top_k=0)
    with pytest.raises(ValueError, match="unit_order"):
        HiragOptions(unit_order="random")
    assert np.isclose(HiragOptions().entity_dense_weight, 0.5)


def test_within_budget_keeps_the_first_and_stops_at_the_first_that_does_not_fit():
    assert within_budget([5, 3, 1], int, 8) == [5, 3]
    assert within_budget([5, 4, 1], int, 8) == [5]  # 1 would fit, but it ranks after 4
    assert within_budget([20, 1], int, 8) == [20]  # the first always: an answer needs one
    assert within_budget([], int, 8) == []
    chunks = [Chunk(f"c{i}", "x" * 400, "n1", "Doc", "A.md", 0, 400) for i in range(3)]
    assert budget_chunks(chunks, 10**6) == chunks and budget_chunks(chunks, 1) == chunks[:1]
