"""The graph store (NetworkX in-process) and the HiRAG artifacts as JSON/npy in the index folder."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
import numpy as np

from treerag_core.base import artifacts
from treerag_core.base.artifacts import present, read_json, read_jsonl, read_npy
from treerag_core.base.atomic import write_atomic
from treerag_core.base.errors import IndexFormatError, UnsafePathError
from treerag_core.base.safepaths import read_bytes_checked
from treerag_core.index.store import index_lock, recover_index, write_folder
from treerag_core.strategies.hirag.communities import Community
from treerag_core.strategies.hirag.corpus_graph import CorpusGraph, Entity, Relation
from treerag_core.strategies.hirag.reports import CommunityReport

SCHEMA_VERSION = 1
FOLDER = "hirag"
FILES = (
    "graph.json",
    "communities.json",
    "reports.json",
    "entity_vectors.npy",
    "entity_tokens.json",
)
UNREADABLE = ".hirag-unreadable"  # beside hirag/, kept across re-index (part.HiragPart)
PARTIAL_FILE = f".{FOLDER}-reports-partial.json"  # the LLM reports of a build cut short
PARTIAL_HINT = "move it away to write the reports again (their LLM calls are paid again)"
BUILD_HINT = "build it with `python -m treerag_core index --hirag ...` (or query once to build it)"


class GraphStore(Protocol):
    """What the retriever and path finder need from a graph backend (seed 002 §3.1)."""

    def has_node(self, key: str) -> bool: ...

    def get_node(self, key: str) -> Entity | None: ...

    def node_degree(self, key: str) -> int: ...

    def get_node_edges(self, key: str) -> list[Relation]: ...

    def get_edge(self, a: str, b: str) -> Relation | None: ...

    def shortest_path(self, a: str, b: str) -> list[str] | None: ...

    def subgraph_edges(self, keys: list[str]) -> list[Relation]: ...


class NetworkXGraphStore:
    """The default store: an undirected NetworkX graph held in memory.

    No server-backed store (Neo4j and the like) is offered: none can be installed and
    tested on this project's machines, and an untested backend is a defect.
    """

    def __init__(self, graph: CorpusGraph) -> None:
        self._entities = graph.entity_map()
        self._g = nx.Graph()
        self._g.add_nodes_from(sorted(self._entities))
        for r in graph.relations:
            self._g.add_edge(r.source, r.target, relation=r)

    @property
    def nx_graph(self) -> nx.Graph:
        return self._g

    def has_node(self, key: str) -> bool:
        return key in self._entities

    def get_node(self, key: str) -> Entity | None:
        return self._entities.get(key)

    def node_degree(self, key: str) -> int:
        return int(self._g.degree(key)) if key in self._g else 0

    def get_node_edges(self, key: str) -> list[Relation]:
        if key not in self._g:
            return []
        return [self._g.edges[key, n]["relation"] for n in sorted(self._g.neighbors(key))]

    def get_edge(self, a: str, b: str) -> Relation | None:
        data = self._g.get_edge_data(a, b)
        return None if data is None else data["relation"]

    def shortest_path(self, a: str, b: str) -> list[str] | None:
        """Fewest hops from a to b (ties broken by NetworkX's deterministic BFS), or None."""
        try:
            return list(nx.shortest_path(self._g, a, b))
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return None

    def subgraph_edges(self, keys: list[str]) -> list[Relation]:
        sub = self._g.subgraph(keys)
        return [sub.edges[a, b]["relation"] for a, b in sorted(sub.edges())]


@dataclass
class HiragIndex:
    """Everything the five modes read: graph, store, communities, reports, entity vectors."""

    graph: CorpusGraph
    communities: tuple[Community, ...]
    reports: dict[str, CommunityReport]
    entity_vectors: np.ndarray  # one row per graph.entities, normalised
    entity_tokens: list[list[str]]
    meta: dict[str, Any] = field(default_factory=dict)  # fingerprint, settings, costs
    _store: NetworkXGraphStore | None = field(default=None, repr=False)

    @property
    def store(self) -> NetworkXGraphStore:
        if self._store is None:
            self._store = NetworkXGraphStore(self.graph)
        return self._store

    @property
    def fingerprint(self) -> str:
        return str(self.meta.get("fingerprint", ""))


def save_hirag(hindex: HiragIndex, index_folder: str | Path) -> Path:
    """Write the artifacts into `<index>/hirag/` as the index itself is written (a side
    folder swapped in under a writer lock), so the previous graph, and the LLM reports paid
    for in it, stay loadable until the new one is complete, also after a crash.

    Raises:
        IndexFormatError: `index_folder` is not a TreeRAG index.
        IndexBusyError: another process is writing the same graph, or re-indexing the
            folder, for longer than the lock's timeout.
    """
    root = Path(index_folder)
    if not (root / "manifest.json").is_file():
        raise IndexFormatError(f"{root} is not a TreeRAG index: no manifest.json")

    def write(tmp: Path) -> None:
        _write(tmp / "graph.json", hindex.graph.to_dict())
        _write(tmp / "communities.json", [c.to_dict() for c in hindex.communities])
        _write(tmp / "reports.json", [r.to_dict() for r in hindex.reports.values()])
        vectors = np.ascontiguousarray(hindex.entity_vectors, dtype=np.float32)
        np.save(tmp / "entity_vectors.npy", vectors, allow_pickle=False)
        _write(tmp / "entity_tokens.json", hindex.entity_tokens)
        meta = {**hindex.meta, "schema_version": SCHEMA_VERSION}
        _write(tmp / "manifest.json", meta)  # last: a folder without it was never finished

    # The index's own writer lock too: a re-index of the same folder swaps the whole folder,
    # and the graph's side folder must not be renamed into the folder being replaced.
    with index_lock(root.resolve()):
        return write_folder(root / FOLDER, write)


def _graph_folder(index_folder: str | Path) -> Path:
    """`<index>/hirag`, put back first if a save was killed between its two renames."""
    folder = Path(index_folder) / FOLDER
    if not (folder / "manifest.json").is_file() and any(
        p.is_dir() for p in Path(index_folder).glob(f".{FOLDER}.old-*")
    ):
        recover_index(folder)
    if folder.is_symlink():  # its files would be read from wherever it points
        raise _not_ours(folder, Path(index_folder), "is a symlink")
    return folder


def partial_reports_path(index_folder: str | Path) -> Path:
    return Path(index_folder) / PARTIAL_FILE


MAX_KEPT_REPORTS = 5_000  # earlier builds' LLM reports a checkpoint keeps (~1 KB each)


@dataclass(frozen=True)
class CheckpointWrite:
    """What a checkpoint write left in the file: its LLM reports, and how many of earlier
    builds' were dropped (the oldest, beyond `MAX_KEPT_REPORTS`)."""

    kept: int
    dropped: int


def save_partial_reports(
    index_folder: str | Path, reports: dict[str, CommunityReport]
) -> CheckpointWrite:
    """Add LLM reports to the checkpoint, so an interrupted build resumes without re-asking
    and reports no build uses now wait for a later LLM build.

    Merged by content key (`reports` win and go last), under the index folder's writer lock
    (a query's rebuild and an LLM build may both write it), written to a unique temporary
    file and renamed into place, so a crash mid-write never tears it. `reports` are all
    kept; of the earlier entries the newest `MAX_KEPT_REPORTS - len(reports)` are.

    Raises:
        IndexFormatError: the checkpoint is damaged (`load_checkpoint` sets it aside first).
        IndexBusyError: another process holds the folder's writer lock too long.
    """
    new = {r.content_key: r for r in reports.values() if r.source == "llm" and r.content_key}
    with index_lock(Path(index_folder).resolve()):
        earlier = [(k, r) for k, r in load_partial_reports(index_folder).items() if k not in new]
        room = max(0, MAX_KEPT_REPORTS - len(new))
        kept = dict(earlier[len(earlier) - room :] if room else [])
        kept.update(new)
        _write_checkpoint(index_folder, kept)
    return CheckpointWrite(len(kept), len(earlier) - (len(kept) - len(new)))


def drop_partial_reports(index_folder: str | Path, keys: Collection[str]) -> int:
    """Remove from the checkpoint the reports a finished build's reports.json now holds
    (by content key); the rest stay for a later LLM build. Returns how many stay.

    Raises:
        IndexFormatError: the checkpoint is damaged.
    """
    with index_lock(Path(index_folder).resolve()):
        left = {k: r for k, r in load_partial_reports(index_folder).items() if k not in keys}
        if left:
            _write_checkpoint(index_folder, left)
        else:
            partial_reports_path(index_folder).unlink(missing_ok=True)
    return len(left)


def _write_checkpoint(index_folder: str | Path, reports: dict[str, CommunityReport]) -> None:
    path = partial_reports_path(index_folder)
    write_atomic(path, json.dumps([r.to_dict() for r in reports.values()], ensure_ascii=False))


def load_partial_reports(index_folder: str | Path) -> dict[str, CommunityReport]:
    """Content key -> LLM report from an interrupted build (empty when there is none).

    As for the LLM graph cache (`llm_graph.load_graph_cache`): a damaged or oversized file is
    an IndexFormatError; builds read it with `load_checkpoint`, which sets it aside and goes
    on. A single bad entry is skipped (it only costs asking for that report again).
    """
    return read_llm_reports(partial_reports_path(index_folder), PARTIAL_HINT)[0]


def asked_again(use_llm: bool) -> str:
    """What becomes of reports that could not be read, by whether the build uses the LLM."""
    if use_llm:
        return "this build asks the LLM for them again"
    return "a later build with LLM reports asks for them again"


def load_checkpoint(
    index_folder: str | Path, use_llm: bool
) -> tuple[dict[str, CommunityReport], tuple[str, ...]]:
    """The checkpoint's LLM reports and the build's notes about it: the one rule for every
    build (offline or LLM, the CLI's, the explorer's, a query's). A damaged checkpoint is
    copied aside (`keep_aside`), removed so a new one can be written, and noted; the build
    goes on. Unreadable entries are counted in a note.

    Raises:
        IndexFormatError: the checkpoint is a symlink or not a regular file (see
            `keep_aside`), or the folder's `.hirag-unreadable` is.
    """
    path = partial_reports_path(index_folder)
    again = asked_again(use_llm)
    with index_lock(Path(index_folder).resolve()):
        try:
            reports, bad = read_llm_reports(path, PARTIAL_HINT)
        except IndexFormatError as exc:
            kept = keep_aside(path, index_folder)
            path.unlink()
            return {}, (
                f"the LLM reports checkpoint {path.name} could not be read ({exc}); a copy is "
                f"kept at {kept} in the index folder, and {again}",
            )
    if not bad:
        return reports, ()
    return reports, (f"{bad} entries of {path.name} could not be read; {again}",)


def stored_reports_path(index_folder: str | Path) -> Path:
    """`<index>/hirag/reports.json`: the finished build's reports (LLM ones are paid for)."""
    return _graph_folder(index_folder) / "reports.json"


def read_llm_reports(path: Path, hint: str = "") -> tuple[dict[str, CommunityReport], int]:
    """(content key -> LLM report, number of entries that could not be read) in a reports
    file (the checkpoint or a build's reports.json; empty when it does not exist). Read
    alone, without the graph: a report is keyed by what it was written from, so it serves
    any later build whose community has that content.

    Raises:
        IndexFormatError: the file is damaged or oversized.
    """
    if not present(path):
        return {}, 0
    rows = read_json(path, list, hint)
    out, bad = {}, 0
    for i, row in enumerate(rows):
        try:
            report = CommunityReport.from_dict(row, f"{path}: row {i + 1}")
        except IndexFormatError:
            bad += 1
            continue
        if report.source == "llm" and report.content_key:
            out[report.content_key] = report
    return out, bad


def keep_aside(path: Path, index_folder: str | Path) -> Path:
    """Keep a copy of an artifact that could not be read in `<index>/.hirag-unreadable/`
    before a build replaces it: it may hold paid LLM output a person can still recover. The
    copy is named by its content hash, so reading the same file twice keeps one copy.
    Returns the copy's path relative to the index folder.

    The index folder may come from anyone: `path` must be a regular file (not a symlink) of
    at most `artifacts.MAX_JSON_BYTES`, and `.hirag-unreadable` a real folder, so nothing
    is read or written outside the index folder.

    Raises:
        IndexFormatError: `path` or `.hirag-unreadable` is a symlink, of another kind, or
            (`path`) too large; the message names it.
    """
    root = Path(index_folder)
    data = read_regular(path, root)
    aside = root / UNREADABLE
    try:
        aside.mkdir(exist_ok=True)
    except OSError as exc:  # FileExistsError: a file (or a dangling link) has its name
        raise _not_ours(aside, root, f"cannot be made a folder ({exc.strerror})") from exc
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        dir_fd = os.open(aside, flags)
    except OSError as exc:  # ELOOP / ENOTDIR: a symlink or not a folder
        raise _not_ours(aside, root, "is a symlink or not a folder") from exc
    try:
        name = f"{path.stem}-{hashlib.sha256(data).hexdigest()[:16]}{path.suffix}"
        try:
            fd = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd
            )
        except FileExistsError:
            if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                raise _not_ours(aside / name, root, "is not a regular file") from None
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
    finally:
        os.close(dir_fd)
    return Path(UNREADABLE) / name


def read_regular(path: Path, index_folder: Path, limit: int | None = None) -> bytes:
    """The bytes of a file in an index folder, refusing a symlink, a device or FIFO, and
    more than `limit` bytes (`artifacts.MAX_JSON_BYTES` when None).

    Raises:
        IndexFormatError: naming the file inside the index folder.
    """
    limit = artifacts.MAX_JSON_BYTES if limit is None else limit
    try:
        return read_bytes_checked(path, limit)
    except UnsafePathError as exc:
        why = str(exc).removeprefix(f"{path}: ")
        if path.is_symlink():
            why = "is a symlink"
        raise _not_ours(path, index_folder, why) from exc


def _not_ours(path: Path, index_folder: Path, why: str) -> IndexFormatError:
    try:
        shown = path.relative_to(index_folder)
    except ValueError:
        shown = path
    return IndexFormatError(
        f"{shown} in the index folder {index_folder} {why}; an index folder keeps only its "
        "own regular files: move it away and build again"
    )


def has_hirag(index_folder: str | Path) -> bool:
    return present(_graph_folder(index_folder) / "manifest.json")


def read_manifest(index_folder: str | Path) -> dict[str, Any]:
    """`<index>/hirag/manifest.json`: what the build was made of (its fingerprints), read
    without the graph, so a build of other documents is known as out of date, not corrupt."""
    path = _graph_folder(index_folder) / "manifest.json"
    if not present(path):
        raise IndexFormatError(f"{Path(index_folder)} has no HiRAG graph; {BUILD_HINT}")
    return read_json(path, dict, BUILD_HINT)


def load_hirag(
    index_folder: str | Path,
    dim: int | None = None,
    chunk_ids: Collection[str] | None = None,
) -> HiragIndex:
    """Read `<index>/hirag/`; a missing, corrupt or other-version folder is an IndexFormatError.

    `dim` is the index's vector size (read from the index's manifest when not given): the
    entity vectors must have it, or every HiRAG search would fail on the first question.
    `chunk_ids` are the index's chunks (read from its chunks.jsonl when not given): every
    passage the graph and the communities cite must be one of them, or a query citing it
    would fail.
    """
    folder = _graph_folder(index_folder)
    meta = read_manifest(index_folder)
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise IndexFormatError(
            f"{folder} has HiRAG schema {meta.get('schema_version')}, this TreeRAG reads "
            f"{SCHEMA_VERSION}; {BUILD_HINT}"
        )
    # Each row's JSON types are checked by `artifacts.typed_row` (the one rule for rows).
    path = folder / "graph.json"
    graph = CorpusGraph.from_dict(read_json(path, dict, BUILD_HINT), str(path), BUILD_HINT)
    path = folder / "communities.json"
    communities = tuple(
        Community.from_dict(row, f"{path}: row {i + 1}", BUILD_HINT)
        for i, row in enumerate(read_json(path, list, BUILD_HINT))
    )
    path = folder / "reports.json"
    reports = {
        r.community_id: r
        for r in (
            CommunityReport.from_dict(row, f"{path}: row {i + 1}", BUILD_HINT)
            for i, row in enumerate(read_json(path, list, BUILD_HINT))
        )
    }
    keys = {e.key for e in graph.entities}
    if any(r.source not in keys or r.target not in keys for r in graph.relations):
        raise IndexFormatError(
            f"{folder / 'graph.json'} is corrupt (a relation names a missing entity); {BUILD_HINT}"
        )
    ids = {c.community_id for c in communities}
    for c in communities:
        if not all(k in keys for k in c.entity_keys) or not (c.parent is None or c.parent in ids):
            raise IndexFormatError(
                f"{folder / 'communities.json'} is corrupt (community {c.community_id} names "
                f"missing entities or a missing parent); {BUILD_HINT}"
            )
    known = _index_chunk_ids(Path(index_folder)) if chunk_ids is None else chunk_ids
    _check_chunk_ids(folder, graph, communities, known)
    tokens = read_json(folder / "entity_tokens.json", list, BUILD_HINT)
    if len(tokens) != len(graph.entities) or not all(
        isinstance(t, list) and all(isinstance(w, str) for w in t) for t in tokens
    ):
        raise IndexFormatError(
            f"{folder / 'entity_tokens.json'} does not match its graph.json (one list of "
            f"strings per entity); {BUILD_HINT}"
        )
    if dim is None:
        dim = _index_dim(Path(index_folder))
    vectors = read_npy(folder / "entity_vectors.npy", dim, len(graph.entities), hint=BUILD_HINT)
    return HiragIndex(graph, communities, reports, vectors, tokens, meta)


def _check_chunk_ids(
    folder: Path, graph: CorpusGraph, communities: tuple[Community, ...], known: Collection[str]
) -> None:
    """Refuse a graph that cites a passage the index does not hold, naming file and entry."""
    entries = [
        *(("graph.json", f"entity {e.key!r}", e.chunk_ids) for e in graph.entities),
        *(
            ("graph.json", f"relation {r.source!r}-{r.target!r}", r.chunk_ids)
            for r in graph.relations
        ),
        *(("communities.json", f"community {c.community_id!r}", c.chunk_ids) for c in communities),
    ]
    for name, entry, ids in entries:
        unknown = next((c for c in ids if c not in known), None)
        if unknown is not None:
            raise IndexFormatError(
                f"{folder / name} is corrupt ({entry} cites chunk {unknown!r}, which the "
                f"index does not hold); {BUILD_HINT}"
            )


def _index_chunk_ids(root: Path) -> set[str]:
    """The chunk ids in the index's own chunks.jsonl (what the graph may cite)."""
    rows = read_jsonl(root / "chunks.jsonl", BUILD_HINT)
    ids = {c for row in rows if isinstance(c := row.get("chunk_id"), str)}
    if len(ids) != len(rows):
        raise IndexFormatError(
            f"{root / 'chunks.jsonl'} has a chunk without an id (or two sharing one); {BUILD_HINT}"
        )
    return ids


def _index_dim(root: Path) -> int:
    """The vector size in the index's own manifest (what the entity vectors must match)."""
    manifest = read_json(root / "manifest.json", dict, BUILD_HINT)
    info = manifest.get("embedder")
    dim = info.get("dim") if isinstance(info, dict) else None
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise IndexFormatError(f"{root / 'manifest.json'} names no vector size; {BUILD_HINT}")
    return dim


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
