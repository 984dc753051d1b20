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

from treerag_core.base.errors import VectorStoreError
from treerag_core.build import (
    IndexLLM,
    IndexRun,
    NoDocumentsError,
    build_with_fallback,
    index_folder,
)
from treerag_core.compare import Compared, compare_strategies
from treerag_core.evaluation.harness import EvalConfig, dataset_index, evaluate
from treerag_core.index.corpus import (
    CorpusIndex,
    SourceDocument,
    build_index,
    corpus_stats,
    reusable_embeddings,
)
from treerag_core.index.embedders import Embedder, get_embedder, index_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.pipeline import Engine, Event, rerun, run
from treerag_core.pipeline import load_engine as open_index
from treerag_core.pipeline import run_stream as ask
from treerag_core.strategies import all_strategies, get_strategy, option_types, strategy_names

__all__ = [
    "Compared",
    "CorpusIndex",
    "Embedder",
    "Engine",
    "EvalConfig",
    "Event",
    "IndexLLM",
    "IndexRun",
    "NoDocumentsError",
    "SourceDocument",
    "all_strategies",
    "ask",
    "attach_qdrant",
    "build_index",
    "build_with_fallback",
    "compare_strategies",
    "corpus_stats",
    "dataset_index",
    "evaluate",
    "get_embedder",
    "get_strategy",
    "index_embedder",
    "index_folder",
    "load_index",
    "open_index",
    "option_types",
    "push_to_qdrant",
    "rerun",
    "reusable_embeddings",
    "run",
    "save_index",
    "strategy_names",
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
    from treerag_core.index.vectors.push import push_index
    from treerag_core.index.vectors.qdrant_store import QdrantStore

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
    from treerag_core.index.vectors.attach import attach_checked
    from treerag_core.index.vectors.qdrant_store import QdrantStore

    url = _qdrant_url(url)
    attach_checked(engine.index, QdrantStore.from_url(url, engine.index.dim, collection))
