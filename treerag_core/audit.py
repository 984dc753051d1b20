"""An auditable record of every query in a SQLite file: the run, its settings, every hit."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from treerag_core.trace_io import stage_summary, trace_from_json, trace_to_json
from treerag_core.types import Trace

SCHEMA = """
CREATE TABLE IF NOT EXISTS query (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    workspace TEXT,                 -- who asked (the explorer's browser-session workspace)
    question TEXT NOT NULL,
    strategy TEXT NOT NULL,
    locator TEXT,
    settings_json TEXT NOT NULL,
    provider_json TEXT NOT NULL,
    timing_json TEXT NOT NULL,
    fallbacks_json TEXT NOT NULL,
    answer TEXT NOT NULL,
    trace_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hit (
    query_id INTEGER NOT NULL REFERENCES query(id) ON DELETE CASCADE,
    stage TEXT NOT NULL,            -- retrieve (per leaf) | final (after rerank)
    rank INTEGER NOT NULL,
    chunk_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    dense REAL, bm25 REAL, fused REAL, rerank REAL,
    excerpt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hit_query ON hit(query_id);
"""


class AuditLog:
    """Append-only query log; safe to share between threads (one connection, one lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.executescript(SCHEMA)
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(query)")}
        if "workspace" not in columns:  # a log written before the column existed
            self._conn.execute("ALTER TABLE query ADD COLUMN workspace TEXT")
        self._lock = threading.Lock()

    def record(self, trace: Trace, workspace: str | None = None) -> int:
        """Store a finished trace with its per-stage hits; returns the query id."""
        locate = trace.locate
        with self._lock, self._conn:
            cur = self._conn.execute(
                "INSERT INTO query (created_at, workspace, question, strategy, locator,"
                " settings_json, provider_json, timing_json, fallbacks_json, answer, trace_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    trace.created_at,
                    workspace,
                    trace.question,
                    trace.strategy,
                    locate.locator if locate else None,
                    json.dumps(trace.settings),
                    json.dumps(trace.provider),
                    json.dumps(stage_summary(trace)),
                    json.dumps([f.__dict__ for f in trace.fallbacks], ensure_ascii=False),
                    trace.answer,
                    trace_to_json(trace, indent=None),
                ),
            )
            query_id = int(cur.lastrowid)
            rows = [
                ("retrieve", hit.leaf_rank, hit) for group in trace.retrieved for hit in group.hits
            ] + [("final", hit.final_rank, hit) for hit in trace.reranked]
            self._conn.executemany(
                "INSERT INTO hit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        query_id,
                        stage,
                        rank,
                        h.chunk.chunk_id,
                        h.chunk.source_node_id,
                        h.chunk.doc_id,
                        h.chunk.start,
                        h.chunk.end,
                        h.dense,
                        h.bm25,
                        h.fused,
                        h.rerank,
                        h.chunk.text[:300],
                    )
                    for stage, rank, h in rows
                ],
            )
        return query_id

    def recent(self, limit: int = 50, workspace: str | None = None) -> list[dict[str, Any]]:
        """Newest first; with `workspace`, only that workspace's queries."""
        where, args = ("WHERE workspace = ?", (workspace, limit)) if workspace else ("", (limit,))
        with self._lock:
            cur = self._conn.execute(
                "SELECT id, created_at, workspace, question, strategy, locator FROM query"
                f" {where} ORDER BY id DESC LIMIT ?",
                args,
            )
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def load(self, query_id: int) -> Trace:
        with self._lock:
            row = self._conn.execute(
                "SELECT trace_json FROM query WHERE id = ?", (query_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"no query {query_id} in {self.path}")
        return trace_from_json(row[0])

    def hits(self, query_id: int, stage: str = "final") -> list[dict[str, Any]]:
        with self._lock:
            cur = self._conn.execute(
                "SELECT * FROM hit WHERE query_id = ? AND stage = ? ORDER BY rank",
                (query_id, stage),
            )
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
