"""The original bytes of uploaded PDFs, kept beside a workspace's index so a citation can
show its page (the index itself holds only the converted text)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from treerag_core.base.atomic import write_atomic

ORIGINALS = "originals"


def original_path(folder: Path, name: str) -> Path:
    """Where the original of document `name` lives: a hash, so no name can leave the folder."""
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
    return Path(folder) / ORIGINALS / f"{digest}.pdf"


def save_original(folder: Path, name: str, data: bytes) -> None:
    """Write the original atomically (a reader never sees half a file)."""
    path = original_path(folder, name)
    write_atomic(path, data)


def load_original(folder: Path, name: str, max_bytes: int) -> bytes | None:
    """The stored original of `name`, or None when there is none (or it is over `max_bytes`)."""
    path = original_path(folder, name)
    try:
        if path.stat().st_size > max_bytes:
            return None
        return path.read_bytes()
    except OSError:
        return None


def drop_original(folder: Path, name: str) -> None:
    original_path(folder, name).unlink(missing_ok=True)
