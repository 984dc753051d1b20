"""Pieces several strategies share: the built-ins' menu order and the flat base class."""

from __future__ import annotations

from typing import Any, ClassVar

from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocateResult
from treerag_core.search.retrieval import pool, search_scope
from treerag_core.strategies.base import QueryContext, Retrieval

# Menus list the built-ins in this order, then plug-ins by name.
BUILTIN_ORDER: tuple[str, ...] = StrategyName.values()


class FlatSearch:
    """Structure-blind search of every chunk in scope: what a LlamaIndex or Haystack user builds.

    Subclasses fix the fusion weights and the reranker; they never read headings, so they
    stay the yardstick for strategies that do.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    reads_structure: ClassVar[bool] = False
    locates: ClassVar[bool] = False
    needs_gold_leaves: ClassVar[bool] = False
    searches_each_leaf: ClassVar[bool] = False
    uses_locator: ClassVar[bool] = False
    options_type: ClassVar[type | None] = None

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        return settings.with_(strategy=self.name)

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        return {}

    def locate(self, ctx: QueryContext) -> LocateResult:
        return LocateResult.skipped("Flat search: no locating, every chunk in scope is searched.")

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        retrieve = ctx.settings.retrieve
        group = search_scope(
            ctx.index, ctx.question, ctx.scope, retrieve, ctx.query_vector, ctx.tokenize
        )
        return Retrieval((group,), pool((group,), retrieve))
