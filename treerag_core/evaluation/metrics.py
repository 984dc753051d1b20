"""Retrieval metrics exactly as defined in the eval README; pure functions over character spans."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from treerag_core.base.pagemap import chars_on_page

if TYPE_CHECKING:
    from treerag_core.evaluation.dataset import EvalQuestion

KS: tuple[int, ...] = (1, 3, 5, 10)
BUDGETS: tuple[int, ...] = (1000, 2000)
MRR_DEPTH = 10
MAX_BUDGET_PASSAGES = 50

# Components are joined by " > " in heading paths; a bare ">" can be part of a heading
# (gitlab_handbook has `<i class="..."></i> Contacting Marketing`), so it does not split.
_PATH_SEPARATOR = re.compile(r"\s+>\s+")


class DocSpan(Protocol):
    """Anything with a doc name and character offsets into that doc's text."""

    @property
    def doc(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Passage:
    """A retrieved passage: `doc` is the document's file name, offsets index its text."""

    doc: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(
                f"passage span must have 0 <= start <= end, got {self.start}:{self.end}"
            )


def span_len(span: DocSpan) -> int:
    return span.end - span.start


def hits(passage: DocSpan, evidence: DocSpan) -> bool:
    """True when both are in the same doc and overlap by >= 0.5 * the shorter length."""
    if passage.doc != evidence.doc:
        return False
    overlap = min(passage.end, evidence.end) - max(passage.start, evidence.start)
    # Integer form of overlap >= 0.5 * min(...); overlap > 0 keeps empty spans from "hitting".
    return overlap > 0 and 2 * overlap >= min(span_len(passage), span_len(evidence))


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, but got {k}")


def _hit(passages: Sequence[DocSpan], evidences: Sequence[DocSpan]) -> float:
    return float(any(hits(p, e) for p in passages for e in evidences))


def _recall(passages: Sequence[DocSpan], evidences: Sequence[DocSpan]) -> float:
    if not evidences:
        raise ValueError("evidence recall needs at least one gold evidence")
    found = sum(1 for e in evidences if any(hits(p, e) for p in passages))
    return found / len(evidences)


def hit_at_k(passages: Sequence[DocSpan], evidences: Sequence[DocSpan], k: int) -> float:
    """1.0 if any of the top-k passages hits any gold evidence, else 0.0."""
    _check_k(k)
    return _hit(passages[:k], evidences)


def recall_at_k(passages: Sequence[DocSpan], evidences: Sequence[DocSpan], k: int) -> float:
    """Share of the gold evidences hit by some top-k passage."""
    _check_k(k)
    return _recall(passages[:k], evidences)


def mrr_at_10(passages: Sequence[DocSpan], evidences: Sequence[DocSpan]) -> float:
    """1 / rank of the first passage hitting any evidence, 0.0 if none in the top 10."""
    for rank, p in enumerate(passages[:MRR_DEPTH], start=1):
        if any(hits(p, e) for e in evidences):
            return 1.0 / rank
    return 0.0


def context_chars_at_k(passages: Sequence[DocSpan], k: int) -> float:
    """Total characters of the top-k passages (the mean over questions is taken later)."""
    _check_k(k)
    return float(sum(span_len(p) for p in passages[:k]))


def budget_passages(passages: Sequence[DocSpan], budget_chars: int) -> list[Passage]:
    """The passages a reader with `budget_chars` characters gets, per the README.

    Walks at most 50 passages in rank order keeping whole ones and stops at the first that
    would push the total past the budget; a first passage longer than the budget is cut to
    its first `budget_chars` characters.
    """
    if budget_chars < 1:
        raise ValueError(f"budget_chars must be >= 1, but got {budget_chars}")
    kept: list[Passage] = []
    total = 0
    for i, p in enumerate(passages[:MAX_BUDGET_PASSAGES]):
        size = span_len(p)
        if i == 0 and size > budget_chars:
            return [Passage(p.doc, p.start, p.start + budget_chars)]
        if total + size > budget_chars:
            break
        kept.append(Passage(p.doc, p.start, p.end))
        total += size
    return kept


def recall_at_budget(
    passages: Sequence[DocSpan], evidences: Sequence[DocSpan], budget_chars: int
) -> float:
    """Evidence recall on the passages `budget_passages` keeps."""
    return _recall(budget_passages(passages, budget_chars), evidences)


def hit_at_budget(
    passages: Sequence[DocSpan], evidences: Sequence[DocSpan], budget_chars: int
) -> float:
    """Hit on the passages `budget_passages` keeps."""
    return _hit(budget_passages(passages, budget_chars), evidences)


def _path_components(path: str) -> list[str]:
    # str.strip/split with no argument and regex \s all cover Unicode spaces (\u2002, \u3000).
    path = path.strip()
    if not path:
        return []
    return [" ".join(c.split()).casefold() for c in _PATH_SEPARATOR.split(path)]


def section_path_ends_with(path: str, suffix: str) -> bool:
    """True when `path`'s last components equal all of `suffix`'s components.

    Components are compared case-folded with whitespace collapsed, so "A > Data Description"
    ends with "data  description" but "Raw Data Description" does not. An empty suffix never
    matches.
    """
    want = _path_components(suffix)
    have = _path_components(path)
    return bool(want) and len(have) >= len(want) and have[-len(want) :] == want


def section_path_within(path: str, gold: str) -> bool:
    """True when `path` is the gold section or lies inside it: `path` itself or one of its
    ancestors (a prefix of its components) ends with all of `gold`'s components.

    A statute's article leaf "第二编 分则 > 第九章 渎职罪 > 第三百九十七条" lies inside the gold
    chapter "第九章 渎职罪"; "A > B" is not inside "A > B > C".
    """
    want = _path_components(gold)
    have = _path_components(path)
    return bool(want) and any(
        have[end - len(want) : end] == want for end in range(len(want), len(have) + 1)
    )


def section_hit_at_k(picked_paths: Sequence[str], gold_paths: Sequence[str], k: int) -> float:
    """1.0 if one of the first k picked leaf paths is a gold evidence_sections path or lies
    inside one (`section_path_within`): a gold path names a chapter, the tree may go down to
    its articles."""
    _check_k(k)
    return float(any(section_path_within(p, g) for p in picked_paths[:k] for g in gold_paths))


def page_hits(passage: DocSpan, doc: str, page: int, page_starts: Sequence[int]) -> bool:
    """README page-level gold: at least half of the passage's characters lie on `page`."""
    if passage.doc != doc or span_len(passage) <= 0:
        return False
    return 2 * chars_on_page(page_starts, passage.start, passage.end, page) >= span_len(passage)


def page_metrics(
    gold: Sequence[tuple[str, int]],
    passages: Sequence[DocSpan],
    page_maps: Mapping[str, Sequence[int]],
) -> dict[str, float]:
    """Page hit@k / recall@k, MRR@10 and the budget walk's Page hit@Bc / recall@Bc."""

    def found(ps: Sequence[DocSpan]) -> list[bool]:
        return [any(page_hits(p, d, g, page_maps.get(d, ())) for p in ps) for d, g in gold]

    out: dict[str, float] = {}
    for k in KS:
        _check_k(k)
        got = found(passages[:k])
        out[f"page_hit@{k}"] = float(any(got))
        out[f"page_recall@{k}"] = sum(got) / len(gold)
    out["page_mrr@10"] = 0.0
    for rank, p in enumerate(passages[:MRR_DEPTH], start=1):
        if any(found([p])):
            out["page_mrr@10"] = 1.0 / rank
            break
    for k in KS:
        out[f"ctx_chars@{k}"] = context_chars_at_k(passages, k)
    for b in BUDGETS:
        got = found(budget_passages(passages, b))
        out[f"page_hit@{b}c"] = float(any(got))
        out[f"page_recall@{b}c"] = sum(got) / len(gold)
    return out


def question_metrics(
    question: EvalQuestion,
    passages: Sequence[DocSpan],
    picked_paths: Sequence[str] | None,
    page_maps: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, float]:
    """Every per-question metric; `section_hit@k` only with picked paths and gold sections.

    Raises:
        ValueError: the question is not usable (unanswerable or no evidence found verbatim);
            such questions are left out of the means, not scored as zero.
    """
    if not question.usable:
        raise ValueError(
            f"question {question.id!r} is left out of the means ({question.left_out_reason})"
        )
    if question.gold_pages:
        if page_maps is None:
            raise ValueError(f"question {question.id!r} has page-level gold: pass page_maps")
        pages = [(g.doc, g.page) for g in question.gold_pages]
        return page_metrics(pages, passages, page_maps)
    gold = question.evidences
    out: dict[str, float] = {}
    for k in KS:
        out[f"hit@{k}"] = hit_at_k(passages, gold, k)
    for k in KS:
        out[f"recall@{k}"] = recall_at_k(passages, gold, k)
    out["mrr@10"] = mrr_at_10(passages, gold)
    for k in KS:
        out[f"ctx_chars@{k}"] = context_chars_at_k(passages, k)
    for b in BUDGETS:
        kept = budget_passages(passages, b)
        out[f"recall@{b}c"] = _recall(kept, gold)
        out[f"hit@{b}c"] = _hit(kept, gold)
    # A question whose evidence has no known section cannot score a section hit either way.
    if picked_paths is not None and question.evidence_sections:
        for k in KS:
            out[f"section_hit@{k}"] = section_hit_at_k(picked_paths, question.evidence_sections, k)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation, as numpy's default."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], but got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def aggregate(
    per_question: list[dict[str, float]],
    latencies_ms: Mapping[str, Sequence[float]],
    *,
    n_left_out: int | None = None,
) -> dict[str, Any]:
    """Mean of each metric over the questions that have it, plus p50/p95 latency per stage.

    A metric missing from some questions (section hits where the gold has no section) is
    averaged over the questions that have it; `n_questions_by_metric` then says how many.
    Stages with no latency samples are left out of `latency_ms`.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in per_question:
        for key, value in row.items():
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    out: dict[str, Any] = {key: sums[key] / counts[key] for key in sums}
    out["latency_ms"] = {
        stage: {"p50": percentile(values, 50), "p95": percentile(values, 95)}
        for stage, values in latencies_ms.items()
        if values
    }
    out["n_questions"] = len(per_question)
    partial = {key: n for key, n in counts.items() if n != len(per_question)}
    if partial:
        out["n_questions_by_metric"] = partial
    if n_left_out is not None:
        out["n_left_out"] = n_left_out
    return out
