"""Vector stores behind one interface: FAISS flat (embedded default) and Qdrant."""

from treerag_core.index.vectors.base import (
    KINDS,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorStore,
    point_id,
)

__all__ = ["KINDS", "VectorHit", "VectorPoint", "VectorQuery", "VectorStore", "point_id"]
