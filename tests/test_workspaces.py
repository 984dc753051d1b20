"""Per-session workspaces: caps with clear messages, idle expiry, restore on reload, no rewrites."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import sample_sources
from treerag_core.audit import AuditLog
from treerag_core.config import IndexSettings
from treerag_core.embedders import get_embedder
from treerag_core.errors import WorkspaceLimitError
from treerag_core.index import SourceDocument, build_index
from treerag_core.workspaces import (
    STAMP,
    WorkspaceLimits,
    Workspaces,
    check_drop,
    check_sources,
    is_workspace_id,
    new_workspace_id,
)

SETTINGS = IndexSettings(embedder="hashing")


@pytest.fixture(scope="module")
def paper_index():
    return build_index(sample_sources(["test_paper.md"]), SETTINGS, get_embedder("hashing"))


def test_too_many_files_in_one_drop_is_refused():
    check_drop(3, WorkspaceLimits(files_per_drop=3))
    with pytest.raises(WorkspaceLimitError, match="4 files in one drop; the limit is 3"):
        check_drop(4, WorkspaceLimits(files_per_drop=3))


def test_bytes_per_session_cap_is_refused_before_indexing():
    docs = [SourceDocument("a.md", "# A\n\n" + "word " * 300)]
    check_sources(docs, SETTINGS, WorkspaceLimits(max_bytes=10_000))
    with pytest.raises(WorkspaceLimitError, match=r"MB of text; the limit per session"):
        check_sources(docs * 2, SETTINGS, WorkspaceLimits(max_bytes=2_000))


def test_chunks_per_session_cap_is_refused_before_indexing():
    docs = sample_sources(["test_paper.md"])
    chunks = check_sources(docs, SETTINGS, WorkspaceLimits())
    built = build_index(docs, SETTINGS, get_embedder("hashing"))
    assert chunks == len(built.chunks)  # the count is exact, without running a model
    with pytest.raises(WorkspaceLimitError, match="chunks; the limit per session is 10"):
        check_sources(docs, SETTINGS, WorkspaceLimits(max_chunks=10))


def test_reload_restores_the_workspace(tmp_path, paper_index):
    spaces = Workspaces(tmp_path)
    ws = new_workspace_id()
    assert spaces.save(ws, paper_index)
    restored = spaces.restore(ws, get_embedder("hashing"))
    assert restored is not None and restored.chunks == paper_index.chunks


def test_reload_with_a_bad_or_unknown_id_starts_afresh(tmp_path, paper_index):
    spaces = Workspaces(tmp_path)
    for bad in ("../../etc", "", None, "A" * 32, new_workspace_id()):
        assert spaces.restore(bad) is None
    assert not is_workspace_id("../x") and is_workspace_id(new_workspace_id())
    with pytest.raises(WorkspaceLimitError):
        spaces.folder("../../etc")


def test_reload_of_a_damaged_workspace_drops_it(tmp_path, paper_index):
    spaces = Workspaces(tmp_path)
    ws = new_workspace_id()
    spaces.save(ws, paper_index)
    (tmp_path / ws / "index" / "embeddings.npy").write_bytes(b"")
    assert spaces.restore(ws) is None
    assert not (tmp_path / ws).exists()


def test_unchanged_rebuild_does_not_rewrite_the_index(tmp_path, paper_index):
    spaces = Workspaces(tmp_path)
    ws = new_workspace_id()
    assert spaces.save(ws, paper_index) is True
    manifest = tmp_path / ws / "index" / "manifest.json"
    before = manifest.stat().st_mtime_ns
    rebuilt = build_index(
        sample_sources(["test_paper.md"]), SETTINGS, get_embedder("hashing"), previous=paper_index
    )
    assert spaces.save(ws, rebuilt) is False
    assert manifest.stat().st_mtime_ns == before
    other = build_index(sample_sources(["zh_sample.md"]), SETTINGS, get_embedder("hashing"))
    assert spaces.save(ws, other) is True  # a real change is written
    assert spaces.save(ws, None) is True and not (tmp_path / ws / "index").exists()


def test_idle_workspace_expires_with_its_audit_rows(tmp_path, paper_index):
    from treerag_core.pipeline import Engine, run
    from treerag_core.settings import QuerySettings

    log = AuditLog(tmp_path / "audit.sqlite")
    spaces = Workspaces(tmp_path / "ws", WorkspaceLimits(idle_hours=1), log.forget_workspace)
    idle, active = new_workspace_id(), new_workspace_id()
    for ws in (idle, active):
        spaces.save(ws, paper_index)
        trace = run(
            Engine(paper_index, get_embedder("hashing")),
            "router",
            QuerySettings().set("llm.enabled", False).set("rerank.enabled", False),
            synthesize=False,
        )
        log.record(trace, workspace=ws)
    old = time.time() - 2 * 3600
    os.utime(tmp_path / "ws" / idle / ".last-used", (old, old))
    assert spaces.expire_idle() == [idle]
    assert not (tmp_path / "ws" / idle).exists() and (tmp_path / "ws" / active).exists()
    assert [r["workspace"] for r in log.recent()] == [active]
    # A page reloaded with an idle workspace's id starts afresh, and the folder goes.
    os.utime(tmp_path / "ws" / active / ".last-used", (old, old))
    assert spaces.restore(active) is None and not (tmp_path / "ws" / active).exists()


def test_workspace_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("TREERAG_WS_MAX_FILES", "5")
    monkeypatch.setenv("TREERAG_WS_MAX_MB", "1.5")
    monkeypatch.setenv("TREERAG_WS_IDLE_HOURS", "2")
    limits = WorkspaceLimits.from_env()
    assert (limits.files_per_drop, limits.max_bytes, limits.idle_hours) == (5, 3 * 2**19, 2.0)
    monkeypatch.setenv("TREERAG_WS_MAX_CHUNKS", "-3")
    with pytest.raises(ValueError, match="TREERAG_WS_MAX_CHUNKS"):
        WorkspaceLimits.from_env()


def test_a_workspace_folder_is_made_on_its_first_write_only(tmp_path, paper_index):
    spaces = Workspaces(tmp_path / "ws", WorkspaceLimits())
    ws = new_workspace_id()
    spaces.touch(ws)  # a visit: nothing written
    assert not spaces.folder(ws).exists()
    spaces.touch(ws, create=True)  # e.g. a question logged under it
    assert (spaces.folder(ws) / STAMP).is_file()
    other = new_workspace_id()
    assert spaces.save(other, paper_index) and spaces.folder(other).is_dir()
