"""Oracle sections: search exactly the leaves holding the gold evidence (evaluation only)."""

from __future__ import annotations

from treerag_core.base.errors import QueryError
from treerag_core.base.names import StrategyName
from treerag_core.base.types import LocateResult
from treerag_core.search.locators import manual_locate
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults
from treerag_core.strategies.treerag.strategy import leaf_search


@register
class OracleSections(StrategyDefaults):
    """The ceiling of routing: a perfect section choice, then treerag's step 2."""

    name = StrategyName.ORACLE_SECTIONS.value
    label = "The gold evidence's leaves, then hybrid search inside them (evaluation only)"
    reads_structure = True
    locates = True
    needs_gold_leaves = True
    searches_each_leaf = True
    # uses_locator stays False: its step 1 is the gold leaves

    def locate(self, ctx: QueryContext) -> LocateResult:
        if not ctx.leaves:
            raise QueryError("oracle-sections needs the gold leaves (evaluation only)")
        return manual_locate(ctx.index, ctx.question, ctx.leaves, source="oracle")

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        return leaf_search(ctx, located)
