"""The SQLite audit log: every query, its settings and every hit, reloadable as a Trace."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from treerag_core.audit import AuditLog
from treerag_core.pipeline import Engine, run
from treerag_core.settings import QuerySettings


@pytest.fixture()
def trace(hashing_index):
    from treerag_core.embedders import get_embedder

    engine = Engine(hashing_index, get_embedder("hashing"))
    return run(
        engine,
        "router accuracy on EUR/USD",
        QuerySettings().set("llm.enabled", False).set("rerank.enabled", False),
    )


def test_record_and_reload(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    query_id = log.record(trace)
    assert log.load(query_id) == trace
    [row] = log.recent()
    assert row["question"] == trace.question and row["strategy"] == "treerag"
    final = log.hits(query_id, "final")
    assert [h["chunk_id"] for h in final] == [h.chunk.chunk_id for h in trace.reranked]
    assert all(h["end_offset"] > h["start_offset"] for h in final)
    per_leaf = log.hits(query_id, "retrieve")
    assert len(per_leaf) == sum(len(g.hits) for g in trace.retrieved)
    log.close()
    # It is a plain SQLite file any tool can read.
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM query").fetchone() == (1,)


def test_unknown_id(tmp_path):
    with pytest.raises(KeyError):
        AuditLog(tmp_path / "a.sqlite").load(42)


def test_concurrent_writers_share_one_log(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    threads = [threading.Thread(target=log.record, args=(trace,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(log.recent(limit=100)) == 8


def test_recent_filters_by_workspace(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    mine = log.record(trace, workspace="ws-a")
    log.record(trace, workspace="ws-b")
    assert [r["id"] for r in log.recent(workspace="ws-a")] == [mine]
    assert len(log.recent()) == 2


def test_old_log_without_workspace_column_is_upgraded(tmp_path, trace):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE query (id INTEGER PRIMARY KEY, created_at TEXT NOT NULL,"
            " question TEXT NOT NULL, strategy TEXT NOT NULL, locator TEXT,"
            " settings_json TEXT NOT NULL, provider_json TEXT NOT NULL,"
            " timing_json TEXT NOT NULL, fallbacks_json TEXT NOT NULL,"
            " answer TEXT NOT NULL, trace_json TEXT NOT NULL)"
        )
    log = AuditLog(path)
    query_id = log.record(trace, workspace="w")
    assert log.load(query_id) == trace
