"""The bridge path: chained shortest paths through each community's key entities (seed 002 §5.1)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from treerag_core.strategies.hirag.communities import Community
from treerag_core.strategies.hirag.store import GraphStore


@dataclass(frozen=True)
class PathLeg:
    """One shortest path between consecutive required entities; `nodes` is empty when none."""

    source: str
    target: str
    nodes: tuple[str, ...]

    @property
    def found(self) -> bool:
        return bool(self.nodes)


@dataclass(frozen=True)
class BridgePath:
    """The whole reasoning path. Legs without a path are kept (and named in `no_path`):
    the walk continues from the next required entity instead of silently skipping it."""

    required: tuple[str, ...]
    legs: tuple[PathLeg, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        """Path entities in walk order, each once (a later visit of a node is not repeated)."""
        out: list[str] = list(self.required[:1])
        for leg in self.legs:
            out.extend(leg.nodes[1:] if leg.found else (leg.target,))
        return tuple(dict.fromkeys(out))

    @property
    def no_path(self) -> tuple[tuple[str, str], ...]:
        return tuple((leg.source, leg.target) for leg in self.legs if not leg.found)

    @property
    def hops(self) -> tuple[tuple[str, str], ...]:
        """Consecutive node pairs along the found legs: the path's own relations."""
        out: list[tuple[str, str]] = []
        for leg in self.legs:
            out.extend(zip(leg.nodes, leg.nodes[1:], strict=False))
        return tuple(dict.fromkeys(out))


def key_entities(
    ranked: Sequence[str],
    communities: Mapping[str, Community],
    membership: Mapping[str, str],
    top_m: int,
) -> tuple[str, ...]:
    """Up to `top_m` key entities per community, in a fixed order.

    `ranked` are the retrieved entity keys, best first; `membership` maps an entity to its
    community at the chosen level. Communities are visited in order of their best-ranked
    entity, and within one in retrieval rank. HiRAG builds this list from a Python set,
    so its order (and the path) changed between runs; here it is a list, always the same.
    """
    if top_m < 1:
        raise ValueError(f"top_m must be >= 1, but got {top_m}")
    grouped: dict[str, list[str]] = {}
    for key in ranked:
        cid = membership.get(key)
        if cid is not None and cid in communities:
            members = grouped.setdefault(cid, [])
            if len(members) < top_m and key not in members:
                members.append(key)
    return tuple(key for members in grouped.values() for key in members)


def find_path_with_required_nodes(store: GraphStore, required: Sequence[str]) -> BridgePath:
    """Chain shortest paths required[0] -> required[1] -> ... -> required[-1].

    Unknown entities are dropped first; a pair with no connecting path becomes a leg with no
    nodes (recorded in `no_path`) and the walk goes on from the next entity.
    """
    kept = tuple(k for k in dict.fromkeys(required) if store.has_node(k))
    legs: list[PathLeg] = []
    for a, b in itertools.pairwise(kept):
        path = store.shortest_path(a, b)
        legs.append(PathLeg(a, b, tuple(path) if path else ()))
    return BridgePath(kept, tuple(legs))
