"""TreeRAG: pick 1-5 leaves on the document tree (LLM or local), then hybrid search inside them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from treerag_core.errors import LLMError
from treerag_core.index import CorpusIndex
from treerag_core.locators import (
    fallback_reason,
    keyword_locate,
    llm_locate,
    local_locate,
    manual_locate,
    score_leaves,
)
from treerag_core.names import Locator, StrategyName
from treerag_core.retrieval import pool, search_leaf
from treerag_core.settings import QuerySettings
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval
from treerag_core.types import Fallback, Language, LocateResult

# Which settings each locator reads: a stored step 1 is reused while these are unchanged.
_LOCAL_INPUTS = ("max_leaves", "cutoff", "heading_weight")
_FUSION_INPUTS = ("fusion", "dense_weight", "rrf_k")


def corpus_language(index: CorpusIndex, scope: Sequence[str] | None) -> Language:
    """The majority language of the documents in scope (the locate prompt's language)."""
    langs = [d.language for d in index.documents if scope is None or d.doc_id in scope]
    return "zh" if langs.count("zh") > len(langs) / 2 else "en"


def _local(ctx: QueryContext) -> LocateResult:
    s = ctx.settings
    qvec = ctx.query_vector(ctx.question)
    return local_locate(
        ctx.index, ctx.question, qvec, ctx.tokenize, s.locate, s.retrieve, ctx.scope
    )


@register
class TreeRAG:
    name = StrategyName.TREERAG.value
    label = "Locate leaves on the tree (LLM or local), then hybrid search inside them"
    reads_structure = True
    locates = True
    needs_gold_leaves = False
    options_type = None

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        return settings.with_(strategy=self.name)

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        loc, ret, llm = settings.locate, settings.retrieve, settings.llm
        if locator == Locator.LOCAL:
            return {
                **{k: getattr(loc, k) for k in _LOCAL_INPUTS},
                **{k: getattr(ret, k) for k in _FUSION_INPUTS},
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
            reason = "llm_off" if not s.llm.enabled else "no_api_key"
            detail = "LLM switched off" if reason == "llm_off" else "no API key"
            ctx.fallbacks.append(Fallback("locate", reason, f"{detail}: local locator"))
            return _local(ctx)
        started = time.perf_counter()
        qvec = ctx.query_vector(question)
        scores = score_leaves(index, question, qvec, ctx.tokenize, s.locate, s.retrieve, ctx.scope)
        try:
            language = corpus_language(index, ctx.scope)
            return llm_locate(index, question, ctx.client, s, language, scores, ctx.scope)
        except LLMError as exc:
            ctx.fallbacks.append(fallback_reason(exc))
            return replace(_local(ctx), seconds=time.perf_counter() - started)

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
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
