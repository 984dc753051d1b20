"""Question flags for the audit record: out of scope (weak evidence) and sensitive (rules)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from treerag_core.base.text_rules import detect_language
from treerag_core.base.types import RetrievedChunk, Trace

# Calibrated on the dev sets with benchmarks/calibrate_flags.py (tuned on these dev questions,
# see docs/security.md): the bundled cross-encoder's best logit, and for questions it does not
# rerank (Chinese), the best raw cosine of the multilingual embedder. 0.96 of 425 questions
# judged right (in scope: own corpus; out of scope: another set's corpus).
WEAK_RERANK_LOGIT = -1.0
WEAK_DENSE_COSINE = 0.46
# The keyless answer says "the documents do not seem to answer" when its best sentence scores
# below this (synthesis.score_sentences: 0.6 x cosine + 0.4 x share of question terms), per
# question language. Measured with benchmarks/bench_extractive.py on the dev questions (see
# docs/evaluation.md): positives are answerable questions whose gold was retrieved; negatives
# are questions asked of another set's documents, of the wrong document of their own set, and
# QASPER's unanswerable ones. The best balanced accuracy is at en 0.34 (0.93 answered / 0.95
# refused) and zh 0.36 (1.00 / 0.98), but there both refuse answerable sample questions the dev
# sets lack (short ones, a Chinese question about English text; a wrong refusal costs more
# than a cited weak quote), so the lowest values within a few points of it are used:
# en 0.30 (0.95 / 0.91), zh 0.26 (1.00 / 0.90: every question asked of another set refused).
NOT_ANSWERED_SCORE = {"en": 0.30, "zh": 0.26}


@dataclass(frozen=True)
class SensitiveRule:
    """A named pattern; a question matching it is flagged (recorded, never silently refused)."""

    name: str
    pattern: str

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("a sensitive rule needs a name")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"sensitive rule {self.name!r}: bad pattern ({exc})") from exc

    def matches(self, text: str) -> bool:
        return re.search(self.pattern, text, flags=re.IGNORECASE) is not None


DEFAULT_RULES: tuple[SensitiveRule, ...] = (
    SensitiveRule(
        "credentials",
        r"\b(password|passwd|api[ _-]?key|secret[ _-]?key|private[ _-]?key|access[ _-]?token)s?\b"
        r"|密码|密钥|口令",
    ),
    SensitiveRule(
        "personal_id",
        r"\b(social security number|ssn|passport number|credit card number)\b|身份证号|银行卡号",
    ),
    SensitiveRule("self_harm", r"\b(suicide|kill myself|self[- ]harm)\b|自杀|自残"),
    SensitiveRule(
        "weapons",
        r"\b(make|build|assemble)\b.{0,30}\b(bomb|explosive|nerve agent)s?\b|炸弹|爆炸物",
    ),
)


def load_rules(path: str | Path | None = None) -> tuple[SensitiveRule, ...]:
    """Rules from a JSON list of {"name", "pattern"} (TREERAG_SENSITIVE_RULES), else the defaults.

    Raises:
        ValueError: the file is not such a list, or a pattern does not compile.
    """
    path = path or os.environ.get("TREERAG_SENSITIVE_RULES", "").strip() or None
    if path is None:
        return DEFAULT_RULES
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"sensitive rules {path}: cannot read a JSON list ({exc})") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"sensitive rules {path}: expected a list of {{name, pattern}} objects")
    return tuple(SensitiveRule(str(r.get("name", "")), str(r.get("pattern", ""))) for r in rows)


def sensitive_matches(question: str, rules: Sequence[SensitiveRule] | None = None) -> list[str]:
    """Names of the rules the question matches."""
    return [r.name for r in (DEFAULT_RULES if rules is None else rules) if r.matches(question)]


def evidence_scores(
    hits: Sequence[RetrievedChunk], candidates: Sequence[RetrievedChunk] = ()
) -> dict[str, float | None]:
    """The evidence signals the weak verdict reads: best rerank logit and best raw cosine."""
    pool = list(candidates) or list(hits)
    reranked = [h.rerank for h in hits if h.rerank is not None]
    dense = sorted((h.dense for h in pool), reverse=True)
    return {
        "top_rerank": max(reranked) if reranked else None,
        "top_dense": dense[0] if dense else None,
        "top3_dense": sum(dense[:3]) / len(dense[:3]) if dense else None,
        "top_bm25": max((h.bm25 for h in pool), default=None),
    }


def evidence_is_weak(
    hits: Sequence[RetrievedChunk],
    candidates: Sequence[RetrievedChunk] = (),
    rerank_threshold: float = WEAK_RERANK_LOGIT,
    dense_threshold: float = WEAK_DENSE_COSINE,
) -> bool:
    """True when the best evidence found is too weak for the question to be in scope.

    Reranked hits are judged by the cross-encoder's best logit (it reads question and passage
    together); otherwise by the best raw cosine among the candidates. No hit at all is weak.
    """
    scores = evidence_scores(hits, candidates)
    if scores["top_rerank"] is not None:
        return scores["top_rerank"] < rerank_threshold
    if scores["top_dense"] is None:
        return True
    return scores["top_dense"] < dense_threshold


@dataclass(frozen=True)
class QuestionFlags:
    """What the audit record and the views show about a question besides its answer."""

    out_of_scope: bool
    sensitive: tuple[str, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_sensitive(self) -> bool:
        return bool(self.sensitive)

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_out_of_scope": self.out_of_scope,
            "is_sensitive": self.is_sensitive,
            "sensitive_rules": list(self.sensitive),
            "evidence": dict(self.evidence),
            "thresholds": {"rerank_logit": WEAK_RERANK_LOGIT, "dense_cosine": WEAK_DENSE_COSINE},
        }


def crosses_languages(trace: Trace) -> bool:
    """Whether the best evidence is in another language than the question (most of the top 3).

    The cosine threshold was calibrated on same-language pairs; across languages the
    multilingual embedder's cosines run lower (a sentence and its translation score ~0.8),
    so a Chinese question about an English paper would be flagged however right its evidence.
    """
    return hits_cross_languages(trace.reranked or trace.candidates, trace.language)


def hits_cross_languages(hits: Sequence[RetrievedChunk], language: str) -> bool:
    """`crosses_languages` for a list of hits (the best first) and the question's language."""
    top = list(hits)[:3]
    other = sum(detect_language(h.chunk.text) != language for h in top)
    return bool(top) and other > len(top) / 2


def question_flags(trace: Trace, rules: Sequence[SensitiveRule] | None = None) -> QuestionFlags:
    """The flags of a finished trace (its final hits and pooled candidates).

    Across languages the cosine verdict is not calibrated, so only the cross-encoder's
    (which reads question and passage together) can flag such a question out of scope.
    """
    evidence = evidence_scores(trace.reranked, trace.candidates)
    cross = crosses_languages(trace)
    weak = evidence_is_weak(trace.reranked, trace.candidates)
    if cross and evidence["top_rerank"] is None:
        weak = False
    return QuestionFlags(
        out_of_scope=weak,
        sensitive=tuple(sensitive_matches(trace.question, rules)),
        evidence={**evidence, "cross_language": cross},
    )


class Verdict(StrEnum):
    """What the keyless answer says about its own evidence."""

    ANSWERED = "answered"  # both readers find the evidence on topic
    WEAK = "weak"  # one reader doubts it: answered, with a visible "weak match" label
    NOT_ANSWERED = "not_answered"  # both readers doubt it: the documents do not answer


@dataclass(frozen=True)
class AnswerVerdict:
    """The verdict and the scores it read, kept in the trace (`Trace.verdict`)."""

    verdict: Verdict
    best_sentence: float | None  # the answer's best sentence (synthesis.score_sentences)
    passage: float | None  # the top passage by its reader: cross-encoder logit, or cosine
    passage_reader: str  # "cross-encoder" or "cosine" (or "" when nothing was retrieved)
    passage_weak: bool
    sentence_weak: bool

    def to_dict(self) -> dict[str, Any]:
        return verdict_record(self)

    def label(self) -> str:
        return verdict_label(self.to_dict())


def verdict_record(v: AnswerVerdict) -> dict[str, Any]:
    return {
        "verdict": str(v.verdict),
        "best_sentence": v.best_sentence,
        "passage": v.passage,
        "passage_reader": v.passage_reader,
        "passage_weak": v.passage_weak,
        "sentence_weak": v.sentence_weak,
    }


def _num(x: float) -> str:
    return f"{x:.2f}".replace("-", "\N{MINUS SIGN}")


def verdict_label(record: dict[str, Any]) -> str:
    """The one line shown on a keyless answer about its evidence ("" when both readers
    agree it is on topic). Read from the stored record, so a stored trace says it too."""
    kind = record.get("verdict")
    if kind not in (Verdict.WEAK, Verdict.NOT_ANSWERED):
        return ""
    why = []
    if record.get("passage_weak") and record.get("passage") is not None:
        what = "scores" if record.get("passage_reader") == "cross-encoder" else "has a cosine of"
        why.append(f"the best passage {what} {_num(record['passage'])}")
    if record.get("sentence_weak") and record.get("best_sentence") is not None:
        why.append(f"the best sentence matches the question at {_num(record['best_sentence'])}")
    reason = " and ".join(why) or "nothing was retrieved"
    if kind == Verdict.NOT_ANSWERED:
        return f"Not answered: {reason}; the closest passage is in the evidence below."
    return f"Weak match: {reason}; check the evidence below."


def judge(
    best_sentence: float | None,
    top_rerank: float | None,
    top_dense: float | None,
    cross_language: bool | None,
    language: str | None,
    sentence_bar: float | None = None,
    shares_terms: bool | None = True,
) -> AnswerVerdict:
    """The keyless answer's verdict from independent readers of the evidence.

    The passage reader is the cross-encoder (question and passage read together; its logit
    against `WEAK_RERANK_LOGIT`), or for unreranked questions the best raw cosine (against
    `WEAK_DENSE_COSINE`). The sentence reader is the answer's best sentence (meaning and the
    question's terms, against `NOT_ANSWERED_SCORE`). Each line was calibrated on its own;
    no new threshold is introduced here.

    Either reader's doubt is shown (WEAK: the answer still leads with the top passage's best
    sentence, labelled), never acted on: the bundled cross-encoder (trained on web queries)
    scores papers and filings low however right the passage, and a sentence score misses a
    paraphrase. The answer refuses (NOT_ANSWERED) only when the documents give it nothing to
    stand on: both readers doubt the evidence *and* not one of the question's own terms
    (`shares_terms`, stop words aside) occurs in any sentence the answer could quote. Across
    languages words cannot be shared, so such a question is labelled, never refused.
    """
    lang = language if language in NOT_ANSWERED_SCORE else "en"
    bar = NOT_ANSWERED_SCORE[lang] if sentence_bar is None else sentence_bar
    sentence_weak = best_sentence is None or best_sentence < bar
    if top_rerank is not None:
        reader, passage = "cross-encoder", top_rerank
        passage_weak = top_rerank < WEAK_RERANK_LOGIT
    elif top_dense is not None:
        reader, passage = "cosine", top_dense
        passage_weak = top_dense < WEAK_DENSE_COSINE
    else:
        reader, passage, passage_weak = "", None, True
    nothing_shared = best_sentence is None or (shares_terms is False and not cross_language)
    if passage_weak and sentence_weak and nothing_shared:
        verdict = Verdict.NOT_ANSWERED
    elif passage_weak or sentence_weak:
        verdict = Verdict.WEAK
    else:
        verdict = Verdict.ANSWERED
    return AnswerVerdict(verdict, best_sentence, passage, reader, passage_weak, sentence_weak)


def answer_signals(
    trace: Trace, best_sentence: float | None, shares_terms: bool | None
) -> dict[str, Any]:
    """The signals `judge` reads, from a trace and its answer's sentences."""
    evidence = evidence_scores(trace.reranked, trace.candidates)
    return {
        "best_sentence": best_sentence,
        "shares_terms": shares_terms,
        "top_rerank": evidence["top_rerank"],
        "top_dense": evidence["top_dense"],
        "cross_language": crosses_languages(trace),
        "language": trace.language,
    }
