"""The graph store (NetworkX in-process) and the HiRAG artifacts as JSON/npy in the index folder."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
import numpy as np

from treerag_core.errors import IndexFormatError
from treerag_core.hirag.communities import Community
from treerag_core.hirag.corpus_graph import CorpusGraph, Entity, Relation
from treerag_core.hirag.reports import CommunityReport

SCHEMA_VERSION = 1
FOLDER = "hirag"
FILES = (
    "graph.json",
    "communities.json",
    "reports.json",
    "entity_vectors.npy",
    "entity_tokens.json",
)
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
    """Write the artifacts into `<index>/hirag/` (a temp folder renamed into place)."""
    root = Path(index_folder)
    if not (root / "manifest.json").is_file():
        raise IndexFormatError(f"{root} is not a TreeRAG index: no manifest.json")
    target = root / FOLDER
    tmp = Path(tempfile.mkdtemp(prefix=f".{FOLDER}.tmp-", dir=root))
    try:
        _write(tmp / "graph.json", hindex.graph.to_dict())
        _write(tmp / "communities.json", [c.to_dict() for c in hindex.communities])
        _write(tmp / "reports.json", [r.to_dict() for r in hindex.reports.values()])
        vectors = np.ascontiguousarray(hindex.entity_vectors, dtype=np.float32)
        np.save(tmp / "entity_vectors.npy", vectors, allow_pickle=False)
        _write(tmp / "entity_tokens.json", hindex.entity_tokens)
        meta = {**hindex.meta, "schema_version": SCHEMA_VERSION}
        _write(tmp / "manifest.json", meta)  # last: a folder without it was never finished
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def partial_reports_path(index_folder: str | Path) -> Path:
    return Path(index_folder) / f".{FOLDER}-reports-partial.json"


def save_partial_reports(index_folder: str | Path, reports: dict[str, CommunityReport]) -> None:
    """Checkpoint LLM reports during a build, so an interrupted build resumes without re-asking."""
    path = partial_reports_path(index_folder)
    _write(path, [r.to_dict() for r in reports.values() if r.source == "llm"])


def load_partial_reports(index_folder: str | Path) -> dict[str, CommunityReport]:
    """Content key -> LLM report from an interrupted build (empty when there is none)."""
    path = partial_reports_path(index_folder)
    if not path.is_file():
        return {}
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return {r["content_key"]: CommunityReport.from_dict(r) for r in rows}
    except (ValueError, KeyError, TypeError):
        return {}  # a torn checkpoint only costs re-asking


def has_hirag(index_folder: str | Path) -> bool:
    return (Path(index_folder) / FOLDER / "manifest.json").is_file()


def load_hirag(index_folder: str | Path) -> HiragIndex:
    """Read `<index>/hirag/`; a missing, corrupt or other-version folder is an IndexFormatError."""
    folder = Path(index_folder) / FOLDER
    if not (folder / "manifest.json").is_file():
        raise IndexFormatError(f"{Path(index_folder)} has no HiRAG graph; {BUILD_HINT}")
    current = "manifest.json"
    try:
        meta = json.loads((folder / current).read_text(encoding="utf-8"))
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexFormatError(
                f"{folder} has HiRAG schema {meta.get('schema_version')}, this TreeRAG reads "
                f"{SCHEMA_VERSION}; {BUILD_HINT}"
            )
        current = "graph.json"
        graph = CorpusGraph.from_dict(_read(folder / current))
        current = "communities.json"
        communities = tuple(Community.from_dict(c) for c in _read(folder / current))
        current = "reports.json"
        reports = {
            r.community_id: r
            for r in (CommunityReport.from_dict(x) for x in _read(folder / current))
        }
        current = "entity_vectors.npy"
        vectors = np.load(folder / current, allow_pickle=False)
        current = "entity_tokens.json"
        tokens = _read(folder / current)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexFormatError(f"{folder / current} is corrupt ({exc}); {BUILD_HINT}") from exc
    if vectors.shape[0] != len(graph.entities) or len(tokens) != len(graph.entities):
        raise IndexFormatError(f"{folder} does not match its graph.json; {BUILD_HINT}")
    return HiragIndex(graph, communities, reports, vectors, tokens, meta)


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
