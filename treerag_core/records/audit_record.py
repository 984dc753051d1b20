"""A trace as seed 004's audit record: windows, strategies, providers, timing, stage hits."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal

from treerag_core.answer.flags import QuestionFlags, question_flags
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import RetrievedChunk, Trace
from treerag_core.records.trace_json import stage_summary

Stage = Literal["keyword", "vector", "fusion", "rerank"]
STAGES: tuple[Stage, ...] = ("keyword", "vector", "fusion", "rerank")
EXCERPT_CHARS = 300
_PACKAGES = ("numpy", "faiss-cpu", "rank-bm25", "onnxruntime", "sentence-transformers", "anthropic")


@dataclass(frozen=True)
class StageHit:
    """One hit at one stage, with its score details; maps back to its chunk, node and offsets."""

    stage: Stage
    rank: int  # 1-based within (stage, group)
    score: float
    score_details: dict[str, Any]
    chunk_id: str
    node_id: str
    doc_id: str
    start_offset: int
    end_offset: int
    excerpt: str
    group: str = ""  # the searched leaf (keyword/vector ranks are per leaf), "" when pooled


@dataclass(frozen=True)
class AuditRecord:
    """Everything seed 004's RetrievalRecord holds, plus the question's flags."""

    keyword_top_k: int
    vector_top_k: int
    fusion_top_k: int
    rerank_top_k: int
    fusion_strategy: str
    rerank_strategy: str
    provider_snapshot: dict[str, Any]
    timing_ms: dict[str, float]
    flags: QuestionFlags
    hits: tuple[StageHit, ...] = field(default=())

    def params(self) -> dict[str, Any]:
        """The record's parameters (everything but the hits) as JSON-ready values."""
        return {
            "keyword_top_k": self.keyword_top_k,
            "vector_top_k": self.vector_top_k,
            "fusion_top_k": self.fusion_top_k,
            "rerank_top_k": self.rerank_top_k,
            "fusion_strategy": self.fusion_strategy,
            "rerank_strategy": self.rerank_strategy,
            "provider_snapshot": self.provider_snapshot,
            "timing_ms": self.timing_ms,
            "flags": self.flags.to_dict(),
        }


def _groups(trace: Trace) -> Iterable[tuple[str, list[RetrievedChunk]]]:
    retrieved = getattr(trace, "retrieved", None) or {}
    if isinstance(retrieved, dict):
        return retrieved.items()
    # A list of RetrievalGroup (label, hits, leaf_id, ...).
    return ((g.leaf_id or g.label, list(g.hits)) for g in retrieved)


def _candidate(
    stage: Stage, rank: int, score: float, details: dict[str, Any], hit: RetrievedChunk, group=""
) -> StageHit:
    c = hit.chunk
    return StageHit(
        stage=stage,
        rank=rank,
        score=float(score),
        score_details=details,
        chunk_id=c.chunk_id,
        node_id=c.source_node_id,
        doc_id=c.doc_id,
        start_offset=c.start,
        end_offset=c.end,
        excerpt=c.text[:EXCERPT_CHARS],
        group=group,
    )


def stage_hits(trace: Trace) -> list[StageHit]:
    """Hits per stage. keyword/vector: each searched leaf's chunks ranked by their raw BM25
    (matches only) and cosine; fusion: the pooled candidates, once per chunk, in fused order,
    with both components; rerank: the final top-k with the cross-encoder score (if any).
    Each later-stage hit names the earlier ranks of its chunk, so it traces back to the
    retriever that found it.
    """
    settings = QuerySettings.from_dict(trace.settings)
    out: list[StageHit] = []
    first: dict[str, dict[str, int]] = {}  # chunk id -> best rank per retriever
    for group, hits in _groups(trace):
        by_bm25 = sorted((h for h in hits if h.bm25 > 0), key=lambda h: -h.bm25)
        for rank, h in enumerate(by_bm25, 1):
            details = {"keyword_score": h.bm25, "bm25_norm": h.bm25_norm, "metric": "bm25"}
            out.append(_candidate("keyword", rank, h.bm25, details, h, group))
            ranks = first.setdefault(h.chunk.chunk_id, {})
            ranks["keyword"] = min(ranks.get("keyword", rank), rank)
        for rank, h in enumerate(sorted(hits, key=lambda h: -h.dense), 1):
            details = {"vector_score": h.dense, "dense_norm": h.dense_norm, "metric": "cosine"}
            out.append(_candidate("vector", rank, h.dense, details, h, group))
            ranks = first.setdefault(h.chunk.chunk_id, {})
            ranks["vector"] = min(ranks.get("vector", rank), rank)
    pooled = sorted(trace.candidates or trace.reranked, key=lambda h: h.pooled_rank or 0)
    seen: set[str] = set()
    rank = 0
    for h in pooled:
        if h.chunk.chunk_id in seen:  # fusion is deduplicated by chunk
            continue
        seen.add(h.chunk.chunk_id)
        rank += 1
        fused = h.pool_fused if h.pool_fused is not None else h.fused
        details = {
            "fusion_strategy": str(settings.retrieve.fusion),
            "fusion_score": fused,
            "leaf_fused": h.fused,
            "components": {
                "keyword_score": h.bm25,
                "vector_score": h.dense,
                "bm25_norm": h.bm25_norm,
                "dense_norm": h.dense_norm,
            },
            "found_by": _found_by(h, first),
            "minmax_forced": h.minmax_forced,
        }
        out.append(_candidate("fusion", rank, fused, details, h))
    for h in trace.reranked:
        fused = h.pool_fused if h.pool_fused is not None else h.fused
        details = {
            "rerank_score": h.rerank,
            "model": trace.reranker or "none",
            "fusion_score": fused,
            "fusion_rank": h.pooled_rank,
            "keyword_score": h.bm25,
            "vector_score": h.dense,
            "found_by": _found_by(h, first),
        }
        score = h.rerank if h.rerank is not None else fused
        out.append(_candidate("rerank", h.final_rank or 0, score, details, h))
    return out


def _found_by(hit: RetrievedChunk, first: dict[str, dict[str, int]]) -> dict[str, int]:
    """The retrievers that found this chunk, with its rank in each (the trace back)."""
    return dict(first.get(hit.chunk.chunk_id, {}))


def provider_snapshot(trace: Trace) -> dict[str, Any]:
    """Models and library versions that produced the scores."""
    versions = {}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return {
        **trace.provider,
        "rerank_model_used": trace.reranker or "none",
        "versions": versions,
    }


def timing_ms(trace: Trace) -> dict[str, float]:
    """Per-stage milliseconds; `retrieve` covers keyword + vector + fusion (one pass per leaf)."""
    rows = {row["stage"]: float(row["ms"]) for row in stage_summary(trace)}
    rows["total"] = round(sum(rows.values()), 1)
    return rows


def audit_record(trace: Trace, flags: QuestionFlags | None = None) -> AuditRecord:
    """The seed-004 record of a finished trace."""
    settings = QuerySettings.from_dict(trace.settings)
    per_group = settings.retrieve.top_k_per_leaf
    if any(getattr(g, "leaf_id", "") is None for g in trace.retrieved):
        per_group = settings.retrieve.candidate_window  # flat search: one group, the whole scope
    reason = next((f.detail for f in trace.fallbacks if f.stage == "rerank"), "")
    if trace.reranker:
        rerank = f"cross-encoder:{trace.reranker}"
    else:
        rerank = "none" + (f" ({reason})" if reason else "")
    return AuditRecord(
        keyword_top_k=per_group,
        vector_top_k=per_group,
        fusion_top_k=settings.retrieve.candidate_window,
        rerank_top_k=settings.answer.final_top_k,
        fusion_strategy=str(settings.retrieve.fusion),
        rerank_strategy=rerank,
        provider_snapshot=provider_snapshot(trace),
        timing_ms=timing_ms(trace),
        flags=flags if flags is not None else question_flags(trace),
        hits=tuple(stage_hits(trace)),
    )
