"""treerag-kg: TreeRAG's located leaves, searched by dense + BM25 + the leaf's knowledge graph."""

from __future__ import annotations

from dataclasses import replace

from treerag_core.graph.retrieve import FusionParams, pool_with_graph, retrieve_with_graphs
from treerag_core.graph.search import GraphSearchOptions
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval
from treerag_core.strategies.treerag import TreeRAG
from treerag_core.types import LocateResult, RetrievalGroup


@register
class TreeRAGKG(TreeRAG):
    """Step 1 is TreeRAG's own. In step 2, leaves with a graph (the long ones) get a third
    retriever: personalised PageRank over the leaf's concept graph, mapped back to chunks;
    short leaves are searched as in treerag. The answer also reads the graph paths."""

    name = "treerag-kg"
    label = "TreeRAG + leaf knowledge graphs: graph paths join dense and BM25 in long leaves"
    options_type = GraphSearchOptions

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
        window = settings.retrieve.candidate_window
        # in_pool False: the graph only decides which chunks each leaf hands on; the pool
        # is then ranked by dense + BM25 alone, as treerag ranks it.
        pool_params = params if options.in_pool else replace(params, graph_weight=0.0)
        pooled = pool_with_graph([g.hits for g in groups], pool_params, window)
        return Retrieval(groups, tuple(pooled), found.sections)
