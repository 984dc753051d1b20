"""Save and load a CorpusIndex as a plain folder (JSON + .npy, no pickle), atomically."""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from treerag_core.config import IndexSettings
from treerag_core.errors import IndexFormatError
from treerag_core.index import CorpusIndex
from treerag_core.layers import load_layers, save_layers
from treerag_core.types import Chunk, DocumentInfo, TreeNode

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
FILES = ("nodes.jsonl", "chunks.jsonl", "embeddings.npy", "tokens.json", "texts.json")
REBUILD_HINT = "rebuild it with `python -m treerag_core index --input DOCS --output {path}`"


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
        "embedder": {"name": index.embedder_name, "dim": index.dim},
        "versions": _versions(),
        "documents": [asdict(d) for d in index.documents],
        "counts": {"nodes": len(index.nodes), "chunks": len(index.chunks)},
        "summary_cache": index.summary_cache,
    }


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def save_index(index: CorpusIndex, folder: str | Path) -> Path:
    """Write the index to `folder`: written in a temp folder beside it, then renamed into place."""
    target = Path(folder).resolve()
    if target.exists() and (
        not target.is_dir() or (any(target.iterdir()) and not (target / MANIFEST).is_file())
    ):
        # Replacing the folder deletes it: only ever do that to an index we wrote.
        raise IndexFormatError(
            f"{target} exists and is not a TreeRAG index; choose a new or empty folder"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        _write_jsonl(tmp / "nodes.jsonl", [asdict(n) for n in index.nodes.values()])
        _write_jsonl(tmp / "chunks.jsonl", [asdict(c) for c in index.chunks])
        np.save(tmp / "embeddings.npy", index.embeddings.astype(np.float32), allow_pickle=False)
        (tmp / "tokens.json").write_text(
            json.dumps(index.tokens, ensure_ascii=False), encoding="utf-8"
        )
        (tmp / "texts.json").write_text(json.dumps(index.texts, ensure_ascii=False), "utf-8")
        if index.layers is not None:  # optional: indexes saved before layers load without
            save_layers(index.layers, tmp)
        # The manifest goes last: a folder without one was never finished.
        (tmp / MANIFEST).write_text(
            json.dumps(manifest_of(index), ensure_ascii=False, indent=2), encoding="utf-8"
        )
        backup = None
        if target.exists():
            backup = target.with_name(f".{target.name}.old-{os.getpid()}")
            target.rename(backup)
        tmp.rename(target)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of an index folder, validated; raises IndexFormatError with a fix."""
    path = Path(folder)
    hint = REBUILD_HINT.format(path=path)
    if not path.is_dir():
        build = f"build one with `python -m treerag_core index --input DOCS --output {path}`"
        raise IndexFormatError(f"no index at {path}: {build}")
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise IndexFormatError(f"{path} is not a TreeRAG index (no {MANIFEST}); {hint}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"{manifest_path} is corrupt ({exc}); {hint}") from exc
    version = manifest.get("schema_version") if isinstance(manifest, dict) else None
    if version != SCHEMA_VERSION:
        raise IndexFormatError(
            f"{path} has index schema version {version}, this TreeRAG reads version "
            f"{SCHEMA_VERSION}; {hint}"
        )
    return manifest


def load_index(folder: str | Path, expect_embedder: str | None = None) -> CorpusIndex:
    """Load an index folder. Any missing, corrupt or mismatched part is an IndexFormatError."""
    path = Path(folder)
    manifest = read_manifest(path)
    hint = REBUILD_HINT.format(path=path)
    for name in FILES:
        if not (path / name).is_file():
            raise IndexFormatError(f"{path} is incomplete: {name} is missing; {hint}")
    embedder = manifest.get("embedder", {})
    if expect_embedder is not None and embedder.get("name") != expect_embedder:
        raise IndexFormatError(
            f"{path} was built with embedder {embedder.get('name')!r}, not {expect_embedder!r}; "
            f"query it with --embedder {embedder.get('name')} or {hint}"
        )
    current = "nodes.jsonl"
    try:
        nodes = [_node(row) for row in _read_jsonl(path / current)]
        current = "chunks.jsonl"
        chunks = [Chunk(**row) for row in _read_jsonl(path / current)]
        current = "embeddings.npy"
        embeddings = np.load(path / current, allow_pickle=False)
        current = "tokens.json"
        tokens = json.loads((path / current).read_text(encoding="utf-8"))
        current = "texts.json"
        texts = json.loads((path / current).read_text(encoding="utf-8"))
        current = MANIFEST
        documents = [DocumentInfo(**d) for d in manifest["documents"]]
        settings = IndexSettings.from_dict(manifest["settings"])
        dim = int(embedder["dim"])
        name = str(embedder["name"])
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, OSError) as exc:
        raise IndexFormatError(f"{path / current} is corrupt ({exc}); {hint}") from exc
    if embeddings.dtype != np.float32 or embeddings.shape != (len(chunks), dim):
        raise IndexFormatError(
            f"{path / 'embeddings.npy'} has shape {embeddings.shape} {embeddings.dtype}, "
            f"expected ({len(chunks)}, {dim}) float32; {hint}"
        )
    if len(tokens) != len(chunks):
        raise IndexFormatError(f"{path / 'tokens.json'} does not match chunks.jsonl; {hint}")
    missing = [d.doc_id for d in documents if d.doc_id not in texts]
    if missing:
        raise IndexFormatError(f"{path / 'texts.json'} lacks documents {missing}; {hint}")
    layers = load_layers(path, dim, hint)
    node_ids = {n.node_id for n in nodes}
    if layers is not None and (
        layers.doc_ids != [d.doc_id for d in documents]
        or any(p not in node_ids for p in layers.parent_ids)
    ):
        raise IndexFormatError(f"{path / 'layers.json'} does not match this index; {hint}")
    return CorpusIndex(
        settings=settings,
        embedder_name=name,
        dim=dim,
        documents=documents,
        texts=texts,
        nodes={n.node_id: n for n in nodes},
        chunks=chunks,
        embeddings=embeddings,
        tokens=tokens,
        summary_cache=dict(manifest.get("summary_cache", {})),
        layers=layers,
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def _node(row: dict[str, Any]) -> TreeNode:
    row = dict(row)
    row["children"] = tuple(row.get("children", ()))
    return TreeNode(**row)
