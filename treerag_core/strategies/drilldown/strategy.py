"""Strategy `drilldown` (seed 001): document by K-Type summary → parent section → passages."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, ClassVar

from treerag_core.base.errors import QueryError
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import LocatedLeaf, LocateResult, RetrievalGroup
from treerag_core.index.vectors.attach import store_for
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults
from treerag_core.strategies.drilldown.search import (
    DrilldownOptions,
    DrilldownResult,
    child_hits,
    context_sections,
    document_scores,
    parent_scores,
    routing_scores,
)

NAME = "drilldown"


@register
class Drilldown(StrategyDefaults):
    """Step 1 picks the document(s) by their K-Type summaries, then the section(s) inside them
    by their own vectors; step 2 searches only the chosen sections' passages (hybrid)."""

    name: ClassVar[str] = NAME
    label: ClassVar[str] = "Drill-down: document summary → section → passages (seed 001)"
    reads_structure: ClassVar[bool] = True
    locates: ClassVar[bool] = True
    # uses_locator stays False: its own document and section layers pick
    options_type: ClassVar[type | None] = DrilldownOptions

    def options(self, settings: QuerySettings) -> DrilldownOptions:
        return settings.option(NAME, DrilldownOptions())

    def locate_inputs(self, settings: QuerySettings, locator: str = NAME) -> dict[str, Any]:
        opts = self.options(settings)
        return {
            "documents": opts.documents,
            "parents": opts.parents,
            "doc_signal": opts.doc_signal,
            "parent_signal": opts.parent_signal,
            **settings.retrieve.fusion_args._asdict(),
        }

    def _upper_layers(self, ctx: QueryContext) -> DrilldownResult:
        opts, params = self.options(ctx.settings), ctx.settings.retrieve.fusion_args
        qvec, tokens = ctx.query_vector(ctx.question), ctx.tokenize(ctx.question)
        store = store_for(ctx.index)
        docs = document_scores(
            ctx.index, qvec, tokens, params, ctx.scope, opts.doc_signal, opts.documents, store
        )
        chosen = [c.item_id for c in docs if c.chosen]
        parents = parent_scores(
            ctx.index,
            qvec,
            tokens,
            chosen,
            params,
            opts.parent_signal,
            opts.parents,
            store,
            ctx.scope,
        )
        return DrilldownResult(docs, parents, ())

    def locate(self, ctx: QueryContext) -> LocateResult:
        started = time.perf_counter()
        if ctx.leaves:
            raise QueryError("drilldown picks its own sections; run treerag to pick leaves by hand")
        layers = self._upper_layers(ctx)
        if not layers.documents:
            return LocateResult(
                (), "No documents in scope.", NAME, inputs=self.locate_inputs(ctx.settings)
            )
        leaves = tuple(
            LocatedLeaf(c.item_id, c.label, ctx.question, round(c.score, 4), NAME)
            for c in layers.parents
            if c.chosen
        )
        docs = ", ".join(f"{c.label} ({c.score:.3f})" for c in layers.documents if c.chosen)
        opts = self.options(ctx.settings)
        by = {"summary": "K-Type summary", "passages": "best passage", "both": "summary + passage"}
        thinking = (
            f"Document layer: {len(layers.documents)} documents scored by "
            f"{by[opts.doc_signal]}; chose {docs}. Parent layer: {len(layers.parents)} sections "
            f"of the chosen document(s) scored by {by[opts.parent_signal]} "
            f"(section summary = heading path + summary); chose {len(leaves)}."
        )
        return LocateResult(
            leaves,
            thinking,
            NAME,
            seconds=time.perf_counter() - started,
            inputs=self.locate_inputs(ctx.settings),
            documents=tuple(c.item_id for c in layers.documents if c.chosen),
            document_scores=routing_scores(ctx.index, layers.documents, opts.doc_signal),
        )

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        opts, params = self.options(ctx.settings), ctx.settings.retrieve.fusion_args
        qvec, tokens = ctx.query_vector(ctx.question), ctx.tokenize(ctx.question)
        parent_ids = [leaf.node_id for leaf in located.leaves]
        children = child_hits(
            ctx.index,
            qvec,
            tokens,
            parent_ids,
            params,
            opts.children,
            ctx.question,
            store_for(ctx.index),
        )
        # The upper layers again, for their tables (deterministic; with the passage signal
        # one more flat pass): the chosen sections stay step 1's, which may be a stored one.
        upper = self._upper_layers(ctx)
        parents = tuple(replace(c, chosen=c.item_id in parent_ids) for c in upper.parents)
        result = DrilldownResult(upper.documents, parents, children)
        groups = tuple(
            RetrievalGroup(
                located_leaf.heading_path,
                tuple(h for h in children if h.chunk.source_node_id == located_leaf.node_id),
                located_leaf.node_id,
                ctx.question,
                "layer",
            )
            for located_leaf in located.leaves
        )
        sections = context_sections(ctx.index, result, ctx.language, opts.parent_chars)
        return Retrieval(groups, children, sections)
