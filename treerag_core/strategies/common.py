"""Pieces several strategies share: the built-ins' menu order and the flat base class."""

from __future__ import annotations

from typing import ClassVar

from treerag_core.base.names import Fusion, StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocateResult
from treerag_core.search.retrieval import pool, search_scope
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults

# Menus list the built-ins in this order, then plug-ins by name.
BUILTIN_ORDER: tuple[str, ...] = StrategyName.values()


class FlatSearch(StrategyDefaults):
    """Structure-blind search of every chunk in scope: what a LlamaIndex or Haystack user builds.

    Subclasses fix the fusion weights and the reranker; they never read headings, so they
    stay the yardstick for strategies that do.
    """

    # One retriever alone, no rerank: its dense weight (1.0 dense, 0.0 BM25); None: the
    # user's fusion and reranker.
    single_retriever_weight: ClassVar[float | None] = None

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        weight = self.single_retriever_weight
        if weight is None:
            return settings.with_(strategy=self.name)
        return settings.with_(
            strategy=self.name,
            retrieve=settings.retrieve.with_(fusion=Fusion.WEIGHTED, dense_weight=weight),
            rerank=settings.rerank.with_(enabled=False),
        )

    def locate(self, ctx: QueryContext) -> LocateResult:
        return LocateResult.skipped("Flat search: no locating, every chunk in scope is searched.")

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        retrieve = ctx.settings.retrieve
        group = search_scope(
            ctx.index, ctx.question, ctx.scope, retrieve, ctx.query_vector, ctx.tokenize
        )
        return Retrieval((group,), pool((group,), retrieve))
