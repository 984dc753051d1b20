"""The fixed three-step pipeline around a strategy: locate, retrieve + rerank, synthesize.

A strategy (treerag_core.strategies) owns steps 1 and 2; this module owns what they share:
question checks, the trace and its effective settings, reuse of a stored step 1, the
cross-encoder over the pooled candidates, the answer's context and the answer itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from treerag_core.answer.citations import parse_citations
from treerag_core.answer.synthesis import answer_fallbacks, extractive, stream_llm_answer
from treerag_core.base.errors import EmbedderError, LLMError, QueryError, TreeRAGError
from treerag_core.base.names import Locator
from treerag_core.base.settings import AnswerSettings, LLMSettings, QuerySettings
from treerag_core.base.text_rules import detect_language
from treerag_core.base.types import (
    ContextSection,
    Fallback,
    LocateResult,
    RetrievedChunk,
    Trace,
    Usage,
)
from treerag_core.index.corpus import CorpusIndex
from treerag_core.index.embedders import Embedder
from treerag_core.index.tokens import is_stopword_only, tokenize
from treerag_core.index.vector_cache import QueryVectorCache
from treerag_core.llm import endpoint_of, make_client
from treerag_core.search.rerank import (
    Reading,
    get_reranker,
    relevance_boundary,
    rerank_chunks,
    rerank_scores,
)
from treerag_core.strategies import QueryContext, Strategy, get_strategy

QUERY_VECTOR_CACHE = 512  # entries per engine: a long interactive session must not grow


@dataclass(frozen=True)
class Event:
    """One step of a streamed run: located, retrieved, reranked, delta (answer text), done."""

    kind: str
    trace: Trace
    delta: str = ""


@dataclass
class Engine:
    """What a query needs besides the question: the index, its embedder, and the LLM access.

    `client_factory` is the seam tests replace; the default builds the configured provider's
    client, or None when no LLM is configured.
    """

    index: CorpusIndex
    embedder: Embedder
    api_key: str | None = None
    client_factory: Callable[[LLMSettings, str | None], Any] = make_client
    reranker_factory: Callable[[str], Any] = get_reranker
    # init=False: `dataclasses.replace` (one engine per session) starts an empty cache, so no
    # two sessions ever share query vectors.
    _vectors: QueryVectorCache = field(
        default_factory=lambda: QueryVectorCache(QUERY_VECTOR_CACHE), init=False, repr=False
    )

    def query_vector(self, text: str) -> np.ndarray:
        return self._vectors.get(text, self.embedder.embed_query)

    def clear_cache(self) -> None:
        """Forget cached query vectors (benchmarks time each run from a cold start)."""
        self._vectors.clear()

    def client(self, settings: QuerySettings):
        # The factory decides whether an LLM is configured (a local server needs no key).
        if not settings.llm.enabled:
            return None
        return self.client_factory(settings.llm, self.api_key)


def check_question(question: str, settings: QuerySettings) -> str:
    """A usable question, or QueryError with what to do (no LLM call is made for these)."""
    text = question.strip()
    if not text:
        raise QueryError("the question is empty: type a question about the documents")
    if len(text) > settings.max_question_chars:
        raise QueryError(
            f"the question has {len(text)} characters; the limit is {settings.max_question_chars}"
            ": ask something shorter"
        )
    if is_stopword_only(text):
        raise QueryError(
            "the question has no searchable words (only stop words or punctuation): "
            "name what you are looking for"
        )
    return text


def _provider(engine: Engine, settings: QuerySettings, llm: bool) -> dict[str, Any]:
    return {
        "embedder": engine.index.embedder_name,
        "dim": engine.index.dim,
        "reranker": settings.rerank.model if settings.rerank.enabled else "off",
        "llm": llm,
        "llm_provider": str(settings.llm.provider) if llm else "",
        "llm_endpoint": endpoint_of(settings.llm) if llm else "",
        "locate_model": settings.llm.locate_model if llm else "",
        "answer_model": settings.llm.answer_model if llm else "",
    }


def _settings_record(strategy: Strategy, effective: QuerySettings) -> dict[str, Any]:
    record = effective.to_dict()
    if not strategy.locates:
        record.pop("locate")  # a strategy without step 1 reads no locate settings
    return record


def can_reuse_locate(strategy: Strategy, stored: LocateResult, settings: QuerySettings) -> bool:
    """Whether a stored step 1 still holds: the settings its locator read are unchanged."""
    if not strategy.locates:
        return True
    effective = strategy.effective_settings(settings)
    return stored.inputs == strategy.locate_inputs(effective, stored.locator)


def _locate(strategy: Strategy, ctx: QueryContext) -> LocateResult:
    result = strategy.locate(ctx)
    return replace(result, inputs=strategy.locate_inputs(ctx.settings, result.locator))


def answer_context(hits: Sequence[RetrievedChunk], answer: AnswerSettings) -> list[RetrievedChunk]:
    """What the answer reads: the top `final_top_k`, or (context_chars > 0) passages in final
    order until their text fills the character budget (always at least one)."""
    if answer.context_chars <= 0:
        return list(hits[: answer.final_top_k])
    kept: list[RetrievedChunk] = []
    used = 0
    for hit in hits:
        if kept and used + len(hit.chunk.text) > answer.context_chars:
            break
        kept.append(hit)
        used += len(hit.chunk.text)
    return kept


def step2b_scorer(
    engine: Engine, settings: QuerySettings, question: str, language: str, reads_structure: bool
) -> Callable[[Sequence[RetrievedChunk]], Reading | None]:
    """What step 2b would score some hits with (same model, same reading), for a step that
    wants the final reader's opinion early; None where step 2b keeps the fused order. Scores
    are cached per (question, passage) by the reranker, so step 2b does not pay twice."""

    def score(hits: Sequence[RetrievedChunk]) -> Reading | None:
        if not settings.rerank.enabled or not hits:
            return None
        try:
            reranker = engine.reranker_factory(settings.rerank.model)
        except TreeRAGError:
            return None  # step 2b reports the load failure itself
        scores, _ = rerank_scores(
            question,
            hits,
            reranker,
            language,
            settings.rerank.chinese,
            read_path=reads_structure and settings.rerank.read_path,
        )
        return None if scores is None else Reading(scores, relevance_boundary(reranker))

    return score


def rerank_step(
    engine: Engine,
    trace: Trace,
    candidates: Sequence[RetrievedChunk],
    settings: QuerySettings,
    reads_structure: bool = False,
) -> None:
    """Order the pooled candidates by the cross-encoder, or keep the fused order and say why.

    A strategy that reads structure has the model read `heading path + passage`
    (`rerank.read_path`); structure-blind baselines always give it the passage alone.
    """
    started = time.perf_counter()
    pooled = list(candidates)
    reranker = None
    if settings.rerank.enabled and pooled:
        try:
            reranker = engine.reranker_factory(settings.rerank.model)
        except TreeRAGError as exc:
            trace.fallbacks.append(Fallback("rerank", "load_failed", str(exc)))
    # Score every pooled candidate (not only the kept top-k) so views can show what fell out.
    hits, reason = rerank_chunks(
        trace.question,
        pooled,
        reranker,
        max(1, len(pooled)),
        trace.language,
        settings.rerank.chinese,
        read_path=reads_structure and settings.rerank.read_path,
    )
    if reason and settings.rerank.enabled and pooled:
        trace.fallbacks.append(Fallback("rerank", "kept_fused_order", reason))
    trace.candidates = hits
    trace.reranked = answer_context(hits, settings.answer)
    trace.reranker = getattr(reranker, "name", "") if reason is None else ""
    trace.rerank_seconds = time.perf_counter() - started


def synthesize_step(engine: Engine, trace: Trace, settings: QuerySettings, client) -> Iterator[str]:
    """Step 3: yields answer text deltas and fills trace.answer, usage and citations."""
    started = time.perf_counter()
    parts: list[str] = []
    if client is not None:
        try:
            stream = stream_llm_answer(
                client,
                trace.question,
                trace.reranked,
                trace.language,
                settings.llm.answer_model,
                trace.sections,
                settings.llm.context_tokens,
            )
            for delta in stream:
                parts.append(delta)
                yield delta
            trace.answer_usage = getattr(stream, "usage", None) or Usage()
        except LLMError as exc:
            trace.fallbacks.append(
                Fallback(
                    "synthesize", exc.reason, f"{str(exc).rstrip('.')}; extractive answer instead"
                )
            )
            if parts:
                yield "\n\n"
            parts = []
    trace.verdict = {}
    if not parts:  # streamed one cited sentence at a time, like the LLM's answer
        verdict, text = extractive(
            trace.question,
            engine.query_vector(trace.question),
            trace.reranked,
            trace.language,
            lambda texts: engine.embedder.embed(list(texts)),
            engine.index.texts,
            sections=trace.sections,
            candidates=trace.candidates,
        )
        trace.verdict = verdict.to_dict() if verdict is not None else {}
        for delta in text:
            parts.append(delta)
            yield delta
    trace.answer = "".join(parts)
    # An LLM asked for but not configured wrote no answer: the trace says so (CLI, audit log).
    trace.fallbacks.extend(f for f in answer_fallbacks(trace) if f not in trace.fallbacks)
    node_paths = {nid: n.heading_path for nid, n in engine.index.nodes.items()}
    trace.citations = parse_citations(
        trace.answer, trace.reranked, node_paths, context_sources(engine.index, trace.sections)
    )
    trace.synthesize_seconds = time.perf_counter() - started


def context_sources(
    index: CorpusIndex, sections: Sequence[ContextSection]
) -> dict[str, tuple[str, ...]]:
    """Each context block the answer read (by its title) -> the nodes of the passages it was
    built from, so a citation of the block itself is traced to them."""
    out = {}
    for section in sections:
        if section.text.strip() and section.chunk_ids:
            rows = (index.chunk_row(c) for c in section.chunk_ids)
            out[section.title] = tuple(dict.fromkeys(index.chunks[r].source_node_id for r in rows))
    return out


def run_stream(
    engine: Engine,
    question: str,
    settings: QuerySettings | None = None,
    *,
    strategy: str | None = None,
    leaves: Sequence[str] | None = None,
    scope: Sequence[str] | None = None,
    located: LocateResult | None = None,
    synthesize: bool = True,
) -> Iterator[Event]:
    """Run the pipeline, yielding an Event as each step completes.

    `leaves` overrides step 1 (a manual pick, or the gold leaves for oracle-sections);
    `located` offers a stored step-1 result, reused when `can_reuse_locate` says it holds.
    """
    settings = settings or QuerySettings()
    plugin = get_strategy(strategy or settings.strategy)
    effective = plugin.effective_settings(settings)
    question = check_question(question, effective)
    client = engine.client(effective)
    trace = Trace(
        question=question,
        strategy=plugin.name,
        settings=_settings_record(plugin, effective),
        provider=_provider(engine, effective, client is not None),
        language=detect_language(question),
        scope=list(scope) if scope is not None else None,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    ctx = QueryContext(
        index=engine.index,
        question=question,
        language=trace.language,
        settings=effective,
        scope=scope,
        query_vector=engine.query_vector,
        tokenize=tokenize,
        client=client,
        embedder=engine.embedder,
        leaves=leaves,
        fallbacks=trace.fallbacks,
        rerank_scores=step2b_scorer(
            engine, effective, question, trace.language, plugin.reads_structure
        ),
    )
    if located is not None and can_reuse_locate(plugin, located, effective):
        trace.locate = located
    elif located is not None and located.locator in (Locator.LOCAL, Locator.KEYWORD):
        # A cheap local pick whose inputs changed is redone locally: never an LLM call.
        local = replace(effective, locate=effective.locate.with_(locator=located.locator))
        redone = plugin.locate(replace(ctx, settings=local, client=None))
        trace.locate = replace(redone, inputs=plugin.locate_inputs(effective, redone.locator))
    else:
        trace.locate = _locate(plugin, ctx)
    yield Event("located", trace)
    started = time.perf_counter()
    retrieval = plugin.retrieve(ctx, trace.locate)
    trace.retrieved = list(retrieval.groups)
    trace.sections = list(retrieval.sections)
    trace.retrieve_seconds = time.perf_counter() - started
    yield Event("retrieved", trace)
    rerank_step(engine, trace, retrieval.candidates, effective, plugin.reads_structure)
    yield Event("reranked", trace)
    if synthesize:
        for delta in synthesize_step(engine, trace, effective, client):
            yield Event("delta", trace, delta)
    yield Event("done", trace)


def run(engine: Engine, question: str, settings: QuerySettings | None = None, **kwargs) -> Trace:
    """Run the whole pipeline and return its Trace."""
    trace = None
    for event in run_stream(engine, question, settings, **kwargs):
        trace = event.trace
    assert trace is not None  # run_stream always ends with a "done" event
    return trace


def rerun(
    engine: Engine,
    trace: Trace,
    settings: QuerySettings,
    synthesize: bool = True,
    scope: Sequence[str] | None = None,
) -> Trace:
    """Ask the trace's question again with new settings, reusing its step 1 where it holds.

    The engine decides: a stored step 1 is kept while the settings its locator read are
    unchanged; a local pick is redone locally otherwise; a slider never causes an LLM call.
    The scope defaults to the trace's own.
    """
    if trace.locate is None:
        raise QueryError("this trace has no step-1 result to reuse")
    plugin = get_strategy(trace.strategy)
    reused = can_reuse_locate(plugin, trace.locate, settings)
    new = run(
        engine,
        trace.question,
        settings.with_(strategy=trace.strategy),
        located=trace.locate,
        synthesize=synthesize,
        scope=scope if scope is not None else trace.scope,
    )
    if reused:  # the stored step 1's fallbacks (e.g. "no key: local locator") still apply
        new.fallbacks = [f for f in trace.fallbacks if f.stage == "locate"] + new.fallbacks
    return new


def load_engine(
    folder: str, api_key: str | None = None, embedder_name: str | None = None
) -> Engine:
    """An Engine over an index folder, with the embedder the index was built with.

    `embedder_name` is the embedder the user names (e.g. `query --embedder`): a local `st:`
    model folder the index names loads only when named there or in TREERAG_EMBEDDER
    (`embedders.index_embedder`); a name that differs from the index's is refused.
    """
    from treerag_core.index.embedders import index_embedder
    from treerag_core.index.store import check_embedder, load_index

    index = load_index(folder)
    named = (embedder_name or "").strip()
    embedder = index_embedder(index.embedder_name, named=(named,))
    if named and embedder.name != named:
        raise EmbedderError(
            f"{folder} was built with embedder {index.embedder_name!r}, not {named!r}: "
            "drop --embedder or name the index's own"
        )
    warm_up = getattr(embedder, "warm_up", None)
    if warm_up is not None:  # load the model now, so the first query's stage times are honest
        warm_up()
    check_embedder(index, embedder, where=str(folder))  # same model, not only the same name
    return Engine(index=index, embedder=embedder, api_key=api_key)
