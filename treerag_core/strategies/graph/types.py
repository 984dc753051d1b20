"""The graph types every graph module speaks: concepts (nodes), relations (edges), leaf graphs."""

from __future__ import annotations

from dataclasses import dataclass, field

from treerag_core.base.types import Usage

CO_OCCURS = "co-occurs with"  # the label of every offline (co-occurrence) relation


@dataclass(frozen=True)
class Span:
    """A stretch of the document (`doc_text[start:end]`) and the chunks that contain it."""

    start: int
    end: int
    chunk_ids: tuple[str, ...]


@dataclass(frozen=True)
class Concept:
    """A graph node: one normalised concept of a leaf, with every place it is mentioned.

    `key` is the normalised form that merges mentions ("Neural Networks" and "neural
    network" share it); `name` is the most frequent surface form, shown to people.
    """

    node_id: str  # "<leaf id>#c<n>", numbered by first mention
    key: str
    name: str
    mentions: tuple[Span, ...]
    kind: str = "term"  # offline: "term"; LLM: the entity type (person, method, law...)
    description: str = ""

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        """Chunks mentioning the concept, in document order, without repeats."""
        return tuple(dict.fromkeys(c for span in self.mentions for c in span.chunk_ids))

    @property
    def count(self) -> int:
        return len(self.mentions)


@dataclass(frozen=True)
class ConceptRelation:
    """A graph edge between two concepts, with the sentences that support it.

    Offline edges are undirected co-occurrences (`source` < `target`, label CO_OCCURS,
    `weight` the pointwise mutual information over the leaf's sentences); LLM edges are
    directed, with the model's label, description and strength as weight.
    """

    source: str  # concept node ids
    target: str
    weight: float
    count: int  # sentences (offline) or extractions (LLM) supporting the edge
    evidence: tuple[Span, ...]
    label: str = CO_OCCURS
    description: str = ""
    directed: bool = False

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for span in self.evidence for c in span.chunk_ids))


@dataclass(frozen=True)
class LeafGraph:
    """The graph of one long leaf and how it was built."""

    leaf_id: str
    doc_id: str
    content_key: str  # hash of the leaf text and extractor: an unchanged leaf is not rebuilt
    extractor: str  # "offline" or "llm:<model>"
    language: str
    concepts: tuple[Concept, ...]
    relations: tuple[ConceptRelation, ...]
    build_seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)

    def degrees(self) -> dict[str, int]:
        """Number of edges at each concept (an edge counts once at each end)."""
        out = {c.node_id: 0 for c in self.concepts}
        for rel in self.relations:
            out[rel.source] = out.get(rel.source, 0) + 1
            out[rel.target] = out.get(rel.target, 0) + 1
        return out

    @property
    def max_degree(self) -> int:
        return max(self.degrees().values(), default=0)

    def stats(self) -> dict[str, float | int | str]:
        """Nodes, edges, max degree and build time: the CLI summary and the hub check."""
        return {
            "leaf_id": self.leaf_id,
            "nodes": len(self.concepts),
            "edges": len(self.relations),
            "max_degree": self.max_degree,
            "build_seconds": round(self.build_seconds, 4),
            "extractor": self.extractor,
        }
