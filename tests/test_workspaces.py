"""Per-session workspaces: caps with clear messages, idle expiry, restore on reload, no rewrites."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexFormatError, WorkspaceLimitError, WorkspaceUnreadableError
from treerag_core.index import workspaces
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.workspaces import (
    STAMP,
    WorkspaceLimits,
    Workspaces,
    check_drop,
    check_sources,
    is_workspace_id,
    new_workspace_id,
)
from treerag_core.ingest.chunking import CHUNKER_VERSION
from treerag_core.records.audit_log import AuditLog

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
    # Sizes in the unit that reads (never "0.0 MB" for a small cap).
    with pytest.raises(
        WorkspaceLimitError, match=r"3\.0 KB of text; the limit per session is 2\.0 KB"
    ):
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


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _damage_embeddings(index_folder):
    (index_folder / "embeddings.npy").write_bytes(b"")


def _bump_schema(index_folder):
    manifest = json.loads((index_folder / "manifest.json").read_text())
    (index_folder / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 99}))


@pytest.mark.parametrize(
    ("damage", "named"),
    [(_damage_embeddings, "embeddings.npy"), (_bump_schema, "schema version 99")],
    ids=["damaged", "newer-schema"],
)
def test_reload_of_an_unreadable_workspace_keeps_every_file(tmp_path, paper_index, damage, named):
    forgotten = []
    spaces = Workspaces(tmp_path, WorkspaceLimits(idle_hours=2), forgotten.append)
    ws = new_workspace_id()
    spaces.save(ws, paper_index)
    (tmp_path / ws / "index" / "tree_edits.json").write_text('{"version": 1, "documents": {}}')
    damage(tmp_path / ws / "index")
    old = time.time() - 3600  # used an hour ago: not idle yet
    os.utime(tmp_path / ws / STAMP, (old, old))
    before = _files(tmp_path / ws / "index")
    with pytest.raises(WorkspaceUnreadableError, match=named) as info:
        spaces.restore(ws, get_embedder("hashing"))
    assert ws in str(info.value) and "Nothing in it was deleted" in str(info.value)
    assert _files(tmp_path / ws / "index") == before and forgotten == []
    assert not spaces.is_idle(ws, now=time.time() + 1.5 * 3600)  # the idle clock restarted


def test_a_transient_load_error_loses_nothing_and_the_next_reload_restores(
    tmp_path, paper_index, monkeypatch
):
    spaces = Workspaces(tmp_path)
    ws = new_workspace_id()
    spaces.save(ws, paper_index)
    real = workspaces.load_index
    calls = []

    def flaky(folder, **kwargs):
        calls.append(folder)
        if len(calls) == 1:  # as load_index wraps an OSError (e.g. a busy network disk)
            raise IndexFormatError(f"{folder}/chunks.jsonl is corrupt ([Errno 5] I/O error)")
        return real(folder, **kwargs)

    monkeypatch.setattr(workspaces, "load_index", flaky)
    with pytest.raises(WorkspaceUnreadableError, match="I/O error"):
        spaces.restore(ws)
    restored = spaces.restore(ws)
    assert restored is not None and restored.chunks == paper_index.chunks


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
    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import Engine, run

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
    assert (limits.files_per_drop, limits.max_bytes, limits.idle_hours) == (5, 1_500_000, 2.0)
    monkeypatch.setenv("TREERAG_WS_MAX_CHUNKS", "-3")
    with pytest.raises(ValueError, match="TREERAG_WS_MAX_CHUNKS"):
        WorkspaceLimits.from_env()


@pytest.mark.parametrize("name", ["TREERAG_WS_MAX_FILES", "TREERAG_WS_MAX_CHUNKS"])
@pytest.mark.parametrize("raw", ["2.5", "1e3", "0", "five"])
def test_a_count_limit_must_be_a_whole_number(monkeypatch, name, raw):
    monkeypatch.setenv(name, raw)
    with pytest.raises(
        ValueError, match=f"^{name} must be a positive whole number, but got '{raw}'$"
    ):
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


def test_a_workspace_that_cannot_be_deleted_keeps_its_audit_rows(tmp_path, paper_index):
    # rmtree refuses a symlinked folder: a real failure that leaves the files on disk.
    from treerag_core.base.errors import WorkspaceDeleteError
    from treerag_core.base.settings import QuerySettings
    from treerag_core.pipeline import Engine, run

    log = AuditLog(tmp_path / "audit.sqlite")
    spaces = Workspaces(tmp_path / "ws", WorkspaceLimits(idle_hours=1), log.forget_workspace)
    stuck, idle = new_workspace_id(), new_workspace_id()
    elsewhere = tmp_path / "elsewhere"
    spaces.save(idle, paper_index)
    elsewhere.mkdir()
    (tmp_path / "ws" / stuck).symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / STAMP).touch()
    trace = run(
        Engine(paper_index, get_embedder("hashing")),
        "router",
        QuerySettings().set("llm.enabled", False).set("rerank.enabled", False),
        synthesize=False,
    )
    for ws in (stuck, idle):
        log.record(trace, workspace=ws)
    old = time.time() - 2 * 3600
    for ws in (stuck, idle):
        os.utime(tmp_path / "ws" / ws / STAMP, (old, old))
    with pytest.raises(WorkspaceDeleteError, match=f"{stuck} could not be deleted"):
        spaces.drop(stuck)
    assert (tmp_path / "ws" / stuck).exists()
    assert [r["workspace"] for r in log.recent()] == [idle, stuck]  # its history stays
    with pytest.raises(WorkspaceDeleteError, match=stuck):
        spaces.expire_idle()
    # The other idle workspace still went, with its rows; the stuck one kept both.
    assert not (tmp_path / "ws" / idle).exists()
    assert [r["workspace"] for r in log.recent()] == [stuck]


def test_removing_a_saved_index_that_stays_is_an_error_not_a_success(tmp_path, paper_index):
    from treerag_core.base.errors import WorkspaceDeleteError

    spaces = Workspaces(tmp_path / "ws")
    ws = new_workspace_id()
    spaces.save(ws, paper_index)
    index = tmp_path / "ws" / ws / "index"
    index.rename(tmp_path / "real-index")
    index.symlink_to(tmp_path / "real-index", target_is_directory=True)
    with pytest.raises(WorkspaceDeleteError, match="could not be deleted"):
        spaces.save(ws, None)
    assert index.is_symlink()


def test_an_index_saved_by_another_chunker_is_written_again(tmp_path, paper_index):
    import json

    spaces = Workspaces(tmp_path)
    ws = new_workspace_id()
    assert spaces.save(ws, paper_index) is True
    manifest = tmp_path / ws / "index" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert data["chunker_version"] == CHUNKER_VERSION
    data["chunker_version"] = "1"  # saved before short paragraphs were kept
    manifest.write_text(json.dumps(data), encoding="utf-8")
    # Same documents and settings, but the chunks differ: the save is not skipped.
    assert spaces.save(ws, paper_index) is True
    assert json.loads(manifest.read_text(encoding="utf-8"))["chunker_version"] == CHUNKER_VERSION
