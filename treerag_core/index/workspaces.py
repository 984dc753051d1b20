"""Per-session upload workspaces: caps, idle expiry, restore on reload, writes only on change."""

from __future__ import annotations

import re
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treerag_core.base.config import MB, IndexSettings, data_dir, env_positive, env_positive_int
from treerag_core.base.errors import (
    IndexFormatError,
    TreeRAGError,
    WorkspaceDeleteError,
    WorkspaceLimitError,
    WorkspaceUnreadableError,
)
from treerag_core.index.corpus import CorpusIndex, SourceDocument
from treerag_core.index.embedders import Embedder
from treerag_core.index.store import MANIFEST, load_index, read_manifest, save_index
from treerag_core.ingest.chunking import CHUNKER_VERSION, chunk_leaf
from treerag_core.ingest.loading import size_text
from treerag_core.ingest.parsing import parse_document

_ID = re.compile(r"^[0-9a-f]{32}$")
STAMP = ".last-used"  # its mtime is the workspace's last use
INDEX = "index"


@dataclass(frozen=True)
class WorkspaceLimits:
    """What one browser session may store: files per drop, bytes and chunks in all, idle time."""

    files_per_drop: int = 20
    max_bytes: int = 4 * MB  # ~30k chunks at the default chunking: minutes of CPU
    max_chunks: int = 20_000
    idle_hours: float = 24.0

    def __post_init__(self) -> None:
        for name in ("files_per_drop", "max_bytes", "max_chunks"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, but got {getattr(self, name)}")
        if not self.idle_hours > 0:
            raise ValueError(f"idle_hours must be > 0, but got {self.idle_hours}")

    @classmethod
    def from_env(cls) -> WorkspaceLimits:
        """TREERAG_WS_MAX_FILES, TREERAG_WS_MAX_MB, TREERAG_WS_MAX_CHUNKS, TREERAG_WS_IDLE_HOURS.

        Raises:
            ValueError: a variable is set but not a positive number (a whole one for the
                counts: files and chunks).
        """
        d = cls()
        return cls(
            files_per_drop=env_positive_int("TREERAG_WS_MAX_FILES", d.files_per_drop),
            max_bytes=int(env_positive("TREERAG_WS_MAX_MB", d.max_bytes / MB) * MB),
            max_chunks=env_positive_int("TREERAG_WS_MAX_CHUNKS", d.max_chunks),
            idle_hours=env_positive("TREERAG_WS_IDLE_HOURS", d.idle_hours),
        )


def new_workspace_id() -> str:
    """128 random bits: the id is the only key to a workspace (it may sit in the page URL)."""
    return secrets.token_hex(16)


def is_workspace_id(value: Any) -> bool:
    """True for an id `new_workspace_id` could have made (a URL parameter is untrusted)."""
    return isinstance(value, str) and bool(_ID.match(value))


def source_bytes(sources: Sequence[SourceDocument]) -> int:
    return sum(len(s.text.encode("utf-8")) for s in sources)


def count_chunks(sources: Sequence[SourceDocument], settings: IndexSettings) -> int:
    """How many chunks `sources` make (parse + chunk only: no model is run)."""
    total = 0
    for src in sources:
        nodes = parse_document(
            src.text,
            src.name,
            src.name,
            max_depth=settings.max_depth,
            article_leaves=settings.article_leaves,
        )
        for node in nodes:
            if node.is_leaf:
                total += len(
                    chunk_leaf(
                        node,
                        src.text,
                        settings.chunk_size,
                        settings.chunk_overlap,
                        settings.min_chunk_chars,
                    )
                )
    return total


def check_drop(files: int, limits: WorkspaceLimits) -> None:
    """A drop of `files` files; WorkspaceLimitError when it is too many at once."""
    if files > limits.files_per_drop:
        raise WorkspaceLimitError(
            f"{files} files in one drop; the limit is {limits.files_per_drop}: add them in "
            "smaller batches"
        )


def check_sources(
    sources: Sequence[SourceDocument], settings: IndexSettings, limits: WorkspaceLimits
) -> int:
    """The documents a workspace would hold after a change; returns their chunk count.

    Checked before any model runs, so an oversized workspace costs no embedding time.

    Raises:
        WorkspaceLimitError: over the byte or chunk limit (the message says by how much).
    """
    size = source_bytes(sources)
    if size > limits.max_bytes:
        raise WorkspaceLimitError(
            f"your workspace would hold {size_text(size)} of text; the limit per session is "
            f"{size_text(limits.max_bytes)}: remove documents or upload fewer"
        )
    chunks = count_chunks(sources, settings)
    if chunks > limits.max_chunks:
        raise WorkspaceLimitError(
            f"your workspace would hold {chunks:,} chunks; the limit per session is "
            f"{limits.max_chunks:,}: remove documents, or rebuild with a larger chunk size"
        )
    return chunks


@dataclass(frozen=True)
class Workspaces:
    """The workspaces under one root (default `data_dir()/workspaces`), one folder per id.

    `forget` is called with an id whose workspace is dropped (the audit log's
    `forget_workspace`), so its queries leave with it.
    """

    root: Path
    limits: WorkspaceLimits = WorkspaceLimits()
    forget: Callable[[str], Any] | None = None

    @classmethod
    def default(cls, forget: Callable[[str], Any] | None = None) -> Workspaces:
        return cls(Path(data_dir()) / "workspaces", WorkspaceLimits.from_env(), forget)

    def folder(self, ws_id: str) -> Path:
        if not is_workspace_id(ws_id):
            raise WorkspaceLimitError(f"{ws_id!r} is not a workspace id")
        return self.root / ws_id

    def touch(self, ws_id: str, create: bool = False) -> None:
        """Mark the workspace as used now (idle expiry counts from here).

        A workspace gets its folder on its first write (`create`): a visit that writes
        nothing leaves nothing on disk.
        """
        folder = self.folder(ws_id)
        if not create and not folder.is_dir():
            return
        folder.mkdir(parents=True, exist_ok=True)
        (folder / STAMP).touch()

    def last_used(self, ws_id: str) -> float | None:
        folder = self.folder(ws_id)
        for path in (folder / STAMP, folder):
            try:
                return path.stat().st_mtime
            except OSError:
                continue
        return None

    def restore(self, ws_id: Any, embedder: Embedder | None = None) -> CorpusIndex | None:
        """The saved index of a workspace a reloaded page names, or None to start afresh.

        An invalid id, an expired or a missing workspace give None; only an expired one is
        dropped (idle expiry is the one way a workspace's data goes).

        Raises:
            WorkspaceUnreadableError: the saved index exists but cannot be loaded (damaged,
                another schema version, another embedder, a disk error). Nothing is deleted:
                its documents, tree edits, paid LLM caches and history stay, and the idle
                clock restarts, so the user can come back to it once the cause is fixed.
            WorkspaceDeleteError: the workspace is idle but its files could not be deleted.
        """
        if not is_workspace_id(ws_id):
            return None
        folder = self.root / ws_id / INDEX
        if self.is_idle(ws_id):
            self.drop(ws_id)
            return None
        if not (folder / MANIFEST).is_file():
            return None
        try:
            index = load_index(folder, embedder=embedder)
        except TreeRAGError as exc:
            self.touch(ws_id)
            raise WorkspaceUnreadableError(
                f"workspace {ws_id} could not be opened ({exc}). Nothing in it was deleted: "
                f"it is kept for {self.limits.idle_hours:g} hours from now"
            ) from exc
        self.touch(ws_id)
        return index

    def save(self, ws_id: str, index: CorpusIndex | None) -> bool:
        """Persist the workspace's index; True when something was written.

        An index equal in content to the saved one (same documents by hash, same settings,
        same embedder) is not written again; None removes the saved index.
        """
        folder = self.folder(ws_id) / INDEX
        self.touch(ws_id, create=index is not None)
        if index is None:
            existed = folder.exists()
            remove_folder(folder)
            return existed
        if len(index.chunks) > self.limits.max_chunks:
            raise WorkspaceLimitError(
                f"the workspace holds {len(index.chunks):,} chunks; the limit per session is "
                f"{self.limits.max_chunks:,}"
            )
        if _same_content(folder, index):
            return False
        save_index(index, folder)
        return True

    def is_idle(self, ws_id: str, now: float | None = None) -> bool:
        used = self.last_used(ws_id)
        if used is None:
            return False
        return (now or time.time()) - used > self.limits.idle_hours * 3600

    def drop(self, ws_id: str) -> None:
        """Delete a workspace's folder and (through `forget`) its audit rows.

        Raises:
            WorkspaceDeleteError: the folder (or part of it) could not be deleted; its audit
                rows are then kept too, so no workspace is left with files but no history.
        """
        remove_folder(self.folder(ws_id))
        if self.forget is not None:
            self.forget(ws_id)

    def expire_idle(self, now: float | None = None) -> list[str]:
        """Drop every workspace idle longer than the limit; returns their ids.

        Raises:
            WorkspaceDeleteError: after trying every idle workspace, naming those that stayed.
        """
        if not self.root.is_dir():
            return []
        gone, failed = [], []
        for folder in self.root.iterdir():
            if is_workspace_id(folder.name) and self.is_idle(folder.name, now):
                try:
                    self.drop(folder.name)
                except WorkspaceDeleteError as exc:
                    failed.append(str(exc))
                    continue
                gone.append(folder.name)
        if failed:
            raise WorkspaceDeleteError("; ".join(failed))
        return gone


def remove_folder(folder: Path) -> None:
    """Delete `folder` and everything in it; a missing folder is already gone.

    Raises:
        WorkspaceDeleteError: any of it is still on disk afterwards (a permission, a busy
            file, a symlink rmtree refuses to follow).
    """
    if not folder.exists() and not folder.is_symlink():
        return
    try:
        shutil.rmtree(folder)
    except OSError as exc:
        if folder.exists() or folder.is_symlink():
            raise WorkspaceDeleteError(
                f"{folder} could not be deleted ({exc.strerror or exc}); it is kept with its "
                "query history, and the next expiry tries again"
            ) from exc


def _same_content(folder: Path, index: CorpusIndex) -> bool:
    try:
        manifest = read_manifest(folder)
    except IndexFormatError:
        return False
    saved_docs = [(d.get("doc_id"), d.get("sha256")) for d in manifest.get("documents", [])]
    return (
        saved_docs == [(d.doc_id, d.sha256) for d in index.documents]
        and manifest.get("settings") == index.settings.to_dict()
        and manifest.get("chunker_version") == CHUNKER_VERSION  # else re-chunked: write it
        and (manifest.get("embedder") or {}).get("name") == index.embedder_name
        and manifest.get("summary_cache", {}) == index.summary_cache
    )
