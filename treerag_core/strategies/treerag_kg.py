"""treerag-kg: TreeRAG's located leaves, searched by dense + BM25 + the leaf's knowledge graph."""

from __future__ import annotations

from typing import Any, ClassVar

from treerag_core.graph.retrieve import FusionParams, pool_with_graph, retrieve_with_graphs
from treerag_core.graph.search import GraphSearchOptions
from treerag_core.settings import QuerySettings
from treerag_core.strategies import QueryContext, Retrieval, get_strategy, register
from treerag_core.types import LocateResult, RetrievalGroup

BASE = "treerag"  # step 1 is TreeRAG's own: the graph only changes what happens in a leaf


@register
class TreeRAGKG:
    """Long leaves (those with a graph) get a third retriever: personalised PageRank over the
    leaf's concept graph, mapped back to chunks. Short leaves are searched as in treerag.
    The answer reads the graph paths (`A —relation→ B`, with their source chunks)."""

    name: ClassVar[str] = "treerag-kg"
    label: ClassVar[str] = "TreeRAG + leaf knowledge graphs (graph paths as a third retriever)"
    reads_structure: ClassVar[bool] = True
    locates: ClassVar[bool] = True
    needs_gold_leaves: ClassVar[bool] = False
    options_type: ClassVar[type | None] = GraphSearchOptions

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        return get_strategy(BASE).effective_settings(settings)

    def locate_inputs(self, settings: QuerySettings) -> dict[str, Any]:
        return get_strategy(BASE).locate_inputs(settings)

    def locate(self, ctx: QueryContext) -> LocateResult:
        return get_strategy(BASE).locate(ctx)

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        settings = ctx.settings
        options = settings.option(self.name, GraphSearchOptions())
        params = FusionParams(
            method=str(settings.retrieve.fusion),
            dense_weight=settings.retrieve.dense_weight,
            rrf_k=settings.retrieve.rrf_k,
            graph_weight=options.graph_weight,
        )
        found = retrieve_with_graphs(
            ctx.index,
            located.leaves,
            ctx.question,
            ctx.query_vector,
            ctx.tokenize,
            params,
            settings.retrieve.top_k_per_leaf,
            options,
        )
        groups = tuple(
            RetrievalGroup(
                label=ctx.index.nodes[leaf.node_id].heading_path,
                hits=tuple(found.hits[leaf.node_id]),
                leaf_id=leaf.node_id,
                sub_query=leaf.sub_query,
                kind="graph" if leaf.node_id in found.results else "leaf",
            )
            for leaf in located.leaves
        )
        pooled = pool_with_graph([g.hits for g in groups], params)
        return Retrieval(
            groups, tuple(pooled[: settings.retrieve.candidate_window]), found.sections
        )
