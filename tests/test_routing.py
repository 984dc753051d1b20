"""Document-level routing scores: one table for every routing strategy, in every view."""

from __future__ import annotations

import numpy as np

from treerag_core.base.types import DocumentScore, LocateResult, Trace
from treerag_core.records.terminal import render_retrieval
from treerag_core.records.trace_json import trace_from_json, trace_to_json
from treerag_core.search.routing import best_per_document, document_rows, document_table


def test_best_per_document_keeps_each_documents_best_chunk():
    best = best_per_document(("a", "b", "a", "c"), np.asarray([0.2, 0.5, 0.9, -0.1]))
    assert best == {"a": 0.9, "b": 0.5, "c": -0.1}


def test_every_document_in_scope_is_listed_kept_or_cut(hashing_index):
    names = [d.doc_id for d in hashing_index.documents]
    assert len(names) >= 3
    table = document_table(
        hashing_index,
        [(names[1], 0.7), (names[0], 0.3)],
        {names[1]},
        "share of the window",
        passage={names[0]: 0.4, names[1]: 0.8, names[2]: 0.5},
    )
    # A document with no share ranks after the scored ones, with 0 and its best passage.
    assert [s.doc_id for s in table] == [names[1], names[0], names[2]]
    assert [s.rank for s in table] == [1, 2, 3]
    assert [s.kept for s in table] == [True, False, False]
    assert table[2].score == 0.0 and table[2].passage == 0.5 and table[0].dense is None
    everyone = document_table(hashing_index, [(names[0], 1.0)], None, "x", in_scope=names)
    assert len(everyone) == len(names) and all(s.kept for s in everyone)


def test_rows_show_only_the_parts_a_strategy_has():
    rows = document_rows(
        (
            DocumentScore("a.md", "a.md", 1, 0.91234, True, "best passage", 0.1, 2.0, 0.91234),
            DocumentScore("b.md", "b.md", 2, 0.5, False, "best passage", 0.2, 0.0, 0.5),
        )
    )
    assert rows[0] == {
        "rank": 1,
        "document": "a.md",
        "score": 0.9123,
        "searched": "kept",
        "dense": 0.1,
        "bm25": 2.0,
        "passage": 0.9123,
    }
    assert rows[1]["searched"] == "cut"
    assert "dense" not in document_rows((DocumentScore("c", "c", 1, 0.3, True),))[0]


def _trace(n: int) -> Trace:
    scores = tuple(
        DocumentScore(
            f"d{i}.md", f"d{i}.md", i, 1.0 / i, i <= 2, "share of the window", passage=0.5
        )
        for i in range(1, n + 1)
    )
    located = LocateResult(
        (), "routed", "local", documents=("d1.md", "d2.md"), document_scores=scores
    )
    return Trace("q?", "treerag", {}, {}, locate=located)


def test_the_trace_keeps_the_table_through_json():
    trace = _trace(3)
    again = trace_from_json(trace_to_json(trace))
    assert again.locate.document_scores == trace.locate.document_scores
    old = trace_from_json(trace_to_json(Trace("q?", "treerag", {}, {}, locate=LocateResult(()))))
    assert old.locate.document_scores == ()  # a trace saved before the table loads too


def test_the_cli_prints_the_table_and_counts_the_rest():
    out = render_retrieval(_trace(12))
    assert "Document routing (share of the window): 2 of 12 searched" in out
    assert "    1. kept  1.000  d1.md  passage=0.500" in out
    assert "    3. cut   0.333  d3.md  passage=0.500" in out
    assert "... 2 more (0 kept)" in out and "d11.md" not in out


def test_an_llm_pick_keeps_the_documents_of_its_sections(hashing_index):
    from treerag_core.base.settings import QuerySettings
    from treerag_core.base.types import LocatedLeaf
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.tokens import tokenize
    from treerag_core.search.locators import score_leaves
    from treerag_core.strategies.treerag.strategy import picked_documents

    question = "How many epochs was the router trained for?"
    settings = QuerySettings()
    qvec = get_embedder("hashing").embed_query(question)
    scores = score_leaves(hashing_index, question, qvec, tokenize, settings.retrieve)
    law = next(d.doc_id for d in hashing_index.documents if d.language == "zh")
    leaf = next(n for n in hashing_index.leaves(law) if len(hashing_index.leaf_rows(n.node_id)))
    picked = LocateResult((LocatedLeaf(leaf.node_id, leaf.heading_path, question),), "", "llm")
    table = picked_documents(hashing_index, picked, scores)
    assert len(table) == len(hashing_index.documents)
    assert [s.doc_id for s in table if s.kept] == [law]  # the LLM's pick, whatever its score
    assert table[0].doc_id != law and not table[0].kept  # the best-scored paper, not picked
    assert all(s.basis.startswith("best section score") for s in table)
