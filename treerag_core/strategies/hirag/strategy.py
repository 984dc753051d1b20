"""HiRAG's five modes (seed 002) as strategies over the corpus graph: naive, local, global,
bridge and hi. They read no headings; text units are passages, so every metric applies."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from treerag_core.base.names import Fusion
from treerag_core.base.settings import FusionArgs, QuerySettings
from treerag_core.base.types import Fallback, LocateResult, RetrievalGroup, RetrievedChunk
from treerag_core.search.retrieval import fused_hits
from treerag_core.strategies import register
from treerag_core.strategies.base import QueryContext, Retrieval, StrategyDefaults
from treerag_core.strategies.hirag.build import load_or_build
from treerag_core.strategies.hirag.retriever import (
    HiragOptions,
    HiragRetriever,
    Mode,
    budget_chunks,
)

OPTIONS_KEY = "hirag"  # the five modes share one options object, stored under this name


def hirag_options(settings: QuerySettings) -> HiragOptions:
    return settings.option(OPTIONS_KEY, HiragOptions())


def score_rows(
    ctx: QueryContext, rows: np.ndarray, order: str, dense_only: bool = False
) -> tuple[RetrievedChunk, ...]:
    """Hits for chunk rows (given in graph order): dense and BM25 over the scope, fused.

    order "hybrid" ranks them by the fused score; "graph" keeps the order they came in.
    """
    if not len(rows):
        return ()
    index = ctx.index
    qvec = ctx.query_vector(ctx.question)
    scope_rows, dense_all, bm25_all = index.score_scope(ctx.scope, qvec, ctx.tokenize(ctx.question))
    where = {int(r): i for i, r in enumerate(scope_rows)}
    pick = np.asarray([where[int(r)] for r in rows], dtype=np.int64)
    settings = ctx.settings.retrieve
    return fused_hits(
        index,
        rows,
        dense_all[pick],
        bm25_all[pick],
        fusion=FusionArgs(Fusion.WEIGHTED, 1.0, settings.rrf_k)
        if dense_only
        else settings.fusion_args,
        sub_query=ctx.question,
        given_order=order == "graph",
        pooled=True,
    )


class _HiragMode(StrategyDefaults):
    """Shared behaviour of the five modes; subclasses set `name`, `label` and `mode`."""

    mode: ClassVar[Mode]
    options_type: ClassVar[type | None] = HiragOptions

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        """The strategy, and HiRAG's QueryParam (top_k, top_m, level, budgets) written out,
        so the trace records what the mode ran with even when it is the defaults."""
        return settings.with_(strategy=self.name).with_option(OPTIONS_KEY, hirag_options(settings))

    def locate(self, ctx: QueryContext) -> LocateResult:
        return LocateResult.skipped(f"HiRAG {self.mode.value}: the corpus graph, no locating.")

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        options = hirag_options(ctx.settings)
        window = ctx.settings.retrieve.candidate_window
        if self.mode is Mode.NAIVE:
            return self._naive(ctx, options, window)
        started = time.perf_counter()
        hindex, built = load_or_build(ctx.index, embedder=ctx.embedder)
        if built:
            seconds = time.perf_counter() - started
            ctx.fallbacks.append(
                Fallback(
                    "retrieve",
                    "graph_built",
                    f"the index had no HiRAG graph: built it now ({seconds:.1f} s); "
                    "`index --hirag` builds it ahead of time",
                )
            )
        retriever = retriever_for(hindex, ctx.index)
        context = retriever.retrieve(
            self.mode,
            ctx.query_vector(ctx.question),
            ctx.tokenize(ctx.question),
            options,
            ctx.scope,
        )
        for note in context.notes:
            reason = "no_path" if note.startswith("bridge: no path") else "graph_context"
            ctx.fallbacks.append(Fallback("retrieve", reason, note))
        rows = np.asarray([ctx.index.chunk_row(c) for c in context.unit_ids], dtype=np.int64)
        hits = score_rows(ctx, rows, options.unit_order)
        group = RetrievalGroup(
            f"graph text units ({self.mode.value})", tuple(hits), None, ctx.question, "graph"
        )
        return Retrieval((group,), tuple(hits[:window]), context.sections)

    def _naive(self, ctx: QueryContext, options: HiragOptions, window: int) -> Retrieval:
        """Chunks by vector search over the scope, within naive_text_unit_tokens."""
        qvec = ctx.query_vector(ctx.question)
        rows, dense, _ = ctx.index.score_scope(ctx.scope, qvec, [])
        order = np.argsort(-dense, kind="stable")
        chunks = budget_chunks(
            [ctx.index.chunks[int(rows[i])] for i in order], options.naive_text_unit_tokens
        )
        picked = np.asarray([ctx.index.chunk_row(c.chunk_id) for c in chunks], dtype=np.int64)
        hits = score_rows(ctx, picked, "graph", dense_only=True)  # already in cosine order
        hits = [replace(h, leaf_rank=i, pooled_rank=i) for i, h in enumerate(hits, start=1)]
        group = RetrievalGroup("vector search (naive)", tuple(hits), None, ctx.question, "scope")
        return Retrieval((group,), tuple(hits[:window]), ())


_RETRIEVERS: dict[tuple[int, str], tuple[Any, HiragRetriever]] = {}


def retriever_for(hindex: Any, index: Any) -> HiragRetriever:
    key = (id(index), hindex.fingerprint)
    cached = _RETRIEVERS.get(key)
    if cached is None or cached[0] is not index:
        cached = _RETRIEVERS[key] = (index, HiragRetriever(hindex, index.chunks))
        while len(_RETRIEVERS) > 8:
            _RETRIEVERS.pop(next(iter(_RETRIEVERS)))
    return cached[1]


def _mode_strategy(class_name: str, name: str, label: str, mode: Mode) -> type[_HiragMode]:
    """One registered strategy per mode: the five differ only in name, label and mode."""
    attrs = {"name": name, "label": label, "mode": mode, "__module__": __name__}
    return register(type(class_name, (_HiragMode,), attrs))


HiragNaive = _mode_strategy(
    "HiragNaive", "hirag-naive", "HiRAG naive: chunks by vector search", Mode.NAIVE
)
HiragLocal = _mode_strategy(
    "HiragLocal",
    "hirag-local",
    "HiRAG hi_local: top entities, their 1-hop relations and passages",
    Mode.LOCAL,
)
HiragGlobal = _mode_strategy(
    "HiragGlobal",
    "hirag-global",
    "HiRAG hi_global: reports of the top entities' communities, plus passages",
    Mode.GLOBAL,
)
HiragBridge = _mode_strategy(
    "HiragBridge",
    "hirag-bridge",
    "HiRAG hi_bridge: a path through each community's key entities, its passages",
    Mode.BRIDGE,
)
Hirag = _mode_strategy(
    "Hirag",
    "hirag",
    "HiRAG hi: entities, relations, reports, bridge path and their passages",
    Mode.HI,
)

MODES: tuple[type[_HiragMode], ...] = (HiragNaive, HiragLocal, HiragGlobal, HiragBridge, Hirag)
