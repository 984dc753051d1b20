"""The in-memory corpus index (trees, chunks, vectors, per-leaf FAISS and BM25) and its build."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from treerag_core.base.config import IndexSettings
from treerag_core.base.pagemap import page_span
from treerag_core.base.text_rules import detect_language
from treerag_core.base.types import Chunk, DocumentInfo, Language, SourceDocument, TreeNode
from treerag_core.index.bm25 import BM25Stats, LeafBM25
from treerag_core.index.embedders import Embedder, embedder_fingerprint
from treerag_core.index.parts import PartBuild, build_inputs, index_parts
from treerag_core.index.tokens import tokenize
from treerag_core.index.vectors.attach import store_for
from treerag_core.index.vectors.faiss_store import FlatGroup
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.ingest.node_summaries import content_key, summarize_tree
from treerag_core.ingest.parsing import parse_document

MAX_SCOPE_CACHE = 8  # distinct document scopes whose flat FAISS + BM25 stay in memory
# progress(stage, done, total): stage is "parse", "embed", a family part's own (e.g. "graph")
# or "index".
ProgressFn = Callable[[str, int, int], None]


@dataclass
class CorpusIndex:
    """Everything a query needs, held in memory. Build with `build_index`, persist with `store`."""

    settings: IndexSettings
    embedder_name: str
    dim: int
    documents: list[DocumentInfo]
    texts: dict[str, str]
    nodes: dict[str, TreeNode]
    chunks: list[Chunk]
    embeddings: np.ndarray
    tokens: list[list[str]]
    summary_cache: dict[str, str] = field(default_factory=dict)
    # Each family's part (index/parts.py) under its key, e.g. drill-down's layers; a family
    # reads its own through its accessor. Absent: built or saved without it.
    parts: dict[str, Any] = field(default_factory=dict)
    embedder_fingerprint: tuple[float, ...] = ()  # the embedder's vector of a probe text
    folder: str | None = None  # where it was loaded from or saved to (derived artifacts go there)
    _leaf_rows: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _chunk_rows: dict[str, int] = field(default_factory=dict, repr=False)
    _faiss: dict[str, FlatGroup] = field(default_factory=dict, repr=False)
    _bm25: dict[str, LeafBM25] = field(default_factory=dict, repr=False)
    # BM25 statistics of one document (a leaf's), or of the corpus under None
    _doc_stats: dict[tuple[str, ...] | None, BM25Stats] = field(default_factory=dict, repr=False)
    _scopes: dict[str, tuple] = field(default_factory=dict, repr=False)
    _heading_terms: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _structure: dict[str, Any] = field(default_factory=dict, repr=False)  # structure.py's tables
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def with_settings(self, settings: IndexSettings) -> CorpusIndex:
        """The same content under other `settings`: its own parts dict and caches, no folder."""
        content = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if not f.name.startswith("_") and f.name != "folder"
        }
        return CorpusIndex(**{**content, "settings": settings})

    def __post_init__(self) -> None:
        self.parts = dict(self.parts)  # never shared with the index it was copied from
        rows: dict[str, list[int]] = {}
        for row, chunk in enumerate(self.chunks):
            rows.setdefault(chunk.source_node_id, []).append(row)
        self._leaf_rows = {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()}
        self._chunk_rows = {chunk.chunk_id: row for row, chunk in enumerate(self.chunks)}

    # ---- structure -------------------------------------------------------------------
    def leaves(self, doc_id: str | None = None) -> list[TreeNode]:
        return [
            n for n in self.nodes.values() if n.is_leaf and (doc_id is None or n.doc_id == doc_id)
        ]

    def sources(self) -> list[SourceDocument]:
        """The documents as SourceDocuments again (texts, page maps, formats and inferred
        sections kept), to rebuild with other settings or add files without losing them."""
        return [
            SourceDocument(
                d.doc_id, self.texts[d.doc_id], d.page_starts, d.source_format, d.inferred_starts
            )
            for d in self.documents
        ]

    def document(self, doc_id: str) -> DocumentInfo:
        for doc in self.documents:
            if doc.doc_id == doc_id:
                return doc
        raise KeyError(doc_id)

    def leaf_rows(self, leaf_id: str) -> np.ndarray:
        """Row numbers (into chunks/embeddings) of a leaf's chunks; empty for an empty leaf."""
        return self._leaf_rows.get(leaf_id, np.zeros(0, dtype=np.int64))

    def chunk_row(self, chunk_id: str) -> int:
        """The row of a chunk id (into chunks/embeddings); KeyError for an id not in the index."""
        return self._chunk_rows[chunk_id]

    def ancestors(self, node_id: str) -> list[str]:
        out: list[str] = []
        parent = self.nodes[node_id].parent_id
        while parent is not None:
            out.append(parent)
            parent = self.nodes[parent].parent_id
        return out

    # ---- search primitives -----------------------------------------------------------
    def chunk_engine(self) -> Any | None:
        """The attached store that scores this index's chunks (Milvus), else None: FAISS and
        BM25 run here, in process."""
        store = store_for(self)
        return store if getattr(store, "serves_chunks", False) else None

    def leaf_faiss(self, leaf_id: str) -> FlatGroup:
        """The leaf's flat inner-product index (rows normalised: cosine); built once, lazily."""
        with self._lock:
            index = self._faiss.get(leaf_id)
            if index is None:
                index = FlatGroup(self.embeddings[self.leaf_rows(leaf_id)], self.dim)
                self._faiss[leaf_id] = index
            return index

    def bm25_scope(
        self, scope: Sequence[str] | None = None, leaf_id: str | None = None
    ) -> tuple[str, ...] | None:
        """The documents whose chunks give a search's BM25 its statistics (IDF, mean length).

        A leaf's: its whole document (a 1-5 chunk section needs a wider IDF); a scope's: its
        own documents; None: every document, the corpus (what an engine's collection holds).
        The one rule for both paths: in process, and on an engine that serves the chunks
        (Milvus scores a narrower scope's rows with these statistics, `score_chunks`).
        """
        docs = {self.nodes[leaf_id].doc_id} if leaf_id is not None else scope
        if docs is None:
            return None
        wanted = set(docs)
        if wanted >= {d.doc_id for d in self.documents}:
            return None  # every document: the corpus's statistics
        return tuple(sorted(wanted))

    def bm25_stats(self, docs: tuple[str, ...] | None) -> BM25Stats:
        """BM25 statistics over the chunks of `docs` (None: every chunk), from `bm25_scope`."""
        return BM25Stats.from_tokens([self.tokens[i] for i in self.scope_rows(docs)])

    def leaf_bm25(self, leaf_id: str) -> LeafBM25:
        """The leaf's BM25, scoring only its chunks but with IDF over its whole document."""
        with self._lock:
            scorer = self._bm25.get(leaf_id)
            if scorer is None:
                docs = self.bm25_scope(leaf_id=leaf_id)
                stats = self._doc_stats.get(docs)
                if stats is None:
                    stats = self._doc_stats[docs] = self.bm25_stats(docs)
                rows = self.leaf_rows(leaf_id)
                scorer = LeafBM25.from_tokens([self.tokens[i] for i in rows], stats)
                self._bm25[leaf_id] = scorer
            return scorer

    def score_leaf(
        self, leaf_id: str, query_vector: np.ndarray, query_tokens: list[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Dense and BM25 scores of every chunk of one leaf, as (rows, dense, bm25)."""
        rows = self.leaf_rows(leaf_id)
        if not len(rows):
            empty = np.zeros(0, dtype=np.float32)
            return rows, empty, empty
        engine = self.chunk_engine()
        if engine is not None:  # a leaf filter in the engine; BM25 with the document's stats
            dense, bm25 = engine.score_chunks(
                self,
                rows,
                query_vector,
                query_tokens,
                leaf_id=leaf_id,
                stats_docs=self.bm25_scope(leaf_id=leaf_id),
            )
            return rows, dense, bm25.astype(np.float32)
        dense = self.leaf_faiss(leaf_id).scores(query_vector)
        bm25 = self.leaf_bm25(leaf_id).scores(query_tokens).astype(np.float32)
        return rows, dense, bm25

    def scope_rows(self, scope: Sequence[str] | None) -> np.ndarray:
        """Rows of every chunk in the given documents (all documents when scope is None)."""
        if scope is None:
            return np.arange(len(self.chunks), dtype=np.int64)
        wanted = set(scope)
        return np.asarray(
            [i for i, c in enumerate(self.chunks) if c.doc_id in wanted], dtype=np.int64
        )

    def score_scope(
        self, scope: Sequence[str] | None, query_vector: np.ndarray, query_tokens: list[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flat scores over every chunk in scope: one FAISS index and one BM25 for the scope."""
        engine = self.chunk_engine()
        if engine is not None:  # a document filter in the engine; nothing is built here
            rows = self.scope_rows(scope)
            dense, bm25 = self.served_scores(engine, scope, rows, query_vector, query_tokens)
            return rows, dense, bm25.astype(np.float32)
        key = "*" if scope is None else "*" + "\x1f".join(sorted(set(scope)))
        with self._lock:
            cached = self._scopes.pop(key, None)
            if cached is None:
                rows = self.scope_rows(scope)
                index = FlatGroup(self.embeddings[rows], self.dim)
                tokens = [self.tokens[i] for i in rows]
                scorer = LeafBM25.from_tokens(tokens, self.bm25_stats(self.bm25_scope(scope)))
                cached = (rows, index, scorer)
            self._scopes[key] = cached  # most recently used last
            # Each distinct scope holds a FAISS + BM25 copy: keep only the recent few, so no
            # client can grow memory by asking over ever new sets of documents.
            while len(self._scopes) > MAX_SCOPE_CACHE:
                self._scopes.pop(next(iter(self._scopes)))
        rows, index, scorer = cached
        if not len(rows):
            empty = np.zeros(0, dtype=np.float32)
            return rows, empty, empty
        dense = index.scores(query_vector)
        return rows, dense, scorer.scores(query_tokens).astype(np.float32)

    def served_scores(
        self,
        engine: Any,
        scope: Sequence[str] | None,
        rows: np.ndarray,
        query_vector: np.ndarray,
        query_tokens: list[str],
        *,
        with_path: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Dense and (float64) BM25 of a scope's `rows` from `engine`: a document filter, and
        BM25 with the scope's statistics (`bm25_scope`). `with_path`: heading path + passage."""
        return engine.score_chunks(
            self,
            rows,
            query_vector,
            query_tokens,
            doc_ids=None if scope is None else sorted(set(scope)),
            with_path=with_path,
            stats_docs=self.bm25_scope(scope),
        )

    def heading_terms(self, leaf_id: str) -> frozenset[str]:
        """Tokens of a leaf's heading path and summary, tokenised once per index."""
        terms = self._heading_terms.get(leaf_id)
        if terms is None:
            node = self.nodes[leaf_id]
            terms = frozenset(tokenize(f"{node.heading_path} {node.summary}"))
            self._heading_terms[leaf_id] = terms  # a racing duplicate computes the same set
        return terms


def _unique_names(sources: Sequence[SourceDocument]) -> list[SourceDocument]:
    """Make document names unique (two `README.md` from different folders stay apart)."""
    seen: dict[str, int] = {}
    out = []
    for src in sources:
        count = seen.get(src.name, 0)
        seen[src.name] = count + 1
        out.append(src if count == 0 else replace(src, name=f"{src.name}#{count + 1}"))
    return out


def build_index(
    sources: Sequence[SourceDocument],
    settings: IndexSettings,
    embedder: Embedder,
    previous: CorpusIndex | None = None,
    progress: ProgressFn | None = None,
    summary_overrides: dict[str, str] | None = None,
    summarizer: Callable[[Sequence[TreeNode], Language], dict[str, str]] | None = None,
    **part_inputs: Any,
) -> CorpusIndex:
    """Parse, summarise, chunk, tokenise and embed `sources` into a CorpusIndex.

    With `previous` (an index built with the same settings and embedder), documents whose
    content hash is unchanged reuse their embeddings: only changed documents hit the model.
    `summarizer` (LLM summaries) returns {content_key: summary} for a document's nodes; its
    results are kept in the index's summary cache, so an unchanged section is never resent.
    Then every registered family part (index/parts.py) is built, in key order, with its
    part of `previous`; `part_inputs` are keyword arguments a part reads (e.g. drill-down's
    `ktype_summarizer`, the graph family's `graph_extractor`).

    Raises:
        TypeError: a keyword argument that no part reads.
    """
    unknown = sorted(set(part_inputs) - build_inputs())
    if unknown:
        raise TypeError(f"build_index() got an unexpected keyword argument {unknown[0]!r}")
    notify = progress or (lambda stage, done, total: None)
    sources = _unique_names(sources)
    reusable = reusable_embeddings(previous, settings, embedder)

    documents: list[DocumentInfo] = []
    nodes: dict[str, TreeNode] = {}
    chunks: list[Chunk] = []
    next_id = 1
    # LLM summaries of the previous build are reused only while the option stays on.
    use_cache = previous is not None and settings.llm_summaries
    overrides = dict(previous.summary_cache) if use_cache else {}
    overrides.update(summary_overrides or {})
    for done, src in enumerate(sources):
        doc_nodes = parse_document(
            src.text,
            doc_id=src.name,
            name=src.name,
            max_depth=settings.max_depth,
            first_id=next_id,
            article_leaves=settings.article_leaves,
            inferred_starts=src.inferred_starts,
        )
        if summarizer is not None:
            overrides.update(summarizer(doc_nodes, detect_language(src.text)))
        doc_nodes = summarize_tree(
            doc_nodes, max_chars=settings.summary_chars, overrides=overrides or None
        )
        next_id += len(doc_nodes)
        root = doc_nodes[0]
        documents.append(
            DocumentInfo(
                doc_id=src.name,
                name=src.name,
                title=root.heading,
                language=detect_language(src.text),
                sha256=src.sha256,
                size_chars=len(src.text),
                root_id=root.node_id,
                page_starts=tuple(src.page_starts),
                source_format=src.source_format,
                inferred_starts=tuple(src.inferred_starts),
            )
        )
        for node in doc_nodes:
            nodes[node.node_id] = node
            if node.is_leaf:
                leaf_chunks = chunk_leaf(
                    node,
                    src.text,
                    chunk_size=settings.chunk_size,
                    overlap=settings.chunk_overlap,
                    min_chars=settings.min_chunk_chars,
                )
                chunks.extend(with_pages(leaf_chunks, src.page_starts))
        notify("parse", done + 1, len(sources))

    tokens = [tokenize(c.text) for c in chunks]
    embeddings = _embed_with_reuse(chunks, documents, embedder, reusable, notify)
    summary_cache = {
        content_key(n): n.summary for n in nodes.values() if content_key(n) in overrides
    }
    index = CorpusIndex(
        settings=settings,
        embedder_name=embedder.name,
        dim=embedder.dim,
        documents=documents,
        texts={src.name: src.text for src in sources},
        nodes=nodes,
        chunks=chunks,
        embeddings=embeddings,
        tokens=tokens,
        summary_cache=summary_cache,
        embedder_fingerprint=embedder_fingerprint(embedder),
    )
    build_parts(index, embedder, previous, notify, part_inputs)
    notify("index", 1, 1)
    return index


def build_parts(
    index: CorpusIndex,
    embedder: Embedder,
    previous: CorpusIndex | None = None,
    notify: ProgressFn | None = None,
    inputs: dict[str, Any] | None = None,
    keys: Sequence[str] | None = None,
) -> None:
    """Build the registered family parts of `index` (only those in `keys` when given), each
    reusing its part of `previous`; a part with nothing to build for these settings is left
    out (and removed when `index` had it)."""
    for part in index_parts():
        if keys is not None and part.key not in keys:
            continue
        ctx = PartBuild(
            embedder,
            previous.parts.get(part.key) if previous is not None else None,
            notify or (lambda stage, done, total: None),
            {k: v for k, v in (inputs or {}).items() if k in part.inputs},
        )
        built = part.build(index, ctx)
        if built is None:
            index.parts.pop(part.key, None)
        else:
            index.parts[part.key] = built


def with_pages(chunks: Sequence[Chunk], page_starts: Sequence[int]) -> list[Chunk]:
    """The chunks with their first and last page set (unchanged when there are no pages)."""
    if not page_starts:
        return list(chunks)
    return [
        replace(c, page_start=first, page_end=last)
        for c in chunks
        for first, last in [page_span(page_starts, c.start, c.end)]
    ]


def reusable_embeddings(
    previous: CorpusIndex | None, settings: IndexSettings, embedder: Embedder
) -> dict[str, tuple[list[str], np.ndarray]]:
    """sha256 -> (chunk texts, their vectors) from a compatible previous index."""
    if previous is None or previous.embedder_name != embedder.name:
        return {}
    same_chunking = (
        previous.settings.chunk_size == settings.chunk_size
        and previous.settings.chunk_overlap == settings.chunk_overlap
        and previous.settings.min_chunk_chars == settings.min_chunk_chars
        and previous.settings.max_depth == settings.max_depth
    )
    if not same_chunking:
        return {}
    out = {}
    for doc in previous.documents:
        rows = [i for i, c in enumerate(previous.chunks) if c.doc_id == doc.doc_id]
        out[doc.sha256] = ([previous.chunks[i].text for i in rows], previous.embeddings[rows])
    return out


def _embed_with_reuse(
    chunks: list[Chunk],
    documents: list[DocumentInfo],
    embedder: Embedder,
    reusable: dict[str, tuple[list[str], np.ndarray]],
    notify: ProgressFn,
) -> np.ndarray:
    embeddings = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    todo: list[int] = []
    for doc in documents:
        rows = [i for i, c in enumerate(chunks) if c.doc_id == doc.doc_id]
        cached = reusable.get(doc.sha256)
        # Reuse only when the chunk texts match one to one (same parse, same chunking).
        if cached is not None and cached[0] == [chunks[i].text for i in rows]:
            embeddings[rows] = cached[1]
        else:
            todo.extend(rows)
    if todo:
        vectors = embedder.embed(
            [chunks[i].text for i in todo],
            progress=lambda done, total: notify("embed", done, total),
        )
        embeddings[todo] = vectors
    notify("embed", len(todo), len(todo))
    return embeddings


def corpus_stats(index: CorpusIndex) -> dict[str, int]:
    """Counts for the CLI summary and the UI."""
    leaves = index.leaves()
    longest = max((n.end - n.start for n in leaves), default=0)
    stats = {
        "documents": len(index.documents),
        "nodes": len(index.nodes),
        "leaves": len(leaves),
        "chunks": len(index.chunks),
        "longest_leaf_chars": longest,
    }
    for part in index_parts():  # each family adds its own counts (e.g. graphs)
        stats.update(part.stats(index.parts.get(part.key)))
    return stats
