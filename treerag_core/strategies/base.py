"""The strategy protocol: one object per way of finding evidence, registered in one place.

A strategy owns step 1 (locate) and step 2 (retrieve: candidates in a pooled order, cut to
the candidate window). The pipeline owns what every strategy shares: question checks, the
trace, reuse of a stored step 1, the cross-encoder (step 2b) and the answer (step 3).
Adding a strategy is one module that defines a class with these members and calls
`register(...)` at import, plus its tests (see docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import (
    ContextSection,
    Language,
    LocateResult,
    RetrievalGroup,
    RetrievedChunk,
)

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex
    from treerag_core.search.rerank import Reading


@dataclass
class QueryContext:
    """What one run of a strategy may read. Built by the pipeline; strategies never mutate it
    except for `fallbacks` and `notes`, which end up in the trace."""

    index: CorpusIndex
    question: str
    language: Language
    settings: QuerySettings  # already the strategy's effective settings
    scope: Sequence[str] | None  # document ids searched (None: all)
    query_vector: Callable[[str], np.ndarray]  # cached embedding of any text
    tokenize: Callable[[str], list[str]]
    client: Any = None  # an LLM client (llm.LLMClient) or None: no LLM for this run
    embedder: Any = None  # the engine's embedder (e.g. to build a graph's entity vectors)
    leaves: Sequence[str] | None = None  # manual or oracle leaves (skip the locator)
    fallbacks: list = field(default_factory=list)  # types.Fallback appended by steps
    # Step 2b's scorer (the cross-encoder with the strategy's reading) over some hits, in
    # input order; None when step 2b keeps the fused order (off, Chinese, model failed).
    # A locator may use it to check its own pick against the final reader (treerag's routing).
    rerank_scores: Callable[[Sequence[RetrievedChunk]], Reading | None] = field(
        default=lambda hits: None
    )


@dataclass(frozen=True)
class Retrieval:
    """Step 2's output: per-group hits, the pooled candidates (best first, at most the window)
    and any extra context a strategy assembles for the answer (graph paths, summaries...)."""

    groups: tuple[RetrievalGroup, ...]
    candidates: tuple[RetrievedChunk, ...]
    sections: tuple[ContextSection, ...] = ()


class Strategy(Protocol):
    """One way of finding evidence. Stateless: one instance serves every question."""

    name: ClassVar[str]  # the registry key, e.g. "treerag"
    label: ClassVar[str]  # one line for menus and --help
    reads_structure: ClassVar[bool]  # uses headings / the tree (flat baselines: False)
    locates: ClassVar[bool]  # has a step 1 whose result can be stored and reused
    needs_gold_leaves: ClassVar[bool]  # oracle: only runnable with gold evidence (evaluation)
    # Searches each picked leaf on its own, keeping its top `retrieve.top_k_per_leaf` (the
    # only strategies that read that setting).
    searches_each_leaf: ClassVar[bool]
    # Its step 1 is the section locator, reading `locate.locator` and `locate.max_leaves`
    # (the CLI notes --locator / --max-leaves as unused for the others).
    uses_locator: ClassVar[bool]
    options_type: ClassVar[type | None]  # its own frozen settings dataclass, or None

    def effective_settings(self, settings: QuerySettings) -> QuerySettings:
        """The settings this strategy really runs with (e.g. flat-bm25: dense weight 0)."""
        ...

    def locate_inputs(self, settings: QuerySettings, locator: str) -> dict[str, Any]:
        """The settings `locator` (the one that made a step-1 result) reads; a stored step 1
        is reused only while these are unchanged."""
        ...

    def locate(self, ctx: QueryContext) -> LocateResult:
        """Step 1. Strategies that do not locate return `LocateResult.skipped(...)`."""
        ...

    def retrieve(self, ctx: QueryContext, located: LocateResult) -> Retrieval:
        """Step 2: candidates for the cross-encoder, best first, at most the window."""
        ...


class StrategyDefaults:
    """The `Strategy` members most strategies share: every flag off, no options of its own,
    the settings as given (but the name), no settings read by a step 1. A strategy
    subclasses it and sets only what differs (plus `name`, `label`, `locate`, `retrieve`)."""

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
