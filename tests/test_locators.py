"""The local locator's leaf scores: one min-max rule with fusion (a question with no signal)."""

from __future__ import annotations

import numpy as np

from treerag_core.base.settings import RetrieveSettings
from treerag_core.index.embedders import get_embedder
from treerag_core.index.tokens import tokenize
from treerag_core.search.locators import HEADING_WEIGHT, score_leaves


def test_leaf_scores_are_min_max_over_the_scope(hashing_index):
    question = "How many epochs was the router trained for?"
    qvec = get_embedder("hashing").embed_query(question)
    scores = score_leaves(hashing_index, question, qvec, tokenize, RetrieveSettings())
    assert scores.chunk_part.max() == 1.0 and scores.chunk_part.min() == 0.0
    expected = (1 - HEADING_WEIGHT) * scores.chunk_part + HEADING_WEIGHT * scores.heading_part
    np.testing.assert_allclose(scores.scores, expected)
    assert list(scores.scores) == sorted(scores.scores, reverse=True)


def test_a_question_with_no_signal_scores_every_leaf_zero_not_one(hashing_index):
    # No tokens and a zero vector: every leaf's best chunk ties at 0, which fusion.minmax
    # maps to 0 (nothing matched), not to 1 (every leaf the best).
    qvec = np.zeros(hashing_index.dim, dtype=np.float32)
    scores = score_leaves(hashing_index, "", qvec, tokenize, RetrieveSettings())
    assert len(scores.leaf_ids) > 1
    assert not scores.chunk_part.any() and not scores.scores.any()
