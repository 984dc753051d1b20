"""Structure-aware ranking without routing (`flat-structured`), and the pieces treerag shares.

Every chunk in scope is scored by its own vector and by BM25 over `heading path + passage`
(scope-wide IDF, the original question), optionally plus its section's evidence; the best
`candidate_window` go to the cross-encoder, which (for strategies that read structure) reads
`heading path + passage` too. No section is ever cut: this is the yardstick that treerag's
routing must not fall below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings, check_ranges, setting
from treerag_core.base.types import LocateResult, RetrievalGroup
from treerag_core.search.structure import StructuredScores, structured_scores, window_hits
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults


@dataclass(frozen=True)
class StructureOptions:
    """Settings of the structure-aware ranking (flat-structured, and treerag's local path)."""

    # Section evidence added to each chunk's fused score. Measured on the dev sets: +1 point on
    # the laws in doc scope, -1.7 in corpus scope, so it stays off by default (ablation).
    section_weight: float = setting(
        0.0,
        label="Section weight",
        help="section evidence added to each chunk's score",
        min=0,
        max=1,
    )
    # treerag only: keep the best N documents (by their share of the window) when the scope
    # holds more than N. Measured: 1 loses 5-6 points; 2 gains 1.4-1.9 on both sets (corpus).
    route_documents: int = setting(
        2, label="Documents kept by routing", help="treerag keeps the best N documents", min=0
    )
    # treerag only: cut documents only when a second reader, the cross-encoder, puts the
    # unrouted window's best passage in a kept document; without one (Chinese, rerank off)
    # the fused order that proposed the cut cannot confirm it, so nothing is cut.
    route_check: bool = True

    def __post_init__(self) -> None:
        check_ranges(self)


def structure_options(settings: QuerySettings, strategy: str) -> StructureOptions:
    return settings.option(strategy, StructureOptions())


def score_scope(ctx: QueryContext, options: StructureOptions) -> StructuredScores:
    """Every chunk in scope, scored with the original question (never a sub-query)."""
    retrieve = ctx.settings.retrieve
    return structured_scores(
        ctx.index,
        ctx.scope,
        ctx.query_vector(ctx.question),
        ctx.tokenize(ctx.question),
        dense_weight=retrieve.dense_weight,
        section_weight=options.section_weight,
        fusion=str(retrieve.fusion),
        rrf_k=retrieve.rrf_k,
    )


def structured_retrieval(
    ctx: QueryContext,
    scores: StructuredScores,
    documents: Sequence[str] = (),
    leaves: Sequence[str] = (),
) -> Retrieval:
    """The window of the structure-aware order as one group (only chunks of `documents` or of
    `leaves`, when given)."""
    size = ctx.settings.retrieve.candidate_window
    hits = tuple(window_hits(ctx.index, scores, size, ctx.question, documents, leaves))
    if leaves:
        label = f"{len(leaves)} picked leaves, heading-aware, one score across them"
    elif documents:
        label = f"every section of {len(documents)} routed document(s), heading-aware"
    else:
        label = "every section in scope, heading-aware"
    group = RetrievalGroup(label, hits, leaf_id=None, sub_query=ctx.question, kind="scope")
    return Retrieval((group,), hits)


@register
class FlatStructured(StrategyDefaults):
    """treerag's structure-aware ranking with no routing: the comparison routing must pass."""

    name = StrategyName.FLAT_STRUCTURED.value
    label = "Every chunk in scope, read with its heading path (BM25 and cross-encoder); no routing"
    reads_structure = True
    options_type = StructureOptions

    def locate(self, ctx: QueryContext) -> LocateResult:
        return LocateResult.skipped(
            "No routing: every chunk in scope is ranked, each read with its heading path."
        )

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        scores = score_scope(ctx, structure_options(ctx.settings, self.name))
        return structured_retrieval(ctx, scores)
