"""The vector-store interface: points of three kinds (document, parent, child), filtered search."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from treerag_core.base.errors import VectorStoreError

Kind = Literal["document", "parent", "child"]
KINDS: tuple[Kind, ...] = ("document", "parent", "child")

# A fixed namespace: the same point always gets the same id, in every process and machine.
_NAMESPACE = uuid.UUID("5b0f7c1e-3f4a-4c55-9a57-7472656572a6")


def point_id(kind: Kind, doc_id: str, item_id: str) -> str:
    """A UUIDv5 of "kind:doc:item": ids of different kinds can never collide.

    Seed 001 numbers parents and children from 1 in one shared space; in one collection a
    point id is unique, so child 7 would overwrite parent 7. Hashing the kind into the id
    keeps them apart, and the same chunk re-pushed replaces itself instead of duplicating.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, but got {kind!r}")
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{doc_id}:{item_id}"))


@dataclass(frozen=True)
class VectorPoint:
    """One stored vector with the payload filters read.

    `item_id` is the node id (document root or parent section) or the chunk id (child);
    `parent_id` is the parent section of a child (None for documents and parents).
    """

    kind: Kind
    doc_id: str
    item_id: str
    vector: np.ndarray = field(compare=False, repr=False)
    parent_id: str | None = None
    heading_path: str = ""
    language: str = "en"
    text: str = ""
    tokens: tuple[str, ...] = ()  # the sparse side of hybrid search (our own tokenizer)

    @property
    def id(self) -> str:
        return point_id(self.kind, self.doc_id, self.item_id)


@dataclass(frozen=True)
class VectorQuery:
    """A filtered search: one kind, optionally only some documents or parents.

    `tokens` switches on hybrid search where the store supports it (dense + sparse, fused).
    """

    vector: np.ndarray = field(compare=False, repr=False)
    kind: Kind
    limit: int = 10
    doc_ids: tuple[str, ...] | None = None
    parent_ids: tuple[str, ...] | None = None
    tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, but got {self.kind!r}")
        if self.limit <= 0:
            raise ValueError(f"limit must be > 0, but got {self.limit}")


@dataclass(frozen=True)
class VectorHit:
    """A search result: which item, and its score (cosine, or the fused score when hybrid)."""

    kind: Kind
    doc_id: str
    item_id: str
    score: float
    parent_id: str | None = None
    heading_path: str = ""


@runtime_checkable
class VectorStore(Protocol):
    """Where vectors live. Implementations: `FaissStore` (in process), `QdrantStore`."""

    name: str

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Add points; a point with an existing id replaces it."""
        ...

    def search(self, query: VectorQuery) -> list[VectorHit]:
        """The best `query.limit` points of `query.kind` passing the filters, best first."""
        ...

    def count(self, kind: Kind | None = None) -> int:
        """How many points (of one kind) are stored."""
        ...

    def stored_vectors(self, kind: Kind) -> dict[tuple[str, str], np.ndarray]:
        """Every point of `kind`: (doc_id, item_id) -> its vector as the store compares it
        (unit length), read exactly (a scroll), never through an approximate search."""
        ...


@contextmanager
def store_errors(
    backend: str, doing: str, reason: Callable[[Exception], str] = str
) -> Iterator[None]:
    """A vector server's errors (transport, server, schema: many types) as one named error."""
    try:
        yield
    except VectorStoreError:
        raise
    except Exception as exc:
        raise VectorStoreError(f"{backend} could not {doing}: {reason(exc)}") from exc


def check_dims(points: Sequence[VectorPoint], dim: int) -> None:
    """Raise ValueError unless every point's vector has `dim` numbers (before any is stored)."""
    for point in points:
        if np.asarray(point.vector).shape != (dim,):
            raise ValueError(
                f"point {point.kind}:{point.item_id} has shape "
                f"{np.asarray(point.vector).shape}, expected ({dim},)"
            )


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Float32 rows scaled to unit length (zero rows stay zero): inner product is cosine."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0))
