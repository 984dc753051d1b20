"""Run strategies over an eval question set and score them with the README's metrics."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError, QueryError, TreeRAGError
from treerag_core.base.names import Locator
from treerag_core.base.pagemap import chars_on_page
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import Trace, Usage
from treerag_core.build import index_folder
from treerag_core.evaluation.dataset import (
    EvalDataset,
    EvalQuestion,
    dataset_sources,
    load_dataset,
)
from treerag_core.evaluation.metrics import Passage, aggregate, question_metrics
from treerag_core.evaluation.report import differences_json
from treerag_core.index.corpus import CorpusIndex
from treerag_core.index.embedders import get_embedder, index_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.ingest.chunking import CHUNKER_VERSION
from treerag_core.ingest.convert import CONVERTER_VERSION
from treerag_core.ingest.parsing import TREE_VERSION
from treerag_core.pipeline import Engine, run
from treerag_core.search.rerank import CachedReranker, clear_score_cache, get_reranker
from treerag_core.strategies import get_strategy, strategy_names
from treerag_core.strategies.flat.strategy import FlatHybrid
from treerag_core.strategies.graph.part import PART as GRAPH_PART
from treerag_core.strategies.graph.part import graph_stage
from treerag_core.strategies.treerag.strategy import TreeRAG

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]  # asked before each question: True ends the run, partial
IndexProgress = Callable[[str, int, int], None]  # (stage, done, total), as `build_index` says


@dataclass(frozen=True)
class EvalConfig:
    """What to run: strategies, scope, limits, settings, and whether the LLM may be called."""

    strategies: tuple[str, ...] = (TreeRAG.name, FlatHybrid.name)
    scope: str = "doc"  # doc: each question against its own document(s); corpus: all documents
    limit: int | None = None
    use_llm: bool = False
    # With the LLM on, it also writes each run's answer (`eval --llm`); False: retrieval only,
    # the LLM called by the locator alone (the explorer's locator comparison: no answer shown).
    write_answers: bool = True
    top_k: int = 50  # passages kept per question: budget metrics walk up to 50 (eval README)
    index_settings: IndexSettings = field(default_factory=IndexSettings)
    query_settings: QuerySettings = field(
        default_factory=lambda: QuerySettings().set("answer.final_top_k", 10)
    )

    def __post_init__(self) -> None:
        unknown = [s for s in self.strategies if s not in strategy_names()]
        if unknown:
            raise ValueError(
                f"unknown strategies {unknown}; choose from {', '.join(strategy_names())}"
            )
        if self.limit is not None and self.limit < 1:  # a slice by 0 or -1 would drop questions
            raise ValueError(f"limit must be >= 1 (or None: every question), but got {self.limit}")
        if self.top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {self.top_k}")
        if self.scope not in ("doc", "corpus"):
            raise ValueError(f"scope must be doc or corpus, but got {self.scope!r}")


def index_cache_key(dataset: EvalDataset, settings: IndexSettings) -> str:
    """Content hash of the documents and the index settings: the cached index's folder name."""
    digest = hashlib.sha256(json.dumps(settings.to_dict(), sort_keys=True).encode())
    digest.update(f"chunker {CHUNKER_VERSION}".encode())  # a new chunker means a new index
    digest.update(f"tree {TREE_VERSION}".encode())  # so does a new tree (article leaves)
    if dataset.paged:  # the index holds converted text: a new converter means a new index
        digest.update(f"converter {CONVERTER_VERSION}".encode())
    for name in dataset.doc_names:
        digest.update(name.encode())
        digest.update(dataset.doc_bytes(name))  # inside the set's roots, size-capped
    return f"{dataset.name}-{digest.hexdigest()[:16]}"


def dataset_index(
    dataset: EvalDataset,
    settings: IndexSettings,
    cache_dir: Path | None,
    progress: IndexProgress | None = None,
    note: Callable[[str], None] | None = None,
) -> CorpusIndex:
    """One index over all the set's documents (doc scope restricts each query to its docs),
    built once and cached by content hash. A cached index that cannot be loaded is rebuilt,
    and `note` (default: a line on stderr) is told why. `progress` hears each stage of a
    build (convert, parse, embed, ...), which can take minutes."""
    folder = cache_dir / index_cache_key(dataset, settings) if cache_dir else None
    if folder is not None and (folder / "manifest.json").is_file():
        try:
            return load_index(folder, expect_embedder=settings.embedder)
        except IndexFormatError as exc:  # stale or broken cache: say so, then rebuild below
            (note or _stderr_note)(f"rebuilding the cached eval index {folder.name} ({exc})")
    if settings.graph_min_leaf_chars > 0 and not settings.llm_graphs:
        # Graphs only add a stage: take the cached index without them (the same chunks and
        # vectors) and run the graph stage on it, so each threshold costs only its graphs.
        plain = replace(settings, graph_min_leaf_chars=0)
        index = with_graphs(dataset_index(dataset, plain, cache_dir, progress, note), settings)
        if folder is not None:
            save_index(index, folder)
        return index
    convert = None if progress is None else lambda d, t: progress("convert", d, t)
    sources = dataset_sources(dataset, progress=convert)
    # The one index build the CLI and the explorer call; the cache folder is named by
    # content, so nothing in it is reused (a stale one is rebuilt whole).
    return index_folder(sources, folder, settings, reuse=False, progress=progress).index


def _stderr_note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def with_graphs(base: CorpusIndex, settings: IndexSettings) -> CorpusIndex:
    """`base` (built without graphs) with the offline leaf graphs of `settings` added: the
    same index `build_index` makes with those settings."""
    index = base.with_settings(settings)
    index.parts[GRAPH_PART] = graph_stage(index, get_embedder(settings.embedder))
    return index


def _own_score_cache() -> Callable[[str], Any]:
    """A reranker factory for one eval: the process's loaded model behind a score cache of
    its own, so emptying it before each run (`_cold_scores`) leaves the scores the
    explorer's sessions share (the same process, when Evaluate runs in the app) alone."""
    own: dict[str, CachedReranker] = {}

    def factory(model: str) -> CachedReranker:
        if model not in own:
            shared = get_reranker(model)
            own[model] = CachedReranker(getattr(shared, "inner", shared))
        return own[model]

    return factory


def _cold_scores(engine: Engine, settings: QuerySettings) -> None:
    """Empty the cross-encoder's score cache before a run: scores are cached per (question,
    passage), so without this a strategy run after another one on the same question would
    read the first one's scores and time nearly no rerank. Reuse inside one run stays."""
    if not settings.rerank.enabled:
        return
    try:
        reranker = engine.reranker_factory(settings.rerank.model)
    except TreeRAGError:
        return  # the run itself reports the load failure
    clear_score_cache(reranker)


def considered_questions(
    dataset: EvalDataset, limit: int | None
) -> tuple[list[EvalQuestion], dict[str, int]]:
    """The first `limit` usable questions (None: all), and per reason how many questions were
    left out on the way to them (in file order), so `n` and `left out` describe one slice."""
    questions: list[EvalQuestion] = []
    left_out: dict[str, int] = {}
    for question in dataset.questions:
        if limit is not None and len(questions) >= limit:
            break
        if question.left_out_reason is None:
            questions.append(question)
        else:
            reason = question.left_out_reason
            left_out[reason] = left_out.get(reason, 0) + 1
    return questions, left_out


ORACLE_LEAVES = 5  # what a perfect locator may pick, as many as the local locator keeps


def oracle_leaves(index: CorpusIndex, question: EvalQuestion) -> list[str]:
    """The leaves holding the gold evidence: what a perfect locator would pick.

    Text evidence: the leaves whose span overlaps an evidence span, in evidence order. Page
    gold (PDF sets): the leaves holding text on a gold page, the most of it first (a page
    often spans several small leaves, and a long section many pages)."""
    if question.gold_pages:
        return _page_oracle_leaves(index, question)
    picked: list[str] = []
    for evidence in question.evidences:
        for leaf in index.leaves(evidence.doc):
            if (
                leaf.start < evidence.end
                and evidence.start < leaf.end
                and leaf.node_id not in picked
            ):
                picked.append(leaf.node_id)
    return picked[:ORACLE_LEAVES]


def _page_oracle_leaves(index: CorpusIndex, question: EvalQuestion) -> list[str]:
    pages = {d.doc_id: d.page_starts for d in index.documents}
    held: dict[str, int] = {}  # leaf -> characters it holds on the gold pages
    order: list[str] = []
    for gold in question.gold_pages:
        starts = pages.get(gold.doc) or ()
        for leaf in index.leaves(gold.doc):
            chars = chars_on_page(starts, leaf.start, leaf.end, gold.page)
            if chars > 0:
                if leaf.node_id not in held:
                    order.append(leaf.node_id)
                held[leaf.node_id] = held.get(leaf.node_id, 0) + chars
    ranked = sorted(order, key=lambda leaf: -held[leaf])  # stable: document order on ties
    return ranked[:ORACLE_LEAVES]


def _usage_of(trace: Trace) -> Usage:
    locate = trace.locate.usage if trace.locate is not None else Usage()
    return locate + trace.answer_usage


def passages_of(trace: Trace) -> list[Passage]:
    return [Passage(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in trace.reranked]


def picked_paths(trace: Trace) -> list[str] | None:
    if trace.locate is None or not get_strategy(trace.strategy).locates:
        return None
    return [leaf.heading_path for leaf in trace.locate.leaves]


def _explain(metrics: dict[str, float], paths: list[str] | None) -> str:
    if max(metrics.get("hit@5", 0.0), metrics.get("page_hit@5", 0.0)) >= 1.0:
        return "hit"
    if paths is None:
        return "miss"
    if "section_hit@5" not in metrics:
        return "miss (gold section unknown)"
    if metrics["section_hit@5"] >= 1.0:
        return "right section, wrong chunk"
    return "wrong section picked"


def question_record(question: EvalQuestion, trace: Trace, metrics: dict[str, float]) -> dict:
    """What is kept per question so a miss can be explained without rerunning it."""
    paths = picked_paths(trace)
    return {
        "id": question.id,
        "question": question.question,
        "doc": question.doc,
        "gold_sections": list(question.evidence_sections),
        "picked": [
            {"node_id": leaf.node_id, "path": leaf.heading_path, "score": leaf.score}
            for leaf in (trace.locate.leaves if trace.locate else ())
        ],
        "top": [
            {
                "chunk_id": h.chunk.chunk_id,
                "path": h.chunk.heading_path,
                "start": h.chunk.start,
                "end": h.chunk.end,
                "pages": [h.chunk.page_start, h.chunk.page_end],
                "fused": round(h.fused, 4),
                "rerank": None if h.rerank is None else round(h.rerank, 4),
            }
            for h in trace.reranked[:5]
        ],
        "n_passages": len(trace.reranked),
        "locator": trace.locate.locator if trace.locate else "",
        # the documents routing kept (empty: no cut), so a report can say how often it routed
        "routed": list(trace.locate.documents) if trace.locate else [],
        "fallbacks": [f"{f.stage}:{f.reason}" for f in trace.fallbacks],
        "outcome": _explain(metrics, paths),
        "metrics": {k: round(v, 4) for k, v in metrics.items()},
    }


def llm_locator_strategies(strategies: Sequence[str]) -> tuple[str, ...]:
    """The strategies whose `+llm` row calls the LLM locator (drilldown's row has its own
    layers pick, and makes no call)."""
    return tuple(name for name in strategies if get_strategy(name).uses_locator)


def llm_locate_calls(strategies: Sequence[str], n_questions: int) -> int:
    """The LLM calls of an LLM run without answers (`write_answers=False`): one locate
    call per question per strategy that uses the locator (a retried call counts once)."""
    return n_questions * len(llm_locator_strategies(strategies))


def eval_runs(
    strategies: Sequence[str], settings: QuerySettings, use_llm: bool
) -> list[tuple[str, str, QuerySettings]]:
    """(report row, strategy, settings) per run. With the LLM on, a strategy that locates runs
    twice on the same questions: its local locator (row `name`) and the LLM's (`name+llm`),
    so the report compares the two pickers side by side."""
    out: list[tuple[str, str, QuerySettings]] = []
    for name in strategies:
        plugin = get_strategy(name)
        if use_llm and plugin.locates and not plugin.needs_gold_leaves:
            out.append((name, name, settings.set("locate.locator", Locator.LOCAL)))
            out.append((f"{name}+llm", name, settings.set("locate.locator", Locator.LLM)))
        else:
            out.append((name, name, settings))
    return out


def evaluate(
    data_dir: Path,
    config: EvalConfig,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    api_key: str | None = None,
    index: CorpusIndex | None = None,
    index_progress: IndexProgress | None = None,
    should_stop: ShouldStop | None = None,
) -> dict[str, Any]:
    """Run every strategy on every usable question; Ctrl-C (or `should_stop`) returns a
    partial, valid report.

    `progress` hears each (question, strategy) run; `index_progress` each stage of building
    the set's index when it is not cached.
    """
    dataset = load_dataset(Path(data_dir))
    questions, left_out = considered_questions(dataset, config.limit)
    if index is None:
        index = dataset_index(dataset, config.index_settings, cache_dir, index_progress)
    # The index (cached on disk, or given) names its embedder; an st: folder loads only when
    # it is the one the run was asked for (`--embedder`) or TREERAG_EMBEDDER.
    embedder = index_embedder(index.embedder_name, named=(config.index_settings.embedder,))
    return evaluate_questions(
        Engine(index, embedder, api_key if config.use_llm else None),
        questions,
        config,
        dataset=dataset.name,
        left_out=dict(dataset.left_out),
        left_out_considered=left_out,
        evidence_missing=dataset.n_evidence_missing,
        progress=progress,
        should_stop=should_stop,
    )


def evaluate_questions(
    engine: Engine,
    questions: Sequence[EvalQuestion],
    config: EvalConfig,
    *,
    dataset: str,
    left_out: dict[str, int] | None = None,
    left_out_considered: dict[str, int] | None = None,
    evidence_missing: int = 0,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> dict[str, Any]:
    """The report of every strategy on `questions` (already limited), on `engine`'s index.
    `should_stop` is asked before each question, so a stopped run keeps whole questions:
    every strategy is scored on the same ones and their paired differences still hold.

    `evaluate` reads a dataset folder into this; a workspace's labelled questions come here
    directly (`my_set.labelled_report`). The engine gets a score cache of its own (a copy:
    the caller's engine is left as it was)."""
    left_out_considered = left_out_considered or {}
    index = engine.index
    engine = replace(engine, reranker_factory=_own_score_cache())  # never clears the app's
    page_map = {d.doc_id: d.page_starts for d in index.documents if d.page_starts}
    settings = config.query_settings.set("llm.enabled", config.use_llm)
    settings = settings.set("answer.final_top_k", config.top_k)
    runs = eval_runs(config.strategies, settings, config.use_llm)
    per: dict[str, list[dict[str, float]]] = {row: [] for row, _, _ in runs}
    records: dict[str, list[dict]] = {row: [] for row, _, _ in runs}
    latency: dict[str, dict[str, list[float]]] = {
        row: {"locate": [], "retrieve": [], "rerank": [], "total": []} for row, _, _ in runs
    }
    spent: dict[str, Usage] = {row: Usage() for row, _, _ in runs}
    located: dict[str, Usage] = {row: Usage() for row, _, _ in runs}
    skipped: dict[str, int] = {}
    total = len(questions) * len(runs)
    done = 0
    partial = False
    try:
        for question in questions:
            if should_stop is not None and should_stop():
                partial = True
                break
            scope = list(question.docs) if config.scope == "doc" else None
            for row, strategy, row_settings in runs:
                needs_gold = get_strategy(strategy).needs_gold_leaves
                leaves = oracle_leaves(index, question) if needs_gold else None
                engine.clear_cache()  # every strategy pays for its own query embedding
                _cold_scores(engine, row_settings)  # ... and for its own cross-encoder scores
                started = time.perf_counter()
                try:
                    trace = run(
                        engine,
                        question.question,
                        row_settings,
                        strategy=strategy,
                        scope=scope,
                        leaves=leaves,
                        synthesize=config.use_llm and config.write_answers,
                    )
                except QueryError as exc:
                    key = f"{row}: {exc}"
                    skipped[key] = skipped.get(key, 0) + 1
                    continue
                finally:
                    done += 1
                    if progress:
                        progress(done, total)
                elapsed = time.perf_counter() - started
                metrics = question_metrics(
                    question, passages_of(trace), picked_paths(trace), page_map
                )
                per[row].append(metrics)
                records[row].append(question_record(question, trace, metrics))
                lat = latency[row]
                lat["locate"].append((trace.locate.seconds if trace.locate else 0.0) * 1000)
                lat["retrieve"].append(trace.retrieve_seconds * 1000)
                lat["rerank"].append(trace.rerank_seconds * 1000)
                lat["total"].append(elapsed * 1000)
                spent[row] = spent[row] + _usage_of(trace)
                if trace.locate is not None:
                    located[row] = located[row] + trace.locate.usage
    except KeyboardInterrupt:
        partial = True
    n_left_out = sum(left_out_considered.values())
    strategies = {}
    for row, _, _ in runs:
        if not per[row]:
            continue
        strategies[row] = aggregate(per[row], latency[row], n_left_out=n_left_out)
        if config.use_llm:
            for key, used in (("llm_usage", spent[row]), ("locate_usage", located[row])):
                strategies[row][key] = {
                    "input_tokens": used.input_tokens,
                    "output_tokens": used.output_tokens,
                    "cache_read_tokens": used.cache_read_tokens,
                    "cost_usd": round(used.cost_usd, 6),
                    "cost_known": used.cost_known,  # False: no price for the model
                }
    report: dict[str, Any] = {
        "dataset": dataset,
        "scope": config.scope,
        "partial": partial,
        "settings": {
            "top_k": config.top_k,
            "candidate_window": settings.retrieve.candidate_window,
            "index": config.index_settings.to_dict(),
            "query": settings.to_dict(),
            "embedder": index.embedder_name,
        },
        "left_out": dict(left_out or {}),  # the whole set's
        "left_out_considered": left_out_considered,  # among the questions `limit` walked
        "skipped": skipped,
        "evidence_missing": evidence_missing,
        "strategies": strategies,
        "questions": records,
    }
    # Paired bootstrap intervals of each strategy minus its baselines, on these questions.
    report["differences"] = differences_json(report)
    return report
