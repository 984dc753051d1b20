"""Which vector store serves an index in this process (None: the index's own FAISS groups).

A family that serves its vectors from a store checks and pushes them itself (drill-down:
strategies/drilldown/vector_store.py)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from treerag_core.index.vectors.base import VectorStore

_STORES: dict[int, VectorStore] = {}
_LOCK = threading.Lock()


def attach_store(index: Any, store: VectorStore | None) -> None:
    """Serve `index`'s layer vectors from `store` (e.g. a Qdrant collection) until detached."""
    key = id(index)
    with _LOCK:
        if store is None:
            _STORES.pop(key, None)
            return
        first = key not in _STORES
        _STORES[key] = store
    if first:  # forget the store when the index is collected (ids are reused)
        weakref.finalize(index, _STORES.pop, key, None)


def store_for(index: Any) -> VectorStore | None:
    return _STORES.get(id(index))
