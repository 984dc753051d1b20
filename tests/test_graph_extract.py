"""The offline graph extractor: terms, merging, PMI edges, offsets and chunk ids, determinism."""

from __future__ import annotations

import math

from treerag_core.base.types import Chunk, TreeNode
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.ingest.parsing import parse_document
from treerag_core.strategies.graph.extract import (
    build_leaf_graph,
    chinese_terms,
    english_terms,
    extract_offline,
    normalise,
    segments,
)
from treerag_core.strategies.graph.types import CO_OCCURS


def _chunks(text: str, size: int = 120, overlap: int = 30) -> list[Chunk]:
    leaf = TreeNode("L1", "d", "Leaf", 1, text, 0, len(text), "Leaf")
    return chunk_leaf(leaf, text, chunk_size=size, overlap=overlap, min_chars=5)


def test_english_terms_are_phrases_between_stop_words_and_verbs():
    text = "The graph encoder uses attention heads. We trained the Transformer BIBREF3 model."
    terms = [m.surface for m in english_terms(text)]
    assert terms == ["graph encoder", "attention heads", "Transformer", "model"]
    for m in english_terms(text, offset=10):
        assert text[m.start - 10 : m.end - 10] == m.surface


def test_a_verb_is_known_by_its_place_after_a_subject_or_between_to_and_a_determiner():
    """HiRAG showed "answer" as an entity ("To answer this question we explore …")."""
    text = (
        "To answer this question we explore zero-shot cross-lingual semantic parsing, and "
        "they reduce its cost. Applied to language data; the answer span; a type I error."
    )
    terms = [m.surface for m in english_terms(text)]
    assert terms == [
        "question",
        "zero-shot cross-lingual semantic parsing",
        "cost",
        "language data",  # "to" before a noun without a determiner: a preposition
        "answer span",  # the noun keeps its place in a phrase
        "error",  # after "I" (a stop word here, and never taken for a subject)
    ]


def test_chinese_terms_are_noun_runs_with_offsets():
    text = "用人单位与劳动者订立劳动合同，应当遵循公平原则。"
    terms = chinese_terms(text, offset=5)
    surfaces = [m.surface for m in terms]
    assert "用人单位" in surfaces and "劳动者" in surfaces and "劳动合同" in surfaces
    for m in terms:
        assert text[m.start - 5 : m.end - 5] == m.surface


def test_normalise_merges_case_and_plurals():
    assert normalise("Neural Networks", "en") == normalise("neural network", "en")
    assert normalise("劳动 合同", "zh") == "劳动合同"


def test_segments_rebuild_the_leaf_text_from_overlapping_chunks():
    text = ("Alpha beta gamma delta. " * 20).strip()
    chunks = _chunks(text)
    assert len(chunks) > 2
    assert segments(chunks) == [(0, text)]


def test_graph_merges_mentions_and_weights_edges_by_pmi():
    text = (
        "Graph encoders read dependency trees. Dependency trees help graph encoders.\n\n"
        "Word embeddings feed the decoder. The decoder writes summaries."
    )
    chunks = _chunks(text, size=80, overlap=20)
    concepts, relations = extract_offline(chunks, "en", prefix="L1")
    by_name = {c.key: c for c in concepts}
    enc = by_name[normalise("graph encoders", "en")]
    trees = by_name[normalise("dependency trees", "en")]
    assert enc.count == 2 and enc.node_id == "L1#c1"
    for span in enc.mentions:
        assert normalise(text[span.start : span.end], "en") == enc.key
        assert span.chunk_ids and all(
            c.start <= span.start and span.end <= c.end
            for c in chunks
            if c.chunk_id in span.chunk_ids
        )
    edge = next(r for r in relations if {r.source, r.target} == {enc.node_id, trees.node_id})
    # 4 sentences; both concepts in the same 2: PMI = log(2 * 4 / (2 * 2)).
    assert edge.count == 2 and math.isclose(edge.weight, round(math.log(2), 4))
    assert edge.label == CO_OCCURS and not edge.directed and edge.source < edge.target
    assert all(text[s.start : s.end].count(".") <= 1 for s in edge.evidence)
    decoder = by_name[normalise("decoder", "en")]
    assert not any(
        enc.node_id in (r.source, r.target) and decoder.node_id in (r.source, r.target)
        for r in relations
    )


def test_graph_is_deterministic_and_stats_count_degree():
    text = open_sample("劳动合同法(2012-12-28).md")
    nodes = parse_document(text, doc_id="law", name="law", max_depth=3, first_id=1)
    leaf = max((n for n in nodes if n.is_leaf), key=lambda n: n.end - n.start)
    chunks = chunk_leaf(leaf, text)
    first = build_leaf_graph(leaf.node_id, "law", chunks, "zh")
    second = build_leaf_graph(leaf.node_id, "law", chunks, "zh")
    assert first.concepts == second.concepts and first.relations == second.relations
    assert first.content_key == second.content_key
    stats = first.stats()
    assert stats["nodes"] == len(first.concepts) > 20
    assert stats["edges"] == len(first.relations)
    assert stats["max_degree"] == max(first.degrees().values())
    names = {c.name for c in first.concepts}
    assert {"劳动者", "用人单位", "劳动合同"} <= names


def open_sample(name: str) -> str:
    from tests.conftest import SAMPLES

    return (SAMPLES / name).read_text(encoding="utf-8")
