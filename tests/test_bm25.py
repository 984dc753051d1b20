"""Tests for per-leaf BM25: tiny and empty leaves, IDF from the document, rank_bm25 agreement."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from treerag_core.base.types import TreeNode
from treerag_core.index.bm25 import K1, B, BM25Stats, LeafBM25, bm25_scores, idf
from treerag_core.index.tokens import tokenize
from treerag_core.ingest.chunking import chunk_leaf

DOC = [
    ["adarouter", "contextual", "bandit", "rout"],
    ["adarouter", "73.2", "accuraci", "eur", "usd"],
    ["static", "router", "baselin", "65.1", "accuraci"],
    ["train", "30", "epoch", "adam"],
    ["adarouter", "encod", "transform"],
    ["ablat", "remov", "rout", "modul", "drop", "accuraci"],
]
STATS = BM25Stats.from_tokens(DOC)


def test_one_chunk_leaf_scores_a_match_above_zero() -> None:
    scores = LeafBM25.from_tokens(DOC[3:4], STATS).scores(["epoch"])
    assert scores.shape == (1,) and scores[0] > 0
    assert LeafBM25.from_tokens(DOC[3:4], STATS).scores(["bandit"])[0] == 0.0
    # The trap this module exists for: rank_bm25 on the leaf alone scores the match below 0.
    assert BM25Okapi(DOC[3:4]).get_scores(["epoch"])[0] <= 0


def test_two_chunk_leaf_scores_only_the_matching_chunk() -> None:
    leaf = LeafBM25.from_tokens(DOC[2:4], STATS)
    scores = leaf.scores(["epoch"])
    assert scores[1] > 0 and scores[0] == 0.0
    assert list(BM25Okapi(DOC[2:4]).get_scores(["epoch"])) == [0.0, 0.0]  # the trap again


def test_term_in_every_chunk_still_scores_positive() -> None:
    everywhere = [["rout", "x"], ["rout", "y"], ["rout", "z"]]
    scores = bm25_scores(["rout"], everywhere, BM25Stats.from_tokens(everywhere))
    assert np.all(scores > 0)
    assert idf(3, 3) > 0


def test_empty_leaf_and_empty_stats() -> None:
    empty = LeafBM25.from_tokens([], STATS)
    assert empty.scores(["adarouter"]).shape == (0,)
    assert len(empty) == 0
    nothing = BM25Stats.from_tokens([])
    assert (nothing.n_docs, nothing.avgdl) == (0, 1.0)
    assert bm25_scores(["a"], [], nothing).shape == (0,)
    # A leaf whose only chunk has no tokens, under empty stats: zeros, no division by zero.
    with np.errstate(all="raise"):
        assert bm25_scores(["a"], [[]], BM25Stats.from_tokens([[]])).tolist() == [0.0]


def test_non_matching_query_scores_exactly_zero() -> None:
    leaf = LeafBM25.from_tokens(DOC, STATS)
    assert leaf.scores(["nowher", "unseen"]).tolist() == [0.0] * len(DOC)
    assert leaf.scores([]).tolist() == [0.0] * len(DOC)


def test_idf_comes_from_the_document_not_the_leaf() -> None:
    # "accuraci" is in 3 of 6 document chunks, "73.2" in 1: the rare term must weigh more
    # even when the leaf holds only the one chunk that has both.
    leaf = LeafBM25.from_tokens(DOC[1:2], STATS)
    assert leaf.scores(["73.2"])[0] > leaf.scores(["accuraci"])[0] > 0
    assert math.isclose(
        leaf.scores(["73.2"])[0] / leaf.scores(["accuraci"])[0], idf(1, 6) / idf(3, 6)
    )


def test_leaves_of_one_document_are_comparable() -> None:
    whole = LeafBM25.from_tokens(DOC, STATS).scores(["adarouter", "accuraci"])
    parts = np.concatenate(
        [
            LeafBM25.from_tokens(DOC[a:b], STATS).scores(["adarouter", "accuraci"])
            for a, b in ((0, 2), (2, 6))
        ]
    )
    np.testing.assert_allclose(parts, whole)


def test_repeated_query_term_counts_twice() -> None:
    leaf = LeafBM25.from_tokens(DOC, STATS)
    np.testing.assert_allclose(leaf.scores(["rout", "rout"]), 2 * leaf.scores(["rout"]))


def test_formula_by_hand() -> None:
    tokens = [["a", "b", "a"], ["b", "c"]]
    stats = BM25Stats.from_tokens(tokens)
    avgdl = 2.5
    tf_part = 2 * (K1 + 1) / (2 + K1 * (1 - B + B * 3 / avgdl))
    expected = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5)) * tf_part
    assert math.isclose(bm25_scores(["a"], tokens, stats)[0], expected)


def _leaf_chunk_tokens(eval_dir: Path) -> tuple[list[list[str]], list[list[str]]]:
    """Token lists of the longest section of a QASPER paper, and of the whole paper."""
    path = eval_dir / "qasper" / "docs" / "1602.07563.md"
    assert path.is_file(), f"{path.name} left the QASPER dev set: pick another long paper"
    text = path.read_text(encoding="utf-8")
    heads = [i for i in range(len(text)) if text.startswith("\n## ", i)] + [len(text)]
    doc_tokens, best = [], []
    for a, b in itertools.pairwise(heads):
        start = text.index("\n", a + 1)
        node = TreeNode("0001", "d", "h", 2, text[start:b], start, b, "h")
        tokens = [tokenize(c.text) for c in chunk_leaf(node, text)]
        doc_tokens += tokens
        best = max(best, tokens, key=len)
    return best, doc_tokens


def test_agrees_with_rank_bm25_okapi_on_a_large_leaf(eval_dir: Path) -> None:
    leaf_tokens, _ = _leaf_chunk_tokens(eval_dir)
    assert len(leaf_tokens) > 30
    okapi = BM25Okapi(leaf_tokens, k1=K1, b=B)
    stats = BM25Stats.from_tokens(leaf_tokens)  # same corpus, so same avgdl and df
    ours = LeafBM25.from_tokens(leaf_tokens, stats)
    terms = [t for t, df in stats.df.items() if 1 <= df < len(leaf_tokens) / 4][:40]
    assert len(terms) >= 20
    # Only IDF differs (Lucene's log(1 + x) vs Okapi's log(x)), so each term's score is
    # Okapi's times the IDF ratio, and a query's score is the sum over its terms.
    for term in terms:
        ratio = stats.idf(term) / okapi.idf[term]
        np.testing.assert_allclose(ours.scores([term]), okapi.get_scores([term]) * ratio)
    query = terms[:5]
    expected = sum(okapi.get_scores([t]) * stats.idf(t) / okapi.idf[t] for t in query)
    np.testing.assert_allclose(ours.scores(query), expected)
    # Single-term rankings are identical (IDF is a constant factor there).
    for term in terms:
        assert np.array_equal(
            np.argsort(-ours.scores([term]), kind="stable"),
            np.argsort(-okapi.get_scores([term]), kind="stable"),
        )


@pytest.mark.parametrize(
    ("k1", "b", "message"),
    [
        (-0.1, 0.75, r"k1 must be >= 0, but got -0\.1"),
        (1.5, 1.1, r"b must be in \[0, 1\], but got 1\.1"),
        (1.5, -0.2, r"b must be in \[0, 1\], but got -0\.2"),
    ],
)
def test_bad_parameters(k1: float, b: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeafBM25.from_tokens(DOC, STATS, k1=k1, b=b)


def test_a_5000_chunk_corpus_scores_every_copy_of_a_chunk_alike(eval_dir: Path) -> None:
    # Query speed at scale is a benchmark's business (benchmarks/bench_scale.py); here the
    # postings must still score by content alone: every copy of a chunk alike, and a chunk
    # above zero exactly when it holds a query term.
    _, paper = _leaf_chunk_tokens(eval_dir)
    copies = 5000 // len(paper) + 1
    corpus = paper * copies
    scorer = LeafBM25.from_tokens(corpus, BM25Stats.from_tokens(corpus))
    assert len(scorer) >= 5000
    for question in (
        "What is the inter-annotator agreement of the sentiment datasets?",
        "Which classification models were compared on the Twitter data?",
        "How large is the training set for each language?",
    ):
        query = tokenize(question)
        got = scorer.scores(query)
        assert got.max() > 0
        np.testing.assert_array_equal(
            got.reshape(copies, len(paper)), np.tile(got[: len(paper)], (copies, 1))
        )
        matched = np.array([any(t in set(c) for t in query) for c in corpus])
        assert np.array_equal(got > 0, matched)
