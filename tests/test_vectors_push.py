"""Pushing an index to Qdrant: stable ids (a second push replaces), and the CLI's clear errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_cli import cli
from treerag_core.index.vectors.qdrant_store import QdrantStore
from treerag_core.strategies.drilldown.layers import layers_of
from treerag_core.strategies.drilldown.vector_store import push_index


def test_push_counts_each_kind_and_a_second_push_replaces(hashing_index):
    store = QdrantStore.in_memory(hashing_index.dim)
    counts = push_index(hashing_index, store)
    assert counts["document"] == len(hashing_index.documents)
    assert counts["child"] == len(hashing_index.chunks)
    assert counts["parent"] == len(layers_of(hashing_index).parent_ids)
    push_index(hashing_index, store)
    assert store.count() == sum(counts.values())


@pytest.mark.slow
def test_cli_push_needs_a_url_and_reports_an_unreachable_server(
    hashing_index, tmp_path, monkeypatch
):
    from treerag_core.index.store import save_index

    monkeypatch.delenv("QDRANT_URL", raising=False)

    folder = save_index(hashing_index, tmp_path / "ix")
    result = cli("qdrant-push", "--index", str(folder))
    assert result.returncode == 2 and "--url or set QDRANT_URL" in result.stderr
    result = cli("qdrant-push", "--index", str(folder), "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and result.stderr.startswith("error: Qdrant could not")
    assert "Traceback" not in result.stderr
    assert cli("qdrant-push", "--help").returncode == 0


def test_the_push_command_is_documented():
    doc = (REPO / "docs" / "qdrant.md").read_text(encoding="utf-8")
    assert "qdrant-push" in doc and "QDRANT_URL" in doc and "QDRANT_API_KEY" in doc
    assert Path(REPO / "docs" / "drilldown.md").is_file()


def test_a_store_is_attached_only_when_it_holds_this_index(hashing_index):
    from treerag_core.base.errors import VectorStoreError
    from treerag_core.index.vectors.attach import attach_store, store_for
    from treerag_core.strategies.drilldown.vector_store import attach_checked

    store = QdrantStore.in_memory(hashing_index.dim)
    with pytest.raises(VectorStoreError, match="0 document points, the index 4"):
        attach_checked(hashing_index, store)  # nothing pushed yet: never served silently
    assert store_for(hashing_index) is None
    push_index(hashing_index, store)
    attach_checked(hashing_index, store)
    try:
        assert store_for(hashing_index) is store
    finally:
        attach_store(hashing_index, None)


@pytest.mark.slow
def test_cli_query_from_a_qdrant_server_needs_its_url(hashing_index, tmp_path, monkeypatch):
    from treerag_core.index.store import save_index

    folder = save_index(hashing_index, tmp_path / "ix")
    query = ("query", "--index", str(folder), "--query", "router", "--mock", "--strategy")
    monkeypatch.delenv("QDRANT_URL", raising=False)
    result = cli(*query, "drilldown", "--qdrant", "treerag")
    assert result.returncode == 2 and "--qdrant needs QDRANT_URL" in result.stderr
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:9")
    result = cli(*query, "drilldown", "--qdrant", "treerag")
    assert result.returncode == 2 and result.stderr.startswith("error: Qdrant could not")
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def foreign_index():
    """Another index of four documents: the same texts under other names."""
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import SourceDocument, build_index
    from treerag_core.index.embedders import get_embedder

    sources = [SourceDocument(f"other-{s.name}", s.text) for s in sample_sources()]
    return build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))


def test_a_collection_of_another_index_with_as_many_documents_is_refused(
    hashing_index, foreign_index
):
    from treerag_core.base.errors import VectorStoreError
    from treerag_core.index.vectors.attach import store_for
    from treerag_core.strategies.drilldown.vector_store import attach_checked

    assert len(foreign_index.documents) == len(hashing_index.documents)
    store = QdrantStore.in_memory(hashing_index.dim)
    push_index(foreign_index, store)
    with pytest.raises(
        VectorStoreError, match=r"belongs to another index \(it holds '.*other-.*not in this index"
    ):
        attach_checked(hashing_index, store)
    assert store_for(hashing_index) is None


def test_a_collection_with_this_index_names_but_other_vectors_is_refused(hashing_index):
    import numpy as np

    from treerag_core.base.errors import VectorStoreError
    from treerag_core.index.vectors.attach import store_for
    from treerag_core.strategies.drilldown.layers import layer_points
    from treerag_core.strategies.drilldown.vector_store import attach_checked

    store = QdrantStore.in_memory(hashing_index.dim)
    push_index(hashing_index, store)
    # Every document point re-embedded by "another model" (same ids, reversed vectors).
    docs = [p for p in layer_points(hashing_index) if p.kind == "document"]
    store.upsert([replace(p, vector=np.roll(p.vector, 1)) for p in docs])
    with pytest.raises(VectorStoreError, match=r"vector for .* is not this index's"):
        attach_checked(hashing_index, store)
    assert store_for(hashing_index) is None


class ApproximateStore(QdrantStore):
    """A server collection under HNSW: a search may miss a point it holds."""

    def search(self, query):
        return super().search(query)[:-1]


def test_the_attach_check_lists_documents_exactly_not_by_search(hashing_index):
    from qdrant_client import QdrantClient

    from treerag_core.index.vectors.attach import attach_store, store_for
    from treerag_core.strategies.drilldown.vector_store import attach_checked

    store = ApproximateStore(QdrantClient(":memory:"), hashing_index.dim, payload_indexes=False)
    push_index(hashing_index, store)
    attach_checked(hashing_index, store)  # a good collection, whatever the search misses
    try:
        assert store_for(hashing_index) is store
    finally:
        attach_store(hashing_index, None)


def test_the_same_vector_bound_is_the_measured_float32_round_trip(hashing_index):
    import json

    import numpy as np

    from treerag_core.base.errors import VectorStoreError
    from treerag_core.index.vectors.attach import store_for
    from treerag_core.index.vectors.base import unit_rows
    from treerag_core.strategies.drilldown.layers import ensure_layers, layer_points
    from treerag_core.strategies.drilldown.vector_store import SAME_VECTOR_ATOL, attach_checked

    # The in-process client, on this index's document vectors.
    store = QdrantStore.in_memory(hashing_index.dim)
    push_index(hashing_index, store)
    layers = ensure_layers(hashing_index)
    own = unit_rows(layers.doc_vectors(layers.doc_ids))
    stored = store.stored_vectors("document")
    roots = [hashing_index.document(d).root_id for d in layers.doc_ids]
    back = np.stack([stored[(d, r)] for d, r in zip(layers.doc_ids, roots, strict=True)])
    errors = [np.abs(back - own).max()]
    # A server: it re-normalises the unit float32 rows in float32 and answers in JSON.
    rng = np.random.default_rng(0)
    for dim in (256, 384, 1024, 4096):
        rows = unit_rows(rng.standard_normal((200, dim)) * rng.uniform(1e-3, 1e3, (200, 1)))
        server = rows / np.linalg.norm(rows, axis=1, keepdims=True).astype(np.float32)
        answer = np.asarray(json.loads(json.dumps(server.tolist())), dtype=np.float32)
        errors.append(np.abs(answer - rows).max())
    assert max(errors) <= 3e-8 < SAME_VECTOR_ATOL / 10  # the comment's figure, with margin
    # A vector the old cosine bound (0.999) let through: same names, cosine ~0.9995.
    docs = [p for p in layer_points(hashing_index) if p.kind == "document"]
    noise = rng.standard_normal(hashing_index.dim).astype(np.float32)
    near = [replace(p, vector=unit_rows(p.vector)[0] + 0.03 * unit_rows(noise)[0]) for p in docs]
    cosine = float(unit_rows(near[0].vector)[0] @ unit_rows(docs[0].vector)[0])
    assert 0.999 < cosine < 1 - 1e-6
    store.upsert(near)
    with pytest.raises(VectorStoreError, match=r"is not this index's \(cosine 0\.99"):
        attach_checked(hashing_index, store)
    assert store_for(hashing_index) is None
