"""Document-level routing scores for the trace: one table shape for every routing strategy."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from treerag_core.types import DocumentScore

if TYPE_CHECKING:
    from treerag_core.index import CorpusIndex


def best_per_document(doc_of_row: Sequence[str], score: np.ndarray) -> dict[str, float]:
    """The best score of each document's chunks (arrays parallel to the scope's rows)."""
    best: dict[str, float] = {}
    for doc, value in zip(doc_of_row, np.asarray(score, dtype=np.float64).tolist(), strict=True):
        if doc not in best or value > best[doc]:
            best[doc] = value
    return best


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
