"""Index settings (part of the index manifest) and where the app keeps its data.

Query settings live in `treerag_core.settings`, one class per step.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from typing import Any

from treerag_core.names import EmbedderName

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class IndexSettings:
    """How documents become trees, chunks and vectors. Part of the index manifest."""

    max_depth: int = 3
    chunk_size: int = 200
    chunk_overlap: int = 50
    min_chunk_chars: int = 20
    embedder: str = EmbedderName.MULTILINGUAL.value  # a names.EmbedderName or st:<folder>
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    summary_chars: int = 160
    llm_summaries: bool = False

    def __post_init__(self) -> None:
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, but got {self.max_depth}")
        if self.chunk_size < 20:
            raise ValueError(f"chunk_size must be >= 20, but got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError(
                f"chunk_overlap must be in [0, chunk_size), but got {self.chunk_overlap}"
            )
        if self.max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be > 0, but got {self.max_file_bytes}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def data_dir() -> str:
    """Where the app keeps indexes and the audit log (TREERAG_DATA_DIR, default ./data)."""
    return os.environ.get("TREERAG_DATA_DIR", "data")
