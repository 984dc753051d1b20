"""Question flags for the audit record: out of scope (weak evidence) and sensitive (rules)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    hits = list(trace.reranked or trace.candidates)[:3]
    other = sum(detect_language(h.chunk.text) != trace.language for h in hits)
    return bool(hits) and other > len(hits) / 2


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
