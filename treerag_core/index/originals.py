"""The original bytes of uploaded PDFs, kept beside a workspace's index so a citation can
show its page (the index itself holds only the converted text)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

ORIGINALS = "originals"


def original_path(folder: Path, name: str) -> Path:
    """Where the original of document `name` lives: a hash, so no name can leave the folder."""
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
    return Path(folder) / ORIGINALS / f"{digest}.pdf"


def save_original(folder: Path, name: str, data: bytes) -> None:
    """Write the original atomically (a reader never sees half a file)."""
    path = original_path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
