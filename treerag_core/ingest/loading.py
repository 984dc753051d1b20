"""Read documents from disk or uploads into text, rejecting bad inputs with a clear reason."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

from treerag_core.base.config import MB
from treerag_core.base.errors import FileTooLargeError, InputDocumentError, UnsafePathError
from treerag_core.base.safepaths import read_bytes_checked

ENCODINGS = ("utf-8", "utf-8-sig", "gb18030")
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt"})
# Everything a folder is searched for: text plus the converted formats (PDF, DOCX, HTML).
DOCUMENT_SUFFIXES = TEXT_SUFFIXES | frozenset({".pdf", ".docx", ".html", ".htm"})
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def size_text(size: int) -> str:
    """A byte count for people: MB from 1 MB up, else KB (never a bare `0.0 MB`)."""
    return f"{size / MB:.1f} MB" if size >= MB else f"{size / 1000:.1f} KB"


def too_large(name: str, size: int, max_bytes: int) -> FileTooLargeError:
    """The refusal, with the remedy a CLI user can apply (a web page words its own)."""
    refusal = (
        f"{name}: {size:,} bytes ({size_text(size)}) is larger than the limit of "
        f"{max_bytes:,} bytes ({size_text(max_bytes)})"
    )
    return FileTooLargeError(
        f"{refusal}; raise it with TREERAG_MAX_FILE_MB or --max-file-mb", refusal
    )


def normalize_newlines(text: str) -> str:
    """Turn \\r\\n and lone \\r into \\n, exactly like Python's universal-newlines read."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_document(data: bytes, name: str, max_bytes: int) -> str:
    """Decode one document's bytes to text (BOM stripped, newlines normalised).

    Raises:
        InputDocumentError: the bytes are empty or blank, binary, too large or undecodable.
    """
    if len(data) > max_bytes:
        raise too_large(name, len(data), max_bytes)
    if not data.strip():
        raise InputDocumentError(f"{name}: the file is empty (or only whitespace)")
    if b"\x00" in data:
        hint = " (it looks like UTF-16; save it as UTF-8)" if data.startswith(_UTF16_BOMS) else ""
        raise InputDocumentError(f"{name}: looks binary (contains NUL bytes){hint}")
    for encoding in ENCODINGS:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        # utf-8 keeps a BOM as U+FEFF; strip it so offsets start at the first real character.
        text = normalize_newlines(text.removeprefix("\ufeff"))
        if not text.strip():
            raise InputDocumentError(f"{name}: the file is empty (or only whitespace)")
        return text
    raise InputDocumentError(
        f"{name}: cannot decode the text (tried {', '.join(ENCODINGS)}); save it as UTF-8"
    )


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """Read one file's bytes, checking its size before reading it.

    A FIFO, device or socket is refused without opening it for a blocking read, and a
    symlink loop is named as one.

    Raises:
        InputDocumentError: the path is missing, a folder, not a regular file, a symlink loop,
            unreadable, or a bad document.
    """
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError as exc:
        if path.is_symlink():
            raise InputDocumentError(f"{path}: a symlink to a missing file") from exc
        raise InputDocumentError(f"{path}: no such file") from exc
    except (OSError, RuntimeError) as exc:  # ELOOP (RuntimeError before Python 3.13)
        raise InputDocumentError(f"{path}: a symlink loop, not a file") from exc
    if resolved.is_dir():
        raise InputDocumentError(f"{path}: is a folder, not a file")
    try:
        info = resolved.stat()
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            raise too_large(str(path), info.st_size, max_bytes)
        data = read_bytes_checked(resolved, max_bytes)
    except UnsafePathError as exc:
        reason = str(exc).removeprefix(f"{resolved}: ")
        raise InputDocumentError(f"{path}: {reason}") from exc
    except OSError as exc:
        raise InputDocumentError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    return data


def read_document(path: Path, max_bytes: int) -> str:
    """Read and decode one text file (see `read_bytes` and `decode_document`)."""
    return decode_document(read_bytes(path, max_bytes), str(path), max_bytes)


def _folder_documents(folder: Path) -> list[Path]:
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        # Hidden folders (.git, .venv, ...) hold no documents the user meant to index.
        if any(part.startswith(".") for part in relative.parts):
            continue
        # Anything named like a document but not a folder is kept: a FIFO, a broken link or
        # a symlink loop is then rejected with its reason instead of skipped without a word.
        if path.suffix.lower() in DOCUMENT_SUFFIXES and not path.is_dir():
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def collect_inputs(paths: Sequence[Path]) -> list[Path]:
    """Files as given, folders expanded recursively to documents (.md .markdown .txt .pdf
    .docx .html .htm), sorted.

    A file named twice is kept once, at its first position.

    Raises:
        InputDocumentError: a path does not exist.
    """
    out: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise InputDocumentError(f"{path}: no such file or folder")
        for item in _folder_documents(path) if path.is_dir() else [path]:
            try:
                key = item.resolve()
            except (OSError, RuntimeError):  # a symlink loop: read_document reports it
                key = item.absolute()
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out
