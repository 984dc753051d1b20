"""Trace <-> JSON, so a run can be exported, stored in the audit log and replayed."""

from __future__ import annotations

import json
from typing import Any

from treerag_core.base.types import (
    Chunk,
    Citation,
    ContextSection,
    DocumentScore,
    Fallback,
    LocatedLeaf,
    LocateResult,
    RetrievalGroup,
    RetrievedChunk,
    Trace,
    Usage,
)

TRACE_FORMAT = "treerag-trace/2"
# Format 1 (before strategies were plug-ins) kept step 2 as {leaf id or "*": hits} and flat
# settings; it still loads: groups are rebuilt and settings keys are mapped when read.
_FORMAT_1 = "treerag-trace/1"
_ALL_LEAVES_V1 = "*"


def trace_to_json(trace: Trace, indent: int | None = 2) -> str:
    data = {"format": TRACE_FORMAT, **trace.to_dict()}
    return json.dumps(data, ensure_ascii=False, indent=indent)


def _hit(data: dict[str, Any]) -> RetrievedChunk:
    return RetrievedChunk(**{**data, "chunk": Chunk(**data["chunk"])})


def _locate(data: dict[str, Any] | None) -> LocateResult | None:
    if data is None:
        return None
    return LocateResult(
        leaves=tuple(LocatedLeaf(**leaf) for leaf in data["leaves"]),
        thinking=data.get("thinking", ""),
        locator=data.get("locator", ""),
        usage=Usage(**data.get("usage", {})),
        seconds=data.get("seconds", 0.0),
        notes=tuple(data.get("notes", ())),
        inputs=dict(data.get("inputs", {})),
        documents=tuple(data.get("documents", ())),
        document_scores=tuple(DocumentScore(**d) for d in data.get("document_scores", ())),
    )


def _groups(data: Any) -> list[RetrievalGroup]:
    if isinstance(data, dict):  # format 1: {leaf id: hits}
        return [
            RetrievalGroup(
                label="all sections" if key == _ALL_LEAVES_V1 else key,
                hits=tuple(_hit(h) for h in hits),
                leaf_id=None if key == _ALL_LEAVES_V1 else key,
                kind="scope" if key == _ALL_LEAVES_V1 else "leaf",
            )
            for key, hits in data.items()
        ]
    return [
        RetrievalGroup(**{**g, "hits": tuple(_hit(h) for h in g.get("hits", []))})
        for g in data or []
    ]


def _section(data: dict[str, Any]) -> ContextSection:
    return ContextSection(
        **{
            **data,
            "rows": tuple(data.get("rows", ())),
            "chunk_ids": tuple(data.get("chunk_ids", ())),
        }
    )


def trace_from_dict(data: dict[str, Any]) -> Trace:
    """Rebuild a Trace from its dict form; raises ValueError on another format."""
    if data.get("format", TRACE_FORMAT) not in (TRACE_FORMAT, _FORMAT_1):
        raise ValueError(f"not a {TRACE_FORMAT} document (format={data.get('format')!r})")
    data = {k: v for k, v in data.items() if k != "format"}
    return Trace(
        **{
            **data,
            "locate": _locate(data.get("locate")),
            "retrieved": _groups(data.get("retrieved")),
            "sections": [_section(x) for x in data.get("sections", [])],
            "reranked": [_hit(h) for h in data.get("reranked", [])],
            "candidates": [_hit(h) for h in data.get("candidates", [])],
            "answer_usage": Usage(**data.get("answer_usage", {})),
            "citations": [
                Citation(
                    **{**c, "node_ids": tuple(c["node_ids"]), "pages": tuple(c.get("pages", ()))}
                )
                for c in data.get("citations", [])
            ],
            "fallbacks": [Fallback(**f) for f in data.get("fallbacks", [])],
        }
    )


def trace_from_json(text: str) -> Trace:
    return trace_from_dict(json.loads(text))


def stage_summary(trace: Trace) -> list[dict[str, Any]]:
    """Time, tokens and cost per stage: the table every view shows."""
    locate = trace.locate
    zero = Usage()
    rows = [
        ("locate", locate.seconds if locate else 0.0, locate.usage if locate else zero),
        ("retrieve", trace.retrieve_seconds, zero),
        ("rerank", trace.rerank_seconds, zero),
        ("synthesize", trace.synthesize_seconds, trace.answer_usage),
    ]
    return [
        {
            "stage": name,
            "ms": round(seconds * 1000, 1),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": round(usage.cost_usd, 6),
            # False: tokens were used but no price is known (never shown as $0).
            "cost_known": usage.cost_known,
        }
        for name, seconds, usage in rows
    ]
