"""TreeRAG: pick 1-5 leaves on the document tree (LLM or local), then hybrid search inside them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from treerag_core.answer.synthesis import LLM_OFF
from treerag_core.base.errors import LLMError
from treerag_core.base.names import Locator, StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import DocumentScore, Fallback, Language, LocateResult
from treerag_core.index.corpus import CorpusIndex
from treerag_core.search.locators import (
    LeafScores,
    fallback_reason,
    keyword_locate,
    llm_locate,
    manual_locate,
    score_leaves,
)
from treerag_core.search.retrieval import pool, search_leaf
from treerag_core.search.routing import document_table
from treerag_core.search.structure import route
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults
from treerag_core.strategies.treerag.structured import (
    StructureOptions,
    score_scope,
    structure_options,
    structured_retrieval,
)

# Which settings each locator reads: a stored step 1 is reused while these are unchanged.
_LOCAL_INPUTS = ("max_leaves",)
_FUSION_INPUTS = ("fusion", "dense_weight", "rrf_k", "candidate_window")


def corpus_language(index: CorpusIndex, scope: Sequence[str] | None) -> Language:
    """The majority language of the documents in scope (the locate prompt's language)."""
    langs = [d.language for d in index.documents if scope is None or d.doc_id in scope]
    return "zh" if langs.count("zh") > len(langs) / 2 else "en"


def _local(ctx: QueryContext) -> LocateResult:
    """The local step 1: documents routed when the scope holds more than `route_documents`,
    sections ranked by the heading-aware window (scores shown, never a cut)."""
    started = time.perf_counter()
    options = structure_options(ctx.settings, TreeRAG.name)
    scores = score_scope(ctx, options)
    result = route(
        ctx.index,
        scores,
        ctx.settings.retrieve.candidate_window,
        ctx.question,
        ctx.settings.locate.max_leaves,
        options.route_documents,
        judge=ctx.rerank_scores if options.route_check else None,
    )
    return replace(result, seconds=time.perf_counter() - started)


def picked_documents(
    index: CorpusIndex, located: LocateResult, scores: LeafScores
) -> tuple[DocumentScore, ...]:
    """The routing table of an LLM pick: each document's best section by the local scores the
    LLM was shown, kept when the LLM picked one of its sections."""
    best: dict[str, float] = {}
    for leaf, value in zip(scores.leaf_ids, scores.scores.tolist(), strict=True):
        doc = index.nodes[leaf].doc_id
        best[doc] = max(best.get(doc, value), value)
    kept = {index.nodes[leaf.node_id].doc_id for leaf in located.leaves}
    ranked = sorted(best.items(), key=lambda item: -item[1])
    return document_table(index, ranked, kept, "best section score; the LLM picked the sections")


@register
class TreeRAG(StrategyDefaults):
    name = StrategyName.TREERAG.value
    label = (
        "Heading-aware ranking of every chunk, routed to the best documents; an LLM or manual "
        "pick searches inside the picked leaves"
    )
    reads_structure = True
    locates = True
    uses_locator = True
    options_type = StructureOptions

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        loc, ret, llm = settings.locate, settings.retrieve, settings.llm
        if locator == Locator.LOCAL:
            options = structure_options(settings, self.name)
            return {
                **{k: getattr(loc, k) for k in _LOCAL_INPUTS},
                **{k: getattr(ret, k) for k in _FUSION_INPUTS},
                "section_weight": options.section_weight,
                "route_documents": options.route_documents,
                "route_check": options.route_check,
                # the routing check reads step 2b's scorer
                **({"rerank": settings.rerank.to_dict()} if options.route_check else {}),
            }
        if locator == Locator.KEYWORD:
            return {"max_leaves": loc.max_leaves}
        if locator == Locator.LLM:
            return {
                "max_leaves": loc.max_leaves,
                "budget_tokens": loc.budget_tokens,
                "provider": str(llm.provider),
                "base_url": llm.base_url,
                "locate_model": llm.locate_model,
                "context_tokens": llm.context_tokens,
            }
        return {}  # manual / oracle picks read no settings

    def locate(self, ctx: QueryContext) -> LocateResult:
        index, question, s = ctx.index, ctx.question, ctx.settings
        if ctx.leaves:
            return manual_locate(index, question, ctx.leaves)
        locator = s.locate.locator
        if locator == Locator.KEYWORD:
            return keyword_locate(index, question, ctx.tokenize, s.locate, ctx.scope)
        if locator == Locator.LOCAL:
            return _local(ctx)
        if ctx.client is None:
            reason = LLM_OFF if not s.llm.enabled else "no_api_key"
            detail = "LLM switched off" if reason == LLM_OFF else "no API key"
            ctx.fallbacks.append(Fallback("locate", reason, f"{detail}: local locator"))
            return _local(ctx)
        started = time.perf_counter()
        qvec = ctx.query_vector(question)
        scores = score_leaves(index, question, qvec, ctx.tokenize, s.retrieve, ctx.scope)
        try:
            language = corpus_language(index, ctx.scope)
            picked = llm_locate(index, question, ctx.client, s, language, scores, ctx.scope)
            return replace(picked, document_scores=picked_documents(index, picked, scores))
        except LLMError as exc:
            ctx.fallbacks.append(fallback_reason(exc))
            return replace(_local(ctx), seconds=time.perf_counter() - started)

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        """Local pick: the heading-aware window of the routed documents. LLM, keyword or
        manual pick: the same window cut to the picked leaves, so chunks of different leaves
        keep one comparable score (scope-wide IDF, the original question, no per-leaf cut)."""
        scores = score_scope(ctx, structure_options(ctx.settings, self.name))
        if located.locator == Locator.LOCAL:
            return structured_retrieval(ctx, scores, located.documents)
        leaves = tuple(leaf.node_id for leaf in located.leaves)
        return structured_retrieval(ctx, scores, leaves=leaves)


def leaf_search(ctx: QueryContext, located: LocateResult) -> Retrieval:
    """Hybrid search inside each picked leaf with its sub-query, pooled (the oracle's step 2:
    the ceiling of a perfect section choice, measured as before)."""
    groups = tuple(
        search_leaf(
            ctx.index,
            leaf.node_id,
            leaf.sub_query,
            ctx.settings.retrieve,
            ctx.query_vector,
            ctx.tokenize,
        )
        for leaf in located.leaves
    )
    return Retrieval(groups, pool(groups, ctx.settings.retrieve))
