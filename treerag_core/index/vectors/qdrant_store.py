"""Qdrant as a vector store: one collection, payload-filtered, dense + sparse fused in Qdrant."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager

import numpy as np
from qdrant_client import QdrantClient, models

from treerag_core.base.errors import VectorStoreError
from treerag_core.base.names import DEFAULT_COLLECTION
from treerag_core.index.vectors.base import (
    KINDS,
    Kind,
    VectorHit,
    VectorPoint,
    VectorQuery,
    store_errors,
    unit_rows,
)

DENSE = "dense"
SPARSE = "sparse"
BATCH = 256
TF_K1 = 1.2  # BM25's term-frequency saturation; Qdrant's Modifier.IDF supplies the IDF
RRF_K = 60  # classic RRF-60 (Qdrant's own default is k=2)
_PAYLOAD = ["type", "doc_id", "item_id", "parent_id", "heading_path"]


def token_id(token: str) -> int:
    """A stable 31-bit id for a token (blake2b, not Python's salted hash): same in every run."""
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


def sparse_vector(tokens: Sequence[str], query: bool = False) -> models.SparseVector:
    """Our tokens (jieba / English stems) as a sparse vector.

    Documents weigh each term by saturated frequency tf*(k1+1)/(tf+k1); a query weighs each
    distinct term 1. With Modifier.IDF on the collection, Qdrant multiplies in the IDF, so the
    dot product is BM25 without length normalisation. Qdrant's own BM25 helper has no Chinese.
    """
    counts = Counter(tokens)
    weights: dict[int, float] = {}
    for token, tf in counts.items():
        value = 1.0 if query else tf * (TF_K1 + 1) / (tf + TF_K1)
        key = token_id(token)
        weights[key] = weights.get(key, 0.0) + value  # a hash collision adds up, never drops
    indices = sorted(weights)
    return models.SparseVector(indices=indices, values=[weights[i] for i in indices])


def query_filter(query: VectorQuery) -> models.Filter:
    """Seed 001's filters: `type`, then `doc_id` in the chosen documents, `parent_id` in parents."""
    must: list[models.Condition] = [
        models.FieldCondition(key="type", match=models.MatchValue(value=query.kind))
    ]
    if query.doc_ids is not None:
        must.append(
            models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(query.doc_ids)))
        )
    if query.parent_ids is not None:
        must.append(
            models.FieldCondition(
                key="parent_id", match=models.MatchAny(any=list(query.parent_ids))
            )
        )
    return models.Filter(must=must)


class QdrantStore:
    """A VectorStore in one Qdrant collection (points: document, parent and child kinds).

    Build with `QdrantStore.in_memory(dim)` (tests, benchmarks: the real client in process)
    or `QdrantStore.from_url(url, dim)` for a server. The client's on-disk local mode is not
    offered: it stores points pickled, and an index folder may come from anyone.
    """

    name = "qdrant"
    supports_hybrid = True

    def __init__(
        self,
        client: QdrantClient,
        dim: int,
        collection: str = DEFAULT_COLLECTION,
        payload_indexes: bool = True,
    ) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be > 0, but got {dim}")
        self.client = client
        self.dim = dim
        self.collection = collection
        self.payload_indexes = payload_indexes
        with self._errors("open the collection"):
            if not client.collection_exists(collection):
                self._create()
            else:
                self._check_existing()

    @classmethod
    def in_memory(cls, dim: int, collection: str = DEFAULT_COLLECTION) -> QdrantStore:
        # The in-process client ignores payload indexes (and warns when asked for one).
        return cls(QdrantClient(":memory:"), dim, collection, payload_indexes=False)

    @classmethod
    def from_url(
        cls,
        url: str,
        dim: int,
        collection: str = DEFAULT_COLLECTION,
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> QdrantStore:
        """A server store; the key defaults to QDRANT_API_KEY from the environment."""
        if not url.startswith(("http://", "https://")):
            raise VectorStoreError(f"Qdrant URL must start with http:// or https://, got {url!r}")
        key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY") or None
        client = QdrantClient(url=url, api_key=key, timeout=int(timeout))
        return cls(client, dim, collection)

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        return store_errors("Qdrant", doing)

    def _create(self) -> None:
        self.client.create_collection(
            self.collection,
            vectors_config={
                DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)
            },
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        if self.payload_indexes:  # filters on a server stay fast past millions of points
            for key in ("type", "doc_id", "parent_id"):
                self.client.create_payload_index(
                    self.collection, key, field_schema=models.PayloadSchemaType.KEYWORD
                )

    def _check_existing(self) -> None:
        info = self.client.get_collection(self.collection)
        dense = (info.config.params.vectors or {}).get(DENSE)
        if dense is None or dense.size != self.dim:
            size = None if dense is None else dense.size
            raise VectorStoreError(
                f"collection {self.collection!r} has dense size {size}, not {self.dim}: "
                "push with another --collection or delete that one"
            )

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        with self._errors("store points"):
            for start in range(0, len(points), BATCH):
                batch = points[start : start + BATCH]
                vectors = unit_rows(np.stack([p.vector for p in batch]))
                structs = [
                    models.PointStruct(
                        id=p.id,
                        vector={DENSE: vectors[i].tolist(), SPARSE: sparse_vector(p.tokens)},
                        payload={
                            "type": p.kind,
                            "doc_id": p.doc_id,
                            "item_id": p.item_id,
                            "parent_id": p.parent_id,
                            "heading_path": p.heading_path,
                            "language": p.language,
                            "content": p.text,
                        },
                    )
                    for i, p in enumerate(batch)
                ]
                self.client.upsert(self.collection, points=structs, wait=True)

    def count(self, kind: Kind | None = None) -> int:
        flt = None
        if kind is not None:
            flt = models.Filter(
                must=[models.FieldCondition(key="type", match=models.MatchValue(value=kind))]
            )
        with self._errors("count points"):
            return int(self.client.count(self.collection, count_filter=flt, exact=True).count)

    def stored_vectors(self, kind: Kind) -> dict[tuple[str, str], np.ndarray]:
        """Every point of `kind` with its dense vector, by scrolling the collection (exact,
        page by page): a search would go through HNSW on a server, which may miss points."""
        flt = models.Filter(
            must=[models.FieldCondition(key="type", match=models.MatchValue(value=kind))]
        )
        out: dict[tuple[str, str], np.ndarray] = {}
        offset = None
        with self._errors("list points"):
            while True:
                records, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=flt,
                    limit=BATCH,
                    offset=offset,
                    with_payload=_PAYLOAD,
                    with_vectors=[DENSE],
                )
                for record in records:
                    hit = self._hit(record)
                    vector = record.vector.get(DENSE) if isinstance(record.vector, dict) else None
                    if vector is None:
                        raise VectorStoreError(
                            f"collection {self.collection!r} holds point {record.id} without "
                            "a dense vector: it was not pushed by `qdrant-push`"
                        )
                    out[(hit.doc_id, hit.item_id)] = np.asarray(vector, dtype=np.float32)
                if offset is None:
                    return out

    def search(self, query: VectorQuery) -> list[VectorHit]:
        """Dense search; with `query.tokens`, dense and sparse prefetched and fused by RRF."""
        flt = query_filter(query)
        dense = unit_rows(query.vector)[0].tolist()
        with self._errors("search"):
            if query.tokens:
                window = max(query.limit * 4, 20)  # over-fetch both sides before fusing
                response = self.client.query_points(
                    self.collection,
                    prefetch=[
                        models.Prefetch(query=dense, using=DENSE, filter=flt, limit=window),
                        models.Prefetch(
                            query=sparse_vector(query.tokens, query=True),
                            using=SPARSE,
                            filter=flt,
                            limit=window,
                        ),
                    ],
                    query=models.RrfQuery(rrf=models.Rrf(k=RRF_K)),
                    limit=query.limit,
                    with_payload=_PAYLOAD,
                )
            else:
                response = self.client.query_points(
                    self.collection,
                    query=dense,
                    using=DENSE,
                    query_filter=flt,
                    limit=query.limit,
                    with_payload=_PAYLOAD,
                )
        return [self._hit(p) for p in response.points]

    def _hit(self, point: models.ScoredPoint | models.Record) -> VectorHit:
        """A hit from its payload; a point `upsert` did not write is named, not a KeyError.
        A scrolled record has no score (0.0)."""
        payload = point.payload or {}
        kind, doc_id, item_id = payload.get("type"), payload.get("doc_id"), payload.get("item_id")
        parent_id, heading = payload.get("parent_id"), payload.get("heading_path", "")
        if (
            kind not in KINDS
            or not isinstance(doc_id, str)
            or not isinstance(item_id, str)
            or not isinstance(parent_id, str | None)
            or not isinstance(heading, str)
        ):
            raise VectorStoreError(
                f"collection {self.collection!r} holds point {point.id} with a malformed "
                f"payload (type {kind!r}, doc_id {doc_id!r}, item_id {item_id!r}): it was "
                "not pushed by `qdrant-push`; push with another --collection"
            )
        score = float(getattr(point, "score", 0.0))
        return VectorHit(kind, doc_id, item_id, score, parent_id, heading)
