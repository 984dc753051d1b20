"""One immutable, hashable configuration for indexing and querying, built from env, CLI or UI."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class IndexSettings:
    """How documents become trees, chunks and vectors. Part of the index manifest."""

    max_depth: int = 3
    chunk_size: int = 200
    chunk_overlap: int = 50
    min_chunk_chars: int = 20
    embedder: str = "multilingual"  # multilingual | minilm | hashing | st:<folder path>
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    summary_chars: int = 160
    llm_summaries: bool = False
    # Leaves at least this long get a leaf-local knowledge graph (0: no graphs). Measured in
    # docs/graphs.md; 3000 is where the long-leaf share was counted.
    graph_min_leaf_chars: int = 3000
    llm_graphs: bool = False  # extract graph entities and relations with the LLM (needs a key)

    def __post_init__(self) -> None:
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, but got {self.max_depth}")
        if self.chunk_size < 20:
            raise ValueError(f"chunk_size must be >= 20, but got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError(
                f"chunk_overlap must be in [0, chunk_size), but got {self.chunk_overlap}"
            )
        if self.graph_min_leaf_chars < 0:
            raise ValueError(
                f"graph_min_leaf_chars must be >= 0 (0: no graphs), but got "
                f"{self.graph_min_leaf_chars}"
            )
        if self.max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be > 0, but got {self.max_file_bytes}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class QuerySettings:
    """How a question is answered. Changing only fusion fields reuses a cached step 1."""

    strategy: str = "treerag"
    locator: str = "auto"  # auto (llm if a key, else local) | llm | local | keyword
    max_leaves: int = 5
    locate_cutoff: float = 0.3  # local locator keeps leaves scoring >= cutoff * best (measured)
    heading_weight: float = 0.2  # local locator: weight of heading/summary match vs chunks
    fusion: str = "weighted"  # weighted | rrf | dbsf
    dense_weight: float = 0.5
    rrf_k: int = 60
    top_k_per_leaf: int = 8  # measured: 8 beat 3, 5 and 12 on both dev sets
    final_top_k: int = 5
    rerank: bool = True
    rerank_model: str = "bundled-en"  # bundled-en | <sentence-transformers CrossEncoder folder>
    rerank_chinese: bool = False
    use_llm: bool = True
    locate_model: str = "claude-haiku-4-5"
    answer_model: str = "claude-sonnet-4-6"  # 4-5 is retired on 2026-11-30 (SDK notice)
    llm_timeout: float = 30.0
    llm_max_retries: int = 2
    max_question_chars: int = 2000
    locate_budget_tokens: int = 6000

    def __post_init__(self) -> None:
        if not 1 <= self.max_leaves <= 5:
            raise ValueError(f"max_leaves must be in 1..5, but got {self.max_leaves}")
        if not 0.0 <= self.locate_cutoff <= 1.0:
            raise ValueError(f"locate_cutoff must be in [0, 1], but got {self.locate_cutoff}")
        if self.fusion not in ("weighted", "rrf", "dbsf"):
            raise ValueError(f"fusion must be weighted, rrf or dbsf, but got {self.fusion!r}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError(f"dense_weight must be in [0, 1], but got {self.dense_weight}")
        if self.rrf_k <= 0:
            raise ValueError(f"rrf_k must be > 0, but got {self.rrf_k}")
        if self.top_k_per_leaf <= 0 or self.final_top_k <= 0:
            raise ValueError("top_k_per_leaf and final_top_k must be > 0")

    @property
    def bm25_weight(self) -> float:
        return 1.0 - self.dense_weight

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuerySettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_(self, **changes: Any) -> QuerySettings:
        return replace(self, **changes)


def anthropic_api_key() -> str | None:
    """The key from the environment, or None; never logged."""
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    return key or None


def data_dir() -> str:
    """Where the app keeps indexes and the audit log (TREERAG_DATA_DIR, default ./data)."""
    return os.environ.get("TREERAG_DATA_DIR", "data")
