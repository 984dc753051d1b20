"""TreeRAG: locate sections on a document's heading tree, retrieve inside them, answer.

The engine's public API (`treerag_core.api`) is exported here: `from treerag_core import
index_folder, open_index, ask`. It is loaded on first use, so importing a submodule such as
`treerag_core.base.settings` stays light.
"""

from __future__ import annotations

from typing import Any

# The names of `treerag_core.api.__all__` (a test keeps the two the same set), checked before
# the API is imported, so `from treerag_core import cli` does not load the whole engine.
API = [
    "Drilldown",
    "AuditLog",
    "Compared",
    "Converted",
    "EditOffer",
    "CorpusIndex",
    "DEFAULT_MAX_CLUSTER_SIZE",
    "EMBEDDER_ENV",
    "Embedder",
    "Engine",
    "EvalConfig",
    "Event",
    "HiragBuildSettings",
    "IndexLLM",
    "IndexRun",
    "NoDocumentsError",
    "ProgressFn",
    "RERANK_OFF",
    "Rejected",
    "STAMP",
    "SUPPORTED_SUFFIXES",
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
    "offer_for",
    "load_index",
    "open_index",
    "option_types",
    "oracle_leaves",
    "override_locate",
    "passages_of",
    "picked_paths",
    "propose_level_fixes",
    "milvus_eval_index",
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


def __getattr__(name: str) -> Any:
    if name in API:
        from treerag_core import api

        return getattr(api, name)
    raise AttributeError(f"module 'treerag_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
