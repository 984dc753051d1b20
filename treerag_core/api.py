"""The engine's public API: what the CLI, the explorer, the harness and benchmarks call.

Front ends import the engine from here (`from treerag_core import ...`), apart from the
shared types (`treerag_core.base.types`) and settings (`treerag_core.base.settings`,
`treerag_core.base.config`). Open an index, index inputs into a folder, ask (streamed
events), rerun, compare strategies, evaluate a question set.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from treerag_core.answer.flags import question_flags
from treerag_core.answer.synthesis import answer_fallbacks
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import VectorStoreError
from treerag_core.build import (
    IndexLLM,
    IndexRun,
    NoDocumentsError,
    build_with_fallback,
    index_folder,
)
from treerag_core.compare import Compared, compare_strategies
from treerag_core.evaluation.harness import (
    EvalConfig,
    dataset_index,
    evaluate,
    index_cache_key,
    oracle_leaves,
    passages_of,
    picked_paths,
)
from treerag_core.index.corpus import (
    CorpusIndex,
    ProgressFn,
    SourceDocument,
    build_index,
    corpus_stats,
    reusable_embeddings,
)
from treerag_core.index.embedders import EMBEDDER_ENV, Embedder, get_embedder, index_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.index.tokens import tokenize, zh_words
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
from treerag_core.ingest.documents import Converted, Rejected, convert_upload, to_source
from treerag_core.ingest.tree_edits import (
    EditOffer,
    TreeEdit,
    apply_edits,
    load_edit_entries,
    load_edits,
    offer_for,
    save_edits,
)
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
from treerag_core.search.rerank import RERANK_OFF, get_reranker
from treerag_core.search.routing import document_rows
from treerag_core.strategies import all_strategies, get_strategy, option_types, strategy_names
from treerag_core.strategies.drilldown.layers import layers_of
from treerag_core.strategies.drilldown.strategy import Drilldown
from treerag_core.strategies.graph.part import graphs_of
from treerag_core.strategies.hirag.build import HiragBuildSettings
from treerag_core.strategies.hirag.communities import DEFAULT_MAX_CLUSTER_SIZE

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
    "convert_upload",
    "corpus_stats",
    "count_noun",
    "dataset_index",
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
    "strategy_names",
    "terminal_safe",
    "to_source",
    "tokenize",
    "trace_to_json",
    "zh_words",
]


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


def _milvus_store(uri: str | None, dim: int, collection: str):
    from treerag_core.index.vectors.milvus_store import MilvusStore

    return MilvusStore.open(_milvus_uri(uri), dim, collection)


def push_to_milvus(
    index: str | Path | CorpusIndex,
    uri: str | None,
    collection: str = "treerag",
    replace: bool = False,
) -> dict:
    """Write an index (a folder, or one in memory) into Milvus at `uri` (default MILVUS_URI;
    a .db path is Milvus Lite; a server's token: MILVUS_TOKEN), its manifest last.

    Returns the push report's fields (`status`: built, rebuilt or unchanged; counts; `note`),
    the URI and the seconds taken.
    """
    from treerag_core.strategies.drilldown.milvus_push import push_milvus

    uri = _milvus_uri(uri)  # a missing URI is said before any index is read
    if not isinstance(index, CorpusIndex):
        index = load_index(index)
    store = _milvus_store(uri, index.dim, collection)
    started = time.perf_counter()
    report = push_milvus(index, store, replace=replace)
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


def attach_milvus(engine: Engine | CorpusIndex, uri: str | None, collection: str) -> None:
    """Serve every chunk search (dense and BM25) of the engine's index from Milvus, after
    checking the collection holds this index (docs/milvus.md)."""
    from treerag_core.strategies.drilldown.milvus_push import attach_milvus as attach

    index = engine.index if isinstance(engine, Engine) else engine
    attach(index, _milvus_store(uri, index.dim, collection))


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
