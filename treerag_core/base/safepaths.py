"""The one rule for reading a file a user named: inside allowed folders, regular, size-capped."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from treerag_core.base.config import data_dir, eval_roots
from treerag_core.base.errors import UnsafePathError

DEFAULT_MAX_BYTES = 50 * 1024 * 1024


def allowed_roots() -> tuple[Path, ...]:
    """The folders the explorer may read user-named files from: its data folder, the eval sets."""
    return (Path(data_dir()), *eval_roots())


def resolve_inside(path: str | Path, roots: Sequence[str | Path] | None = None) -> Path:
    """`path` with every symlink resolved, if it lies inside one of `roots` (resolved too).

    Raises:
        UnsafePathError: the resolved path is outside every root (or a symlink loop).
    """
    roots = allowed_roots() if roots is None else roots
    try:
        resolved = Path(path).expanduser().resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise UnsafePathError(f"{path}: cannot resolve the path ({exc})") from exc
    for root in roots:
        try:
            base = Path(root).expanduser().resolve(strict=False)
        except (OSError, RuntimeError):
            continue
        if resolved == base or resolved.is_relative_to(base):
            return resolved
    names = ", ".join(str(r) for r in roots) or "(none)"
    raise UnsafePathError(
        f"{path}: outside the folders this app reads from ({names}); copy the file there"
    )


def open_regular(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[BinaryIO, int]:
    """A regular file opened for reading, and its size, checked on the open descriptor.

    The file is opened without blocking and without following a final symlink, so a swap
    between the check and the read changes nothing; devices, FIFOs and sockets are refused
    and the size is known (and within `max_bytes`) before a byte is read.

    Raises:
        UnsafePathError: missing, a symlink, not a regular file, or larger than `max_bytes`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise UnsafePathError(f"{path}: no such file") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP and Path(path).is_symlink():
            raise UnsafePathError(f"{path}: is a symlink, not a regular file") from exc
        raise UnsafePathError(f"{path}: cannot open ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket"
            raise UnsafePathError(f"{path}: is {kind}, not a regular file")
        if info.st_size > max_bytes:
            raise UnsafePathError(
                f"{path}: {info.st_size:,} bytes is larger than the limit of {max_bytes:,}"
            )
        return os.fdopen(fd, "rb"), info.st_size
    except BaseException:
        os.close(fd)
        raise


def read_bytes_checked(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """A regular file's bytes, refusing symlinks, devices, FIFOs and sockets and checking the
    size first (`open_regular`).

    Raises:
        UnsafePathError: missing, not a regular file, or larger than `max_bytes`.
    """
    fh, _ = open_regular(path, max_bytes)
    try:
        with fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UnsafePathError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > max_bytes:  # the file grew after the check
        raise UnsafePathError(f"{path}: larger than the limit of {max_bytes:,} bytes")
    return data


def read_bytes_inside(
    path: str | Path,
    roots: Sequence[str | Path] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> bytes:
    """`read_bytes_checked` of `path` after `resolve_inside` (the default roots: the app's)."""
    return read_bytes_checked(resolve_inside(path, roots), max_bytes)
