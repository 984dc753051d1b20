"""The one atomic write of a file: a reader (another process, a crash) sees the old file or
the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` (text as UTF-8) to `path`: a temporary `.name.*.tmp` beside it, flushed to
    disk, then renamed over it. Creates the parent folder. `mode` sets the file's permissions
    (mkstemp makes it private: pass 0o644 for a file meant to be shared).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def fsync_dir(folder: str | Path) -> None:
    """Flush a folder's entries (a rename inside it) to disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
