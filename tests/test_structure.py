"""Structure-aware scores: path-aware passage BM25 and section evidence, over the scope."""

from __future__ import annotations

import numpy as np
import pytest

from treerag_core.index.tokens import tokenize
from treerag_core.search.structure import (
    path_passage,
    scope_structure,
    section_node,
    section_ranking,
    structured_scores,
)

DOC = "test_paper.md"


def _doc_id(index, name: str) -> str:
    return next(d.doc_id for d in index.documents if d.name == name)


def _heading_only_term(index, doc_id):
    """A term of some leaf's heading path that no chunk of the document contains."""
    body = {
        t
        for c, toks in zip(index.chunks, index.tokens, strict=True)
        if c.doc_id == doc_id
        for t in toks
    }
    for leaf in index.leaves(doc_id):
        for term in tokenize(leaf.heading_path):
            if term not in body and len(index.leaf_rows(leaf.node_id)):
                return leaf, term
    pytest.fail(f"every heading word of {doc_id} also appears in its body: pick another sample")


def test_a_heading_word_reaches_its_sections_passages(hashing_index):
    index = hashing_index
    doc = _doc_id(index, DOC)
    leaf, term = _heading_only_term(index, doc)
    qvec = np.zeros(index.dim, dtype=np.float32)
    got = structured_scores(index, [doc], qvec, [term], dense_weight=0.5, section_weight=0.2)
    rows, _, flat_bm25 = index.score_scope([doc], qvec, [term])
    assert np.array_equal(got.rows, rows)
    assert not flat_bm25.any()  # flat search cannot see the heading
    in_leaf = np.isin(got.rows, index.leaf_rows(leaf.node_id))
    assert (got.bm25[in_leaf] > 0).all()
    assert got.section[in_leaf].max() == 1.0  # the only section matching the term
    assert set(np.flatnonzero(got.score == got.score.max())) <= set(np.flatnonzero(in_leaf))


def test_section_evidence_is_one_number_per_section(hashing_index):
    index = hashing_index
    doc = _doc_id(index, DOC)
    qvec = index.embeddings[index.leaf_rows(index.leaves(doc)[1].node_id)[0]]
    got = structured_scores(
        index,
        [doc],
        qvec,
        tokenize("router design training"),
        dense_weight=0.5,
        section_weight=0.3,
    )
    assert len(got.section_raw) == len(got.leaf_ids)
    assert got.section.min() >= 0.0 and got.section.max() <= 1.0
    for leaf_pos in set(got.leaf_of_row.tolist()):
        assert len(set(got.section[got.leaf_of_row == leaf_pos].tolist())) == 1
    np.testing.assert_allclose(got.score, got.fused + 0.3 * got.section)


def test_tables_are_built_once_per_scope(hashing_index):
    doc = _doc_id(hashing_index, DOC)
    assert scope_structure(hashing_index, [doc]) is scope_structure(hashing_index, [doc])
    whole = scope_structure(hashing_index, None)
    assert len(whole.rows) == len(hashing_index.chunks)


def test_an_empty_scope_scores_nothing(hashing_index):
    qvec = np.zeros(hashing_index.dim, dtype=np.float32)
    got = structured_scores(
        hashing_index, ["no-such-doc"], qvec, ["router"], dense_weight=0.5, section_weight=0.2
    )
    assert len(got.rows) == 0 and len(got.score) == 0


def test_path_passage_puts_the_path_first():
    assert path_passage("3 Methods > 3.1 Setup", "We train.") == "3 Methods > 3.1 Setup\nWe train."
    assert path_passage("", "We train.") == "We train."


def test_window_votes_and_sections_come_from_one_order(hashing_index):
    from treerag_core.search.structure import document_votes, section_ranking, window

    index = hashing_index
    qvec = index.embeddings[0]
    got = structured_scores(
        index,
        None,
        qvec,
        tokenize("router training dataset"),
        dense_weight=0.5,
        section_weight=0.0,
    )
    top = window(got, 10)
    assert len(top) == 10 and (np.diff(got.score[top]) <= 0).all()
    votes = document_votes(got, 10)
    assert abs(sum(v for _, v in votes) - 1.0) < 1e-9
    assert [v for _, v in votes] == sorted((v for _, v in votes), reverse=True)
    best_doc = votes[0][0]
    routed = window(got, 10, [best_doc])
    assert {got.doc_of_row[p] for p in routed.tolist()} == {best_doc}
    sections = section_ranking(got, 10)
    assert sum(n for _, _, n in sections) == 10
    assert sections[0][0] == got.leaf_ids[got.leaf_of_row[top[0]]]


def test_one_question_is_scored_once(hashing_index):
    doc = _doc_id(hashing_index, DOC)
    qvec = hashing_index.embeddings[0]
    args = (hashing_index, [doc], qvec, ["router"])
    first = structured_scores(*args, dense_weight=0.5, section_weight=0.0)
    assert structured_scores(*args, dense_weight=0.5, section_weight=0.0) is first
    assert structured_scores(*args, dense_weight=0.6, section_weight=0.0) is not first


def test_best_passage_follows_the_final_reader_or_the_fused_order():
    from treerag_core.search.rerank import Reading
    from treerag_core.search.structure import best_passage

    assert best_passage(None, 5) == (0, "the fused order")
    assert best_passage(Reading(np.arange(4, dtype=float)), 5) == (0, "the fused order")  # short
    assert best_passage(Reading(np.arange(5, dtype=float)), 5) == (4, "the cross-encoder")
    assert best_passage(Reading(np.ones(5)), 5) == (0, "the cross-encoder")  # ties: the first


def test_relevant_outside_reads_the_models_own_boundary(hashing_index):
    from treerag_core.search.rerank import Reading
    from treerag_core.search.structure import relevant_outside, window_hits

    index = hashing_index
    got = structured_scores(
        index, None, index.embeddings[0], ["router"], dense_weight=0.5, section_weight=0.0
    )
    hits = window_hits(index, got, len(index.chunks), "router")
    docs = sorted({h.chunk.doc_id for h in hits})
    assert len(docs) >= 2
    kept = docs[:1]
    scores = np.array([1.5 if h.chunk.doc_id in kept else -1.0 for h in hits])
    others = [i for i, h in enumerate(hits) if h.chunk.doc_id not in kept]
    assert relevant_outside(hits, Reading(scores, 0.0), kept) == []  # all below the boundary
    scores[others[0]], scores[others[1]] = 0.5, 2.0
    found = relevant_outside(hits, Reading(scores, 0.0), kept)
    assert [(h.chunk.chunk_id, v) for h, v in found] == [
        (hits[others[1]].chunk.chunk_id, 2.0),
        (hits[others[0]].chunk.chunk_id, 0.5),
    ]  # best first
    assert len(relevant_outside(hits, Reading(scores, 1.0), kept)) == 1  # 0.5 is not above 1
    assert relevant_outside(hits, Reading(scores, None), kept) == []  # no boundary stated


LAW = """# 示例法

## 第一章 总则

第一条 为了规范港口的安全管理，制定本法。

第二条 本法适用于港口的建设与经营。

## 第二章 船舶

第三条 船舶进港应当报告海事机构。

第四条 船舶停泊应当遵守港口规定。
"""


def _law_index(article_leaves: bool):
    from treerag_core.base.config import IndexSettings
    from treerag_core.base.types import SourceDocument
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder

    settings = IndexSettings(embedder="hashing", article_leaves=article_leaves)
    return build_index([SourceDocument("law.md", LAW)], settings, get_embedder("hashing"))


def test_an_articles_section_evidence_is_its_chapters():
    """Article leaves share their chapter's evidence (as chapter leaves had it); step 1 still
    ranks the articles themselves."""
    articles, chapters = _law_index(True), _law_index(False)
    query = tokenize("港口 船舶 报告")
    qvec = np.zeros(articles.dim, dtype=np.float32)
    got = structured_scores(articles, None, qvec, query, dense_weight=0.5, section_weight=0.3)
    before = structured_scores(chapters, None, qvec, query, dense_weight=0.5, section_weight=0.3)
    paths = [articles.nodes[leaf].heading_path for leaf in got.leaf_ids]
    assert paths == [
        "第一章 总则 > 第一条",
        "第一章 总则 > 第二条",
        "第二章 船舶 > 第三条",
        "第二章 船舶 > 第四条",
    ]
    table = scope_structure(articles, None)
    assert table.section_of_leaf.tolist() == [0, 0, 1, 1]  # two chapters, two articles each
    assert got.section_raw[0] == got.section_raw[1] != got.section_raw[2] == got.section_raw[3]
    # The chapter's evidence is what the chapter leaf of the chapter-leaf tree had.
    assert [chapters.nodes[leaf].heading_path for leaf in before.leaf_ids] == [
        "第一章 总则",
        "第二章 船舶",
    ]
    np.testing.assert_allclose(got.section_raw[[0, 2]], before.section_raw)
    assert section_ranking(got, 4)[0][0] in got.leaf_ids  # the picks are articles


def test_a_tree_without_articles_keeps_one_section_per_leaf(hashing_index):
    """No article leaves: every leaf is its own section, so the scores are as before."""
    table = scope_structure(hashing_index, None)
    assert table.section_of_leaf.tolist() == list(range(len(table.leaf_ids)))
    assert all(section_node(hashing_index, leaf) == leaf for leaf in table.leaf_ids)


def test_articles_without_chapters_share_their_documents_evidence():
    """A statute with no chapters: its articles' section is the document (its root), as the
    one leaf of a chapter-leaf tree was."""
    from treerag_core.base.config import IndexSettings
    from treerag_core.base.types import SourceDocument
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder

    law = "\n\n".join(LAW.splitlines()[i] for i in (4, 6, 10, 12)) + "\n"
    settings = IndexSettings(embedder="hashing", article_leaves=True)
    index = build_index([SourceDocument("law.md", law)], settings, get_embedder("hashing"))
    table = scope_structure(index, None)
    assert len(table.leaf_ids) == 4 and table.section_of_leaf.tolist() == [0, 0, 0, 0]
    root = section_node(index, table.leaf_ids[0])
    assert index.nodes[root].is_root
