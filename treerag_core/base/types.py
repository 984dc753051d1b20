"""The shared types every module speaks: tree nodes, chunks, scored hits and the query trace."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Language = Literal["en", "zh"]


@dataclass(frozen=True)
class SourceDocument:
    """A document to index: a unique name (the doc id) and its decoded text."""

    name: str
    text: str
    page_starts: tuple[int, ...] = ()  # from a PDF conversion: where each page begins
    source_format: str = ""
    # Where each heading line the converter made up starts (a text with no headings cut at
    # topic shifts): those sections' nodes are marked `inferred`.
    inferred_starts: tuple[int, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TreeNode:
    """One section of a document tree.

    `content` is the node's own text (what stands under its heading before the first child
    heading, or everything below it when deeper headings were folded in by the depth cap),
    and `source_text[start:end] == content` holds exactly. Root nodes (one per document)
    have level 0 and an empty span at the document start.
    """

    node_id: str
    doc_id: str
    heading: str
    level: int
    content: str
    start: int
    end: int
    heading_path: str
    parent_id: str | None = None
    children: tuple[str, ...] = ()
    summary: str = ""
    synthetic: bool = False  # an "(intro)" leaf made from a parent's own text
    # A section the converter cut itself (no heading in the document): named by its first line
    inferred: bool = False

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def is_root(self) -> bool:
        return self.parent_id is None


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage; `doc_text[start:end] == text` exactly."""

    chunk_id: str
    text: str
    source_node_id: str
    heading_path: str
    doc_id: str
    start: int
    end: int
    page_start: int | None = None  # 1-based PDF pages the chunk spans (None: no pages)
    page_end: int | None = None


@dataclass(frozen=True)
class DocumentInfo:
    """A document inside an index: its id, name, language and content hash."""

    doc_id: str
    name: str
    title: str
    language: Language
    sha256: str
    size_chars: int
    root_id: str
    page_starts: tuple[int, ...] = ()  # offset where each PDF page begins (empty: no pages)
    source_format: str = ""  # pdf | docx | html | markdown | text ("" in older indexes)
    inferred_starts: tuple[int, ...] = ()  # SourceDocument's: kept so a rebuild keeps them


@dataclass(frozen=True)
class LocatedLeaf:
    """A leaf picked by step 1, with the refined sub-query to search it with."""

    node_id: str
    heading_path: str
    sub_query: str
    score: float | None = None
    source: str = "local"  # llm | local | keyword | manual | oracle | all


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk with every score it received and its rank at each stage (1-based)."""

    chunk: Chunk
    dense: float
    bm25: float
    dense_norm: float
    bm25_norm: float
    fused: float
    leaf_rank: int
    pooled_rank: int = 0
    rerank: float | None = None
    final_rank: int = 0
    minmax_forced: bool = False  # min-max made this the leaf's 1.0 on a 1-2 chunk leaf
    pool_fused: float | None = None  # fusion recomputed over all leaves' hits: the pooled order
    sub_query: str = ""
    graph: float | None = None  # graph-search score in [0, 1] (treerag-kg); None: no graph ran
    prior: float | None = None  # structure-aware strategies: the section evidence (0-1) it got


@dataclass(frozen=True)
class Usage:
    """Token usage and estimated cost of LLM calls in one stage."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    model: str = ""
    # False when no price is known (an unknown hosted model, or tokens not reported):
    # cost_usd is then 0.0 but means "not estimated", never "free".
    cost_known: bool = True

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cost_usd + other.cost_usd,
            self.model or other.model,
            self.cost_known and other.cost_known,
        )


@dataclass(frozen=True)
class Fallback:
    """A step that did not go the preferred way, and why."""

    stage: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class DocumentScore:
    """One document's routing score in step 1: why it was (or was not) searched.

    Every multi-document strategy that routes fills one per document in scope, best first,
    so the explorer, the CLI and the audit log show one table whatever the strategy.
    """

    doc_id: str
    name: str
    rank: int  # 1-based, by `score`
    score: float  # what the strategy ranked documents by (`basis` says what it is)
    kept: bool  # searched in step 2
    basis: str = ""  # e.g. "share of the window", "best passage", "K-Type summary"
    dense: float | None = None  # the parts of `score`, where the strategy has them
    bm25: float | None = None
    passage: float | None = None  # the document's best passage score


@dataclass(frozen=True)
class LocateResult:
    """Step 1's output."""

    leaves: tuple[LocatedLeaf, ...]
    thinking: str = ""
    locator: str = "local"
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()  # e.g. what a prompt budget cut
    inputs: dict[str, Any] = field(default_factory=dict, compare=False)  # settings it read
    documents: tuple[str, ...] = ()  # documents step 2 is routed to (empty: every one in scope)
    document_scores: tuple[DocumentScore, ...] = ()  # every document in scope, best first

    @classmethod
    def skipped(cls, why: str) -> LocateResult:
        """The step-1 result of a strategy that does not locate (flat search, graph modes)."""
        return cls((), why, "none")


@dataclass(frozen=True)
class RetrievalGroup:
    """One searched group of step 2: a picked leaf, or the whole scope (`leaf_id` None)."""

    label: str  # the leaf's heading path, or e.g. "all sections in scope"
    hits: tuple[RetrievedChunk, ...]
    leaf_id: str | None = None
    sub_query: str = ""
    kind: str = "leaf"  # leaf | scope | graph | layer


@dataclass(frozen=True)
class ContextSection:
    """Context a strategy assembles beside the passages (graph paths, summaries, reports).

    `rows` are shown as a table in the explorer; `text` is what synthesis reads; `chunk_ids`
    are the passages the section was built from, so its claims can be traced and cited.
    """

    kind: str
    title: str
    text: str
    rows: tuple[dict[str, Any], ...] = ()
    chunk_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Citation:
    """A `[Source: path]` marker in the answer, mapped to node ids."""

    text: str
    heading_path: str
    node_ids: tuple[str, ...]
    supported: bool
    pages: tuple[int, ...] = ()  # PDF pages of the retrieved passages of the cited nodes


@dataclass
class Trace:
    """Everything one question produced; every view (UI, CLI, eval, audit) reads this."""

    question: str
    strategy: str
    settings: dict[str, Any]  # the effective settings (QuerySettings.to_dict of what ran)
    provider: dict[str, Any]
    language: Language = "en"
    scope: list[str] | None = None  # documents searched (None: the whole index)
    locate: LocateResult | None = None
    retrieved: list[RetrievalGroup] = field(default_factory=list)  # step 2, per searched group
    sections: list[ContextSection] = field(default_factory=list)  # a strategy's extra context
    retrieve_seconds: float = 0.0
    reranked: list[RetrievedChunk] = field(default_factory=list)  # what the answer reads
    candidates: list[RetrievedChunk] = field(default_factory=list)  # every pooled chunk, scored
    rerank_seconds: float = 0.0
    reranker: str = ""
    answer: str = ""
    # The keyless answer's verdict on its evidence (flags.AnswerVerdict.to_dict); empty for an
    # LLM's answer, which the out-of-scope flag speaks for.
    verdict: dict[str, Any] = field(default_factory=dict)
    answer_usage: Usage = field(default_factory=Usage)
    synthesize_seconds: float = 0.0
    citations: list[Citation] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)
    error: str = ""
    created_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
