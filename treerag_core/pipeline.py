"""The fixed three-step pipeline (locate, retrieve + rerank, synthesize) producing one Trace."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from treerag_core.citations import parse_citations
from treerag_core.config import QuerySettings
from treerag_core.embedders import Embedder
from treerag_core.errors import LLMError, QueryError, TreeRAGError
from treerag_core.index import CorpusIndex
from treerag_core.llm import make_client
from treerag_core.locators import (
    fallback_reason,
    keyword_locate,
    llm_locate,
    local_locate,
    manual_locate,
    score_leaves,
)
from treerag_core.rerank import get_reranker, pool_hits, rerank_chunks
from treerag_core.retrieval import ALL_LEAVES, pool_across_leaves, retrieve_in_leaves
from treerag_core.synthesis import extractive_answer, stream_llm_answer
from treerag_core.text import detect_language, is_stopword_only, tokenize
from treerag_core.types import Fallback, Language, LocatedLeaf, LocateResult, Trace, Usage

STRATEGIES = ("treerag", "flat-hybrid", "flat-dense", "flat-bm25", "oracle-sections")


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
    client_factory: Callable[[QuerySettings, str | None], Any] = make_client
    reranker_factory: Callable[[str], Any] = get_reranker
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def query_vector(self, text: str) -> np.ndarray:
        vector = self._vectors.get(text)
        if vector is None:
            if len(self._vectors) > 512:  # bounded: a long interactive session must not grow
                self._vectors.clear()
            vector = self._vectors[text] = self.embedder.embed_query(text)
        return vector

    def clear_cache(self) -> None:
        """Forget cached query vectors (benchmarks time each run from a cold start)."""
        self._vectors.clear()

    def client(self, settings: QuerySettings):
        # The factory decides whether an LLM is configured (a local server needs no key).
        if not settings.use_llm:
            return None
        return self.client_factory(settings, self.api_key)


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


def _corpus_language(index: CorpusIndex, scope: Sequence[str] | None) -> Language:
    langs = [d.language for d in index.documents if scope is None or d.doc_id in scope]
    return "zh" if langs.count("zh") > len(langs) / 2 else "en"


def _provider(engine: Engine, settings: QuerySettings, llm: bool) -> dict[str, Any]:
    return {
        "embedder": engine.index.embedder_name,
        "dim": engine.index.dim,
        "reranker": settings.rerank_model if settings.rerank else "off",
        "llm": llm,
        "locate_model": settings.locate_model if llm else "",
        "answer_model": settings.answer_model if llm else "",
    }


def new_trace(
    engine: Engine, question: str, settings: QuerySettings, strategy: str, llm: bool
) -> Trace:
    return Trace(
        question=question,
        strategy=strategy,
        settings=settings.to_dict(),
        provider=_provider(engine, settings, llm),
        language=detect_language(question),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def locate_step(
    engine: Engine,
    trace: Trace,
    settings: QuerySettings,
    client,
    scope: Sequence[str] | None,
    leaves: Sequence[str] | None,
) -> LocateResult:
    """Step 1 for any strategy; fallbacks are appended to trace.fallbacks."""
    index, question, strategy = engine.index, trace.question, trace.strategy
    if strategy.startswith("flat-"):
        everything = LocatedLeaf(ALL_LEAVES, "(all sections)", question, None, "all")
        return LocateResult((everything,), "Flat strategy: no locating.", "none")
    if strategy == "oracle-sections":
        if not leaves:
            raise QueryError("oracle-sections needs the gold leaves (evaluation only)")
        return manual_locate(index, question, leaves, source="oracle")
    if leaves:
        return manual_locate(index, question, leaves)
    locator = settings.locator
    if locator == "keyword":
        return keyword_locate(index, question, tokenize, settings, scope)
    qvec = engine.query_vector(question)
    if locator == "local":
        return local_locate(index, question, qvec, tokenize, settings, scope)
    if client is None:
        reason = "llm_off" if not settings.use_llm else "no_api_key"
        detail = "LLM switched off" if reason == "llm_off" else "no API key"
        trace.fallbacks.append(Fallback("locate", reason, f"{detail}: local locator"))
        return local_locate(index, question, qvec, tokenize, settings, scope)
    started = time.perf_counter()
    scores = score_leaves(index, question, qvec, tokenize, settings, scope)
    try:
        language = _corpus_language(index, scope)
        return llm_locate(index, question, client, settings, language, scores, scope)
    except LLMError as exc:
        trace.fallbacks.append(fallback_reason(exc))
        result = local_locate(index, question, qvec, tokenize, settings, scope)
        return replace(result, seconds=time.perf_counter() - started)


def _retrieval_settings(strategy: str, settings: QuerySettings) -> QuerySettings:
    if strategy == "flat-dense":
        return settings.with_(fusion="weighted", dense_weight=1.0, rerank=False)
    if strategy == "flat-bm25":
        return settings.with_(fusion="weighted", dense_weight=0.0, rerank=False)
    return settings


def retrieve_step(
    engine: Engine, trace: Trace, settings: QuerySettings, scope: Sequence[str] | None
) -> None:
    """Step 2: hybrid search inside each picked leaf, filling trace.retrieved."""
    assert trace.locate is not None
    effective = _retrieval_settings(trace.strategy, settings)
    flat = trace.strategy.startswith("flat-")
    # Flat strategies get the same candidate window a full tree pick would pool.
    top_k = settings.max_leaves * settings.top_k_per_leaf if flat else None
    started = time.perf_counter()
    trace.retrieved = retrieve_in_leaves(
        engine.index, trace.locate.leaves, effective, engine.query_vector, tokenize, scope, top_k
    )
    trace.retrieve_seconds = time.perf_counter() - started


def rerank_step(engine: Engine, trace: Trace, settings: QuerySettings) -> None:
    """Pool all leaves' hits and rerank them across leaves, or keep the fused order and say why."""
    effective = _retrieval_settings(trace.strategy, settings)
    started = time.perf_counter()
    pooled = pool_hits(pool_across_leaves(trace.retrieved, effective))
    reranker = None
    if effective.rerank and pooled:
        try:
            reranker = engine.reranker_factory(effective.rerank_model)
        except TreeRAGError as exc:
            trace.fallbacks.append(Fallback("rerank", "load_failed", str(exc)))
    # Score every pooled candidate (not only the kept top-k) so views can show what fell out.
    hits, reason = rerank_chunks(
        trace.question,
        pooled,
        reranker,
        max(1, len(pooled)),
        trace.language,
        effective.rerank_chinese,
    )
    if reason and effective.rerank and pooled:
        trace.fallbacks.append(Fallback("rerank", "kept_fused_order", reason))
    trace.candidates = hits
    trace.reranked = hits[: settings.final_top_k]
    trace.reranker = getattr(reranker, "name", "") if reason is None else ""
    trace.rerank_seconds = time.perf_counter() - started


def synthesize_step(engine: Engine, trace: Trace, settings: QuerySettings, client) -> Iterator[str]:
    """Step 3: yields answer text deltas and fills trace.answer, usage and citations."""
    started = time.perf_counter()
    parts: list[str] = []
    if client is not None:
        try:
            stream = stream_llm_answer(
                client, trace.question, trace.reranked, trace.language, settings.answer_model
            )
            for delta in stream:
                parts.append(delta)
                yield delta
            trace.answer_usage = getattr(stream, "usage", None) or Usage()
        except LLMError as exc:
            trace.fallbacks.append(
                Fallback("synthesize", exc.reason, f"{exc}; extractive answer instead")
            )
            if parts:
                yield "\n\n"
            parts = []
    if not parts:
        text = extractive_answer(
            engine.query_vector(trace.question),
            trace.reranked,
            trace.language,
            lambda texts: engine.embedder.embed(list(texts)),
        )
        parts = [text]
        yield text
    trace.answer = "".join(parts)
    node_paths = {nid: n.heading_path for nid, n in engine.index.nodes.items()}
    trace.citations = parse_citations(trace.answer, trace.reranked, node_paths)
    trace.synthesize_seconds = time.perf_counter() - started


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

    `leaves` overrides step 1 (manual pick); `located` reuses a stored step-1 result, so
    changing only fusion, weights or top-k never repeats an LLM call.
    """
    settings = settings or QuerySettings()
    strategy = strategy or settings.strategy
    if strategy not in STRATEGIES:
        raise QueryError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    question = check_question(question, settings)
    client = engine.client(settings)
    trace = new_trace(engine, question, settings, strategy, client is not None)
    trace.scope = list(scope) if scope is not None else None
    if located is not None:
        trace.locate = located
    else:
        trace.locate = locate_step(engine, trace, settings, client, scope, leaves)
    yield Event("located", trace)
    retrieve_step(engine, trace, settings, scope)
    yield Event("retrieved", trace)
    rerank_step(engine, trace, settings)
    yield Event("reranked", trace)
    if synthesize:
        for delta in synthesize_step(engine, trace, settings, client):
            yield Event("delta", trace, delta)
    yield Event("done", trace)


def run(engine: Engine, question: str, settings: QuerySettings | None = None, **kwargs) -> Trace:
    """Run the whole pipeline and return its Trace."""
    trace = None
    for event in run_stream(engine, question, settings, **kwargs):
        trace = event.trace
    assert trace is not None
    return trace


def rerun_from_locate(
    engine: Engine,
    trace: Trace,
    settings: QuerySettings,
    synthesize: bool = True,
    scope: Sequence[str] | None = None,
) -> Trace:
    """Steps 2-3 again with new settings, reusing the trace's step-1 result (no new LLM call).

    The scope defaults to the trace's own, so a flat strategy keeps searching the same documents.
    """
    if trace.locate is None:
        raise QueryError("this trace has no step-1 result to reuse")
    fallbacks = [f for f in trace.fallbacks if f.stage == "locate"]
    new = run(
        engine,
        trace.question,
        settings,
        strategy=trace.strategy,
        located=trace.locate,
        synthesize=synthesize,
        scope=scope if scope is not None else trace.scope,
    )
    new.fallbacks = fallbacks + new.fallbacks
    return new


def load_engine(folder: str, api_key: str | None = None) -> Engine:
    """An Engine over an index folder, with the embedder the index was built with."""
    from treerag_core.embedders import get_embedder
    from treerag_core.store import load_index

    index = load_index(folder)
    embedder = get_embedder(index.embedder_name)
    warm_up = getattr(embedder, "warm_up", None)
    if warm_up is not None:  # load the model now, so the first query's stage times are honest
        warm_up()
    return Engine(index=index, embedder=embedder, api_key=api_key)
