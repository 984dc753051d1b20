"""Corpus graph: names merged across documents, chunks kept, offline descriptions filled."""

from __future__ import annotations

from hirag_fixtures import Edge, Node, two_cliques

from treerag_core.strategies.graph.extract import extract_offline
from treerag_core.strategies.hirag.corpus_graph import (
    CorpusGraph,
    DocumentEntity,
    Relation,
    build_corpus_graph,
    describe,
    edge_weight,
    merge_extractions,
    normalise_name,
    sentence_around,
)


def test_normalise_name_folds_case_width_space_and_edge_punctuation():
    assert normalise_name("  The  Router. ") == "the router"
    assert normalise_name("ＢＥＲＴ") == "bert"
    assert normalise_name("《劳动合同法》") == "劳动合同法"


def test_entities_merge_across_parts_with_chunks_and_descriptions():
    part1 = ([Node("BERT", "bert", ("c1",), "a model")], [])
    part2 = (
        [Node("Bert ", "bert", ("c2",), "a model"), Node("GLUE", "glue", ("c2",), "a benchmark")],
        [Edge("bert", "glue", 2.0, "evaluated on", ("c2",))],
    )
    part3 = ([], [Edge("glue", "bert", 1.0, "scores", ("c3",))])
    graph = merge_extractions([part1, part2, part3])
    bert = graph.entity_map()["bert"]
    assert bert.name == "BERT" and bert.chunk_ids == ("c1", "c2")
    assert bert.description == "a model"  # the same description is kept once
    (rel,) = graph.relations
    assert (rel.source, rel.target, rel.weight) == ("bert", "glue", 3.0)
    assert rel.description == "evaluated on | scores" and rel.chunk_ids == ("c2", "c3")


def test_self_loops_and_empty_names_are_dropped():
    graph = merge_extractions(
        [([Node("...", "", ("c1",)), Node("x", "x", ("c1",))], [Edge("x", "X", 1.0, "", ("c1",))])]
    )
    assert [e.key for e in graph.entities] == ["x"] and graph.relations == ()


def test_json_round_trip():
    graph = two_cliques()
    assert CorpusGraph.from_dict(graph.to_dict()) == graph


def test_sentence_around_finds_the_sentence():
    text = "First one. The router picks experts here. Last."
    start = text.index("router")
    assert sentence_around(text, start, start + 6) == "The router picks experts here."


def test_real_extractor_over_a_sample_document(hashing_index):
    index = hashing_index
    doc = next(d for d in index.documents if d.doc_id == "test_paper.md")
    chunks = [c for c in index.chunks if c.doc_id == doc.doc_id]
    graph = build_corpus_graph(chunks, {doc.doc_id: "en"}, extract_offline, index.texts)
    assert len(graph.entities) > 20 and len(graph.relations) > 20
    ids = {c.chunk_id for c in chunks}
    for entity in graph.entities:
        assert entity.chunk_ids and set(entity.chunk_ids) <= ids
        assert entity.description  # filled from the document offline
    assert all(r.source < r.target and r.weight > 0 for r in graph.relations)


def test_describe_gives_the_graph_types_and_changes_only_descriptions(hashing_index):
    index = hashing_index
    chunks = [c for c in index.chunks if c.doc_id == "test_paper.md"]
    nodes, edges = extract_offline(chunks, "en")
    described_nodes, described_edges = describe(nodes, edges, index.texts["test_paper.md"])
    assert all(isinstance(n, DocumentEntity) for n in described_nodes)
    assert all(type(e) is Relation for e in described_edges)
    assert [n.node_id for n in described_nodes] == [n.node_id for n in nodes]
    assert all(d.description for d in described_nodes)  # offline nodes come without one
    assert [(e.source, e.target, e.weight) for e in described_edges] == [
        (e.source, e.target, edge_weight(e)) for e in edges
    ]
    bare = merge_extractions([(nodes, edges)])
    filled = merge_extractions([(described_nodes, described_edges)])
    assert [e.key for e in bare.entities] == [e.key for e in filled.entities]
    assert [(r.source, r.target, r.weight) for r in bare.relations] == [
        (r.source, r.target, r.weight) for r in filled.relations
    ]
