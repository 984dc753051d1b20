"""Structure-aware scores: a passage read with its heading path, and its section as a whole.

Two signals a structure-blind search cannot see, both computed over the whole scope with
one set of statistics (scope-wide IDF), so every chunk's score compares with every other's:

- passage BM25 over `heading path + passage` tokens: a section title is part of what its
  passages are about (the title field of BM25F, folded into one field);
- section evidence: BM25 of the question against the section's whole text and path, with
  IDF over the scope's sections, min-max over the sections in scope; a chunk inherits it.
  This is passage retrieval with a section prior (Callan 1994: passage + document score).
  A leaf's section is the leaf itself, except a statute's article (passage-sized: its own
  evidence would repeat its passage score), whose section is its nearest ancestor that is
  not an article, its chapter or 节; the articles stay the leaves step 1 ranks and picks.

The dense side is the flat one (the chunk's own vector), so the fused score differs from
flat hybrid's only by what the headings add.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from treerag_core.base.text_rules import is_article_heading
from treerag_core.base.types import LocatedLeaf, LocateResult, RetrievedChunk
from treerag_core.index.bm25 import BM25Stats, LeafBM25
from treerag_core.index.corpus import CorpusIndex
from treerag_core.index.tokens import tokenize
from treerag_core.search.fusion import fuse, minmax
from treerag_core.search.rerank import Reading
from treerag_core.search.routing import best_per_document, document_table

_LOCK = threading.Lock()


@dataclass(frozen=True, eq=False)
class ScopeStructure:
    """Per-scope BM25 over path-aware passages and over whole sections (built once)."""

    rows: np.ndarray  # chunk rows in scope, ascending
    leaf_ids: tuple[str, ...]  # the scope's non-empty leaves
    leaf_of_row: np.ndarray  # per row: position in leaf_ids
    # heading path + chunk tokens, IDF over the scope's passages; None when an engine (Milvus)
    # serves this index: it computes the same BM25 from its own postings
    passages: LeafBM25 | None
    # heading path + all chunk tokens of a section (a leaf, or the chapter of article leaves:
    # `section_of_leaf`); IDF over the scope's sections
    sections: LeafBM25
    doc_of_row: tuple[str, ...]
    section_of_leaf: np.ndarray  # per leaf (parallel to leaf_ids): its row in `sections`


def _scope_key(scope: Sequence[str] | None) -> str:
    return "*" if scope is None else "*" + "\x1f".join(sorted(scope))


def scope_structure(index: CorpusIndex, scope: Sequence[str] | None) -> ScopeStructure:
    """The scope's structure-aware BM25 tables, cached on the index."""
    served = index.chunk_engine() is not None
    key = _scope_key(scope) + ("@engine" if served else "")
    cached = index._structure.get(key)
    if cached is not None:
        return cached
    with _LOCK:
        cached = index._structure.get(key)
        if cached is not None:
            return cached
        rows = index.scope_rows(scope)
        leaf_ids: list[str] = []
        position: dict[str, int] = {}
        leaf_of_row = np.zeros(len(rows), dtype=np.int64)
        for i, row in enumerate(rows.tolist()):
            leaf = index.chunks[row].source_node_id
            if leaf not in position:
                position[leaf] = len(leaf_ids)
                leaf_ids.append(leaf)
            leaf_of_row[i] = position[leaf]
        path_tokens = [tokenize(index.nodes[leaf].heading_path) for leaf in leaf_ids]
        passages = None
        if not served:
            passage_tokens = [
                path_tokens[leaf_of_row[i]] + index.tokens[row]
                for i, row in enumerate(rows.tolist())
            ]
            stats_rows = index.scope_rows(index.bm25_scope(scope))
            if not np.array_equal(stats_rows, rows):  # bm25_scope: a scope's are its own rows
                raise RuntimeError("the BM25 statistics of a scope are not its own rows")
            passages = LeafBM25.from_tokens(passage_tokens, BM25Stats.from_tokens(passage_tokens))
        section_ids, section_of_leaf = _sections_of(index, leaf_ids)
        section_tokens = [tokenize(index.nodes[s].heading_path) for s in section_ids]
        for leaf, section in zip(leaf_ids, section_of_leaf.tolist(), strict=True):
            if leaf != section_ids[section]:  # an article: its number is chapter text
                section_tokens[section].extend(tokenize(index.nodes[leaf].heading))
        for i, row in enumerate(rows.tolist()):
            section_tokens[section_of_leaf[leaf_of_row[i]]].extend(index.tokens[row])
        cached = ScopeStructure(
            rows=rows,
            leaf_ids=tuple(leaf_ids),
            leaf_of_row=leaf_of_row,
            passages=passages,
            sections=LeafBM25.from_tokens(section_tokens, BM25Stats.from_tokens(section_tokens)),
            doc_of_row=tuple(index.chunks[row].doc_id for row in rows.tolist()),
            section_of_leaf=section_of_leaf,
        )
        index._structure[key] = cached
        return cached


def section_node(index: CorpusIndex, leaf_id: str) -> str:
    """The section whose evidence a leaf shares: the leaf itself, or for a statute's article
    its nearest ancestor that is not an article (its 节 or chapter; the document root for a
    statute without chapters), as the leaf it belonged to in a chapter-leaf tree."""
    node = index.nodes[leaf_id]
    while is_article_heading(node.heading) and node.parent_id is not None:
        node = index.nodes[node.parent_id]
    return node.node_id


def _sections_of(index: CorpusIndex, leaf_ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct sections of `leaf_ids` in order of first use, and each leaf's position
    among them (the identity when no leaf is an article)."""
    section_ids: list[str] = []
    position: dict[str, int] = {}
    of_leaf = np.zeros(len(leaf_ids), dtype=np.int64)
    for i, leaf in enumerate(leaf_ids):
        section = section_node(index, leaf)
        if section not in position:
            position[section] = len(section_ids)
            section_ids.append(section)
        of_leaf[i] = position[section]
    return section_ids, of_leaf


@dataclass(frozen=True, eq=False)
class StructuredScores:
    """Every chunk in scope with its structure-aware scores (arrays parallel to `rows`)."""

    rows: np.ndarray
    dense: np.ndarray  # cosine of the chunk's own vector (as flat search)
    bm25: np.ndarray  # BM25 of heading path + passage
    dense_norm: np.ndarray  # the normalised values the fusion combined
    bm25_norm: np.ndarray
    fused: np.ndarray  # weighted fusion of the two (min-max over the scope)
    section: np.ndarray  # the chunk's section evidence, min-max over the scope's sections
    score: np.ndarray  # fused + section_weight * section: the order of the window
    leaf_ids: tuple[str, ...]
    leaf_of_row: np.ndarray
    section_raw: np.ndarray  # per leaf (parallel to leaf_ids): raw section BM25
    doc_of_row: tuple[str, ...] = ()


def structured_scores(
    index: CorpusIndex,
    scope: Sequence[str] | None,
    query_vector: np.ndarray,
    query_tokens: list[str],
    *,
    dense_weight: float,
    section_weight: float,
    fusion: str = "weighted",
    rrf_k: int = 60,
) -> StructuredScores:
    """Score every chunk in scope: path-aware hybrid plus its section's evidence.

    The last few results are kept on the index, so step 1 and step 2 of one question
    (treerag scores in both) pay once.
    """
    key = (
        _scope_key(scope),
        np.asarray(query_vector, dtype=np.float32).tobytes(),
        tuple(query_tokens),
        dense_weight,
        section_weight,
        fusion,
        rrf_k,
        id(index.chunk_engine()),  # scores served by an engine are not the in-process ones
    )
    recent: dict = index._structure.setdefault("recent", {})
    if key in recent:
        return recent[key]
    table = scope_structure(index, scope)
    rows, dense, bm25 = _hybrid_scores(index, scope, table, query_vector, query_tokens)
    section_raw = table.sections.scores(query_tokens)[table.section_of_leaf]  # per leaf
    if not len(rows):
        empty = np.zeros(0)
        result = StructuredScores(
            rows, empty, empty, empty, empty, empty, empty, empty, (), rows, section_raw, ()
        )
    else:
        fusion_result = fuse(dense, bm25, fusion, dense_weight, rrf_k)
        fused = np.asarray(fusion_result.fused)
        section = minmax(section_raw)[table.leaf_of_row]
        result = StructuredScores(
            rows=rows,
            dense=np.asarray(dense, dtype=np.float64),
            bm25=bm25,
            dense_norm=np.asarray(fusion_result.dense_norm),
            bm25_norm=np.asarray(fusion_result.bm25_norm),
            fused=fused,
            section=section,
            score=fused + section_weight * section,
            leaf_ids=table.leaf_ids,
            leaf_of_row=table.leaf_of_row,
            section_raw=section_raw,
            doc_of_row=table.doc_of_row,
        )
    if len(recent) >= 4:  # bounded: only the current question's steps need it
        recent.pop(next(iter(recent)))
    recent[key] = result
    return result


def _hybrid_scores(
    index: CorpusIndex,
    scope: Sequence[str] | None,
    table: ScopeStructure,
    query_vector: np.ndarray,
    query_tokens: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in scope, their dense score and heading path + passage BM25."""
    engine = index.chunk_engine()
    if engine is not None:  # dense and heading path + passage BM25, both from the engine
        rows = table.rows
        dense, bm25 = index.served_scores(
            engine, scope, rows, query_vector, query_tokens, with_path=True
        )
    else:
        rows, dense, _ = index.score_scope(scope, query_vector, [])
        if not np.array_equal(rows, table.rows):  # both come from scope_rows: a bug if not
            raise RuntimeError("scope rows of the flat and structure tables differ")
        if table.passages is None:  # scope_structure builds it whenever no engine serves
            raise RuntimeError("the passage BM25 table is missing without an engine")
        bm25 = table.passages.scores(query_tokens)
    return rows, dense, bm25


def path_passage(heading_path: str, text: str) -> str:
    """What a structure-aware cross-encoder reads: the section's path, then the passage."""
    return f"{heading_path}\n{text}" if heading_path else text


def window(
    scores: StructuredScores,
    size: int,
    documents: Sequence[str] = (),
    leaves: Sequence[str] = (),
) -> np.ndarray:
    """Positions (into `scores.rows`) of the best `size` chunks, best first, ties in row order;
    with `documents` (or `leaves`), only chunks of those documents (leaves) compete."""
    score = scores.score
    keep = np.ones(len(score), dtype=bool)
    if documents:
        wanted = set(documents)
        keep &= np.asarray([doc in wanted for doc in scores.doc_of_row], dtype=bool)
    if leaves:
        wanted = set(leaves)
        keep &= np.asarray([leaf in wanted for leaf in scores.leaf_ids], dtype=bool)[
            scores.leaf_of_row
        ]
    if documents or leaves:
        score = np.where(keep, score, -np.inf)
        size = min(size, int(keep.sum()))
    return np.argsort(-score, kind="stable")[:size]


def document_votes(scores: StructuredScores, size: int) -> list[tuple[str, float]]:
    """Documents ranked by their share of the unrouted window: each chunk in it votes its
    score above the window's lowest. Evidence spread over several passages of one document
    outweighs a single stray match."""
    top = window(scores, size)
    if not len(top):
        return []
    floor = float(scores.score[top].min())
    votes: dict[str, float] = {}
    for pos in top.tolist():
        doc = scores.doc_of_row[pos]
        votes[doc] = votes.get(doc, 0.0) + float(scores.score[pos]) - floor + 1e-9
    total = sum(votes.values())
    return sorted(((d, v / total) for d, v in votes.items()), key=lambda dv: -dv[1])


def section_ranking(
    scores: StructuredScores, size: int, documents: Sequence[str] = ()
) -> list[tuple[str, float, int]]:
    """Sections of the window as (leaf id, best chunk score, chunks in the window), best
    first: what step 1 shows as its section scores."""
    best: dict[str, float] = {}
    count: dict[str, int] = {}
    for pos in window(scores, size, documents).tolist():
        leaf = scores.leaf_ids[scores.leaf_of_row[pos]]
        best[leaf] = max(best.get(leaf, -np.inf), float(scores.score[pos]))
        count[leaf] = count.get(leaf, 0) + 1
    return sorted(((leaf, best[leaf], count[leaf]) for leaf in best), key=lambda r: -r[1])


def window_hits(
    index: CorpusIndex,
    scores: StructuredScores,
    size: int,
    question: str,
    documents: Sequence[str] = (),
    leaves: Sequence[str] = (),
) -> list[RetrievedChunk]:
    """The window as hits, best first: every score kept, the section evidence as `prior`."""
    return [
        RetrievedChunk(
            chunk=index.chunks[int(scores.rows[p])],
            dense=float(scores.dense[p]),
            bm25=float(scores.bm25[p]),
            dense_norm=float(scores.dense_norm[p]),
            bm25_norm=float(scores.bm25_norm[p]),
            fused=float(scores.fused[p]),
            leaf_rank=rank,
            pooled_rank=rank,
            pool_fused=float(scores.score[p]),
            prior=float(scores.section[p]),
            sub_query=question,
        )
        for rank, p in enumerate(window(scores, size, documents, leaves).tolist(), start=1)
    ]


# Scores a list of hits (input order) as step 2b would, or None when step 2b keeps the fused order.
Judge = Callable[[Sequence[RetrievedChunk]], Reading | None]


FUSED_ORDER = "the fused order"


def best_passage(reading: Reading | None, count: int) -> tuple[int, str]:
    """Position of the best of `count` hits by the final reader's `reading`, or the first hit
    (the fused order) when it gives no scores; and which reader decided."""
    if reading is None or len(reading.scores) != count:
        return 0, FUSED_ORDER
    scores = reading.scores
    best = min(range(count), key=lambda i: (-float(scores[i]), i))
    return best, "the cross-encoder"


def relevant_outside(
    hits: Sequence[RetrievedChunk], reading: Reading, kept: Sequence[str]
) -> list[tuple[RetrievedChunk, float]]:
    """The hits outside the `kept` documents that the reader itself calls relevant (score
    above its own boundary), best first; none when the reader states no boundary."""
    bound = reading.relevant_above
    if bound is None:
        return []
    found = [
        (hit, float(score))
        for hit, score in zip(hits, reading.scores.tolist(), strict=True)
        if score > bound and hit.chunk.doc_id not in kept
    ]
    return sorted(found, key=lambda pair: -pair[1])


def route(
    index: CorpusIndex,
    scores: StructuredScores,
    size: int,
    question: str,
    max_leaves: int,
    route_documents: int,
    judge: Judge | None = None,
) -> LocateResult:
    """Step 1 of treerag's local path: the documents to keep and the sections' scores.

    Documents are cut only when the scope holds more than `route_documents` of them (the
    best by their share of the window), and, with a `judge`, only when a second reader
    agrees: step 2b's cross-encoder must put the unrouted window's best passage in a kept
    document, and call no passage of another document relevant (a score above the model's
    own boundary, its probability 0.5), so the cut can add evidence from the kept documents
    but never drops evidence the final reader believes in. Where step 2b keeps the fused
    order (Chinese, rerank off) there is no second reader: the fused scores proposed the
    cut, so their own best passage cannot confirm it, and the flat window stays (issue 27:
    such a self-check cost 1.1 Recall@1000c on held-back laws). Otherwise routing is unsure
    and the flat window stays too. Sections are ranked, shown and scored, never cut, because
    a wrong section costs the evidence a flat search would have found.
    """
    votes = document_votes(scores, size)
    names = {d.doc_id: d.name for d in index.documents}
    notes = []
    if votes:
        shares = ", ".join(f"{names.get(d, d)} {share:.0%}" for d, share in votes[:5])
        notes.append(f"documents by share of the window: {shares}")
    routed: tuple[str, ...] = ()
    unsure = unconfirmed = ""
    if route_documents and len(votes) > route_documents:
        routed = tuple(doc for doc, _ in votes[:route_documents])
        if judge is not None:
            hits = window_hits(index, scores, size, question)
            reading = judge(hits)
            best, reader = best_passage(reading, len(hits))
            best_doc = hits[best].chunk.doc_id
            if reading is None or reader == FUSED_ORDER:  # the proposer's own best passage
                unconfirmed = ", ".join(names.get(d, d) for d in routed)
                notes.append(
                    "routing check: no cross-encoder runs, and the fused order that proposed "
                    f"the cut to {unconfirmed} cannot confirm it (not kept: no document cut)"
                )
                routed = ()
            elif best_doc not in routed:
                notes.append(
                    f"routing check: the unrouted window's best passage by {reader} is in "
                    f"{names.get(best_doc, best_doc)} (not kept: no document cut)"
                )
                unsure = names.get(best_doc, best_doc)
                routed = ()
            elif outside := relevant_outside(hits, reading, routed):
                hit, value = outside[0]
                doc = names.get(hit.chunk.doc_id, hit.chunk.doc_id)
                notes.append(
                    f"routing check: the unrouted window's best passage by {reader} is in "
                    f"{names.get(best_doc, best_doc)}, but {reader} also calls "
                    f"{len(outside)} passage(s) of other documents relevant (best: {doc}, "
                    f"{value:.2f} > {reading.relevant_above:g}) (not kept: no document cut)"
                )
                unsure = doc
                routed = ()
            else:
                bound = (
                    "no passage of another document is called relevant"
                    if reading.relevant_above is not None
                    else "the model states no relevance boundary, so only the best passage "
                    "is checked"
                )
                notes.append(
                    f"routing check: the unrouted window's best passage by {reader} is in "
                    f"{names.get(best_doc, best_doc)}, and {bound} (kept)"
                )
    sections = section_ranking(scores, size, routed)
    leaves = tuple(
        LocatedLeaf(leaf, index.nodes[leaf].heading_path, question, round(best, 4), "local")
        for leaf, best, _ in sections[:max_leaves]
    )
    if routed:
        kept = ", ".join(names.get(d, d) for d in routed)
        thinking = (
            f"Structure-aware locator: every chunk scored with its heading path; kept the "
            f"{len(routed)} best of {len(votes)} documents in the window ({kept}); sections "
            "below are ranked by their best chunk and are scores, not a cut."
        )
    elif unconfirmed:
        thinking = (
            "Structure-aware locator: every chunk scored with its heading path; routing to "
            f"{unconfirmed} was proposed by the fused scores and no second reader (no "
            "cross-encoder) could confirm it, so no document cut; sections below are scores, "
            "not a cut."
        )
    elif unsure:
        thinking = (
            "Structure-aware locator: every chunk scored with its heading path; routing was "
            f"unsure (the cross-encoder finds evidence in {unsure}, outside the documents with "
            "the largest share of the window), so no document cut; sections below are scores, "
            "not a cut."
        )
    else:
        thinking = (
            "Structure-aware locator: every chunk scored with its heading path; no document "
            "cut; sections below are ranked by their best chunk and are scores, not a cut."
        )
    # Every document in scope with its share (0: none of its chunks in the window) and its
    # best chunk, so the trace shows why a document was cut.
    table = document_table(
        index,
        votes,
        routed or None,
        "share of the window",
        passage=best_per_document(scores.doc_of_row, scores.score),
    )
    return LocateResult(
        leaves,
        thinking,
        "local",
        notes=tuple(notes),
        documents=routed,
        document_scores=table,
    )
