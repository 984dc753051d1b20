"""Hierarchical Leiden communities of the corpus graph (graspologic-native), deterministic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import graspologic_native as gn

from treerag_core.base.artifacts import typed_row
from treerag_core.strategies.hirag.corpus_graph import CorpusGraph

DEFAULT_SEED = 0xDEADBEEF  # the seed HiRAG (and GraphRAG) use
DEFAULT_MAX_CLUSTER_SIZE = 10


@dataclass(frozen=True)
class Community:
    """One community at one level; level 0 is the coarsest, each deeper level splits a parent."""

    community_id: str
    level: int
    entity_keys: tuple[str, ...]
    parent: str | None
    children: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    relation_count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "community_id": self.community_id,
            "level": self.level,
            "entity_keys": list(self.entity_keys),
            "parent": self.parent,
            "children": list(self.children),
            "chunk_ids": list(self.chunk_ids),
            "relation_count": self.relation_count,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "community", hint: str = "") -> Community:
        """Types checked, not coerced (`artifacts.typed_row`): communities.json may come
        from anyone.

        Raises:
            IndexFormatError: a field of the wrong JSON type (or missing), naming `where`.
        """
        return typed_row(cls, data, where, hint)


def detect_communities(
    graph: CorpusGraph,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    seed: int = DEFAULT_SEED,
    resolution: float = 1.0,
) -> tuple[Community, ...]:
    """Hierarchical Leiden (modularity) over the relations, clusters above the size split again.

    Entities without any relation belong to no community (Leiden sees only edges). The edge
    list is sorted and the seed fixed, so the same graph always gives the same communities.
    """
    if max_cluster_size < 2:
        raise ValueError(f"max_cluster_size must be >= 2, but got {max_cluster_size}")
    edges = sorted((r.source, r.target, float(r.weight)) for r in graph.relations)
    if not edges:
        return ()
    rows = gn.hierarchical_leiden(
        edges,
        max_cluster_size=max_cluster_size,
        seed=seed,
        resolution=resolution,
        use_modularity=True,
    )
    members: dict[tuple[int, int], set[str]] = {}
    parents: dict[tuple[int, int], int | None] = {}
    for row in rows:
        key = (int(row.level), int(row.cluster))
        members.setdefault(key, set()).add(str(row.node))
        parents[key] = None if row.parent_cluster is None else int(row.parent_cluster)
    return _assemble(graph, members, parents)


def _assemble(
    graph: CorpusGraph,
    members: dict[tuple[int, int], set[str]],
    parents: dict[tuple[int, int], int | None],
) -> tuple[Community, ...]:
    entities = graph.entity_map()
    # Renumber per level in sorted order of members, so ids do not depend on the library's.
    order = sorted(members, key=lambda k: (k[0], sorted(members[k])))
    ids: dict[tuple[int, int], str] = {}
    counters: dict[int, int] = {}
    for level, cluster in order:
        n = counters.get(level, 0)
        counters[level] = n + 1
        ids[(level, cluster)] = f"L{level}-{n}"
    children: dict[str, list[str]] = {}
    parent_of: dict[str, str | None] = {}
    for key in order:
        parent = parents[key]
        pid = ids.get((key[0] - 1, parent)) if parent is not None else None
        parent_of[ids[key]] = pid
        if pid is not None:
            children.setdefault(pid, []).append(ids[key])
    # Relations inside each community, counted in one pass per level (not per community).
    inside: dict[tuple[int, int], int] = {}
    by_level: dict[int, dict[str, int]] = {}
    for level, cluster in order:
        for node in members[(level, cluster)]:
            by_level.setdefault(level, {})[node] = cluster
    for level, where in by_level.items():
        for r in graph.relations:
            a, b = where.get(r.source), where.get(r.target)
            if a is not None and a == b:
                inside[(level, a)] = inside.get((level, a), 0) + 1
    out = []
    for key in order:
        nodes = members[key]
        chunk_ids = sorted({c for n in nodes for c in entities[n].chunk_ids})
        rels = inside.get(key, 0)
        out.append(
            Community(
                community_id=ids[key],
                level=key[0],
                entity_keys=tuple(sorted(nodes)),
                parent=parent_of[ids[key]],
                children=tuple(children.get(ids[key], ())),
                chunk_ids=tuple(chunk_ids),
                relation_count=rels,
            )
        )
    return tuple(out)


def communities_of(
    communities: tuple[Community, ...], max_level: int
) -> dict[str, list[Community]]:
    """Entity key -> its communities at levels <= max_level, coarsest first."""
    out: dict[str, list[Community]] = {}
    for community in sorted(communities, key=lambda c: (c.level, c.community_id)):
        if community.level <= max_level:
            for key in community.entity_keys:
                out.setdefault(key, []).append(community)
    return out
