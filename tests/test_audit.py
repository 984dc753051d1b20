"""The SQLite audit log: every query, its settings and every hit, reloadable as a Trace."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from treerag_core.base.settings import QuerySettings
from treerag_core.pipeline import Engine, run
from treerag_core.records.audit_log import AuditLog


@pytest.fixture()
def trace(hashing_index):
    from treerag_core.index.embedders import get_embedder

    engine = Engine(hashing_index, get_embedder("hashing"))
    return run(
        engine,
        "router accuracy on EUR/USD",
        QuerySettings().set("llm.enabled", False).set("rerank.enabled", False),
    )


def test_record_and_reload(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    query_id = log.record(trace)
    assert trace.locate.document_scores  # the routing table is kept with the trace
    assert log.load(query_id) == trace
    [row] = log.recent()
    assert row["question"] == trace.question and row["strategy"] == "treerag"
    final = log.hits(query_id, "final")
    assert [h["chunk_id"] for h in final] == [h.chunk.chunk_id for h in trace.reranked]
    assert all(h["end_offset"] > h["start_offset"] for h in final)
    per_leaf = log.hits(query_id, "vector")
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
    # The column was added, and what was recorded in it reads back per workspace.
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(query)")]
    assert "workspace" in columns
    assert [r["id"] for r in log.recent(workspace="w")] == [query_id]
    assert log.recent(workspace="other") == []


def test_workspace_is_recorded_and_history_shows_only_its_rows(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    mine = log.record(trace, workspace="ws-a")
    theirs = log.record(trace, workspace="ws-b")
    assert [r["workspace"] for r in log.recent(workspace="ws-a")] == ["ws-a"]
    assert log.load(mine, workspace="ws-a") == trace
    with pytest.raises(KeyError):  # another session's id is not readable from this one
        log.load(theirs, workspace="ws-a")
    assert log.recent(workspace="") == []  # an empty id is no wildcard


def test_audit_file_is_private_0600(tmp_path, trace):
    path = tmp_path / "audit.sqlite"
    log = AuditLog(path)
    log.record(trace, workspace="w")
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)  # a log from before: made private when opened
    AuditLog(path).close()
    assert path.stat().st_mode & 0o777 == 0o600


def test_rows_are_removed_with_their_workspace(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    gone = log.record(trace, workspace="ws-a")
    kept = log.record(trace, workspace="ws-b")
    assert log.forget_workspace("ws-a") == 1
    assert [r["id"] for r in log.recent()] == [kept]
    assert log.hits(gone, "rerank") == [] and log.hits(gone, "keyword") == []
    assert log.hits(kept, "rerank")
    # secure_delete: the removed question text is not left in the file's free pages.
    log.close()
    assert trace.question.encode() in (tmp_path / "audit.sqlite").read_bytes()  # ws-b's copy
    log = AuditLog(tmp_path / "audit.sqlite")
    log.forget_workspace("ws-b")
    log.close()
    assert trace.question.encode() not in (tmp_path / "audit.sqlite").read_bytes()


def test_rows_expire_after_the_retention_period(tmp_path, trace, monkeypatch):
    import dataclasses
    from datetime import UTC, datetime, timedelta

    old = dataclasses.replace(
        trace, created_at=(datetime.now(UTC) - timedelta(days=40)).isoformat(timespec="seconds")
    )
    log = AuditLog(tmp_path / "audit.sqlite", retention=30)
    log.record(old, workspace="w")
    fresh = log.record(trace, workspace="w")
    assert log.expire() == 1
    assert [r["id"] for r in log.recent()] == [fresh]
    log.close()
    forever = AuditLog(tmp_path / "audit.sqlite", retention=0)  # 0: rows are kept forever
    forever.record(old, workspace="w")
    assert forever.expire() == 0 and len(forever.recent()) == 2
    forever.close()
    monkeypatch.setenv("TREERAG_AUDIT_RETENTION_DAYS", "30")  # opened later: expired then
    assert [r["id"] for r in AuditLog(tmp_path / "audit.sqlite").recent()] == [fresh]


def test_retention_setting_bad_value_is_named(monkeypatch):
    from treerag_core.records.audit_log import retention_days

    monkeypatch.setenv("TREERAG_AUDIT_RETENTION_DAYS", "forever")
    with pytest.raises(ValueError, match="TREERAG_AUDIT_RETENTION_DAYS"):
        retention_days()


def test_retrieval_gate_seed_004(tmp_path, hashing_index):
    """Seed 004 section 9: the minimal constitution of a persisted retrieval, plus 9.2."""
    from treerag_core.index.embedders import get_embedder

    engine = Engine(hashing_index, get_embedder("hashing"))
    trace = run(
        engine, "How does the router choose experts?", QuerySettings().set("llm.enabled", False)
    )
    log = AuditLog(tmp_path / "audit.sqlite")
    query_id = log.record(trace, workspace="gate")
    stages = {s: log.hits(query_id, s) for s in ("keyword", "vector", "fusion", "rerank")}
    assert stages["keyword"] and stages["vector"] and stages["fusion"] and stages["rerank"]
    for name in ("fusion", "rerank"):  # deduplicated: one row per chunk
        ids = [h["chunk_id"] for h in stages[name]]
        assert len(ids) == len(set(ids))
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        (records,) = conn.execute("SELECT COUNT(*) FROM query WHERE id = ?", (query_id,)).fetchone()
        (n_hits,) = conn.execute(
            "SELECT COUNT(*) FROM hit WHERE query_id = ?", (query_id,)
        ).fetchone()
    assert records == 1 and n_hits == sum(len(v) for v in stages.values())
    # 9.2: score details per stage, provider snapshot, timing.
    assert "keyword_score" in stages["keyword"][0]["score_details"]
    assert "vector_score" in stages["vector"][0]["score_details"]
    assert {"fusion_score", "components"} <= set(stages["fusion"][0]["score_details"])
    assert {"rerank_score", "model"} <= set(stages["rerank"][0]["score_details"])
    params = log.record_params(query_id)
    assert params["fusion_strategy"] == "weighted"
    assert params["rerank_strategy"].startswith("cross-encoder:")
    # Per searched group: a leaf keeps top_k_per_leaf (8), a whole-scope group candidate_window.
    window = 40 if any(g.leaf_id is None for g in trace.retrieved) else 8
    assert params["keyword_top_k"] == params["vector_top_k"] == window
    assert params["fusion_top_k"] == 40 and params["rerank_top_k"] == 5
    assert {"embedder", "reranker", "versions"} <= set(params["provider_snapshot"])
    assert {"retrieve", "rerank", "total"} <= set(params["timing_ms"])
    assert set(params["flags"]) >= {"is_out_of_scope", "is_sensitive"}
    # Every final hit traces back to the retriever(s) that found it.
    for hit in stages["rerank"]:
        found = hit["score_details"]["found_by"]
        assert found and set(found) <= {"keyword", "vector"}


def test_the_corpus_a_query_ran_on_is_recorded(tmp_path, trace):
    log = AuditLog(tmp_path / "audit.sqlite")
    log.record(trace, workspace="ws-a", corpus="samples:hashing:abc")
    [row] = log.recent(workspace="ws-a")
    assert row["corpus"] == "samples:hashing:abc" and row["workspace"] == "ws-a"


def test_a_long_lived_log_expires_old_rows_on_use_at_most_hourly(tmp_path, trace):
    # The app keeps one AuditLog for the server's lifetime: rows must not outlive retention.
    import dataclasses
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    now = [t0]

    def at(delta: timedelta):
        return dataclasses.replace(trace, created_at=(t0 + delta).isoformat(timespec="seconds"))

    log = AuditLog(tmp_path / "audit.sqlite", retention=1, clock=lambda: now[0])
    first = log.record(at(timedelta(0)))
    now[0] = t0 + timedelta(minutes=30)
    second = log.record(at(timedelta(minutes=30)))
    now[0] = t0 + timedelta(days=1, minutes=10)  # first is past retention
    third = log.record(at(timedelta(days=1, minutes=10)))
    ids = [r[0] for r in sqlite3.connect(log.path).execute("SELECT id FROM query ORDER BY id")]
    assert ids == [second, third]  # the write itself expired the old row
    now[0] = t0 + timedelta(days=1, minutes=40)  # second is now past retention too, but
    assert [r["id"] for r in log.recent()] == [third, second]  # the last run was 30 min ago
    now[0] = t0 + timedelta(days=1, hours=1, minutes=15)  # an hour later a read expires it
    assert [r["id"] for r in log.recent()] == [third]
    with pytest.raises(KeyError):
        log.load(first)
    # A trace without a time of its own is stamped by the same clock expiry reads.
    untimed = log.record(dataclasses.replace(trace, created_at=""))
    stamped = (
        sqlite3.connect(log.path)
        .execute("SELECT created_at FROM query WHERE id = ?", (untimed,))
        .fetchone()[0]
    )
    assert stamped == now[0].isoformat(timespec="seconds")
    log.close()
