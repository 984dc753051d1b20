"""The engine's public API: what the CLI, the explorer, the harness and benchmarks call.

Front ends import the engine from here (`from treerag_core import ...`), apart from the
shared types (`treerag_core.base.types`) and settings (`treerag_core.base.settings`,
`treerag_core.base.config`). Open an index, index inputs into a folder, ask (streamed
events), rerun, compare strategies, evaluate a question set.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from treerag_core.answer.flags import question_flags, verdict_label
from treerag_core.answer.synthesis import answer_fallbacks
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError, VectorStoreError
from treerag_core.base.lazy import lazy_exports
from treerag_core.base.names import DEFAULT_COLLECTION
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import Trace
from treerag_core.build import (
    IndexLLM,
    IndexRun,
    NoDocumentsError,
    build_with_fallback,
    index_folder,
)
from treerag_core.compare import Compared, compare_strategies
from treerag_core.evaluation import (
    HEADLINE_KEYS,
    LOCATOR_KEYS,
    EvalDataError,
    EvalDataset,
    EvalQuestion,
    difference_table,
    llm_fallback_notes,
    load_dataset,
    load_report,
    markdown_table,
    question_metrics,
    write_report,
)
from treerag_core.evaluation import KS as METRIC_KS
from treerag_core.evaluation.analysis import BASELINE as BASELINE_STRATEGY
from treerag_core.evaluation.analysis import FILTERS as QUESTION_FILTERS
from treerag_core.evaluation.analysis import TREE as TREE_STRATEGY
from treerag_core.evaluation.analysis import (
    Coverage,
    QuestionRow,
    check_report,
    coverage,
    coverage_docs,
    filter_rows,
    parse_report,
    question_rows,
    report_index_settings,
    report_query_settings,
    rerank_was_on,
)
from treerag_core.evaluation.analysis import number as metric_number
from treerag_core.evaluation.harness import (
    EvalConfig,
    dataset_index,
    evaluate,
    index_cache_key,
    llm_locate_calls,
    llm_locator_strategies,
    oracle_leaves,
    passages_of,
    picked_paths,
)
from treerag_core.evaluation.intervals import Interval
from treerag_core.evaluation.labels import (
    LabelledQuestion,
    LabelStore,
    Refound,
    eval_questions,
    export_set,
    import_rows,
    make_mark,
    mark_from_text,
    refind,
)
from treerag_core.evaluation.my_set import MY_SET, labelled_report
from treerag_core.evaluation.report import lookup as metric_lookup
from treerag_core.evaluation.report import mean_intervals
from treerag_core.evaluation.tune import DEFAULT_METRIC as TUNE_DEFAULT_METRIC
from treerag_core.evaluation.tune import MIN_QUESTIONS as TUNE_MIN_QUESTIONS
from treerag_core.evaluation.tune import SMALL_N as SMALL_SET_N
from treerag_core.evaluation.tune import TUNABLE as TUNABLE_STRATEGIES
from treerag_core.evaluation.tune import TuneError, Tuner, TuneResult, tune_metrics
from treerag_core.evaluation.tune import space_for as tune_space_for
from treerag_core.index.corpus import (
    CorpusIndex,
    ProgressFn,
    SourceDocument,
    build_index,
    corpus_stats,
    reusable_embeddings,
)
from treerag_core.index.embedders import EMBEDDER_ENV, Embedder, get_embedder, index_embedder
from treerag_core.index.originals import load_original, save_original
from treerag_core.index.store import load_index, save_index
from treerag_core.index.tokens import tokenize, zh_words
from treerag_core.index.vectors.attach import attach_store, store_for
from treerag_core.index.workspaces import (
    STAMP,
    WorkspaceLimits,
    Workspaces,
    check_drop,
    check_sources,
    is_workspace_id,
    remove_folder,
)
from treerag_core.ingest.convert import SUPPORTED_SUFFIXES
from treerag_core.ingest.convert.llm_levels import propose_level_fixes
from treerag_core.ingest.convert.llm_skeleton import check_contents_skeleton, skeleton_edits
from treerag_core.ingest.documents import (
    Converted,
    Rejected,
    conversion_notes,
    convert_upload,
    to_source,
)
from treerag_core.ingest.parsing import preamble_text
from treerag_core.ingest.tree_bulk import BULK_OPS as BULK_TREE_OPS
from treerag_core.ingest.tree_bulk import LIKE as HEADINGS_LIKE_BY
from treerag_core.ingest.tree_bulk import between as headings_between
from treerag_core.ingest.tree_bulk import bulk_edits as bulk_tree_edits
from treerag_core.ingest.tree_bulk import like as headings_like
from treerag_core.ingest.tree_bulk import unchanged as bulk_tree_unchanged
from treerag_core.ingest.tree_edits import (
    EditOffer,
    TreeEdit,
    apply_edits,
    load_edit_entries,
    load_edits,
    offer_for,
    save_edits,
)
from treerag_core.ingest.tree_edits import no_change as tree_edit_no_change
from treerag_core.llm import BASE_URL_ENV as LLM_BASE_URL_ENV
from treerag_core.llm import DEFAULT_BASE_URL as LLM_DEFAULT_BASE_URL
from treerag_core.llm import KEY_ENV as LLM_KEY_ENV
from treerag_core.llm import api_key_for, format_cost, llm_configured
from treerag_core.llm import endpoint_of as llm_endpoint_of
from treerag_core.llm import key_needed as llm_key_needed
from treerag_core.llm import make_client as make_llm_client
from treerag_core.llm import other_endpoint as other_llm_endpoint
from treerag_core.llm import resolve_key as resolve_llm_key
from treerag_core.llm import server_endpoint as llm_server_endpoint
from treerag_core.llm import settings_from_env as llm_settings_from_env
from treerag_core.llm import test_connection as test_llm_connection
from treerag_core.llm.errors import public_url
from treerag_core.pipeline import Engine, Event, rerun, run
from treerag_core.pipeline import load_engine as open_index
from treerag_core.pipeline import run_stream as ask
from treerag_core.records.audit_log import AuditLog
from treerag_core.records.terminal import (
    count_noun,
    json_terminal_safe,
    render_footer,
    render_header,
    render_retrieval,
    render_trace,
    terminal_safe,
)
from treerag_core.records.trace_json import stage_summary, trace_to_json
from treerag_core.search.override import override_locate
from treerag_core.search.rerank import RERANK_OFF, get_reranker, naming_control
from treerag_core.search.routing import document_rows
from treerag_core.strategies import (
    all_strategies,
    family_of,
    get_strategy,
    option_types,
    strategy_names,
)
from treerag_core.strategies.drilldown import FAMILY as DRILLDOWN_FAMILY
from treerag_core.strategies.drilldown.ktype import TYPE_NAMES_ZH as KTYPE_NAMES_ZH
from treerag_core.strategies.drilldown.ktype import KTypeSummary
from treerag_core.strategies.drilldown.layers import ensure_layers, layers_of
from treerag_core.strategies.drilldown.strategy import Drilldown
from treerag_core.strategies.graph import FAMILY as GRAPH_FAMILY
from treerag_core.strategies.graph.context import graph_sections
from treerag_core.strategies.graph.part import graph_vectors_of, graphs_of
from treerag_core.strategies.graph.retrieve import search_text
from treerag_core.strategies.graph.search import GraphResult, GraphSearchOptions, search_graph
from treerag_core.strategies.graph.strategy import TreeRAGKG
from treerag_core.strategies.hirag import FAMILY as HIRAG_FAMILY
from treerag_core.strategies.hirag.build import HiragBuildSettings, corpus_fingerprint, hirag_for
from treerag_core.strategies.hirag.build import build_into_folder as build_hirag_into_folder
from treerag_core.strategies.hirag.communities import DEFAULT_MAX_CLUSTER_SIZE
from treerag_core.strategies.hirag.store import FOLDER as HIRAG_FOLDER

if TYPE_CHECKING:
    from treerag_core.ingest.page_images import PageImage

__all__ = [
    "DEFAULT_MAX_CLUSTER_SIZE",
    "EMBEDDER_ENV",
    "RERANK_OFF",
    "STAMP",
    "SUPPORTED_SUFFIXES",
    "AuditLog",
    "Compared",
    "Converted",
    "CorpusIndex",
    "Drilldown",
    "EditOffer",
    "Embedder",
    "Engine",
    "EvalConfig",
    "Event",
    "HiragBuildSettings",
    "IndexLLM",
    "IndexRun",
    "NoDocumentsError",
    "ProgressFn",
    "Rejected",
    "SourceDocument",
    "TreeEdit",
    "WorkspaceLimits",
    "Workspaces",
    "all_strategies",
    "answer_fallbacks",
    "apply_edits",
    "ask",
    "attach_milvus",
    "attach_qdrant",
    "build_index",
    "build_with_fallback",
    "check_drop",
    "check_sources",
    "compare_strategies",
    "conversion_notes",
    "convert_upload",
    "corpus_stats",
    "count_noun",
    "dataset_index",
    "detach_store",
    "document_rows",
    "evaluate",
    "get_embedder",
    "get_reranker",
    "get_strategy",
    "graphs_of",
    "index_cache_key",
    "index_embedder",
    "index_folder",
    "is_workspace_id",
    "json_terminal_safe",
    "layers_of",
    "load_edit_entries",
    "load_edits",
    "load_index",
    "milvus_eval_index",
    "offer_for",
    "open_index",
    "option_types",
    "oracle_leaves",
    "override_locate",
    "passages_of",
    "picked_paths",
    "preamble_text",
    "propose_level_fixes",
    "push_to_milvus",
    "push_to_qdrant",
    "question_flags",
    "remove_folder",
    "render_footer",
    "render_header",
    "render_retrieval",
    "render_trace",
    "rerun",
    "reusable_embeddings",
    "run",
    "save_edits",
    "save_index",
    "stage_summary",
    "store_serving",
    "strategy_names",
    "terminal_safe",
    "to_source",
    "tokenize",
    "trace_to_json",
    "zh_words",
]

# What the explorer (ui/, pages/) reads besides the calls above: eval analysis and labels,
# tuning, the LLM panel, tree edits, originals and page images, the strategy families' views.
__all__ += [
    "BASELINE_STRATEGY",
    "BULK_TREE_OPS",
    "DRILLDOWN_FAMILY",
    "GRAPH_FAMILY",
    "HEADINGS_LIKE_BY",
    "HEADLINE_KEYS",
    "HIRAG_FAMILY",
    "HIRAG_FOLDER",
    "KTYPE_NAMES_ZH",
    "LLM_BASE_URL_ENV",
    "LLM_DEFAULT_BASE_URL",
    "LLM_KEY_ENV",
    "LOCATOR_KEYS",
    "METRIC_KS",
    "MY_SET",
    "QUESTION_FILTERS",
    "SMALL_SET_N",
    "TREE_STRATEGY",
    "TUNABLE_STRATEGIES",
    "TUNE_DEFAULT_METRIC",
    "TUNE_MIN_QUESTIONS",
    "Coverage",
    "EvalDataError",
    "EvalDataset",
    "EvalQuestion",
    "GraphResult",
    "Interval",
    "KTypeSummary",
    "LabelStore",
    "LabelledQuestion",
    "PageImage",
    "QuestionRow",
    "Refound",
    "TreeRAGKG",
    "TuneError",
    "TuneResult",
    "Tuner",
    "api_key_for",
    "build_hirag_into_folder",
    "bulk_tree_edits",
    "bulk_tree_unchanged",
    "check_contents_skeleton",
    "check_report",
    "corpus_fingerprint",
    "coverage",
    "coverage_docs",
    "difference_table",
    "ensure_layers",
    "eval_questions",
    "export_set",
    "family_of",
    "filter_rows",
    "format_cost",
    "graph_sections",
    "headings_between",
    "headings_like",
    "hirag_for",
    "hirag_graph_store",
    "import_rows",
    "labelled_report",
    "leaf_graph_search",
    "llm_configured",
    "llm_endpoint_of",
    "llm_fallback_notes",
    "llm_key_needed",
    "llm_locate_calls",
    "llm_locator_strategies",
    "llm_server_endpoint",
    "llm_settings_from_env",
    "load_dataset",
    "load_original",
    "load_report",
    "make_llm_client",
    "make_mark",
    "mark_from_text",
    "markdown_table",
    "mean_intervals",
    "metric_lookup",
    "metric_number",
    "naming_control",
    "other_llm_endpoint",
    "parse_report",
    "public_url",
    "question_metrics",
    "question_rows",
    "refind",
    "render_page",
    "report_index_settings",
    "report_query_settings",
    "rerank_was_on",
    "resolve_llm_key",
    "save_original",
    "skeleton_edits",
    "test_llm_connection",
    "tree_edit_no_change",
    "tune_metrics",
    "tune_space_for",
    "verdict_label",
    "write_report",
]


# Drawing a PDF page needs pypdfium2 and Pillow, which nothing else on the CLI's path
# loads: its type is imported on first use (render_page below imports the module late).
__getattr__ = lazy_exports(__name__, {"PageImage": "treerag_core.ingest.page_images"})


def render_page(data: bytes, page: int, passage: str = "", width_px: int = 1000) -> PageImage:
    """Page `page` (1-based) of the PDF `data` as a PNG about `width_px` wide, with the lines
    of `passage` marked (`treerag_core.ingest.page_images.render_page`)."""
    from treerag_core.ingest.page_images import render_page as render

    return render(data, page, passage, width_px)


def leaf_graph_search(
    index: CorpusIndex,
    trace: Trace | None,
    leaf_id: str,
    query_vector: Callable[[str], np.ndarray],
) -> GraphResult | None:
    """The graph search step 2 ran in this leaf for the trace's question (rerun: it is
    deterministic and takes milliseconds), or None when the trace did not search it."""
    graphs = graphs_of(index) or {}
    if trace is None or leaf_id not in graphs:
        return None
    group = next((g for g in trace.retrieved if g.kind == "graph" and g.leaf_id == leaf_id), None)
    if group is None:
        return None
    settings = QuerySettings.from_dict(trace.settings, {TreeRAGKG.name: GraphSearchOptions})
    options = settings.option(TreeRAGKG.name, GraphSearchOptions())
    text = search_text(trace.question, group.sub_query or trace.question)
    graph = graphs[leaf_id]
    return search_graph(
        graph,
        text,
        graph.language,  # type: ignore[arg-type]
        tokenize,
        query_vector(text),
        graph_vectors_of(index).get(leaf_id),
        options,
    )


def hirag_graph_store(index: CorpusIndex) -> tuple[Any, str]:
    """The index's HiRAG graph store when it is built or cached (never builds), and "" ; else
    None and why (not built, out of date, or a corrupt build: IndexFormatError's message)."""
    try:
        return hirag_for(index, build_if_missing=False).store, ""
    except IndexFormatError as exc:
        return None, str(exc)


def _qdrant_url(url: str | None) -> str:
    url = url or os.environ.get("QDRANT_URL", "")
    if not url:
        raise VectorStoreError("no Qdrant server: set QDRANT_URL (e.g. http://localhost:6333)")
    return url


def push_to_qdrant(folder: str | Path, url: str | None, collection: str) -> dict:
    """Copy an index folder's documents, sections and chunks to a Qdrant collection.

    `url` defaults to QDRANT_URL (key: QDRANT_API_KEY). Returns the counts pushed per kind,
    the points now there (`points`), the URL used (`url`) and the seconds taken.
    """
    from treerag_core.index.vectors.qdrant_store import QdrantStore
    from treerag_core.strategies.drilldown.vector_store import push_index

    url = _qdrant_url(url)
    index = load_index(folder)
    store = QdrantStore.from_url(url, index.dim, collection)
    started = time.perf_counter()
    counts = push_index(index, store)
    return {
        **counts,
        "points": store.count(),
        "url": url,
        "seconds": time.perf_counter() - started,
    }


def attach_qdrant(engine: Engine, collection: str, url: str | None = None) -> None:
    """Serve the drill-down's vector searches from `collection` on the server at `url`
    (default QDRANT_URL), checked against the index first."""
    from treerag_core.index.vectors.qdrant_store import QdrantStore
    from treerag_core.strategies.drilldown.vector_store import attach_checked

    url = _qdrant_url(url)
    attach_checked(engine.index, QdrantStore.from_url(url, engine.index.dim, collection))


def _milvus_uri(uri: str | None) -> str:
    uri = uri or os.environ.get("MILVUS_URI", "")
    if not uri:
        raise VectorStoreError(
            "--vector-store milvus needs --milvus-uri or MILVUS_URI "
            "(a .db file for Milvus Lite, or http://host:19530)"
        )
    return uri


def _milvus_store(uri: str | None, dim: int, collection: str, timeout: float = 10.0):
    from treerag_core.index.vectors.milvus_store import MilvusStore

    return MilvusStore.open(_milvus_uri(uri), dim, collection, timeout=timeout)


def push_to_milvus(
    index: str | Path | CorpusIndex,
    uri: str | None,
    collection: str = DEFAULT_COLLECTION,
    replace: bool = False,
    *,
    progress: Callable[[int, int], None] | None = None,
    timeout: float = 10.0,
) -> dict:
    """Write an index (a folder, or one in memory) into Milvus at `uri` (default MILVUS_URI;
    a .db path is Milvus Lite; a server's token: MILVUS_TOKEN), its manifest last.

    `progress(done, total)` is called as the chunks go in; `timeout`: seconds to connect.
    Returns the push report's fields (`status`: built, rebuilt or unchanged; counts; `note`),
    the URI and the seconds taken.
    """
    from treerag_core.strategies.drilldown.milvus_push import push_milvus

    uri = _milvus_uri(uri)  # a missing URI is said before any index is read
    if not isinstance(index, CorpusIndex):
        index = load_index(index)
    store = _milvus_store(uri, index.dim, collection, timeout)
    started = time.perf_counter()
    report = push_milvus(index, store, replace=replace, progress=progress)
    return {
        "status": report.status,
        "documents": report.documents,
        "parents": report.parents,
        "chunks": report.chunks,
        "note": report.note,
        "uri": store.uri,
        "collection": collection,
        "seconds": time.perf_counter() - started,
        "store": store,
    }


def attach_milvus(
    engine: Engine | CorpusIndex, uri: str | None, collection: str, *, timeout: float = 10.0
) -> None:
    """Serve every chunk search (dense and BM25) of the engine's index from Milvus, after
    checking the collection holds this index (docs/milvus.md); `timeout`: seconds to connect."""
    from treerag_core.strategies.drilldown.milvus_push import attach_milvus as attach

    index = engine.index if isinstance(engine, Engine) else engine
    attach(index, _milvus_store(uri, index.dim, collection, timeout))


def detach_store(engine: Engine | CorpusIndex) -> None:
    """Serve the index's searches in process again (FAISS + BM25): its attached store, if
    any, is forgotten (the collections stay as they are)."""
    attach_store(engine.index if isinstance(engine, Engine) else engine, None)


def store_serving(engine: Engine | CorpusIndex) -> dict[str, str] | None:
    """Which store serves the index's searches: {"store", "uri", "collection"} (for Milvus
    or Qdrant), or None when they run in process."""
    store = store_for(engine.index if isinstance(engine, Engine) else engine)
    if store is None:
        return None
    return {
        "store": str(getattr(store, "name", type(store).__name__)),
        "uri": str(getattr(store, "uri", "")),
        "collection": str(getattr(store, "collection", "")),
    }


def milvus_eval_index(
    data_dir: str | Path,
    settings: IndexSettings,
    cache_dir: str | Path | None,
    uri: str | None,
    collection: str | None = None,
    progress=None,
) -> tuple[CorpusIndex, dict]:
    """An eval set's (cached) index pushed to Milvus and attached: its own collection
    `eval_<set>_<hash>` unless named. Returns the index and the push report."""
    import re

    from treerag_core.evaluation.dataset import load_dataset
    from treerag_core.evaluation.harness import dataset_index, index_cache_key
    from treerag_core.strategies.drilldown.milvus_push import attach_milvus as attach

    dataset = load_dataset(Path(data_dir))
    index = dataset_index(dataset, settings, Path(cache_dir) if cache_dir else None, progress)
    name = collection or "eval_" + re.sub(r"\W", "_", index_cache_key(dataset, settings))
    pushed = push_to_milvus(index, uri, name)
    attach(index, pushed["store"])
    return index, pushed
