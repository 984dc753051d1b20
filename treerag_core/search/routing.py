"""Document-level routing scores for the trace: one table shape for every routing strategy."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from treerag_core.base.types import DocumentScore

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex


_GROUPS: dict[int, tuple[Sequence[str], list[str], np.ndarray, np.ndarray]] = {}
_GROUPS_KEPT = 8  # a scope's grouping is reused by every question on it
_LOCK = threading.Lock()  # sessions of the explorer query in threads


def _groups(doc_of_row: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(documents, row order grouping them, each group's start), cached per row table: a
    scope of 100k chunks is grouped once, not per question."""
    got = _GROUPS.get(id(doc_of_row))
    if got is not None and got[0] is doc_of_row:  # the table itself is held: ids stay valid
        return got[1], got[2], got[3]
    position: dict[str, int] = {}
    inverse = np.fromiter(
        (position.setdefault(d, len(position)) for d in doc_of_row), np.int64, len(doc_of_row)
    )
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(len(position)))
    with _LOCK:
        if len(_GROUPS) >= _GROUPS_KEPT:
            _GROUPS.pop(next(iter(_GROUPS)), None)
        _GROUPS[id(doc_of_row)] = (doc_of_row, list(position), order, starts)
    return list(position), order, starts


def best_per_document(doc_of_row: Sequence[str], score: np.ndarray) -> dict[str, float]:
    """The best score of each document's chunks (arrays parallel to the scope's rows)."""
    if not len(doc_of_row):
        return {}
    docs, order, starts = _groups(doc_of_row)
    best = np.maximum.reduceat(np.asarray(score, dtype=np.float64)[order], starts)
    return dict(zip(docs, best.tolist(), strict=True))


def document_table(
    index: CorpusIndex,
    scored: Sequence[tuple[str, float]],
    kept: Collection[str] | None,
    basis: str,
    *,
    in_scope: Collection[str] = (),
    passage: Mapping[str, float] | None = None,
    dense: Mapping[str, float] | None = None,
    bm25: Mapping[str, float] | None = None,
) -> tuple[DocumentScore, ...]:
    """Every document in scope, ranked by its score, best first.

    `scored` are (doc id, score) pairs; documents of `in_scope` or `passage` without a score
    rank after them with 0 (e.g. no chunk in the window). `kept` None means no document was
    cut (every one searched).
    """
    values = dict(scored)
    for doc in sorted({*in_scope, *(passage or {})}):
        values.setdefault(doc, 0.0)
    # Ties (e.g. the zeros) fall back to the best passage, then to the given order (stable).
    best = passage or {}
    order = sorted(values, key=lambda d: (-values[d], -best.get(d, float("-inf"))))
    names = {d.doc_id: d.name for d in index.documents}

    def part(table: Mapping[str, float] | None, doc: str) -> float | None:
        return None if table is None or doc not in table else float(table[doc])

    return tuple(
        DocumentScore(
            doc_id=doc,
            name=names.get(doc, doc),
            rank=rank,
            score=float(values[doc]),
            kept=kept is None or doc in kept,
            basis=basis,
            dense=part(dense, doc),
            bm25=part(bm25, doc),
            passage=part(passage, doc),
        )
        for rank, doc in enumerate(order, start=1)
    )


def document_rows(scores: Sequence[DocumentScore]) -> list[dict[str, object]]:
    """The table every view shows (explorer, CLI): one row per document, parts only if any."""
    rows: list[dict[str, object]] = []
    for s in scores:
        row: dict[str, object] = {
            "rank": s.rank,
            "document": s.name,
            "score": round(s.score, 4),
            "searched": "kept" if s.kept else "cut",
        }
        for name in ("dense", "bm25", "passage"):
            value = getattr(s, name)
            if value is not None:
                row[name] = round(value, 4)
        rows.append(row)
    return rows
