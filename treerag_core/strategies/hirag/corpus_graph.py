"""The corpus graph: the extractor run over every chunk, entities merged across chunks by name."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from treerag_core.base.artifacts import typed_row
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import Chunk, Language

MAX_DESCRIPTIONS = 4  # distinct descriptions kept per merged entity or relation
MAX_DESCRIPTION_CHARS = 600


class ExtractedNode(Protocol):
    """What the extractor gives per entity (the graph package's Concept satisfies this);
    optional: `node_id` (what edges refer to), `kind`, `description`, `mentions`."""

    name: str
    key: str
    chunk_ids: Sequence[str]


class ExtractedEdge(Protocol):
    """What the extractor gives per relation; `source`/`target` are node ids, keys or names.
    Optional: `count` (supporting sentences: the weight of offline co-occurrence edges, whose
    `weight` is a PMI that may be negative), `label`, `evidence` (spans with start/end)."""

    source: str
    target: str
    weight: float
    description: str
    chunk_ids: Sequence[str]


# extract(chunks of one document, its language) -> (nodes, edges)
Extractor = Callable[[Sequence[Chunk], Language], tuple[Sequence[Any], Sequence[Any]]]

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\"'`.,;:!?()[]{}<>“”‘’「」『』《》（），。；：！？、"


def normalise_name(name: str) -> str:
    """Merge key of an entity name: NFKC, case-folded, spaces collapsed, edge punctuation cut."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return _SPACE.sub(" ", text).strip(_EDGE_PUNCT)


@dataclass(frozen=True)
class Entity:
    """One merged entity of the corpus graph; `chunk_ids` are the passages it was found in."""

    key: str
    name: str
    kind: str
    description: str
    chunk_ids: tuple[str, ...]


@dataclass(frozen=True)
class Relation:
    """A relation between two entities, its weight and its source passages. In a CorpusGraph
    it is merged and undirected (`source` < `target` by key)."""

    source: str
    target: str
    weight: float
    description: str
    chunk_ids: tuple[str, ...]


@dataclass(frozen=True)
class CorpusGraph:
    """Entities by key and relations, both sorted, so the same corpus gives the same JSON."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]

    def entity_map(self) -> dict[str, Entity]:
        return {e.key: e for e in self.entities}

    def to_dict(self) -> dict[str, Any]:
        return {
            "entities": [
                {
                    "key": e.key,
                    "name": e.name,
                    "kind": e.kind,
                    "description": e.description,
                    "chunk_ids": list(e.chunk_ids),
                }
                for e in self.entities
            ],
            "relations": [
                {
                    "source": r.source,
                    "target": r.target,
                    "weight": r.weight,
                    "description": r.description,
                    "chunk_ids": list(r.chunk_ids),
                }
                for r in self.relations
            ],
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], where: str = "graph", hint: str = ""
    ) -> CorpusGraph:
        """Every row's JSON types checked, nothing coerced (`artifacts.typed_row`): a graph.json
        may come from anyone.

        Raises:
            IndexFormatError: a row or field of the wrong type, naming `where`, row and field.
        """
        return cls(
            tuple(
                typed_row(Entity, row, f"{where}: entities[{i}]", hint)
                for i, row in enumerate(_rows(data, "entities", where, hint))
            ),
            tuple(
                typed_row(Relation, row, f"{where}: relations[{i}]", hint)
                for i, row in enumerate(_rows(data, "relations", where, hint))
            ),
        )


def _rows(data: Mapping[str, Any], key: str, where: str, hint: str) -> list[Any]:
    rows = data.get(key)
    if not isinstance(rows, list):
        raise IndexFormatError(f"{where}: {key!r} is not a JSON array{'; ' + hint if hint else ''}")
    return rows


@dataclass
class _Acc:
    """Merges one entity or relation across chunks and documents."""

    name: str = ""
    kind: str = ""
    weight: float = 0.0
    descriptions: list[str] | None = None
    chunk_ids: set[str] | None = None

    def add(self, description: str, chunk_ids: Iterable[str]) -> None:
        self.descriptions = self.descriptions if self.descriptions is not None else []
        self.chunk_ids = self.chunk_ids if self.chunk_ids is not None else set()
        text = _SPACE.sub(" ", description or "").strip()
        if text and text not in self.descriptions and len(self.descriptions) < MAX_DESCRIPTIONS:
            self.descriptions.append(text)
        self.chunk_ids.update(str(c) for c in chunk_ids)

    def description(self) -> str:
        return " | ".join(self.descriptions or ())[:MAX_DESCRIPTION_CHARS]


def _attr(obj: Any, *names: str, default: Any = "") -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def edge_weight(edge: Any) -> float:
    """Leiden needs positive weights: an LLM edge's strength (1-10, as HiRAG sums them);
    an offline edge's supporting sentences (its `weight` is a PMI that may be negative)."""
    if getattr(edge, "directed", False):  # the graph package's LLM relations are directed
        return max(float(_attr(edge, "weight", default=1.0)), 1e-6)
    count = getattr(edge, "count", None)
    if count is not None:
        return max(float(count), 1e-6)
    return max(float(_attr(edge, "weight", default=1.0)), 1e-6)


def merge_extractions(
    parts: Iterable[tuple[Sequence[Any], Sequence[Any]]],
) -> CorpusGraph:
    """Merge per-document (nodes, edges) into one graph keyed by normalised names.

    An edge end is looked up among its part's nodes (by key, then by name) and normalised;
    self-loops and ends with an empty name are dropped. Relation weights add up.
    """
    entities: dict[str, _Acc] = {}
    relations: dict[tuple[str, str], _Acc] = {}
    for nodes, edges in parts:
        local: dict[str, str] = {}
        for node in nodes:
            name = str(_attr(node, "name")).strip()
            key = normalise_name(str(_attr(node, "key", default="")) or name)
            if not key:
                continue
            for alias in (_attr(node, "node_id", default=""), _attr(node, "key", default=""), name):
                if alias:
                    local[str(alias)] = key
            acc = entities.setdefault(key, _Acc(name=name, kind=str(_attr(node, "kind", "type"))))
            acc.add(str(_attr(node, "description")), _attr(node, "chunk_ids", default=()))
        for edge in edges:
            ends = []
            for end in (str(_attr(edge, "source")), str(_attr(edge, "target"))):
                ends.append(local.get(end) or normalise_name(end))
            a, b = sorted(ends)
            if not a or not b or a == b:
                continue
            for key in (a, b):  # an edge may name an entity the node list lacks
                entities.setdefault(key, _Acc(name=key)).add("", ())
            acc = relations.setdefault((a, b), _Acc())
            acc.weight += edge_weight(edge)
            acc.add(str(_attr(edge, "description")), _attr(edge, "chunk_ids", default=()))
    merged_entities = tuple(
        Entity(k, a.name, a.kind, a.description(), tuple(sorted(a.chunk_ids or ())))
        for k, a in sorted(entities.items())
    )
    merged_relations = tuple(
        Relation(s, t, round(a.weight, 6), a.description(), tuple(sorted(a.chunk_ids or ())))
        for (s, t), a in sorted(relations.items())
    )
    return CorpusGraph(merged_entities, merged_relations)


_SENTENCE_END = re.compile(r"[.!?。！？；\n]")
SENTENCE_CHARS = 240


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end], cut to SENTENCE_CHARS: an offline description."""
    left = max(0, start - SENTENCE_CHARS)
    before = [m.end() for m in _SENTENCE_END.finditer(text, left, start)]
    begin = before[-1] if before else left
    after = _SENTENCE_END.search(text, end, min(len(text), end + SENTENCE_CHARS))
    stop = after.end() if after else min(len(text), end + SENTENCE_CHARS)
    return _SPACE.sub(" ", text[begin:stop]).strip()[:SENTENCE_CHARS]


@dataclass(frozen=True)
class DocumentEntity(Entity):
    """One document's entity before merging: an Entity plus the id its edges refer to."""

    node_id: str = ""


def describe(
    nodes: Sequence[Any], edges: Sequence[Any], text: str
) -> tuple[list[DocumentEntity], list[Relation]]:
    """Fill empty descriptions from the document: an entity's first-mention sentence, a
    relation's first evidence sentence (offline extractions come without descriptions).
    Edges come back unmerged, as the document gave them (`source`/`target` unsorted)."""
    out_nodes = []
    for n in nodes:
        desc = str(_attr(n, "description"))
        mentions = _attr(n, "mentions", default=())
        if not desc and mentions:
            desc = sentence_around(text, int(mentions[0].start), int(mentions[0].end))
        out_nodes.append(
            DocumentEntity(
                key=str(_attr(n, "key", default="")),
                name=str(_attr(n, "name")),
                kind=str(_attr(n, "kind", "type")),
                description=desc,
                chunk_ids=tuple(_attr(n, "chunk_ids", default=())),
                node_id=str(_attr(n, "node_id", default="")),
            )
        )
    out_edges = []
    for e in edges:
        desc = str(_attr(e, "description"))
        evidence = _attr(e, "evidence", default=())
        if not desc and evidence:
            desc = _SPACE.sub(" ", text[int(evidence[0].start) : int(evidence[0].end)]).strip()
            desc = desc[:SENTENCE_CHARS]
        out_edges.append(
            Relation(
                str(_attr(e, "source")),
                str(_attr(e, "target")),
                edge_weight(e),
                desc,
                tuple(_attr(e, "chunk_ids", default=())),
            )
        )
    return out_nodes, out_edges


def build_corpus_graph(
    chunks: Sequence[Chunk],
    languages: Mapping[str, Language],
    extract: Extractor,
    texts: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CorpusGraph:
    """Run `extract` over every document's chunks (in its own language) and merge the results.

    With `texts` (doc id -> text), empty descriptions are filled from the document's sentences.
    """
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    parts = []
    for done, (doc_id, doc_chunks) in enumerate(by_doc.items(), start=1):
        nodes, edges = extract(doc_chunks, languages.get(doc_id, "en"))
        if texts is not None and doc_id in texts:
            nodes, edges = describe(nodes, edges, texts[doc_id])
        parts.append((nodes, edges))
        if progress is not None:
            progress(done, len(by_doc))
    return merge_extractions(parts)
