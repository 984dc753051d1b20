"""TreeRAG: locate sections on a document's heading tree, retrieve inside them, answer.

The engine's public API (`treerag_core.api`) is exported here: `from treerag_core import
index_folder, open_index, ask`. It is loaded on first use, so importing a submodule such as
`treerag_core.base.settings` stays light.
"""

from __future__ import annotations

from typing import Any

# The names of `treerag_core.api.__all__` (a test keeps the two equal): checked before the
# API is imported, so `from treerag_core import cli` does not load the whole engine.
API = [
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


def __getattr__(name: str) -> Any:
    if name in API:
        from treerag_core import api

        return getattr(api, name)
    raise AttributeError(f"module 'treerag_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
