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
