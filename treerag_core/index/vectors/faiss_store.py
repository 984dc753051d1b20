"""The embedded default: exact cosine search with FAISS flat indexes, one per filtered group."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import faiss
import numpy as np

from treerag_core.index.vectors.base import (
    Kind,
    VectorHit,
    VectorPoint,
    VectorQuery,
    check_dims,
    unit_rows,
)


class FlatGroup:
    """A flat inner-product index over a fixed group of unit rows (a leaf, a scope, a layer)."""

    def __init__(self, vectors: np.ndarray, dim: int) -> None:
        self.size = len(vectors)
        self._index = faiss.IndexFlatIP(dim)
        if self.size:
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row, in the group's row order."""
        dense = np.zeros(self.size, dtype=np.float32)
        if not self.size:
            return dense
        query = np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
        sims, positions = self._index.search(query, self.size)
        valid = positions[0] >= 0  # FAISS ids are positions in the group
        dense[positions[0][valid]] = sims[0][valid]
        return dense


class FaissStore:
    """A VectorStore in process memory. Dense only: callers add BM25 themselves (exact IDF).

    Each distinct filter (kind, documents, parents) gets its own flat index, built on first
    use and kept, so searching one parent's children costs that parent's size, not the corpus.
    """

    name = "faiss"
    supports_hybrid = False

    def __init__(self, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be > 0, but got {dim}")
        self.dim = dim
        self._points: dict[str, VectorPoint] = {}
        self._groups: dict[tuple, tuple[list[VectorPoint], FlatGroup]] = {}
        self._lock = threading.Lock()

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        check_dims(points, self.dim)
        with self._lock:
            for point in points:
                self._points[point.id] = point
            self._groups.clear()  # filtered groups are rebuilt on next use

    def count(self, kind: Kind | None = None) -> int:
        return sum(1 for p in self._points.values() if kind is None or p.kind == kind)

    def stored_vectors(self, kind: Kind) -> dict[tuple[str, str], np.ndarray]:
        with self._lock:
            members = [p for p in self._points.values() if p.kind == kind]
        if not members:
            return {}
        rows = unit_rows(np.stack([p.vector for p in members]))
        return {(p.doc_id, p.item_id): rows[i] for i, p in enumerate(members)}

    def _group(self, query: VectorQuery) -> tuple[list[VectorPoint], FlatGroup]:
        docs = None if query.doc_ids is None else frozenset(query.doc_ids)
        parents = None if query.parent_ids is None else frozenset(query.parent_ids)
        key = (query.kind, docs, parents)
        with self._lock:
            cached = self._groups.get(key)
            if cached is None:
                members = [
                    p
                    for p in self._points.values()
                    if p.kind == query.kind
                    and (docs is None or p.doc_id in docs)
                    and (parents is None or p.parent_id in parents)
                ]
                vectors = unit_rows(np.stack([p.vector for p in members])) if members else None
                group = FlatGroup(
                    vectors if vectors is not None else np.zeros((0, self.dim)), self.dim
                )
                cached = self._groups[key] = (members, group)
            return cached

    def search(self, query: VectorQuery) -> list[VectorHit]:
        members, group = self._group(query)
        scores = group.scores(unit_rows(query.vector)[0])
        order = np.argsort(-scores, kind="stable")[: query.limit]
        return [
            VectorHit(
                kind=members[i].kind,
                doc_id=members[i].doc_id,
                item_id=members[i].item_id,
                score=float(scores[i]),
                parent_id=members[i].parent_id,
                heading_path=members[i].heading_path,
            )
            for i in order
        ]
