"""The per-Engine query-vector cache: bounded LRU, read-only vectors."""

from __future__ import annotations

import numpy as np
import pytest

from treerag_core.index.vector_cache import QueryVectorCache


def test_query_vector_cache_is_a_bounded_lru():
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return np.full(3, len(text), dtype=np.float32)

    cache = QueryVectorCache(maxsize=2)
    cache.get("a", embed)
    cache.get("bb", embed)
    cache.get("a", embed)  # a is now the most recent
    cache.get("ccc", embed)  # evicts bb
    assert len(cache) == 2 and "a" in cache and "bb" not in cache
    assert calls == ["a", "bb", "ccc"]
    with pytest.raises(ValueError, match="read-only"):
        cache.get("a", embed)[0] = 9.0  # shared vectors are read-only
    with pytest.raises(ValueError, match="maxsize"):
        QueryVectorCache(0)
