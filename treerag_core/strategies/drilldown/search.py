"""Three-layer drill-down (seed 001): document by K-Type summary → parent section → passages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from treerag_core.base.errors import VectorStoreError
from treerag_core.base.settings import FusionArgs, RetrieveSettings, check_ranges, setting
from treerag_core.base.types import ContextSection, DocumentScore, Language, RetrievedChunk
from treerag_core.index.bm25 import BM25Stats, LeafBM25
from treerag_core.index.vectors.base import Kind, VectorQuery, VectorStore
from treerag_core.ingest.node_summaries import truncate
from treerag_core.search.fusion import fuse, minmax
from treerag_core.search.retrieval import fused_hits
from treerag_core.search.routing import document_table
from treerag_core.strategies.drilldown.layers import Layers, ensure_layers, parent_text

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex

SIGNALS = ("summary", "passages", "both")
MAX_ROWS = 30  # candidates kept per layer in the trace table
PASSAGE_WINDOW = 200  # top passages a vector store returns for the passage signal


@dataclass(frozen=True)
class DrilldownOptions:
    """Per-layer limits and what scores the upper layers.

    `*_signal`: "summary" scores a document (section) by its own vector and BM25 over its
    K-Type summary (heading path + summary); "passages" by its best passage (flat hybrid
    over the scope); "both" averages the two min-max normalised scores.
    """

    # Measured (docs/drilldown.md): the seed's 1 / 1 / 3 by summaries alone found the gold
    # document for 44% of QASPER questions and recalled a third of flat search's evidence;
    # routing by best passage and a wider funnel beat flat-hybrid there. Chosen on QASPER.
    documents: int = setting(
        3, label="Documents kept", help="documents layer 1 keeps", min=1, max=50, top=10
    )
    parents: int = setting(
        5, label="Parent sections kept", help="parent sections layer 2 keeps", min=1, max=50, top=20
    )
    # As many child passages as every other strategy hands the cross-encoder (the candidate
    # window): 10 left the laws' short articles under 1,000 characters (docs/drilldown.md).
    children: int = setting(
        RetrieveSettings().candidate_window,
        label="Child passages kept",
        help="child passages layer 3 keeps",
        min=1,
        max=50,
    )
    doc_signal: str = "passages"
    parent_signal: str = "both"
    parent_chars: int = 1200  # parent context handed to synthesis

    def __post_init__(self) -> None:
        check_ranges(self)
        for name in ("doc_signal", "parent_signal"):
            if getattr(self, name) not in SIGNALS:
                raise ValueError(
                    f"{name} must be one of {', '.join(SIGNALS)}, got {getattr(self, name)!r}"
                )
        if self.parent_chars < 100:
            raise ValueError(f"parent_chars must be >= 100, but got {self.parent_chars}")


@dataclass(frozen=True)
class LayerCandidate:
    """One scored item of the document or parent layer."""

    layer: str  # document | parent
    item_id: str  # doc id, or the parent's node id
    doc_id: str
    label: str  # title, or heading path
    score: float
    dense: float
    bm25: float
    passage: float | None = None  # best passage's fused score, when that signal is used
    chosen: bool = False

    def row(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.item_id,
            "label": self.label,
            "score": round(self.score, 4),
            "dense": round(self.dense, 4),
            "bm25": round(self.bm25, 4),
            "chosen": self.chosen,
        }
        if self.passage is not None:
            out["passage"] = round(self.passage, 4)
        return out


@dataclass(frozen=True)
class DrilldownResult:
    documents: tuple[LayerCandidate, ...]  # every document in scope, best first
    parents: tuple[LayerCandidate, ...]  # every section of the chosen documents, best first
    children: tuple[RetrievedChunk, ...]  # the kept passages of the chosen sections

    @property
    def chosen_documents(self) -> list[str]:
        return [c.item_id for c in self.documents if c.chosen]

    @property
    def chosen_parents(self) -> list[str]:
        return [c.item_id for c in self.parents if c.chosen]


# ---- scoring helpers ----------------------------------------------------------------------


def _dense(
    layers: Layers,
    store: VectorStore | None,
    kind: Kind,
    ids: Sequence[str],
    qvec: np.ndarray,
    doc_ids: Sequence[str] | None = None,
) -> np.ndarray:
    """Cosine of the question with each item; from the layer vectors or from a vector store."""
    if not ids:
        return np.zeros(0, dtype=np.float32)
    if store is None:
        vectors = layers.doc_vectors(ids) if kind == "document" else layers.parent_vectors(ids)
        return (vectors @ np.asarray(qvec, dtype=np.float32)).astype(np.float32)
    hits = store.search(
        VectorQuery(qvec, kind, limit=len(ids), doc_ids=tuple(doc_ids) if doc_ids else None)
    )
    got = {h.item_id if kind == "parent" else h.doc_id: h.score for h in hits}
    _known(kind, got, ids)
    # An id of ours the store did not return (approximate search) scores 0: the collection
    # itself was checked to be this index's when attached (drilldown.vector_store.attach_checked).
    return np.asarray([got.get(i, 0.0) for i in ids], dtype=np.float32)


def _known(kind: Kind, got: Iterable[str], ids: Iterable[str]) -> None:
    """Refuse a store's answer naming an item this index does not have (a foreign collection)."""
    unknown = set(got) - set(ids)
    if unknown:
        _foreign(kind, sorted(unknown)[0])


def _known_chunks(index: CorpusIndex, got: Iterable[str], scope: Sequence[str] | None) -> None:
    """`_known` for passages of a whole scope: each id is looked up in the index's chunk map
    (built once when the index is loaded), so a query costs its hits, not the corpus."""
    docs = None if scope is None else frozenset(scope)
    for chunk_id in sorted(got):
        try:
            row = index.chunk_row(chunk_id)
        except KeyError:
            _foreign("child", chunk_id)
        if docs is not None and index.chunks[row].doc_id not in docs:
            _foreign("child", chunk_id)


def _foreign(kind: Kind, item: str) -> NoReturn:
    raise VectorStoreError(
        f"the vector store answered with {kind} {item!r}, which this index does not have: "
        "the collection was pushed from another index; run `qdrant-push --index` with this index"
    )


def _bm25(layers: Layers, texts: Sequence[str], q_tokens: Sequence[str]) -> np.ndarray:
    """BM25 of the question over a layer's short texts, IDF over those texts."""
    token_lists = [layers.tokens(t) for t in texts]
    scorer = LeafBM25.from_tokens(token_lists, BM25Stats.from_tokens(token_lists))
    return scorer.scores(list(q_tokens)).astype(np.float32)


def best_passages(
    index: CorpusIndex,
    qvec: np.ndarray,
    q_tokens: list[str],
    params: FusionArgs,
    scope: Sequence[str] | None,
    store: VectorStore | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """The best fused passage score per document and per leaf (one flat hybrid pass).

    A store with hybrid search (Qdrant) answers with its own fused top passages
    (PASSAGE_WINDOW of them); items without one among them score 0.
    """
    if store is not None and getattr(store, "supports_hybrid", False):
        docs = tuple(scope) if scope is not None else None
        query = VectorQuery(qvec, "child", PASSAGE_WINDOW, doc_ids=docs, tokens=tuple(q_tokens))
        by_doc_s: dict[str, float] = {}
        by_leaf_s: dict[str, float] = {}
        hits = store.search(query)
        _known_chunks(index, [h.item_id for h in hits], scope)
        for hit in hits:
            by_doc_s[hit.doc_id] = max(by_doc_s.get(hit.doc_id, 0.0), hit.score)
            leaf = hit.parent_id or ""
            by_leaf_s[leaf] = max(by_leaf_s.get(leaf, 0.0), hit.score)
        return by_doc_s, by_leaf_s
    rows, dense, bm25 = index.score_scope(scope, qvec, q_tokens)
    fused = fuse(dense, bm25, *params).fused
    by_doc: dict[str, float] = {}
    by_leaf: dict[str, float] = {}
    for row, value in zip(rows.tolist(), fused.tolist(), strict=True):
        chunk = index.chunks[row]
        by_doc[chunk.doc_id] = max(by_doc.get(chunk.doc_id, -np.inf), value)
        by_leaf[chunk.source_node_id] = max(by_leaf.get(chunk.source_node_id, -np.inf), value)
    return by_doc, by_leaf


def _rank(
    layer: str,
    ids: list[str],
    doc_of: list[str],
    labels: list[str],
    dense: np.ndarray,
    bm25: np.ndarray,
    params: FusionArgs,
    signal: str,
    passage: dict[str, float] | None,
    keep: int,
) -> tuple[LayerCandidate, ...]:
    own = fuse(dense, bm25, *params).fused
    best = None
    if signal != "summary" and passage is not None:
        best = np.asarray([passage.get(i, 0.0) for i in ids], dtype=np.float64)
    if best is None:
        score = own
    elif signal == "passages":
        score = best
    else:
        score = 0.5 * minmax(own) + 0.5 * minmax(best)
    order = np.argsort(-np.asarray(score), kind="stable")
    return tuple(
        LayerCandidate(
            layer,
            ids[i],
            doc_of[i],
            labels[i],
            float(score[i]),
            float(dense[i]),
            float(bm25[i]),
            None if best is None else float(best[i]),
            chosen=position < keep,
        )
        for position, i in enumerate(order)
    )


# ---- the three layers ---------------------------------------------------------------------


def document_scores(
    index: CorpusIndex,
    qvec: np.ndarray,
    q_tokens: list[str],
    params: FusionArgs = FusionArgs(),
    scope: Sequence[str] | None = None,
    signal: str = "summary",
    keep: int = 1,
    store: VectorStore | None = None,
) -> tuple[LayerCandidate, ...]:
    """Every document in scope scored for the question, best first; the top `keep` chosen.

    Any multi-document strategy (and the explorer) can call this to show why a document
    was or was not searched.
    """
    layers = ensure_layers(index)
    ids = [d for d in layers.doc_ids if scope is None or d in set(scope)]
    texts = [layers.summaries[d].text for d in ids]
    dense = _dense(layers, store, "document", ids, qvec, scope)
    bm25 = _bm25(layers, texts, q_tokens) if ids else np.zeros(0, dtype=np.float32)
    passage = (
        best_passages(index, qvec, q_tokens, params, scope, store)[0]
        if signal != "summary"
        else None
    )
    labels = [layers.summaries[d].title for d in ids]
    return _rank("document", ids, ids, labels, dense, bm25, params, signal, passage, keep)


SIGNAL_BASIS = {
    "summary": "K-Type summary (dense + BM25, fused)",
    "passages": "best passage (flat hybrid)",
    "both": "K-Type summary + best passage (min-max mean)",
}


def routing_scores(
    index: CorpusIndex, documents: Sequence[LayerCandidate], signal: str
) -> tuple[DocumentScore, ...]:
    """The document layer as the trace's shared document-routing table."""
    with_passage = {c.item_id: c.passage for c in documents if c.passage is not None}
    return document_table(
        index,
        [(c.item_id, c.score) for c in documents],
        {c.item_id for c in documents if c.chosen},
        SIGNAL_BASIS[signal],
        dense={c.item_id: c.dense for c in documents},
        bm25={c.item_id: c.bm25 for c in documents},
        passage=with_passage or None,
    )


def parent_scores(
    index: CorpusIndex,
    qvec: np.ndarray,
    q_tokens: list[str],
    doc_ids: Sequence[str],
    params: FusionArgs = FusionArgs(),
    signal: str = "summary",
    keep: int = 1,
    store: VectorStore | None = None,
    scope: Sequence[str] | None = None,
) -> tuple[LayerCandidate, ...]:
    """The sections (leaves with passages) of the chosen documents, scored by their own vectors
    (heading path + summary) and BM25 over the same text; best first, the top `keep` chosen.

    The passage signal reads the flat pass over the question's whole `scope` (the one the
    document layer made, cached per scope), not a new pass per set of chosen documents.
    """
    layers = ensure_layers(index)
    wanted = set(doc_ids)
    ids = [p for p in layers.parent_ids if index.nodes[p].doc_id in wanted]
    nodes = [index.nodes[p] for p in ids]
    dense = _dense(layers, store, "parent", ids, qvec, list(doc_ids))
    bm25 = (
        _bm25(layers, [parent_text(n) for n in nodes], q_tokens) if ids else np.zeros(0, np.float32)
    )
    passage = (
        best_passages(index, qvec, q_tokens, params, scope, store)[1]
        if signal != "summary"
        else None
    )
    doc_of = [n.doc_id for n in nodes]
    labels = [n.heading_path for n in nodes]
    return _rank("parent", ids, doc_of, labels, dense, bm25, params, signal, passage, keep)


def child_hits(
    index: CorpusIndex,
    qvec: np.ndarray,
    q_tokens: list[str],
    parent_ids: Sequence[str],
    params: FusionArgs = FusionArgs(),
    keep: int = 3,
    question: str = "",
    store: VectorStore | None = None,
) -> tuple[RetrievedChunk, ...]:
    """The passages of the chosen sections: dense + BM25 (document-wide IDF) fused, pooled
    across sections by a fusion recomputed over all of them, the best `keep` kept."""
    rows_list, dense_list, bm25_list = [], [], []
    for parent_id in parent_ids:
        rows = index.leaf_rows(parent_id)
        if not len(rows):
            continue
        if store is None or getattr(store, "serves_chunks", False):  # Milvus: in score_leaf
            _, dense, bm25 = index.score_leaf(parent_id, qvec, q_tokens)
        else:
            hits = store.search(
                VectorQuery(qvec, "child", limit=len(rows), parent_ids=(parent_id,))
            )
            got = {h.item_id: h.score for h in hits}
            _known("child", got, (index.chunks[r].chunk_id for r in rows))
            dense = np.asarray([got.get(index.chunks[r].chunk_id, 0.0) for r in rows], np.float32)
            bm25 = index.leaf_bm25(parent_id).scores(q_tokens).astype(np.float32)
        rows_list.append(rows)
        dense_list.append(dense)
        bm25_list.append(bm25)
    if not rows_list:
        return ()
    return fused_hits(
        index,
        np.concatenate(rows_list),
        np.concatenate(dense_list),
        np.concatenate(bm25_list),
        fusion=params,
        sub_query=question,
        keep=keep,
        pooled=True,
    )


def drill_down(
    index: CorpusIndex,
    question: str,
    qvec: np.ndarray,
    q_tokens: list[str],
    options: DrilldownOptions = DrilldownOptions(),
    params: FusionArgs = FusionArgs(),
    scope: Sequence[str] | None = None,
    store: VectorStore | None = None,
) -> DrilldownResult:
    """Document layer → parent layer (inside the chosen documents) → child layer."""
    documents = document_scores(
        index, qvec, q_tokens, params, scope, options.doc_signal, options.documents, store
    )
    chosen_docs = [c.item_id for c in documents if c.chosen]
    parents = parent_scores(
        index,
        qvec,
        q_tokens,
        chosen_docs,
        params,
        options.parent_signal,
        options.parents,
        store,
        scope,
    )
    chosen_parents = [c.item_id for c in parents if c.chosen]
    children = child_hits(
        index, qvec, q_tokens, chosen_parents, params, options.children, question, store
    )
    return DrilldownResult(documents, parents, children)


# ---- context for synthesis ----------------------------------------------------------------

_TITLES = {
    "en": ("Document summary", "Parent context", "Relevant passages"),
    "zh": ("文档摘要", "父块上下文", "相关段落"),
}


def context_sections(
    index: CorpusIndex, result: DrilldownResult, language: Language, parent_chars: int = 1200
) -> tuple[ContextSection, ...]:
    """Seed 001's three labelled layers, each with its layer's table for the explorer.

    Synthesis reads the document summary and the parent context as labelled blocks before
    the passages; the passages layer is the ranked evidence itself.
    """
    layers = ensure_layers(index)
    doc_title, parent_title, child_title = _TITLES["zh" if language == "zh" else "en"]
    doc_text = "\n\n".join(layers.summaries[d].text for d in result.chosen_documents)
    parent_parts = []
    for parent_id in result.chosen_parents:
        node = index.nodes[parent_id]
        parent_parts.append(f"{node.heading_path}\n{truncate(node.content.strip(), parent_chars)}")
    child_rows = tuple(
        {
            "id": h.chunk.chunk_id,
            "parent": h.chunk.source_node_id,
            "label": h.chunk.heading_path,
            "score": round(h.fused, 4),
            "dense": round(h.dense, 4),
            "bm25": round(h.bm25, 4),
            "chosen": True,
            "text": truncate(" ".join(h.chunk.text.split()), 80),
        }
        for h in result.children
    )
    parent_chunks = tuple(
        index.chunks[int(r)].chunk_id for p in result.chosen_parents for r in index.leaf_rows(p)
    )
    return (
        ContextSection(
            "document",
            doc_title,
            doc_text,
            tuple(c.row() for c in result.documents[:MAX_ROWS]),
        ),
        ContextSection(
            "parent",
            parent_title,
            "\n\n".join(parent_parts),
            tuple(c.row() for c in result.parents[:MAX_ROWS]),
            parent_chunks,
        ),
        # The passages reach the answer as its ranked evidence (each with its section path,
        # which citations need), so this layer carries no text of its own: no duplicates.
        ContextSection(
            "passages",
            child_title,
            "",
            child_rows,
            tuple(h.chunk.chunk_id for h in result.children),
        ),
    )
