"""Which vector store serves an index in this process (None: the index's own FAISS groups)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from treerag_core.errors import VectorStoreError
from treerag_core.vectors.base import VectorStore

_STORES: dict[int, VectorStore] = {}
_LOCK = threading.Lock()


def attach_store(index: Any, store: VectorStore | None) -> None:
    """Serve `index`'s drill-down layers from `store` (e.g. a Qdrant collection) until detached."""
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


def attach_checked(index: Any, store: VectorStore) -> None:
    """Attach `store` after checking it holds this index's points (pushed, not empty).

    A collection pushed from another index would answer with ids this index does not have,
    and an empty one with nothing: both are named, never served silently.
    """
    documents = store.count("document")
    if documents != len(index.documents):
        raise VectorStoreError(
            f"the collection holds {documents} document points, the index "
            f"{len(index.documents)}: run `qdrant-push --index` with this index first"
        )
    attach_store(index, store)
