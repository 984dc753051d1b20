"""treerag-kg: TreeRAG's heading-aware order plus a graph column from the picked long leaves."""

from __future__ import annotations

from typing import Any

from treerag_core.base.names import Locator
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocateResult, RetrievalGroup
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval
from treerag_core.strategies.graph.retrieve import (
    FusionParams,
    graph_hits,
    search_leaves,
    with_graph,
)
from treerag_core.strategies.graph.search import GraphSearchOptions
from treerag_core.strategies.treerag.strategy import TreeRAG
from treerag_core.strategies.treerag.structured import score_scope, structure_options


@register
class TreeRAGKG(TreeRAG):
    """Step 1 is TreeRAG's own. In step 2, every picked leaf that has a graph (the long ones)
    is searched by personalised PageRank over its concept graph; each chunk's graph score
    (0..1 within its leaf) plus its heading-aware score decides which of the leaf's chunks
    hold the leaf's places in treerag's order (or, with `in_pool`, is added to that order
    across leaves). Chunks elsewhere keep treerag's score. The answer also reads the paths."""

    name = "treerag-kg"
    label = (
        "TreeRAG + leaf knowledge graphs: a long leaf's graph reorders its chunks; "
        "paths go to the answer"
    )
    options_type = GraphSearchOptions
    searches_each_leaf = True  # each searched graph's table shows its leaf's top k

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        # The structure options are treerag's (this strategy's own options are the graph's).
        return TreeRAG().locate_inputs(settings.with_(strategy=TreeRAG.name), locator)

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        settings = ctx.settings
        options = settings.option(self.name, GraphSearchOptions())
        scores = score_scope(ctx, structure_options(settings, TreeRAG.name))
        found = search_leaves(
            ctx.index, located.leaves, ctx.question, ctx.query_vector, ctx.tokenize, options
        )
        # in_pool False (default): the graph reorders chunks inside their leaf only; every
        # leaf keeps its own scores against the others (measured: docs/graphs.md).
        params = FusionParams(
            str(settings.retrieve.fusion), settings.retrieve.rrf_k, options.graph_weight
        )
        boosted, column = with_graph(
            ctx.index, scores, found.results, params, within_leaf=not options.in_pool
        )
        if located.locator == Locator.LOCAL:
            documents, leaves = located.documents, ()
        else:
            documents, leaves = (), tuple(leaf.node_id for leaf in located.leaves)
        size = settings.retrieve.candidate_window
        hits = tuple(
            graph_hits(
                ctx.index, boosted, column, found.results, size, ctx.question, documents, leaves
            )
        )
        label = "heading-aware order + graph column of the picked long leaves"
        groups = [RetrievalGroup(label, hits, leaf_id=None, sub_query=ctx.question, kind="scope")]
        for leaf in located.leaves:  # each searched graph: its leaf's best chunks in that order
            if leaf.node_id in found.results:
                own = graph_hits(
                    ctx.index,
                    boosted,
                    column,
                    found.results,
                    settings.retrieve.top_k_per_leaf,
                    ctx.question,
                    leaves=(leaf.node_id,),
                )
                groups.append(
                    RetrievalGroup(
                        ctx.index.nodes[leaf.node_id].heading_path,
                        tuple(own),
                        leaf_id=leaf.node_id,
                        sub_query=leaf.sub_query,
                        kind="graph",
                    )
                )
        return Retrieval(tuple(groups), hits, found.sections)
