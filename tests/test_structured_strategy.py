"""treerag's heading-aware path and flat-structured: same ranking, routing only by documents."""

from __future__ import annotations

import numpy as np
import pytest

from treerag_core.base.settings import QuerySettings
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine, run
from treerag_core.records.trace_json import trace_from_json, trace_to_json
from treerag_core.strategies.treerag.structured import StructureOptions

MOCK = (
    QuerySettings()
    .set("llm.enabled", False)
    .set("locate.locator", "local")
    .set("answer.final_top_k", 40)
)
QUESTION = "How many epochs was the router trained for?"


class RecordingReranker:
    """Scores by passage length and records what it was shown."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def score(self, query, passages, batch_size=16):
        self.seen.extend(passages)
        return np.asarray([float(len(p)) for p in passages])


@pytest.fixture()
def engine(hashing_index):
    reranker = RecordingReranker()
    engine = Engine(hashing_index, get_embedder("hashing"), reranker_factory=lambda _: reranker)
    return engine, reranker


def _doc(index, name):
    return next(d.doc_id for d in index.documents if d.name == name)


def test_structure_strategies_rerank_path_and_passage_flat_stays_blind(engine):
    eng, reranker = engine
    paper = [_doc(eng.index, "test_paper.md")]
    for strategy in ("treerag", "flat-structured"):
        reranker.seen.clear()
        trace = run(eng, QUESTION, MOCK, strategy=strategy, scope=paper, synthesize=False)
        first = trace.candidates[0]
        assert any(s == f"{first.chunk.heading_path}\n{first.chunk.text}" for s in reranker.seen)
    reranker.seen.clear()
    trace = run(eng, QUESTION, MOCK, strategy="flat-hybrid", scope=paper, synthesize=False)
    assert sorted(reranker.seen) == sorted(h.chunk.text for h in trace.candidates)
    reranker.seen.clear()
    plain = MOCK.set("rerank.read_path", False)
    trace = run(eng, QUESTION, plain, strategy="treerag", scope=paper, synthesize=False)
    assert sorted(reranker.seen) == sorted(h.chunk.text for h in trace.candidates)


def test_one_document_is_never_cut_so_treerag_equals_flat_structured(engine):
    eng, _ = engine
    paper = [_doc(eng.index, "test_paper.md")]
    tree = run(eng, QUESTION, MOCK, strategy="treerag", scope=paper, synthesize=False)
    flat = run(eng, QUESTION, MOCK, strategy="flat-structured", scope=paper, synthesize=False)
    assert tree.locate.documents == ()
    assert [h.chunk.chunk_id for h in tree.candidates] == [
        h.chunk.chunk_id for h in flat.candidates
    ]
    assert tree.locate.leaves and all(leaf.score is not None for leaf in tree.locate.leaves)
    assert all(0.0 <= h.prior <= 1.0 for h in tree.candidates)


def test_a_wide_scope_is_routed_to_the_best_two_documents(engine):
    eng, _ = engine
    assert len(eng.index.documents) > 2
    wide = MOCK.set("retrieve.candidate_window", len(eng.index.chunks)).with_option(
        "treerag", StructureOptions(route_check=False)
    )  # every document in the window
    trace = run(eng, QUESTION, wide, strategy="treerag", synthesize=False)
    assert len(trace.locate.documents) == 2
    assert {h.chunk.doc_id for h in trace.candidates} <= set(trace.locate.documents)
    assert any("share of the window" in note for note in trace.locate.notes)
    off = run(
        eng,
        QUESTION,
        wide.with_option("treerag", StructureOptions(route_documents=0)),
        strategy="treerag",
        synthesize=False,
    )
    assert off.locate.documents == ()
    back = trace_from_json(trace_to_json(trace))
    assert back.locate.documents == trace.locate.documents
    assert back.candidates[0].prior == trace.candidates[0].prior


def test_every_strategy_hands_the_same_window_to_rerank(engine):
    eng, _ = engine
    settings = MOCK.set("retrieve.candidate_window", 7)
    for strategy in ("treerag", "flat-structured", "flat-hybrid"):
        trace = run(eng, QUESTION, settings, strategy=strategy, synthesize=False)
        assert len(trace.candidates) == 7


def test_picked_leaves_share_one_score_and_no_per_leaf_cut(engine):
    eng, _ = engine
    paper = _doc(eng.index, "test_paper.md")
    picked = [
        leaf.node_id for leaf in eng.index.leaves(paper) if len(eng.index.leaf_rows(leaf.node_id))
    ][:3]
    trace = run(eng, QUESTION, MOCK, strategy="treerag", leaves=picked, synthesize=False)
    assert trace.locate.locator == "manual"
    assert {h.chunk.source_node_id for h in trace.candidates} <= set(picked)
    in_leaves = sum(len(eng.index.leaf_rows(leaf)) for leaf in picked)
    assert len(trace.candidates) == min(in_leaves, 40)  # every chunk of the picked leaves
    assert all(h.sub_query == QUESTION for h in trace.candidates)  # the original question
    assert trace.retrieved[0].hits[0].pool_fused >= trace.retrieved[0].hits[-1].pool_fused


def test_treerag_records_why_each_document_was_searched_or_cut(engine):
    eng, _ = engine
    wide = MOCK.set("retrieve.candidate_window", len(eng.index.chunks))
    unchecked = wide.with_option("treerag", StructureOptions(route_check=False))
    trace = run(eng, QUESTION, unchecked, strategy="treerag", synthesize=False)
    table = trace.locate.document_scores
    assert len(table) == len(eng.index.documents)
    assert len(trace.locate.documents) == 2  # a cut: the table says which two were kept
    assert [s.doc_id for s in table if s.kept] == list(trace.locate.documents)
    assert [s.rank for s in table] == list(range(1, len(table) + 1))
    assert all(s.basis == "share of the window" and s.passage is not None for s in table)
    assert abs(sum(s.score for s in table) - 1.0) < 1e-6  # the shares of the window
    paper = [_doc(eng.index, "test_paper.md")]
    one = run(eng, QUESTION, MOCK, strategy="treerag", scope=paper, synthesize=False)
    assert [(s.doc_id, s.kept) for s in one.locate.document_scores] == [(paper[0], True)]


class FavouriteReranker:
    """Scores 1 for passages holding `favourite`, 0 otherwise."""

    name = "favourite"

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite

    def score(self, query, passages, batch_size=16):
        return np.asarray([float(self.favourite in p) for p in passages])


def _wide(index):
    return MOCK.set("retrieve.candidate_window", len(index.chunks))  # every document in it


def _routed_and_outside(hashing_index):
    """The documents unchecked routing keeps, and a window chunk of another document."""
    reranker = RecordingReranker()
    eng = Engine(hashing_index, get_embedder("hashing"), reranker_factory=lambda _: reranker)
    unchecked = _wide(hashing_index).with_option("treerag", StructureOptions(route_check=False))
    trace = run(eng, QUESTION, unchecked, strategy="treerag", synthesize=False)
    flat = run(eng, QUESTION, _wide(hashing_index), strategy="flat-structured", synthesize=False)
    routed = trace.locate.documents
    assert len(routed) == 2
    outside = next(h.chunk for h in flat.candidates if h.chunk.doc_id not in routed)
    inside = next(h.chunk for h in flat.candidates if h.chunk.doc_id in routed)
    return routed, outside, inside, flat


def test_routing_is_kept_only_when_the_final_reader_agrees(hashing_index):
    routed, outside, inside, flat = _routed_and_outside(hashing_index)
    # The cross-encoder's favourite passage is outside the two documents: routing is unsure.
    eng = Engine(
        hashing_index,
        get_embedder("hashing"),
        reranker_factory=lambda _: FavouriteReranker(outside.text),
    )
    unsure = run(eng, QUESTION, _wide(hashing_index), strategy="treerag", synthesize=False)
    assert unsure.locate.documents == ()
    assert [h.chunk.chunk_id for h in unsure.retrieved[0].hits] == [
        h.chunk.chunk_id for h in flat.retrieved[0].hits
    ]  # the flat window, unrouted
    assert any("routing check" in n and "not kept" in n for n in unsure.locate.notes)
    assert all(s.kept for s in unsure.locate.document_scores)  # no cut: every one searched
    assert "unsure" in unsure.locate.thinking
    # Its favourite is inside them: the cut holds.
    eng = Engine(
        hashing_index,
        get_embedder("hashing"),
        reranker_factory=lambda _: FavouriteReranker(inside.text),
    )
    sure = run(eng, QUESTION, _wide(hashing_index), strategy="treerag", synthesize=False)
    assert sure.locate.documents == routed
    assert any("routing check" in n and "(kept)" in n for n in sure.locate.notes)


class BoundedReranker:
    """Scores 3 for `favourite`, 1 for `also`, -1 otherwise; calls pairs above 0 relevant."""

    name = "bounded"
    relevant_above = 0.0

    def __init__(self, favourite: str, also: str) -> None:
        self.favourite, self.also = favourite, also

    def score(self, query, passages, batch_size=16):
        return np.asarray(
            [
                3.0 if p.endswith(self.favourite) else 1.0 if p.endswith(self.also) else -1.0
                for p in passages
            ]
        )


def test_routing_never_cuts_a_passage_the_reader_calls_relevant(hashing_index):
    routed, outside, inside, flat = _routed_and_outside(hashing_index)

    def ask(reranker):
        eng = Engine(hashing_index, get_embedder("hashing"), reranker_factory=lambda _: reranker)
        return run(eng, QUESTION, _wide(hashing_index), strategy="treerag", synthesize=False)

    # The best passage is inside the two documents, but one of another document scores above
    # the model's boundary: the cut would drop it, so the flat window stays.
    doubtful = ask(BoundedReranker(inside.text, outside.text))
    assert doubtful.locate.documents == ()
    assert [h.chunk.chunk_id for h in doubtful.retrieved[0].hits] == [
        h.chunk.chunk_id for h in flat.retrieved[0].hits
    ]
    note = next(n for n in doubtful.locate.notes if "routing check" in n)
    assert "1 passage(s) of other documents relevant" in note and "not kept" in note
    assert "1.00 > 0" in note
    assert "unsure" in doubtful.locate.thinking
    # Nothing else above the boundary: the cut holds, and the note says what was checked.
    sure = ask(BoundedReranker(inside.text, "no passage ends like this"))
    assert sure.locate.documents == routed
    note = next(n for n in sure.locate.notes if "routing check" in n)
    assert "no passage of another document is called relevant (kept)" in note


def test_a_reader_without_a_boundary_checks_the_best_passage_only(hashing_index):
    routed, _, inside, _ = _routed_and_outside(hashing_index)
    reranker = FavouriteReranker(inside.text)  # states no `relevant_above`
    eng = Engine(hashing_index, get_embedder("hashing"), reranker_factory=lambda _: reranker)
    trace = run(eng, QUESTION, _wide(hashing_index), strategy="treerag", synthesize=False)
    assert trace.locate.documents == routed
    note = next(n for n in trace.locate.notes if "routing check" in n)
    assert "states no relevance boundary" in note


def test_without_the_cross_encoder_nothing_confirms_the_routing(hashing_index):
    # The fused scores proposed the cut; their own best passage is no second opinion
    # (issue 27), so with no cross-encoder the flat window stays, and the trace says why.
    routed, _, _, flat = _routed_and_outside(hashing_index)
    eng = Engine(hashing_index, get_embedder("hashing"))
    off = _wide(hashing_index).set("rerank.enabled", False)
    trace = run(eng, QUESTION, off, strategy="treerag", synthesize=False)
    assert trace.locate.documents == ()
    assert [h.chunk.chunk_id for h in trace.retrieved[0].hits] == [
        h.chunk.chunk_id for h in flat.retrieved[0].hits
    ]
    note = next(n for n in trace.locate.notes if "routing check" in n)
    assert "no cross-encoder runs" in note and "not kept" in note
    assert all(name in note for name in (d.name for d in eng.index.documents if d.doc_id in routed))
    assert "no second reader" in trace.locate.thinking
    assert all(s.kept for s in trace.locate.document_scores)  # no cut: every one searched
    # Unchecked routing (an explicit option) still cuts without a cross-encoder.
    unchecked = off.with_option("treerag", StructureOptions(route_check=False))
    cut = run(eng, QUESTION, unchecked, strategy="treerag", synthesize=False)
    assert cut.locate.documents == routed


def test_the_routing_check_is_a_locate_input(engine):
    eng, _ = engine
    trace = run(eng, QUESTION, MOCK, strategy="treerag", synthesize=False)
    assert trace.locate.inputs["route_check"] is True
    assert trace.locate.inputs["rerank"]["enabled"] is True
