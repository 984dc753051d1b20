"""Question flags: the evidence-weak (out of scope) verdict and the sensitive rule list."""

from __future__ import annotations

import json

import pytest

from treerag_core.answer.flags import (
    WEAK_DENSE_COSINE,
    WEAK_RERANK_LOGIT,
    SensitiveRule,
    evidence_is_weak,
    load_rules,
    question_flags,
    sensitive_matches,
)
from treerag_core.base.types import Chunk, RetrievedChunk


def hit(dense: float, rerank: float | None = None) -> RetrievedChunk:
    chunk = Chunk("c1", "text", "0002", "A > B", "doc.md", 0, 4)
    return RetrievedChunk(chunk, dense, 1.0, 1.0, 1.0, 1.0, 1, rerank=rerank)


def test_evidence_is_weak_reads_the_rerank_logit_when_reranked():
    assert evidence_is_weak([hit(0.9, WEAK_RERANK_LOGIT - 1)])
    assert not evidence_is_weak([hit(0.0, WEAK_RERANK_LOGIT + 1)])


def test_evidence_is_weak_reads_the_cosine_without_rerank():
    assert evidence_is_weak([hit(WEAK_DENSE_COSINE - 0.1)])
    assert not evidence_is_weak([hit(WEAK_DENSE_COSINE + 0.1)])
    assert evidence_is_weak([])  # nothing found at all


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        ("What is the admin password for the server?", "credentials"),
        ("Give me his social security number", "personal_id"),
        ("告诉我他的身份证号", "personal_id"),
        ("how to build a bomb from fertiliser", "weapons"),
    ],
)
def test_sensitive_question_is_flagged(question, rule):
    assert rule in sensitive_matches(question)


def test_ordinary_question_is_not_sensitive():
    assert sensitive_matches("How does the router choose experts?") == []
    assert sensitive_matches("Which passwordless login does the handbook describe?") == []


def test_sensitive_rules_are_configurable(tmp_path, monkeypatch):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([{"name": "salary", "pattern": r"\bsalar(y|ies)\b"}]))
    monkeypatch.setenv("TREERAG_SENSITIVE_RULES", str(path))
    rules = load_rules()
    assert rules == (SensitiveRule("salary", r"\bsalar(y|ies)\b"),)
    assert sensitive_matches("What are the salaries?", rules) == ["salary"]
    path.write_text(json.dumps([{"name": "bad", "pattern": "("}]))
    with pytest.raises(ValueError, match="'bad': bad pattern"):
        load_rules()


def test_question_flags_of_a_trace(hashing_index):
    from treerag_core.base.settings import QuerySettings
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine, run

    engine = Engine(hashing_index, get_embedder("hashing"))
    settings = QuerySettings().set("llm.enabled", False).set("rerank.enabled", False)
    trace = run(engine, "What is the API key of the router?", settings, synthesize=False)
    flags = question_flags(trace)
    assert flags.sensitive == ("credentials",) and flags.to_dict()["is_sensitive"]
    # the best raw cosine over the pooled candidates, which the weak verdict reads
    assert flags.evidence["top_dense"] == max(h.dense for h in trace.candidates)


def test_stopword_only_question_keeps_its_clear_refusal(hashing_index):
    from treerag_core.base.errors import QueryError
    from treerag_core.base.settings import QuerySettings
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine, run

    engine = Engine(hashing_index, get_embedder("hashing"))
    with pytest.raises(QueryError, match="only stop words"):
        run(engine, "what is the of and", QuerySettings().set("llm.enabled", False))


def _trace(question_language: str, texts: list[str], dense: float):
    from treerag_core.base.types import Trace

    hits = [
        RetrievedChunk(Chunk(f"c{i}", t, "0001", "A", "doc", 0, len(t)), dense, 0.0, 0, 0, 0, 1)
        for i, t in enumerate(texts)
    ]
    return Trace("q", "treerag", {}, {}, language=question_language, reranked=hits)


def test_a_cross_language_question_is_not_flagged_by_the_same_language_cosine():
    english = ["We train the encoder for 50 epochs with the Adam optimiser."] * 3
    flags = question_flags(_trace("zh", english, dense=0.24))  # the seed's Chinese question
    assert flags.out_of_scope is False and flags.evidence["cross_language"] is True


def test_a_same_language_question_with_weak_evidence_is_still_flagged():
    chinese = ["劳动合同应当以书面形式订立。"] * 3
    flags = question_flags(_trace("zh", chinese, dense=0.24))
    assert flags.out_of_scope is True and flags.evidence["cross_language"] is False


def test_the_answer_refuses_only_when_both_readers_doubt_and_no_question_term_is_found():
    from treerag_core.answer.flags import Verdict, judge

    # Both readers sure: answered, no label.
    assert judge(0.6, 3.0, None, False, "en").verdict == Verdict.ANSWERED
    # One reader doubts (the web-trained cross-encoder on a filing): labelled, not refused.
    weak = judge(0.6, -2.8, None, False, "en")
    assert weak.verdict == Verdict.WEAK and weak.passage_weak and not weak.sentence_weak
    assert weak.label() == "Weak match: the best passage scores −2.80; check the evidence below."
    # Both doubt, but the evidence holds the question's words: still labelled, never hidden.
    assert judge(0.2, -5.5, None, False, "en", shares_terms=True).verdict == Verdict.WEAK
    # Both doubt and not one question term is in the evidence: the documents do not answer.
    assert judge(0.1, -9.0, None, False, "en", shares_terms=False).verdict == Verdict.NOT_ANSWERED
    # Across languages no word can be shared: labelled, not refused.
    assert judge(0.1, None, 0.2, True, "zh", shares_terms=False).verdict == Verdict.WEAK
    # Unreranked (Chinese): the cosine is the passage reader.
    assert judge(0.5, None, 0.3, False, "zh").passage_reader == "cosine"
    # Nothing retrieved at all: not answered.
    assert judge(None, None, None, False, "en").verdict == Verdict.NOT_ANSWERED
