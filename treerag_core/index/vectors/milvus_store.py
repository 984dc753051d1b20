"""Milvus as a vector store: chunks with dense vectors and engine-side BM25, layers by type.

One index lives in two collections (a URI's file path is Milvus Lite, a URL a server):

- `<name>_chunks`: every chunk (seed 001's `child` points) with its dense vector, text, the
  trace's payload (document, leaf, heading path, offsets, pages, row) and two BM25 fields
  the engine fills itself (a BM25 `Function` over our tokens): the passage, and heading
  path + passage (treerag's heading-aware BM25). BM25 statistics are per collection, so
  only chunks live here: any other row would change every IDF. A scope narrower than the
  collection reads its rows' terms here and is scored with its own statistics in our process.
- `<name>_layers`: the drill-down's document and parent points (dense, filtered by `kind`),
  and the manifest row written last by a push (no manifest: a half-written build).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from treerag_core.base.errors import VectorStoreError
from treerag_core.base.names import DEFAULT_COLLECTION
from treerag_core.index.bm25 import BM25Stats, LeafBM25
from treerag_core.index.vectors.base import (
    KINDS,
    Kind,
    VectorHit,
    VectorPoint,
    VectorQuery,
    check_dims,
    store_errors,
    unit_rows,
)
from treerag_core.index.vectors.milvus_expr import (
    all_of,
    check_collection_name,
    equals,
    one_of,
    term,
    terms,
)

DENSE = "dense"
SPARSE = "sparse"  # BM25 of the passage's tokens
PATH_SPARSE = "path_sparse"  # BM25 of heading path + passage tokens
MANIFEST_ID = "treerag-manifest"
# The engine's largest top-k (Milvus' default maximum): groups up to this size are scored
# exactly (every chunk's cosine, every matching chunk's BM25); larger ones by their top rows.
WINDOW = 16384
BATCH = 500
MAX_VARCHAR = 65535  # bytes
# Our in-process BM25 (treerag_core.index.bm25): the engine computes the same formula with these.
BM25_K1 = 1.5
BM25_B = 0.75
_HIT_FIELDS = ["kind", "doc_id", "item_id", "parent_id", "heading_path", "row"]
# Narrow scopes whose term rows and BM25 statistics stay here (drill-down's layer 3 scores
# several leaves of one document per question): a few documents' rows, never the corpus's.
MAX_SCOPE_TERMS = 8
_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def is_lite(uri: str) -> bool:
    """A file path (Milvus Lite, in a child process of ours) rather than a server URL."""
    return not uri.startswith(("http://", "https://", "tcp://", "unix:", "grpc://"))


def connect(uri: str, timeout: float = 10.0) -> Any:
    """A MilvusClient for `uri`, one per URI per process (Milvus Lite: one engine per file).

    A server's token is read from MILVUS_TOKEN, never from a flag (shell history).
    """
    from pymilvus import MilvusClient

    # pymilvus logs every failed call with its stack before raising it; we raise it as one
    # named line (VectorStoreError), so its own log would only print the error twice.
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    if not uri:
        raise VectorStoreError("no Milvus URI: give --milvus-uri (a .db file or a server URL)")
    key = str(Path(uri).resolve()) if is_lite(uri) else uri
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None:
            return client
        if is_lite(uri):
            path = Path(uri)
            if path.suffix != ".db":
                raise VectorStoreError(
                    f"a Milvus Lite URI is a file ending in .db, but got {uri!r} "
                    "(a server is http://host:19530)"
                )
            if not path.parent.is_dir():
                raise VectorStoreError(f"Milvus Lite: folder {str(path.parent)!r} does not exist")
        try:
            if is_lite(uri):  # no keep-alive pings to our own child: Lite answers an idle
                # client's pings with GOAWAY "too_many_pings", logged by gRPC on stderr
                options = {"grpc_options": {"grpc.keepalive_permit_without_calls": False}}
                with warnings.catch_warnings():  # milvus-lite 2.5 imports pkg_resources,
                    # which setuptools flags as deprecated on stderr: nothing to act on
                    warnings.filterwarnings(
                        "ignore", message="pkg_resources is deprecated", category=UserWarning
                    )
                    client = MilvusClient(uri=key, timeout=timeout, **options)
            else:
                token = os.environ.get("MILVUS_TOKEN", "")
                client = MilvusClient(uri=key, token=token, timeout=timeout)
        except Exception as exc:  # the client raises many transport types; one named error out
            raise VectorStoreError(f"Milvus could not connect to {uri}: {_reason(exc)}") from exc
        _CLIENTS[key] = client
        return client


def _reason(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())[:300]


def _clip(text: str, limit: int = MAX_VARCHAR) -> str:
    """At most `limit` UTF-8 bytes, cut at a character boundary (VARCHAR lengths are bytes)."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


@dataclass(frozen=True, eq=False)
class _ScopeTerms:
    """A narrow scope's chunks as the engine holds them: rows (ascending), item ids, term
    lists (our tokens' hashes) and the BM25 statistics over them."""

    rows: np.ndarray
    items: list[str]
    tokens: list[list[str]]
    stats: BM25Stats


class MilvusStore:
    """A VectorStore over two Milvus collections, and the chunk scorer of an attached index.

    `supports_hybrid` is False on purpose: callers fuse the engine's dense and BM25 scores
    with our own fusion (weighted / RRF / DBSF / union), as the in-process path does, so the
    score tables show the same columns. `serves_chunks`: an attached index's per-leaf and
    per-scope scores come from here (`CorpusIndex.score_leaf` / `score_scope`).
    """

    name = "milvus"
    supports_hybrid = False
    serves_chunks = True

    def __init__(
        self,
        client: Any,
        dim: int,
        collection: str = DEFAULT_COLLECTION,
        *,
        uri: str = "",
        index_type: str = "FLAT",
        window: int = WINDOW,
    ) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be > 0, but got {dim}")
        if not 0 < window <= WINDOW:
            raise ValueError(f"window must be in 1..{WINDOW}, but got {window}")
        self.client = client
        self.dim = dim
        self.collection = check_collection_name(collection)
        self.chunks = f"{collection}_chunks"
        self.layers = f"{collection}_layers"
        self.uri = uri
        self.index_type = index_type
        self.window = window
        self._loaded = False
        # (documents, term field) -> that scope's rows, item ids, term lists, BM25 stats
        self._scope_terms: dict[tuple, _ScopeTerms] = {}
        self._scope_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        uri: str,
        dim: int,
        collection: str = DEFAULT_COLLECTION,
        *,
        timeout: float = 10.0,
        index_type: str = "FLAT",
        window: int = WINDOW,
    ) -> MilvusStore:
        return cls(
            connect(uri, timeout),
            dim,
            collection,
            uri=uri,
            index_type=index_type,
            window=window,
        )

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        return store_errors("Milvus", doing, _reason)

    # ---- lifecycle --------------------------------------------------------------------
    def manifest(self) -> dict | None:
        """The manifest a finished push wrote last; None when there is none."""
        with self._errors("read the manifest"):
            if not self.client.has_collection(self.layers):
                return None
            rows = self.client.query(
                self.layers, filter=equals("id", MANIFEST_ID), output_fields=["content"]
            )
        if not rows:
            return None
        try:
            manifest = json.loads(rows[0]["content"])
        except (TypeError, ValueError):
            return None
        return manifest if isinstance(manifest, dict) else None

    def state(self) -> tuple[str, dict | None]:
        """("absent" | "partial" | "complete", manifest). Partial: the collections exist but
        the manifest a push writes last is missing (a build killed or failed midway)."""
        with self._errors("open the collections"):
            present = [self.client.has_collection(c) for c in (self.chunks, self.layers)]
        if not any(present):
            return "absent", None
        self._load()
        manifest = self.manifest() if all(present) else None
        if manifest is None or not manifest.get("complete"):
            return "partial", manifest
        return "complete", manifest

    def _load(self) -> None:
        """Load the collections into the engine's memory (a new process finds them released)."""
        if self._loaded:
            return
        with self._errors("load the collections"):
            for name in (self.chunks, self.layers):
                if self.client.has_collection(name):
                    self.client.load_collection(name)
        self._loaded = True

    def drop(self) -> None:
        self._loaded = False
        with self._errors("drop the collections"):
            for name in (self.chunks, self.layers):
                if self.client.has_collection(name):
                    self.client.drop_collection(name)

    def create(self) -> None:
        """Both collections, empty (any earlier ones are dropped first)."""
        from pymilvus import DataType, Function, FunctionType

        self.drop()
        analyzer = {"tokenizer": "standard"}  # our terms are hex words: kept whole
        with self._errors("create the collections"):
            for name in (self.chunks, self.layers):
                schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
                schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
                schema.add_field("kind", DataType.VARCHAR, max_length=16)
                schema.add_field("doc_id", DataType.VARCHAR, max_length=4096)
                schema.add_field("item_id", DataType.VARCHAR, max_length=1024)
                schema.add_field("parent_id", DataType.VARCHAR, max_length=1024)
                schema.add_field("heading_path", DataType.VARCHAR, max_length=MAX_VARCHAR)
                schema.add_field("language", DataType.VARCHAR, max_length=16)
                schema.add_field("content", DataType.VARCHAR, max_length=MAX_VARCHAR)
                for number in ("row", "start", "end", "page_start", "page_end"):
                    schema.add_field(number, DataType.INT64)
                schema.add_field(DENSE, DataType.FLOAT_VECTOR, dim=self.dim)
                index_params = self.client.prepare_index_params()
                index_params.add_index(DENSE, index_type=self.index_type, metric_type="COSINE")
                if name == self.chunks:
                    for text, sparse in (("terms", SPARSE), ("path_terms", PATH_SPARSE)):
                        schema.add_field(
                            text,
                            DataType.VARCHAR,
                            max_length=MAX_VARCHAR,
                            enable_analyzer=True,
                            analyzer_params=analyzer,
                        )
                        schema.add_field(sparse, DataType.SPARSE_FLOAT_VECTOR)
                        schema.add_function(
                            Function(
                                name=f"bm25_{text}",
                                function_type=FunctionType.BM25,
                                input_field_names=[text],
                                output_field_names=[sparse],
                            )
                        )
                        index_params.add_index(
                            sparse,
                            index_type="SPARSE_INVERTED_INDEX",
                            metric_type="BM25",
                            params={"bm25_k1": BM25_K1, "bm25_b": BM25_B},
                        )
                # Indexes without pymilvus' wait (it polls with 0.5 s sleeps, 2 s a build on
                # Milvus Lite); loading waits for them where the engine needs it.
                self.client.create_collection(name, schema=schema)
                self.client.create_index(name, index_params, sync=False)
                self.client.load_collection(name)
        self._loaded = True

    def check_dim(self) -> None:
        """Refuse collections whose dense field has another dimension than this store's."""
        with self._errors("describe the collections"):
            for name in (self.chunks, self.layers):
                if not self.client.has_collection(name):
                    continue
                fields = self.client.describe_collection(name).get("fields", [])
                dims = [f.get("params", {}).get("dim") for f in fields if f.get("name") == DENSE]
                if not dims or int(dims[0]) != self.dim:
                    got = dims[0] if dims else None
                    raise VectorStoreError(
                        f"Milvus collection {name!r} holds {got}-d vectors, this index "
                        f"{self.dim}-d: it was built with another embedder; push with "
                        "another --milvus-collection or --replace it"
                    )

    def write_manifest(self, manifest: dict) -> None:
        """The last write of a push: its presence says every row before it was written."""
        content = json.dumps({**manifest, "complete": True}, sort_keys=True)
        if len(content.encode("utf-8")) > MAX_VARCHAR:
            raise VectorStoreError("the manifest is too large for one Milvus row")
        unit = np.zeros(self.dim, dtype=np.float32)
        unit[0] = 1.0  # a cosine collection needs a non-zero vector
        row = self._row("manifest", "", MANIFEST_ID, unit, content=content)
        row["id"] = MANIFEST_ID
        with self._errors("write the manifest"):
            self.client.flush(self.chunks)
            self.client.upsert(self.layers, [row])
            self.client.flush(self.layers)

    # ---- writing -----------------------------------------------------------------------
    def _point_row(self, point: VectorPoint, kind: str, **place: Any) -> dict[str, Any]:
        """A point as a row (vector scaled to unit length); `place`: a chunk's row, offsets."""
        return self._row(
            kind,
            point.doc_id,
            point.item_id,
            unit_rows(point.vector)[0],
            point_id=point.id,
            parent_id=point.parent_id,
            heading_path=point.heading_path,
            language=point.language,
            content=point.text,
            **place,
        )

    def _row(
        self,
        kind: str,
        doc_id: str,
        item_id: str,
        vector: np.ndarray,
        *,
        point_id: str = "",
        parent_id: str | None = None,
        heading_path: str = "",
        language: str = "",
        content: str = "",
        row: int = -1,
        start: int = -1,
        end: int = -1,
        page_start: int | None = None,
        page_end: int | None = None,
    ) -> dict[str, Any]:
        return {
            "id": point_id,
            "kind": kind,
            "doc_id": _clip(doc_id, 4096),
            "item_id": _clip(item_id, 1024),
            "parent_id": _clip(parent_id or "", 1024),
            "heading_path": _clip(heading_path),
            "language": language[:16],
            "content": _clip(content),
            "row": row,
            "start": start,
            "end": end,
            "page_start": -1 if page_start is None else page_start,
            "page_end": -1 if page_end is None else page_end,
            DENSE: np.asarray(vector, dtype=np.float32).tolist(),
        }

    def insert_chunks(self, rows: Sequence[dict[str, Any]]) -> None:
        """Chunk rows (from `chunk_row`), in batches."""
        with self._errors("store chunks"):
            for start in range(0, len(rows), BATCH):
                self.client.insert(self.chunks, list(rows[start : start + BATCH]))

    def chunk_row(
        self,
        point: VectorPoint,
        *,
        row: int,
        start: int,
        end: int,
        page_start: int | None,
        page_end: int | None,
        path_tokens: Sequence[str],
    ) -> dict[str, Any]:
        """One chunk as a row of the chunks collection (vector scaled to unit length)."""
        out = self._point_row(
            point,
            "child",
            row=row,
            start=start,
            end=end,
            page_start=page_start,
            page_end=page_end,
        )
        out["terms"] = _clip(terms(point.tokens))
        out["path_terms"] = _clip(terms([*path_tokens, *point.tokens]))
        return out

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """VectorStore: add points; a child here carries no row or offsets (push fills them)."""
        check_dims(points, self.dim)
        if not all(self.client.has_collection(c) for c in (self.chunks, self.layers)):
            self.create()
        children = [
            self.chunk_row(
                p, row=-1, start=-1, end=-1, page_start=None, page_end=None, path_tokens=()
            )
            for p in points
            if p.kind == "child"
        ]
        layer_rows = [self._point_row(p, p.kind) for p in points if p.kind != "child"]
        with self._errors("store points"):
            for name, rows in ((self.chunks, children), (self.layers, layer_rows)):
                for start in range(0, len(rows), BATCH):
                    self.client.upsert(name, rows[start : start + BATCH])

    # ---- reading -----------------------------------------------------------------------
    def _collection(self, kind: Kind) -> str:
        return self.chunks if kind == "child" else self.layers

    def count(self, kind: Kind | None = None) -> int:
        if kind is None:
            return sum(self.count(k) for k in KINDS)
        flt = equals("kind", kind)
        with self._errors("count points"):
            if not self.client.has_collection(self._collection(kind)):
                return 0
            rows = self.client.query(self._collection(kind), filter=flt, output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def stored_vectors(self, kind: Kind) -> dict[tuple[str, str], np.ndarray]:
        """Every point of `kind` with its vector, listed by an exact query (no search)."""
        out: dict[tuple[str, str], np.ndarray] = {}
        with self._errors("list points"):
            iterator = self.client.query_iterator(
                self._collection(kind),
                batch_size=BATCH,
                filter=equals("kind", kind),
                output_fields=["doc_id", "item_id", DENSE],
            )
            while batch := iterator.next():
                for row in batch:
                    out[(row["doc_id"], row["item_id"])] = np.asarray(row[DENSE], np.float32)
            iterator.close()
        return out

    def search(self, query: VectorQuery) -> list[VectorHit]:
        """Dense search of one kind; with `query.tokens`, dense and BM25 fused by the engine's
        RRF (k=60), as QdrantStore does (our own fusion runs through `score_chunks`)."""
        clauses = [equals("kind", query.kind)]
        if query.doc_ids is not None:
            clauses.append(one_of("doc_id", query.doc_ids))
        if query.parent_ids is not None:
            clauses.append(one_of("parent_id", query.parent_ids))
        flt = all_of(clauses)
        dense = unit_rows(query.vector)[0].tolist()
        name = self._collection(query.kind)
        with self._errors("search"):
            if query.tokens and query.kind == "child":
                from pymilvus import AnnSearchRequest, RRFRanker

                window = max(query.limit * 4, 20)
                requests = [
                    AnnSearchRequest([dense], DENSE, {}, window, expr=flt),
                    AnnSearchRequest([terms(query.tokens)], SPARSE, {}, window, expr=flt),
                ]
                result = self.client.hybrid_search(
                    name, requests, RRFRanker(60), limit=query.limit, output_fields=_HIT_FIELDS
                )
            else:
                result = self.client.search(
                    name,
                    data=[dense],
                    anns_field=DENSE,
                    filter=flt,
                    limit=min(query.limit, WINDOW),
                    output_fields=_HIT_FIELDS,
                )
        return [self._hit(h) for h in result[0]]

    def _hit(self, hit: dict) -> VectorHit:
        entity = hit.get("entity", {})
        kind = entity.get("kind")
        if kind not in KINDS:
            raise VectorStoreError(
                f"Milvus collection {self.collection!r} holds row {hit.get('id')!r} of kind "
                f"{kind!r}: it was not written by `milvus-push`"
            )
        return VectorHit(
            kind,
            entity.get("doc_id", ""),
            entity.get("item_id", ""),
            float(hit.get("distance", 0.0)),
            entity.get("parent_id") or None,
            entity.get("heading_path", ""),
        )

    # ---- chunk scores for an attached index ----------------------------------------------
    def score_chunks(
        self,
        index: Any,
        rows: np.ndarray,
        query_vector: np.ndarray,
        query_tokens: Sequence[str],
        *,
        doc_ids: Sequence[str] | None = None,
        leaf_id: str | None = None,
        with_path: bool = False,
        stats_docs: Sequence[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Cosine and BM25 of the chunks at `rows` (ascending), served by the engine.

        The group is the scope's documents or one leaf (a filter). Up to `window` rows it is
        scored exactly: every chunk's cosine, every matching chunk's BM25 (0 for the rest, as
        in process). Past it, the top `window` of each; the others get the group's lowest
        cosine (the best hit of the negated query) and BM25 0, so min-max fusion still spans
        the same range. `with_path`: BM25 over heading path + passage (treerag).

        `stats_docs` (the index's `bm25_scope`): the documents BM25's statistics come from.
        None, the corpus, is the collection: the engine's BM25 is ours. Narrower (a question's
        document, a leaf's document), the engine's collection-wide IDF is not: the engine
        serves those documents' term rows (a filtered query, bounded by the scope) and they
        are scored here with the in-process BM25 over the same statistics.
        """
        count = len(rows)
        dense = np.zeros(count, dtype=np.float32)
        bm25 = np.zeros(count, dtype=np.float64)
        if not count:
            return dense, bm25
        clauses = []
        if leaf_id is not None:
            clauses.append(equals("parent_id", leaf_id))
        if doc_ids is not None:
            clauses.append(one_of("doc_id", doc_ids))
        flt = all_of(clauses)
        limit = min(count, self.window)
        vector = unit_rows(query_vector)[0]
        with self._errors("search chunks"):
            hits = self._search(vector.tolist(), DENSE, flt, limit)
            if limit < count:  # the lowest cosine in the group: the negated query's best
                lowest = self._search((-vector).tolist(), DENSE, flt, 1)
                dense[:] = -float(lowest[0]["distance"]) if lowest else 0.0
            self._place(index, rows, hits, dense)
            if query_tokens and stats_docs is not None:
                field = "path_terms" if with_path else "terms"
                bm25 = self._scope_bm25(index, rows, query_tokens, tuple(stats_docs), field)
            elif query_tokens:
                field = PATH_SPARSE if with_path else SPARSE
                hits = self._search(terms(query_tokens), field, flt, limit)
                # Milvus Lite reports BM25 as a negative distance, a server as the score:
                # BM25 is never negative, so its magnitude is the score either way.
                for hit in hits:
                    hit["distance"] = abs(float(hit["distance"]))
                self._place(index, rows, hits, bm25)
        return dense, bm25

    def _scope_bm25(
        self,
        index: Any,
        rows: np.ndarray,
        query_tokens: Sequence[str],
        docs: tuple[str, ...],
        field: str,
    ) -> np.ndarray:
        """float64 BM25 of `rows` with the statistics of `docs`' chunks, as in process."""
        scope = self._terms_of(docs, field)
        pos = np.searchsorted(scope.rows, rows)
        for p, row in zip(pos.tolist(), rows.tolist(), strict=True):
            item = scope.items[p] if p < len(scope.rows) and scope.rows[p] == row else None
            if item != index.chunks[row].chunk_id:
                raise VectorStoreError(
                    f"Milvus holds no chunk {index.chunks[row].chunk_id!r} at row {row} among "
                    "the scope's documents: the collection was pushed from another index; "
                    "run `milvus-push` with this index"
                )
        scorer = LeafBM25.from_tokens([scope.tokens[p] for p in pos.tolist()], scope.stats)
        return scorer.scores([term(t) for t in query_tokens])  # the engine's words: our hashes

    def _terms_of(self, docs: tuple[str, ...], field: str) -> _ScopeTerms:
        """The term rows of `docs` (one filtered query) and their BM25 statistics, cached."""
        key = (docs, field)
        with self._scope_lock:
            cached = self._scope_terms.pop(key, None)
            if cached is None:
                with self._errors("read the scope's terms"):
                    got = self._query_all(one_of("doc_id", docs), ["row", "item_id", field])
                got.sort(key=lambda r: int(r["row"]))
                token_lists = [str(r[field]).split() for r in got]
                cached = _ScopeTerms(
                    rows=np.asarray([int(r["row"]) for r in got], dtype=np.int64),
                    items=[r["item_id"] for r in got],
                    tokens=token_lists,
                    stats=BM25Stats.from_tokens(token_lists),
                )
            self._scope_terms[key] = cached  # most recently used last
            while len(self._scope_terms) > MAX_SCOPE_TERMS:
                self._scope_terms.pop(next(iter(self._scope_terms)))
        return cached

    def _query_all(self, flt: str, fields: list[str]) -> list[dict]:
        """Every row matching `flt` (a query holds at most WINDOW rows: past it, pages)."""
        got = list(self.client.query(self.chunks, filter=flt, output_fields=fields, limit=WINDOW))
        if len(got) < WINDOW:
            return got
        out: list[dict] = []
        iterator = self.client.query_iterator(
            self.chunks, batch_size=BATCH, filter=flt, output_fields=fields
        )
        while batch := iterator.next():
            out.extend(batch)
        iterator.close()
        return out

    def _search(self, data: Any, field: str, flt: str, limit: int) -> list[dict]:
        result = self.client.search(
            self.chunks,
            data=[data],
            anns_field=field,
            filter=flt,
            limit=limit,
            output_fields=["row", "item_id"],
        )
        return list(result[0]) if result else []

    def _place(self, index: Any, rows: np.ndarray, hits: list[dict], out: np.ndarray) -> None:
        """Write each hit's score at its row's position; a row this group (or index) does not
        hold means the collection is another index's: named, never served."""
        for hit in hits:
            entity = hit.get("entity", {})
            row, item_id = int(entity.get("row", -1)), entity.get("item_id")
            pos = int(np.searchsorted(rows, row))
            if pos >= len(rows) or rows[pos] != row or index.chunks[row].chunk_id != item_id:
                raise VectorStoreError(
                    f"Milvus answered with chunk {item_id!r} (row {row}), which this index "
                    "does not hold there: the collection was pushed from another index; "
                    "run `milvus-push` with this index"
                )
            out[pos] = float(hit["distance"])
