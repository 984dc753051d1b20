"""Build an index's Milvus collections (manifest last), and attach them once checked."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from treerag_core.base.errors import VectorStoreError
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.attach import attach_store
from treerag_core.index.vectors.milvus_store import BATCH, MilvusStore
from treerag_core.strategies.drilldown.layers import layer_points

MANIFEST_FORMAT = 1
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PushReport:
    """What a push did: `built`, `rebuilt` (a half-written collection found) or `unchanged`."""

    status: str
    documents: int
    parents: int
    chunks: int
    note: str = ""


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()[:32]


def index_manifest(index: Any) -> dict[str, Any]:
    """What a collection must match to serve `index`: embedder (name, dimension, probe
    vector), the documents' hashes, every chunk id and vector, the layers' vectors."""
    from treerag_core.strategies.drilldown.layers import ensure_layers

    layers = ensure_layers(index)
    fingerprint = np.round(np.asarray(index.embedder_fingerprint, dtype=np.float64), 5)
    return {
        "format": MANIFEST_FORMAT,
        "embedder": index.embedder_name,
        "dim": int(index.dim),
        "embedder_probe": _digest(fingerprint.tobytes()),
        "documents": _digest(*sorted(f"{d.doc_id}:{d.sha256}" for d in index.documents)),
        "chunks": len(index.chunks),
        "chunk_ids": _digest(*(c.chunk_id for c in index.chunks)),
        "vectors": _digest(np.ascontiguousarray(index.embeddings, dtype=np.float32).tobytes()),
        "layers": _digest(
            *layers.doc_ids,
            *layers.parent_ids,
            np.ascontiguousarray(layers.vectors, dtype=np.float32).tobytes(),
        ),
        "counts": {"document": len(layers.doc_ids), "parent": len(layers.parent_ids)},
    }


def mismatch(have: dict, want: dict) -> str | None:
    """Why a collection's manifest does not serve this index (None: it does)."""
    if have.get("format") != want["format"]:
        return f"it was written in manifest format {have.get('format')}, not {want['format']}"
    if have.get("dim") != want["dim"] or have.get("embedder") != want["embedder"]:
        return (
            f"it holds {have.get('dim')}-d vectors from embedder {have.get('embedder')!r}, "
            f"this index {want['dim']}-d from {want['embedder']!r}"
        )
    if have.get("embedder_probe") != want["embedder_probe"]:
        return f"its {want['embedder']!r} vectors come from another model (probe vectors differ)"
    for key, what in (
        ("documents", "documents"),
        ("chunk_ids", "chunks"),
        ("vectors", "chunk vectors"),
        ("layers", "document and section vectors"),
    ):
        if have.get(key) != want[key]:
            return f"it holds other {what} than this index"
    return None


def push_milvus(
    index: Any, store: MilvusStore, *, replace: bool = False, progress: Progress | None = None
) -> PushReport:
    """Write `index` into the store's collections; the manifest goes last.

    A collection that already serves this index is left as it is; a half-written one (no
    manifest: a killed or failed build) is rebuilt; one holding another index, embedder or
    dimension is refused unless `replace`.
    """
    want = index_manifest(index)
    state, have = store.state()
    note = ""
    if state == "complete" and have is not None:
        why = mismatch(have, want)
        if why is None:
            store.check_dim()
            counts = want["counts"]
            return PushReport("unchanged", counts["document"], counts["parent"], len(index.chunks))
        if not replace:
            raise VectorStoreError(
                f"Milvus collection {store.collection!r} serves another index ({why}): "
                "push with another --milvus-collection, or --replace it"
            )
    elif state == "partial":
        note = "the collection was half-written (an interrupted build): rebuilt"
    store.create()
    points = layer_points(index)
    layer_rows = [p for p in points if p.kind != "child"]
    store.upsert(layer_rows)
    children = [p for p in points if p.kind == "child"]
    path_tokens: dict[str, list[str]] = {}
    total = len(children)
    for start in range(0, total, BATCH * 4):
        rows = []
        for row in range(start, min(start + BATCH * 4, total)):
            chunk = index.chunks[row]
            leaf = chunk.source_node_id
            if leaf not in path_tokens:
                path_tokens[leaf] = tokenize(index.nodes[leaf].heading_path)
            rows.append(
                store.chunk_row(
                    children[row],
                    row=row,
                    start=chunk.start,
                    end=chunk.end,
                    page_start=chunk.page_start,
                    page_end=chunk.page_end,
                    path_tokens=path_tokens[leaf],
                )
            )
        store.insert_chunks(rows)
        if progress is not None:
            progress(min(start + BATCH * 4, total), total)
    store.write_manifest(want)
    counts = want["counts"]
    status = "rebuilt" if state == "partial" else "built"
    return PushReport(status, counts["document"], counts["parent"], total, note)


def attach_milvus(index: Any, store: MilvusStore) -> None:
    """Serve `index`'s searches from `store` after checking the collections are its own.

    Refused, with the reason: no collections, a half-written build, another embedder or
    dimension, another index, or row counts that differ from the manifest's.
    """
    push = "run `milvus-push --index` with this index"
    state, have = store.state()
    if state == "absent":
        raise VectorStoreError(f"Milvus has no collection {store.collection!r}: {push}")
    if state == "partial" or have is None:
        raise VectorStoreError(
            f"Milvus collection {store.collection!r} is half-written (a build was interrupted "
            f"before its manifest): {push} again"
        )
    store.check_dim()
    why = mismatch(have, index_manifest(index))
    if why is not None:
        raise VectorStoreError(
            f"Milvus collection {store.collection!r} does not serve this index ({why}): {push}"
        )
    expected = {**have["counts"], "child": len(index.chunks)}
    for kind, want in expected.items():
        got = store.count(kind)
        if got != want:
            raise VectorStoreError(
                f"Milvus collection {store.collection!r} holds {got} {kind} rows, its manifest "
                f"{want}: rows were deleted or added after the push; {push}"
            )
    attach_store(index, store)
