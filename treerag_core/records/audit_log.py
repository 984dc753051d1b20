"""A private, auditable record of every query in a SQLite file: the run, its settings, every hit.

Each row follows seed 004's RetrievalRecord (window sizes, fusion and rerank strategy, provider
snapshot, timing per stage, question flags) and its hits are stored per stage (keyword, vector,
fusion, rerank) with their score details. The file is readable by its owner only (0600),
deleted rows are overwritten (secure_delete), rows expire after the retention period, and a
workspace's rows leave with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from treerag_core.answer.flags import QuestionFlags
from treerag_core.base.types import Trace
from treerag_core.records.audit_record import audit_record
from treerag_core.records.trace_json import stage_summary, trace_from_json, trace_to_json

DEFAULT_RETENTION_DAYS = 30.0
EXPIRE_EVERY = timedelta(hours=1)  # how often a long-lived log deletes expired rows
STAGE_ALIASES = {"final": "rerank"}  # the name the first schema used

SCHEMA = """
CREATE TABLE IF NOT EXISTS query (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    workspace TEXT,                 -- who asked (the explorer's browser-session workspace)
    question TEXT NOT NULL,
    strategy TEXT NOT NULL,
    locator TEXT,
    settings_json TEXT NOT NULL,
    provider_json TEXT NOT NULL,    -- provider snapshot: models and library versions
    timing_json TEXT NOT NULL,
    fallbacks_json TEXT NOT NULL,
    answer TEXT NOT NULL,
    trace_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hit (
    query_id INTEGER NOT NULL REFERENCES query(id) ON DELETE CASCADE,
    stage TEXT NOT NULL,            -- keyword | vector (per searched leaf) | fusion | rerank
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
# Columns added after the first schema (a log written before is upgraded in place).
QUERY_COLUMNS = {
    "workspace": "TEXT",
    "corpus": "TEXT",  # the explorer's corpus key: which index the question ran on
    "keyword_top_k": "INTEGER",
    "vector_top_k": "INTEGER",
    "fusion_top_k": "INTEGER",
    "rerank_top_k": "INTEGER",
    "fusion_strategy": "TEXT",
    "rerank_strategy": "TEXT",
    "timing_ms_json": "TEXT",
    "flags_json": "TEXT",
    "is_out_of_scope": "INTEGER",
    "is_sensitive": "INTEGER",
}
HIT_COLUMNS = {"grp": "TEXT", "score": "REAL", "score_details_json": "TEXT"}


def retention_days() -> float:
    """TREERAG_AUDIT_RETENTION_DAYS (a positive number; 0 keeps rows forever), else 30.

    Raises:
        ValueError: the variable is set but not a number >= 0.
    """
    raw = os.environ.get("TREERAG_AUDIT_RETENTION_DAYS", "").strip()
    if not raw:
        return DEFAULT_RETENTION_DAYS
    try:
        days = float(raw)
    except ValueError:
        days = -1.0
    if not days >= 0 or days == float("inf"):
        raise ValueError(f"TREERAG_AUDIT_RETENTION_DAYS must be a number >= 0, but got {raw!r}")
    return days


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _private_file(path: Path) -> None:
    """Create the file readable by its owner only, and make an existing one so."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


class AuditLog:
    """Append-only query log; safe to share between threads (one connection, one lock)."""

    def __init__(
        self,
        path: str | Path,
        retention: float | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.path = Path(path)
        # The app keeps one log for the server's lifetime: old rows are also expired on use
        # (at most once per EXPIRE_EVERY), not only when the log is opened.
        self._clock = clock
        self._expired_at: datetime | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.retention = retention_days() if retention is None else float(retention)
        _private_file(self.path)
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.execute("PRAGMA secure_delete = ON")  # deleted text is overwritten
        self._conn.executescript(SCHEMA)
        self._add_missing("query", QUERY_COLUMNS)
        self._add_missing("hit", HIT_COLUMNS)
        self._conn.execute("CREATE INDEX IF NOT EXISTS query_workspace ON query(workspace)")
        self._conn.commit()
        self._lock = threading.Lock()
        self.expire()

    def _add_missing(self, table: str, columns: dict[str, str]) -> None:
        have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def record(
        self,
        trace: Trace,
        workspace: str | None = None,
        flags: QuestionFlags | None = None,
        corpus: str | None = None,
    ) -> int:
        """Store a finished trace as a seed-004 record with its hits per stage; returns its id.

        `workspace` is the asking browser session's workspace (None: the CLI); `flags`
        default to `flags.question_flags(trace)`.
        """
        self._expire_due()
        rec = audit_record(trace, flags)
        locate = trace.locate
        created = trace.created_at or self._clock().isoformat(timespec="seconds")
        with self._lock, self._conn:
            cur = self._conn.execute(
                "INSERT INTO query (created_at, workspace, corpus, question, strategy, locator,"
                " settings_json, provider_json, timing_json, fallbacks_json, answer, trace_json,"
                " keyword_top_k, vector_top_k, fusion_top_k, rerank_top_k, fusion_strategy,"
                " rerank_strategy, timing_ms_json, flags_json, is_out_of_scope, is_sensitive)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    created,
                    workspace,
                    corpus,
                    trace.question,
                    trace.strategy,
                    locate.locator if locate else None,
                    json.dumps(trace.settings, ensure_ascii=False),
                    json.dumps(rec.provider_snapshot, ensure_ascii=False),
                    json.dumps(stage_summary(trace)),
                    json.dumps([f.__dict__ for f in trace.fallbacks], ensure_ascii=False),
                    trace.answer,
                    trace_to_json(trace, indent=None),
                    rec.keyword_top_k,
                    rec.vector_top_k,
                    rec.fusion_top_k,
                    rec.rerank_top_k,
                    rec.fusion_strategy,
                    rec.rerank_strategy,
                    json.dumps(rec.timing_ms),
                    json.dumps(rec.flags.to_dict(), ensure_ascii=False),
                    int(rec.flags.out_of_scope),
                    int(rec.flags.is_sensitive),
                ),
            )
            query_id = int(cur.lastrowid)
            self._conn.executemany(
                "INSERT INTO hit (query_id, stage, rank, chunk_id, node_id, doc_id, start_offset,"
                " end_offset, dense, bm25, fused, rerank, excerpt, grp, score, score_details_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        query_id,
                        h.stage,
                        h.rank,
                        h.chunk_id,
                        h.node_id,
                        h.doc_id,
                        h.start_offset,
                        h.end_offset,
                        _detail(h.score_details, "vector_score"),
                        _detail(h.score_details, "keyword_score"),
                        h.score_details.get("fusion_score"),
                        h.score_details.get("rerank_score"),
                        h.excerpt,
                        h.group,
                        h.score,
                        json.dumps(h.score_details, ensure_ascii=False),
                    )
                    for h in rec.hits
                ],
            )
        return query_id

    def recent(self, limit: int = 50, workspace: str | None = None) -> list[dict[str, Any]]:
        """Newest first; with `workspace`, only that workspace's queries (None: all, the CLI)."""
        self._expire_due()
        where, args = (
            ("WHERE workspace = ?", (workspace, limit))
            if workspace is not None
            else (
                "",
                (limit,),
            )
        )
        with self._lock:
            cur = self._conn.execute(
                "SELECT id, created_at, workspace, corpus, question, strategy, locator,"
                " is_out_of_scope,"
                f" is_sensitive FROM query {where} ORDER BY id DESC LIMIT ?",
                args,
            )
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def load(self, query_id: int, workspace: str | None = None) -> Trace:
        """The stored trace; with `workspace`, only if that workspace recorded it, else KeyError."""
        self._expire_due()
        sql, args = "SELECT trace_json FROM query WHERE id = ?", (query_id,)
        if workspace is not None:
            sql, args = sql + " AND workspace = ?", (query_id, workspace)
        with self._lock:
            row = self._conn.execute(sql, args).fetchone()
        if row is None:
            raise KeyError(f"no query {query_id} in {self.path}")
        return trace_from_json(row[0])

    def record_params(self, query_id: int) -> dict[str, Any]:
        """The seed-004 record parameters of a query (windows, strategies, snapshot, timing)."""
        self._expire_due()
        with self._lock:
            cur = self._conn.execute(
                "SELECT keyword_top_k, vector_top_k, fusion_top_k, rerank_top_k, fusion_strategy,"
                " rerank_strategy, provider_json, timing_ms_json, flags_json FROM query"
                " WHERE id = ?",
                (query_id,),
            )
            row = cur.fetchone()
            names = [c[0] for c in cur.description]
        if row is None:
            raise KeyError(f"no query {query_id} in {self.path}")
        out = dict(zip(names, row, strict=True))
        out["provider_snapshot"] = json.loads(out.pop("provider_json") or "{}")
        out["timing_ms"] = json.loads(out.pop("timing_ms_json") or "{}")
        out["flags"] = json.loads(out.pop("flags_json") or "{}")
        return out

    def hits(self, query_id: int, stage: str = "rerank") -> list[dict[str, Any]]:
        """One stage's hits (keyword, vector, fusion, rerank; "final" means rerank)."""
        self._expire_due()
        stage = STAGE_ALIASES.get(stage, stage)
        with self._lock:
            cur = self._conn.execute(
                "SELECT * FROM hit WHERE query_id = ? AND stage = ? ORDER BY grp, rank",
                (query_id, stage),
            )
            names = [c[0] for c in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        for row in rows:
            row["score_details"] = json.loads(row.pop("score_details_json") or "{}")
        return rows

    def forget_workspace(self, workspace: str) -> int:
        """Delete a workspace's queries and their hits (when the workspace is dropped)."""
        with self._lock, self._conn:
            cur = self._conn.execute("DELETE FROM query WHERE workspace = ?", (workspace,))
        return cur.rowcount

    def expire(self, now: datetime | None = None) -> int:
        """Delete queries older than the retention period; returns how many went."""
        if self.retention <= 0:
            return 0
        now = now or self._clock()
        cutoff = now - timedelta(days=self.retention)
        with self._lock, self._conn:
            self._expired_at = now
            cur = self._conn.execute(
                "DELETE FROM query WHERE created_at < ?", (cutoff.isoformat(timespec="seconds"),)
            )
        return cur.rowcount

    def _expire_due(self) -> None:
        """`expire()` when the last one ran at least EXPIRE_EVERY ago (a read or a write)."""
        last = self._expired_at
        if self.retention > 0 and (last is None or self._clock() - last >= EXPIRE_EVERY):
            self.expire()

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.ProgrammingError):
            self._conn.close()


def _detail(details: dict[str, Any], key: str) -> float | None:
    if key in details:
        return details[key]
    components = details.get("components") or {}
    return components.get(key)
