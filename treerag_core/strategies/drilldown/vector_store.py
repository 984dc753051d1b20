"""Drill-down's vectors in a vector store: push the three layers (documents, parents,
children) and attach a store to an index after checking it holds this index's points."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from treerag_core.base.errors import VectorStoreError
from treerag_core.index.vectors.attach import attach_store
from treerag_core.index.vectors.base import KINDS, VectorStore, unit_rows
from treerag_core.strategies.drilldown.layers import Layers, ensure_layers, layer_points

PUSH_BATCH = 1024
# A pushed vector comes back as the unit float32 row we sent, re-normalised in float32 by
# Qdrant (cosine collections): each component moves by about one ulp. Measured on 256- to
# 4096-d rows (tests/test_vectors_push.py): at most 3e-8 (cosine deficit ~1e-15); 1e-6 is a
# few ulps at 1.0 (ulp 1.2e-7) and nothing more, where any other embedding of the same text
# moves components by orders of magnitude more.
SAME_VECTOR_ATOL = 1e-6


def push_index(
    index, store: VectorStore, progress: Callable[[int, int], None] | None = None
) -> dict[str, int]:
    """Upsert every point (ids are stable: pushing again replaces, never duplicates)."""
    points = layer_points(index)
    for start in range(0, len(points), PUSH_BATCH):
        store.upsert(points[start : start + PUSH_BATCH])
        if progress is not None:
            progress(min(start + PUSH_BATCH, len(points)), len(points))
    return {kind: sum(p.kind == kind for p in points) for kind in KINDS}


def attach_checked(index: Any, store: VectorStore) -> None:
    """Attach `store` after checking it holds this index's points (pushed, not empty).

    A collection pushed from another index would answer with ids this index does not have,
    and an empty one with nothing: both are named, never served silently. Checked: the count
    of each kind, the document ids, and that every document's stored vector is the index's
    own (an index with the same names but another embedder or other summaries is refused too).
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
    """The collection's document points are this index's documents, with the same vectors:
    every one listed exactly (`stored_vectors`, a scroll), never found by a search."""
    stored = store.stored_vectors("document")
    own = {(d, index.document(d).root_id): row for row, d in enumerate(layers.doc_ids)}
    if stored.keys() != own.keys():
        foreign, missing = _names(stored.keys() - own.keys()), _names(own.keys() - stored.keys())
        detail = f"it holds {foreign}, not in this index" if foreign else f"it lacks {missing}"
        raise VectorStoreError(f"the collection belongs to another index ({detail}): {push}")
    vectors = unit_rows(layers.doc_vectors(layers.doc_ids))
    for key, row in own.items():
        theirs = stored[key]
        if theirs.shape == vectors[row].shape and (
            np.max(np.abs(theirs - vectors[row]), initial=0.0) <= SAME_VECTOR_ATOL
        ):
            continue
        raise VectorStoreError(
            f"the collection's vector for {key[0]!r} is not this index's (cosine "
            f"{_cosine(theirs, vectors[row])}): it was embedded by another model or from "
            f"other summaries; {push}"
        )


def _cosine(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"none: {a.size} dimensions, not {b.size}"
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return f"{float(a @ b) / norms:.6f}" if norms else "none: a zero vector"


def _names(pairs: set[tuple[str, str]]) -> str:
    names = sorted({doc_id for doc_id, _ in pairs})
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(map(repr, names[:3])) + more
