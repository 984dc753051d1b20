"""Save and load a CorpusIndex as a plain folder (JSON + .npy, no pickle), atomically."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import platform
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from treerag_core.base import artifacts
from treerag_core.base.artifacts import (
    is_finite_number,
    is_whole_number,
    read_json,
    read_jsonl,
    read_npy,
    typed_row,
)
from treerag_core.base.atomic import fsync_dir
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import (
    EmbedderError,
    IndexBusyError,
    IndexFormatError,
    UnsafePathError,
)
from treerag_core.base.safepaths import read_bytes_checked
from treerag_core.base.types import Chunk, DocumentInfo, TreeNode
from treerag_core.index.corpus import CorpusIndex
from treerag_core.index.embedders import PROBE_TEXT, Embedder, embedder_fingerprint
from treerag_core.index.parts import index_parts, kept_files
from treerag_core.ingest.chunking import CHUNKER_VERSION

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
FILES = ("nodes.jsonl", "chunks.jsonl", "embeddings.npy", "tokens.json", "texts.json")
# Kept across rebuilds: the user's tree corrections (ingest/tree_edits.py), then what each
# family part keeps (`kept_on_rebuild()`, e.g. the HiRAG artifacts and their LLM caches).
KEPT_ON_REBUILD = ("tree_edits.json",)
REBUILD_HINT = "rebuild it with `python -m treerag_core index --input DOCS --output {path}`"
LOCK_TIMEOUT = 30.0  # seconds a second writer waits for the first before giving up
FINGERPRINT_MIN_COSINE = 0.999  # same model, other BLAS: ~1.0; another model: far below
MAX_DIM = 65_536  # no embedder comes near; a larger "dim" in a manifest is damage
T = TypeVar("T")


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("numpy", "faiss-cpu", "rank-bm25", "sentence-transformers", "jieba"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "missing"
    return out


def manifest_of(index: CorpusIndex) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": index.settings.to_dict(),
        "chunker_version": CHUNKER_VERSION,  # the same settings chunk differently across it
        "embedder": {
            "name": index.embedder_name,
            "dim": index.dim,
            "probe": PROBE_TEXT,
            "fingerprint": [round(float(x), 6) for x in index.embedder_fingerprint],
        },
        "versions": _versions(),
        "documents": [asdict(d) for d in index.documents],
        "counts": {"nodes": len(index.nodes), "chunks": len(index.chunks)},
        "summary_cache": index.summary_cache,
    }


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _side(target: Path, kind: str) -> str:
    """Prefix of the side folders of an index: `.name.tmp-*` (being written), `.name.old-*`."""
    return f".{target.name}.{kind}-"


# (folder, thread) pairs whose writer lock is held for a whole run; flock locks belong to
# an open file, so a nested index_lock in the same thread would otherwise wait for itself.
_RUN_LOCKS: set[tuple[Path, int]] = set()


def lock_path_of(target: Path) -> Path:
    """The writer lock file beside an index folder: `.name.lock` (left there; harmless)."""
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def run_lock(folder: str | Path) -> Iterator[Path]:
    """Hold an index folder's writer lock for a whole run (e.g. `index`: read the previous
    index, build, save), refusing at once when another process holds it; saves inside the
    run (same thread) reuse it. Yields the resolved folder.

    Raises:
        IndexBusyError: another process is writing the folder (it is not waited for).
    """
    target = Path(folder).resolve()
    with index_lock(target, timeout=0):
        key = (target, threading.get_ident())
        _RUN_LOCKS.add(key)
        try:
            yield target
        finally:
            _RUN_LOCKS.discard(key)


@contextlib.contextmanager
def index_lock(target: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the writer lock of an index folder (`.name.lock` beside it, fcntl; freed on exit,
    also when the process dies). A second writer waits up to `timeout` seconds
    (`LOCK_TIMEOUT` when None, read at call time).

    Raises:
        IndexBusyError: another process still holds the lock after `timeout` seconds.
    """
    key = (target, threading.get_ident())
    if key in _RUN_LOCKS:  # this thread holds it for a whole run (run_lock): a save inside
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path_of(target), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        timeout = LOCK_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                    raise IndexBusyError(
                        f"another process (pid {holder}) is writing the index at {target}; "
                        f"waited {timeout:.0f} s: try again when it has finished"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _has_manifest(folder: Path) -> bool:
    return (folder / MANIFEST).is_file()


def recover_index(folder: str | Path, wait: float = 0.0) -> bool:
    """Repair what a killed writer left beside an index folder; True when it could look.

    Under the writer lock (skipped when a writer is running and `wait` runs out): if the
    index itself is missing but a finished old copy survived a crash between two renames,
    it is put back; then every stale `.name.tmp-*` and `.name.old-*` folder is removed.
    """
    target = Path(folder).resolve()
    try:
        with index_lock(target, timeout=wait):
            _recover_locked(target)
    except IndexBusyError:
        return False
    except OSError:  # a read-only place: nothing to repair there
        return False
    return True


def _side_folders(target: Path) -> list[Path]:
    """The `.name.tmp-*` / `.name.old-*` folders beside an index, newest first."""
    prefixes = (_side(target, "tmp"), _side(target, "old"))
    try:
        found = [p for p in target.parent.iterdir() if p.name.startswith(prefixes) and p.is_dir()]
    except OSError:  # no parent folder: nothing beside it
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def _recover_locked(target: Path) -> None:
    sides = _side_folders(target)
    if not target.exists():
        old = [p for p in sides if p.name.startswith(_side(target, "old")) and _has_manifest(p)]
        if old:
            old[0].rename(target)
            sides.remove(old[0])
    for side in sides:
        shutil.rmtree(side, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # file system without it
        return False
    raise OSError(err, os.strerror(err), str(a))


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(folder)


def save_index(index: CorpusIndex, folder: str | Path, lock_timeout: float | None = None) -> Path:
    """Write the index to `folder` under its writer lock, so a loadable index is always there.

    The index is written into `.name.tmp-*` beside the folder, then swapped in with one atomic
    exchange (Linux), or two renames whose gap `recover_index` repairs on the next open or
    write. Stale side folders of killed writers are removed first.

    Raises:
        IndexBusyError: another process is writing the same folder (after `lock_timeout` s).
        IndexFormatError: `folder` exists and is not a TreeRAG index.
    """
    target = Path(folder).resolve()

    def write(tmp: Path) -> None:  # under the writer lock, after recovery
        if target.exists() and (
            not target.is_dir() or (any(target.iterdir()) and not _has_manifest(target))
        ):
            # Replacing the folder deletes it: only ever do that to an index we wrote.
            raise IndexFormatError(
                f"{target} exists and is not a TreeRAG index; choose a new or empty folder"
            )
        _write_files(index, tmp)
        for name in kept_on_rebuild():
            _carry_over(target / name, tmp / name, target)

    write_folder(target, write, lock_timeout)
    index.folder = str(target)
    return target


def kept_on_rebuild() -> tuple[str, ...]:
    """Files and folders a rebuild carries over: the tree corrections and the parts' own."""
    return KEPT_ON_REBUILD + kept_files()


def swap_in(tmp: Path, target: Path) -> None:
    """Put the finished folder `tmp` at `target` (under `index_lock(target)`), so a complete
    copy is always there: one atomic exchange (Linux), else two renames whose gap
    `recover_index` repairs after a crash (an error between them puts the old copy back).
    Afterwards `tmp` is gone or holds the old copy, for the caller to delete."""
    if not target.exists():
        tmp.rename(target)
    elif not _exchange(tmp, target):
        backup = target.with_name(f"{_side(target, 'old')}{os.getpid()}")
        target.rename(backup)
        try:
            tmp.rename(target)  # a crash before this line: recover_index puts backup back
        except BaseException:
            backup.rename(target)
            raise
        shutil.rmtree(backup, ignore_errors=True)
    fsync_dir(target.parent)


def write_folder(
    folder: str | Path, write: Callable[[Path], None], lock_timeout: float | None = None
) -> Path:
    """Write a folder of artifacts (e.g. an index's `hirag/`) as an index is written: `write`
    fills a `.name.tmp-*` side folder, swapped in under the folder's writer lock (`swap_in`).

    Raises:
        IndexBusyError: another process is writing the same folder (after `lock_timeout` s).
    """
    target = Path(folder).resolve()
    with index_lock(target, lock_timeout):
        _recover_locked(target)
        tmp = Path(tempfile.mkdtemp(prefix=_side(target, "tmp"), dir=target.parent))
        try:
            write(tmp)
            _fsync_tree(tmp)
            swap_in(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # the old copy, or a write that failed
    return target


def _carry_over(src: Path, dst: Path, root: Path) -> None:
    """Carry a kept file or folder into the new index (files as hard links where possible:
    they are replaced, never written in place). The index folder may come from anyone, so
    only its own regular files and folders are carried, each file within the size an index
    file may hold: a symlink (which would carry its target in) or a device is refused.

    Raises:
        IndexFormatError: a symlink, device or oversized file, named inside the index.
    """
    try:
        info = os.lstat(src)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        dst.mkdir()
        for child in sorted(os.listdir(src)):
            _carry_over(src / child, dst / child, root)
        return
    limit = artifacts.MAX_NPY_BYTES if src.suffix == ".npy" else artifacts.MAX_JSON_BYTES
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        why = (
            "is a symlink"
            if stat.S_ISLNK(info.st_mode)
            else "is not a regular file"
            if not stat.S_ISREG(info.st_mode)
            else f"holds {info.st_size:,} bytes, more than the {limit:,} an index file may hold"
        )
        raise IndexFormatError(
            f"{src.relative_to(root)} in the index folder {root} {why}; "
            "an index folder keeps only its own regular files: move it away and index again"
        )
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:  # a file system without hard links
        try:
            dst.write_bytes(read_bytes_checked(src, limit))
        except UnsafePathError as exc:  # replaced since the check above
            raise IndexFormatError(f"{src} changed while it was carried over: {exc}") from exc


def _write_files(index: CorpusIndex, tmp: Path) -> None:
    _write_jsonl(tmp / "nodes.jsonl", [asdict(n) for n in index.nodes.values()])
    _write_jsonl(tmp / "chunks.jsonl", [asdict(c) for c in index.chunks])
    np.save(tmp / "embeddings.npy", index.embeddings.astype(np.float32), allow_pickle=False)
    (tmp / "tokens.json").write_text(json.dumps(index.tokens, ensure_ascii=False), encoding="utf-8")
    (tmp / "texts.json").write_text(json.dumps(index.texts, ensure_ascii=False), "utf-8")
    for part in index_parts():  # each optional: an index saved without a part loads without
        if index.parts.get(part.key) is not None:
            part.save(index.parts[part.key], tmp, index)
    # The manifest goes last: a folder without one was never finished.
    (tmp / MANIFEST).write_text(
        json.dumps(manifest_of(index), ensure_ascii=False, indent=2), encoding="utf-8"
    )


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of an index folder, validated; raises IndexFormatError with a fix."""
    path = Path(folder)
    hint = REBUILD_HINT.format(path=path)
    if _side_folders(path.resolve()):
        recover_index(path)  # a killed writer's leftovers; a missing index may come back
    if not path.is_dir():
        build = f"build one with `python -m treerag_core index --input DOCS --output {path}`"
        raise IndexFormatError(f"no index at {path}: {build}")
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise IndexFormatError(f"{path} is not a TreeRAG index (no {MANIFEST}); {hint}")
    manifest = read_json(manifest_path, dict, hint)
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise IndexFormatError(
            f"{path} has index schema version {version}, this TreeRAG reads version "
            f"{SCHEMA_VERSION}; {hint}"
        )
    return manifest


def load_index(
    folder: str | Path, expect_embedder: str | None = None, embedder: Embedder | None = None
) -> CorpusIndex:
    """Load an index folder. Any missing, corrupt or mismatched part is an IndexFormatError.

    Every file is read with the checked readers of `artifacts.py` (bounded, typed, no pickle)
    and the tree is checked whole (links both ways, no loops) before anything walks it.
    With `embedder`, its dimension and fingerprint (its vector of a fixed probe text) must
    match the ones the index was built with (an EmbedderError otherwise): another model of the
    same name or dimension would give meaningless scores without a word.
    """
    path = Path(folder)
    manifest = read_manifest(path)
    hint = REBUILD_HINT.format(path=path)
    for name in FILES:
        if not (path / name).is_file():
            raise IndexFormatError(f"{path} is incomplete: {name} is missing; {hint}")
    head = _manifest_parts(manifest, path / MANIFEST, hint)
    if expect_embedder is not None and head.name != expect_embedder:
        raise IndexFormatError(
            f"{path} was built with embedder {head.name!r}, not {expect_embedder!r}; "
            f"query it with --embedder {head.name} or {hint}"
        )
    nodes = _rows(TreeNode, path / "nodes.jsonl", hint)
    chunks = _rows(Chunk, path / "chunks.jsonl", hint)
    embeddings = read_npy(path / "embeddings.npy", head.dim, len(chunks), hint=hint)
    tokens = read_json(path / "tokens.json", list, hint)
    if len(tokens) != len(chunks) or not all(_str_list(t) for t in tokens):
        raise IndexFormatError(
            f"{path / 'tokens.json'} does not match chunks.jsonl (one list of strings per "
            f"chunk); {hint}"
        )
    texts = read_json(path / "texts.json", dict, hint)
    if not all(isinstance(t, str) for t in texts.values()):
        raise IndexFormatError(f"{path / 'texts.json'} is corrupt (a text is not a string); {hint}")
    documents = head.documents
    missing = [d.doc_id for d in documents if d.doc_id not in texts]
    if missing:
        raise IndexFormatError(f"{path / 'texts.json'} lacks documents {missing}; {hint}")
    _check_references(path, nodes, chunks, documents, hint)
    _check_spans(path, nodes, chunks, texts, hint)
    _check_tree(path, nodes, documents, hint)
    index = CorpusIndex(
        settings=head.settings,
        embedder_name=head.name,
        dim=head.dim,
        documents=documents,
        texts=texts,
        nodes={n.node_id: n for n in nodes},
        chunks=chunks,
        embeddings=embeddings,
        tokens=tokens,
        summary_cache=head.summary_cache,
        embedder_fingerprint=head.fingerprint,
        folder=str(path.resolve()),
    )
    for part in index_parts():  # each checked against the core index loaded above
        loaded = part.load(path, index, hint)
        if loaded is not None:
            index.parts[part.key] = loaded
    if embedder is not None:
        check_embedder(index, embedder, where=str(path))
    return index


@dataclass(frozen=True)
class _Head:
    """What the manifest says about an index, each part checked."""

    settings: IndexSettings
    name: str
    dim: int
    fingerprint: tuple[float, ...]
    documents: list[DocumentInfo]
    summary_cache: dict[str, str]


def _manifest_parts(manifest: dict[str, Any], where: Path, hint: str) -> _Head:
    def bad(what: str) -> IndexFormatError:
        return IndexFormatError(f"{where} is corrupt ({what}); {hint}")

    info = manifest.get("embedder")
    if not isinstance(info, dict):
        raise bad("embedder is not an object")
    name, dim = info.get("name"), info.get("dim")
    if not isinstance(name, str) or not name:
        raise bad(f"embedder name {name!r} is not a name")
    if not is_whole_number(dim) or not 0 < dim <= MAX_DIM:
        raise bad(f"embedder dim {dim!r} is not a whole number from 1 to {MAX_DIM}")
    fingerprint = info.get("fingerprint", [])
    if not isinstance(fingerprint, list) or not all(is_finite_number(x) for x in fingerprint):
        raise bad("embedder fingerprint is not a list of finite numbers")
    if len(fingerprint) != dim:  # without it another model of the same dimension passes
        raise bad(
            f"the embedder fingerprint has {len(fingerprint)} numbers, not {dim}: the vectors "
            f"cannot be checked against {name!r}"
        )
    raw_settings = manifest.get("settings")
    if not isinstance(raw_settings, dict):
        raise bad("settings is not an object")
    try:
        settings = IndexSettings.from_dict(raw_settings)
    except (ValueError, TypeError) as exc:  # a value IndexSettings refuses
        raise bad(f"settings: {exc}") from exc
    rows = manifest.get("documents")
    if not isinstance(rows, list):
        raise bad("documents is not a list")
    documents = [
        typed_row(DocumentInfo, r, f"{where}: documents[{i}]", hint) for i, r in enumerate(rows)
    ]
    if len({d.doc_id for d in documents}) != len(documents):
        raise bad("two documents share an id")
    cache = manifest.get("summary_cache", {})
    if not isinstance(cache, dict) or not all(isinstance(v, str) for v in cache.values()):
        raise bad("summary_cache is not an object of strings")
    return _Head(settings, name, dim, tuple(float(x) for x in fingerprint), documents, cache)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def _rows(cls: type[T], path: Path, hint: str) -> list[T]:
    """Typed rows of a JSON-lines file; a row of another shape names the file and row."""
    rows = read_jsonl(path, hint)
    return [typed_row(cls, row, f"{path}: row {i + 1}", hint) for i, row in enumerate(rows)]


def check_embedder(index: CorpusIndex, embedder: Embedder, where: str = "the index") -> None:
    """Raise EmbedderError unless `embedder` is the model the index was built with.

    An index without a stored fingerprint (written before it existed) is checked by
    dimension only.
    """
    if embedder.dim != index.dim:
        raise EmbedderError(
            f"{where} holds {index.dim}-d vectors from {index.embedder_name!r}; embedder "
            f"{embedder.name!r} gives {embedder.dim}-d: rebuild the index or use its embedder"
        )
    if not index.embedder_fingerprint:
        return
    stored = np.asarray(index.embedder_fingerprint, dtype=np.float64)
    now = np.asarray(embedder_fingerprint(embedder), dtype=np.float64)
    cosine = float(stored @ now / ((np.linalg.norm(stored) * np.linalg.norm(now)) or 1.0))
    if cosine < FINGERPRINT_MIN_COSINE:
        raise EmbedderError(
            f"{where} was built by another model than this {embedder.name!r} embedder "
            f"(probe vectors agree to cosine {cosine:.3f}, need {FINGERPRINT_MIN_COSINE}): "
            "its scores would be meaningless; rebuild the index with this embedder"
        )


def _check_references(
    path: Path,
    nodes: list[TreeNode],
    chunks: list[Chunk],
    documents: list[DocumentInfo],
    hint: str,
) -> None:
    """Ids are unique; every chunk's node and document, every node's links must exist."""
    node_ids = {n.node_id for n in nodes}
    doc_ids = {d.doc_id for d in documents}
    if len(node_ids) != len(nodes):
        raise IndexFormatError(f"{path / 'nodes.jsonl'}: two nodes share an id; {hint}")
    if len({c.chunk_id for c in chunks}) != len(chunks):
        raise IndexFormatError(f"{path / 'chunks.jsonl'}: two chunks share an id; {hint}")
    for chunk in chunks:
        if chunk.source_node_id not in node_ids or chunk.doc_id not in doc_ids:
            raise IndexFormatError(
                f"{path / 'chunks.jsonl'}: chunk {chunk.chunk_id} points to node "
                f"{chunk.source_node_id!r} of document {chunk.doc_id!r}, which is not in the "
                f"index; {hint}"
            )
    for node in nodes:
        linked = [node.parent_id] if node.parent_id is not None else []
        bad = [i for i in [*linked, *node.children] if i not in node_ids]
        if bad or node.doc_id not in doc_ids:
            raise IndexFormatError(
                f"{path / 'nodes.jsonl'}: node {node.node_id} links to missing nodes {bad} "
                f"or document {node.doc_id!r}; {hint}"
            )
    for doc in documents:
        if doc.root_id not in node_ids:
            raise IndexFormatError(
                f"{path / MANIFEST}: document {doc.doc_id!r} has no root node; {hint}"
            )


def _check_tree(
    path: Path, nodes: list[TreeNode], documents: list[DocumentInfo], hint: str
) -> None:
    """Parents and children agree and each document's tree is a tree: every node is reached
    exactly once from its document's root. A loop would hang every walk up or down the tree
    (ancestors, the tree graph), so it is refused here, before anything walks it."""
    where = path / "nodes.jsonl"
    by_id = {n.node_id: n for n in nodes}

    def bad(what: str) -> IndexFormatError:
        return IndexFormatError(f"{where}: {what}; {hint}")

    listed: set[str] = set()  # every node some parent lists (and that names that parent)
    for node in nodes:
        if len(set(node.children)) != len(node.children):
            raise bad(f"node {node.node_id} lists a child twice")
        for child_id in node.children:
            child = by_id[child_id]
            if child.parent_id != node.node_id or child.doc_id != node.doc_id:
                raise bad(
                    f"node {node.node_id} lists child {child_id}, whose parent is "
                    f"{child.parent_id!r} in document {child.doc_id!r}"
                )
            listed.add(child_id)
    for node in nodes:  # a set, not the parent's tuple: linear in the nodes (100k headings)
        if node.parent_id is not None and node.node_id not in listed:
            raise bad(f"node {node.node_id} names parent {node.parent_id}, which does not list it")
    seen: set[str] = set()
    for doc in documents:
        root = by_id[doc.root_id]
        if root.parent_id is not None or root.doc_id != doc.doc_id:
            raise bad(f"the root {root.node_id} of document {doc.doc_id!r} is not a root of it")
        stack = [root.node_id]
        while stack:  # iterative with a visited set: a hostile depth cannot overflow the stack
            node_id = stack.pop()
            if node_id in seen:
                raise bad(f"node {node_id} is reached twice from the roots (a loop in the tree)")
            seen.add(node_id)
            stack.extend(by_id[node_id].children)
    unreached = [n.node_id for n in nodes if n.node_id not in seen]
    if unreached:
        raise bad(
            f"nodes {unreached[:5]} are not reached from any document's root (a loop in their "
            "parents)"
        )


def _check_spans(
    path: Path,
    nodes: list[TreeNode],
    chunks: list[Chunk],
    texts: dict[str, str],
    hint: str,
) -> None:
    """Every node's and chunk's [start, end) lies inside its document's text, and a chunk's
    text is that slice."""
    for name, rows in (("nodes.jsonl", nodes), ("chunks.jsonl", chunks)):
        for row in rows:
            size = len(texts.get(row.doc_id, ""))
            if not 0 <= row.start <= row.end <= size:
                what = getattr(row, "node_id", None) or getattr(row, "chunk_id", "")
                raise IndexFormatError(
                    f"{path / name}: {what} spans [{row.start}, {row.end}), outside its "
                    f"document's {size:,} characters; {hint}"
                )
    for chunk in chunks:  # the invariant citations and highlights rely on
        if texts[chunk.doc_id][chunk.start : chunk.end] != chunk.text:
            raise IndexFormatError(
                f"{path / 'chunks.jsonl'}: the text of {chunk.chunk_id} is not its document's "
                f"text at [{chunk.start}, {chunk.end}); {hint}"
            )
