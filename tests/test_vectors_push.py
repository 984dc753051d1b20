"""Pushing an index to Qdrant: stable ids (a second push replaces), and the CLI's clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_cli import cli
from treerag_core.vectors.push import push_index
from treerag_core.vectors.qdrant_store import QdrantStore


def test_push_counts_each_kind_and_a_second_push_replaces(hashing_index):
    store = QdrantStore.in_memory(hashing_index.dim)
    counts = push_index(hashing_index, store)
    assert counts["document"] == len(hashing_index.documents)
    assert counts["child"] == len(hashing_index.chunks)
    assert counts["parent"] == len(hashing_index.layers.parent_ids)
    push_index(hashing_index, store)
    assert store.count() == sum(counts.values())


@pytest.mark.slow
def test_cli_push_needs_a_url_and_reports_an_unreachable_server(
    hashing_index, tmp_path, monkeypatch
):
    from treerag_core.store import save_index

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
    from treerag_core.errors import VectorStoreError
    from treerag_core.vectors.attach import attach_checked, attach_store, store_for

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
    from treerag_core.store import save_index

    folder = save_index(hashing_index, tmp_path / "ix")
    query = ("query", "--index", str(folder), "--query", "router", "--mock", "--strategy")
    monkeypatch.delenv("QDRANT_URL", raising=False)
    result = cli(*query, "drilldown", "--qdrant", "treerag")
    assert result.returncode == 2 and "--qdrant needs QDRANT_URL" in result.stderr
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:9")
    result = cli(*query, "drilldown", "--qdrant", "treerag")
    assert result.returncode == 2 and result.stderr.startswith("error: Qdrant could not")
    assert "Traceback" not in result.stderr
