"""The five HiRAG modes: which entities, relations, reports, path and text units a question gets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

import numpy as np

from treerag_core.base.types import Chunk, ContextSection
from treerag_core.index.bm25 import BM25Stats, LeafBM25
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.search.fusion import fuse, rank_positions
from treerag_core.strategies.hirag.communities import Community
from treerag_core.strategies.hirag.corpus_graph import Entity, Relation
from treerag_core.strategies.hirag.paths import (
    BridgePath,
    find_path_with_required_nodes,
    key_entities,
)
from treerag_core.strategies.hirag.store import HiragIndex

T = TypeVar("T")


class Mode(StrEnum):
    """Seed 002 §2.3."""

    NAIVE = "naive"
    LOCAL = "hi_local"
    GLOBAL = "hi_global"
    BRIDGE = "hi_bridge"
    HI = "hi"


@dataclass(frozen=True)
class HiragOptions:
    """Seed 002's QueryParam (§4.4). Its token budgets (20k/20k/12.5k/12.5k/10k, ~65k for `hi`)
    are scaled by 1/5 to fit our answer context: at ~4 chars a token, 4,000 tokens of text
    units is ~80 chunks of the default 200 characters, more than the candidate window."""

    top_k: int = 20  # entities retrieved
    top_m: int = 10  # key entities per community on the bridge
    level: int = 2  # deepest community level used
    entity_dense_weight: float = 0.5  # entity search: cosine vs BM25 on name + description
    text_unit_tokens: int = 4000  # max_token_for_text_unit
    local_context_tokens: int = 4000  # max_token_for_local_context (entities + relations)
    bridge_tokens: int = 2500  # max_token_for_bridge_knowledge
    report_tokens: int = 2500  # max_token_for_community_report
    naive_text_unit_tokens: int = 2000  # naive_max_token_for_text_unit
    unit_order: str = "hybrid"  # hybrid: text units ranked by dense+BM25; graph: HiRAG's order

    def __post_init__(self) -> None:
        for name in ("top_k", "top_m"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, but got {getattr(self, name)}")
        if self.level < 0:
            raise ValueError(f"level must be >= 0, but got {self.level}")
        if not 0.0 <= self.entity_dense_weight <= 1.0:
            raise ValueError(
                f"entity_dense_weight must be in [0, 1], but got {self.entity_dense_weight}"
            )
        for name in (
            "text_unit_tokens",
            "local_context_tokens",
            "bridge_tokens",
            "report_tokens",
            "naive_text_unit_tokens",
        ):
            if getattr(self, name) < 100:
                raise ValueError(f"{name} must be >= 100, but got {getattr(self, name)}")
        if self.unit_order not in ("hybrid", "graph"):
            raise ValueError(f"unit_order must be hybrid or graph, but got {self.unit_order!r}")


@dataclass(frozen=True)
class ScoredEntity:
    entity: Entity
    score: float
    rank: int


@dataclass(frozen=True)
class HiragContext:
    """What one mode assembled: sections for synthesis and the explorer, text units (chunk
    ids, graph order, within budget) and notes (e.g. "no path") for the trace."""

    mode: Mode
    entities: tuple[ScoredEntity, ...] = ()
    relations: tuple[Relation, ...] = ()
    communities: tuple[Community, ...] = ()
    path: BridgePath | None = None
    unit_ids: tuple[str, ...] = ()
    sections: tuple[ContextSection, ...] = ()
    notes: tuple[str, ...] = field(default=())


class HiragRetriever:
    """Reads one HiragIndex; scope filters entities and text units to some documents."""

    def __init__(self, hindex: HiragIndex, chunks: Sequence[Chunk]) -> None:
        self.h = hindex
        self.chunks = {c.chunk_id: c for c in chunks}
        self._bm25: LeafBM25 | None = None
        self._communities = {c.community_id: c for c in hindex.communities}
        self._entity_docs: list[frozenset[str]] | None = None
        self._rows_by_scope: dict[tuple[str, ...] | None, np.ndarray] = {}
        self._members_at: dict[int, dict[str, str]] = {}

    # ---- entity search ---------------------------------------------------------------
    def _entity_bm25(self) -> LeafBM25:
        if self._bm25 is None:
            tokens = self.h.entity_tokens
            self._bm25 = LeafBM25.from_tokens(tokens, BM25Stats.from_tokens(tokens))
        return self._bm25

    def _scope_rows(self, scope: set[str] | None) -> np.ndarray:
        """Rows of the entities with a passage in scope; cached per scope (a query reuses it)."""
        key = None if scope is None else tuple(sorted(scope))
        rows = self._rows_by_scope.get(key)
        if rows is None:
            if self._entity_docs is None:
                self._entity_docs = [
                    frozenset(self.chunks[c].doc_id for c in e.chunk_ids if c in self.chunks)
                    for e in self.h.graph.entities
                ]
            rows = np.asarray(
                [
                    i
                    for i, docs in enumerate(self._entity_docs)
                    if docs and (scope is None or not docs.isdisjoint(scope))
                ],
                dtype=np.int64,
            )
            if len(self._rows_by_scope) > 256:  # one entry per document set asked about
                self._rows_by_scope.clear()
            self._rows_by_scope[key] = rows
        return rows

    def _passage(self, chunk_ids: Sequence[str], scope: set[str] | None) -> str:
        """The heading path of the first in-scope passage behind a row: what the answer cites."""
        own = self._in_scope(chunk_ids, scope)
        return self.chunks[own[0]].heading_path if own else ""

    def _in_scope(self, chunk_ids: Sequence[str], scope: set[str] | None) -> tuple[str, ...]:
        if scope is None:
            return tuple(c for c in chunk_ids if c in self.chunks)
        return tuple(c for c in chunk_ids if c in self.chunks and self.chunks[c].doc_id in scope)

    def top_entities(
        self,
        query_vector: np.ndarray,
        query_tokens: list[str],
        options: HiragOptions,
        scope: set[str] | None,
    ) -> tuple[ScoredEntity, ...]:
        """The top_k entities (with a passage in scope) by fused cosine and BM25."""
        entities = self.h.graph.entities
        if not entities:
            return ()
        rows = self._scope_rows(scope)
        if not len(rows):
            return ()
        dense = self.h.entity_vectors[rows] @ np.asarray(query_vector, dtype=np.float32)
        bm25 = self._entity_bm25().scores(query_tokens)[rows]
        fused = fuse(dense, bm25, "weighted", options.entity_dense_weight).fused
        order = np.argsort(rank_positions(fused))[: options.top_k]
        return tuple(
            ScoredEntity(entities[int(rows[i])], float(fused[i]), rank)
            for rank, i in enumerate(order, start=1)
        )

    # ---- the modes -------------------------------------------------------------------
    def retrieve(
        self,
        mode: Mode | str,
        query_vector: np.ndarray,
        query_tokens: list[str],
        options: HiragOptions,
        scope: Sequence[str] | None = None,
    ) -> HiragContext:
        """The graph context of one mode (naive has none: its passages are a vector search)."""
        mode = Mode(mode)
        if mode is Mode.NAIVE:
            return HiragContext(mode)
        scoped = set(scope) if scope is not None else None
        top = self.top_entities(query_vector, query_tokens, options, scoped)
        if not top:
            return HiragContext(mode, notes=("no entity of the graph matches the question",))
        notes: list[str] = []
        sections: list[ContextSection] = []
        units: list[str] = []
        relations: tuple[Relation, ...] = ()
        communities: tuple[Community, ...] = ()
        path = None
        if mode in (Mode.LOCAL, Mode.HI):
            relations = self._one_hop(top, options, scoped)
            sections += [
                self._entity_section(top, scoped),
                self._relation_section(relations, scoped),
            ]
            units += self._entity_units(top, relations, scoped)
        if mode in (Mode.GLOBAL, Mode.HI):
            communities = self._communities_of(top, options)
            if communities:
                sections.append(self._report_section(communities, top, scoped))
            else:
                notes.append(f"no community at level <= {options.level} holds a top entity")
            if mode is Mode.GLOBAL:
                units += self._entity_units(top, (), scoped)
        if mode in (Mode.BRIDGE, Mode.HI):
            path = self._bridge(top, options)
            if path.no_path:
                pairs = "; ".join(f"{self._name(a)} ~ {self._name(b)}" for a, b in path.no_path)
                notes.append(f"bridge: no path between {pairs}")
            path_section, path_units = self._path_section(path, options, scoped)
            sections.append(path_section)
            units = path_units + units if mode is Mode.BRIDGE else units + path_units
        unit_ids = self._budget_units(units, options.text_unit_tokens)
        return HiragContext(
            mode,
            top,
            relations,
            communities,
            path,
            unit_ids,
            tuple(s for s in sections if s.rows),
            tuple(notes),
        )

    # ---- local -----------------------------------------------------------------------
    def _one_hop(
        self, top: Sequence[ScoredEntity], options: HiragOptions, scope: set[str] | None
    ) -> tuple[Relation, ...]:
        """Relations touching a top entity: both ends on top first, then by weight; budgeted."""
        keys = {s.entity.key for s in top}
        seen: dict[tuple[str, str], Relation] = {}
        for s in top:
            for r in self.h.store.get_node_edges(s.entity.key):
                if self._in_scope(r.chunk_ids, scope):
                    seen[(r.source, r.target)] = r
        rank = {s.entity.key: s.rank for s in top}
        worst = len(top) + 1

        def order(r: Relation) -> tuple:
            inside = (r.source in keys) + (r.target in keys)
            best = min(rank.get(r.source, worst), rank.get(r.target, worst))
            return (-inside, best, -r.weight, r.source, r.target)

        ranked = sorted(seen.values(), key=order)
        kept, used = [], 0
        entity_tokens = sum(estimate_tokens(s.entity.description) for s in top)
        for r in ranked:
            cost = estimate_tokens(f"{r.source} {r.target} {r.description}")
            if entity_tokens + used + cost > options.local_context_tokens:
                break
            kept.append(r)
            used += cost
        return tuple(kept)

    def _entity_units(
        self, top: Sequence[ScoredEntity], relations: Sequence[Relation], scope: set[str] | None
    ) -> list[str]:
        """Text units of the top entities, by entity rank then by how many of the retrieved
        relations a unit also supports (HiRAG's order), each once."""
        support: dict[str, int] = {}
        for r in relations:
            for c in r.chunk_ids:
                support[c] = support.get(c, 0) + 1
        out: list[str] = []
        for s in top:
            own = self._in_scope(s.entity.chunk_ids, scope)
            out.extend(sorted(own, key=lambda c: (-support.get(c, 0), c)))
        return list(dict.fromkeys(out))

    # ---- global ----------------------------------------------------------------------
    def _communities_of(
        self, top: Sequence[ScoredEntity], options: HiragOptions
    ) -> tuple[Community, ...]:
        """Communities (level <= level) holding top entities: most top entities first, then
        finer levels, then id."""
        hits: dict[str, int] = {}
        keys = {s.entity.key for s in top}
        for c in self.h.communities:
            if c.level <= options.level:
                n = len(keys.intersection(c.entity_keys))
                if n:
                    hits[c.community_id] = n
        ranked = sorted(hits, key=lambda cid: (-hits[cid], -self._communities[cid].level, cid))

        def cost(community: Community) -> int:
            report = self.h.reports.get(community.community_id)
            return estimate_tokens(report.text()) if report else 0

        ranked_communities = (self._communities[cid] for cid in ranked)
        return tuple(within_budget(ranked_communities, cost, options.report_tokens))

    # ---- bridge ----------------------------------------------------------------------
    def _membership(self, options: HiragOptions) -> dict[str, str]:
        """Entity -> its finest community at level <= options.level (computed once a level)."""
        cached = self._members_at.get(options.level)
        if cached is None:
            cached = self._members_at[options.level] = self._finest(options.level)
        return cached

    def _finest(self, level: int) -> dict[str, str]:
        out: dict[str, tuple[int, str]] = {}
        for c in self.h.communities:
            if c.level <= level:
                for key in c.entity_keys:
                    if key not in out or c.level > out[key][0]:
                        out[key] = (c.level, c.community_id)
        return {k: v[1] for k, v in out.items()}

    def _bridge(self, top: Sequence[ScoredEntity], options: HiragOptions) -> BridgePath:
        ranked = [s.entity.key for s in top]
        required = key_entities(ranked, self._communities, self._membership(options), options.top_m)
        if not required:  # entities without any relation: the path is just the best one
            required = tuple(ranked[:1])
        return find_path_with_required_nodes(self.h.store, required)

    def _path_section(
        self, path: BridgePath, options: HiragOptions, scope: set[str] | None
    ) -> tuple[ContextSection, list[str]]:
        """The path as rows (one per leg), its relations' text; units of its relations first."""
        store = self.h.store
        rows, lines, units, used = [], [], [], 0
        for step, leg in enumerate(path.legs, start=1):
            names = [self._name(k) for k in leg.nodes]
            first = store.get_edge(*leg.nodes[:2]) if len(leg.nodes) > 1 else None
            rows.append(
                {
                    "step": step,
                    "from": self._name(leg.source),
                    "to": self._name(leg.target),
                    "path": " → ".join(names) if leg.found else "no path",
                    "hops": max(len(leg.nodes) - 1, 0),
                    "found_in": self._passage(first.chunk_ids, scope) if first else "",
                    "nodes": list(leg.nodes),
                }
            )
        for a, b in path.hops:
            r = store.get_edge(a, b)
            if r is None:
                continue
            line = cited(
                f"{self._name(a)} — {self._name(b)}: {r.description}",
                self._passage(r.chunk_ids, scope),
            )
            cost = estimate_tokens(line)
            if lines and used + cost > options.bridge_tokens:
                break
            lines.append(line)
            used += cost
            units.extend(self._in_scope(r.chunk_ids, scope))
        for key in path.nodes:
            entity = store.get_node(key)
            if entity is not None:
                units.extend(self._in_scope(entity.chunk_ids, scope)[:2])
        if not path.legs and path.required:
            rows.append(
                {
                    "step": 1,
                    "from": self._name(path.required[0]),
                    "to": "",
                    "path": "(one entity)",
                    "hops": 0,
                    "nodes": list(path.required),
                }
            )
        head = path_text(path, self._name)
        text = f"Reasoning path: {head}\n" + "\n".join(lines)
        units = list(dict.fromkeys(units))
        section = ContextSection("path", "Bridge path", text.strip(), tuple(rows), tuple(units))
        return section, units

    # ---- sections --------------------------------------------------------------------
    def _name(self, key: str) -> str:
        entity = self.h.store.get_node(key)
        return entity.name if entity is not None else key

    def _entity_section(
        self, top: Sequence[ScoredEntity], scope: set[str] | None
    ) -> ContextSection:
        rows, lines, chunk_ids = [], [], []
        for s in top:
            e = s.entity
            own = self._in_scope(e.chunk_ids, scope)
            rows.append(
                {
                    "rank": s.rank,
                    "entity": e.name,
                    "key": e.key,
                    "kind": e.kind,
                    "score": round(s.score, 4),
                    "degree": self.h.store.node_degree(e.key),
                    "passages": len(own),
                    "description": e.description,
                    "found_in": self.chunks[own[0]].heading_path if own else "",
                }
            )
            line = f"{e.name}: {e.description}" if e.description else e.name
            lines.append(cited(line, rows[-1]["found_in"]))
            chunk_ids.extend(own)
        return ContextSection(
            "entities", "Entities", "\n".join(lines), tuple(rows), tuple(dict.fromkeys(chunk_ids))
        )

    def _relation_section(
        self, relations: Sequence[Relation], scope: set[str] | None
    ) -> ContextSection:
        rows = [
            {
                "source": self._name(r.source),
                "target": self._name(r.target),
                "source_key": r.source,
                "target_key": r.target,
                "weight": r.weight,
                "description": r.description,
                "found_in": self._passage(r.chunk_ids, scope),
            }
            for r in relations
        ]
        text = "\n".join(
            cited(f"{row['source']} — {row['target']}: {row['description']}", row["found_in"])
            for row in rows
        )
        chunk_ids = tuple(
            dict.fromkeys(c for r in relations for c in self._in_scope(r.chunk_ids, scope))
        )
        return ContextSection("relations", "Relations", text, tuple(rows), chunk_ids)

    def _report_section(
        self,
        communities: Sequence[Community],
        top: Sequence[ScoredEntity],
        scope: set[str] | None,
    ) -> ContextSection:
        rows, texts = [], []
        for c in communities:
            report = self.h.reports.get(c.community_id)
            if report is None:
                continue
            # Cited by the passage of its best-ranked top entity: a text unit the answer read.
            members = set(c.entity_keys)
            best = next((s.entity for s in top if s.entity.key in members), None)
            rows.append(
                {
                    "community": c.community_id,
                    "level": c.level,
                    "title": report.title,
                    "summary": report.summary,
                    "findings": " • ".join(report.findings),
                    "entities": len(c.entity_keys),
                    "source": report.source,
                    "found_in": self._passage(best.chunk_ids if best else c.chunk_ids, scope),
                    "entity_keys": list(c.entity_keys),
                }
            )
            texts.append(cited(report.text(), rows[-1]["found_in"]))
        chunk_ids = tuple(
            dict.fromkeys(x for c in communities for x in self._in_scope(c.chunk_ids, scope))
        )
        return ContextSection(
            "reports", "Community reports", "\n\n".join(texts), tuple(rows), chunk_ids
        )

    # ---- budget ----------------------------------------------------------------------
    def _budget_units(self, units: Sequence[str], budget: int) -> tuple[str, ...]:
        """Whole units in order (each once) while they fit the token budget."""
        return tuple(
            within_budget(
                dict.fromkeys(units), lambda c: estimate_tokens(self.chunks[c].text), budget
            )
        )


def cited(line: str, passage: str) -> str:
    """A context line with the passage it came from, in the marker answers cite with."""
    return f"{line} [Source: {passage}]" if passage else line


def path_text(path: BridgePath, name: Callable[[str], str]) -> str:
    """The path leg by leg: "a → b → c", a leg without a path shown as "a ⇢ (no path) ⇢ d"."""
    if not path.legs:
        return " → ".join(name(k) for k in path.required)
    parts = [name(path.legs[0].source)]
    for leg in path.legs:
        if leg.found:
            parts.extend(f" → {name(k)}" for k in leg.nodes[1:])
        else:
            parts.append(f" ⇢ (no path) ⇢ {name(leg.target)}")
    return "".join(parts)


def within_budget(items: Iterable[T], cost: Callable[[T], int], budget: int) -> list[T]:
    """Whole items in order while their summed cost fits `budget`: the first always (an
    answer needs one), and none after the first that does not fit (the order is the rank)."""
    kept: list[T] = []
    used = 0
    for item in items:
        spent = cost(item)
        if kept and used + spent > budget:
            break
        kept.append(item)
        used += spent
    return kept


def budget_chunks(chunks: Sequence[Chunk], budget: int) -> list[Chunk]:
    """Chunks in order while they fit `budget` tokens (naive mode's text-unit budget)."""
    return within_budget(chunks, lambda chunk: estimate_tokens(chunk.text), budget)


QueryVector = Callable[[str], np.ndarray]
