"""Which vector store serves an index in this process (None: the index's own FAISS groups)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from treerag_core.errors import VectorStoreError
from treerag_core.layers import Layers, ensure_layers
from treerag_core.vectors.base import VectorQuery, VectorStore

SAME_VECTOR = 0.999  # cosine of a stored float32 vector with its source (rounding only)

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
    and an empty one with nothing: both are named, never served silently. Checked: the count
    of each kind, the document ids, and that a document's stored vector is the index's own
    (an index with the same names but another embedder or other summaries is refused too).
    """
    layers = ensure_layers(index)
    push = "run `qdrant-push --index` with this index first"
    expected = {
        "document": len(layers.doc_ids),
        "parent": len(layers.parent_ids),
        "child": len(index.chunks),
    }
    for kind, want in expected.items():
        got = store.count(kind)
        if got != want:
            raise VectorStoreError(
                f"the collection holds {got} {kind} points, the index {want}: {push}"
            )
    if layers.doc_ids:
        _check_documents(index, layers, store, push)
    attach_store(index, store)


def _check_documents(index: Any, layers: Layers, store: VectorStore, push: str) -> None:
    """The collection's document points are this index's documents, with the same vectors."""
    vectors = layers.doc_vectors(layers.doc_ids)
    norms = np.linalg.norm(vectors, axis=1)
    row = int(np.argmax(norms))  # a zero vector (an empty summary) has no cosine to compare
    hits = store.search(VectorQuery(vectors[row], "document", limit=len(layers.doc_ids)))
    stored = {(h.doc_id, h.item_id) for h in hits}
    own = {(d, index.document(d).root_id) for d in layers.doc_ids}
    if stored != own:
        foreign, missing = _names(stored - own), _names(own - stored)
        detail = f"it holds {foreign}, not in this index" if foreign else f"it lacks {missing}"
        raise VectorStoreError(f"the collection belongs to another index ({detail}): {push}")
    if norms[row] == 0:
        return
    doc = layers.doc_ids[row]
    hit = store.search(VectorQuery(vectors[row], "document", limit=1, doc_ids=(doc,)))
    if not hit or hit[0].score < SAME_VECTOR:
        score = f"{hit[0].score:.3f}" if hit else "none"
        raise VectorStoreError(
            f"the collection's vector for {doc!r} is not this index's (cosine {score}): "
            f"it was embedded by another model or from other summaries; {push}"
        )


def _names(pairs: set[tuple[str, str]]) -> str:
    names = sorted({doc_id for doc_id, _ in pairs})
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(map(repr, names[:3])) + more
