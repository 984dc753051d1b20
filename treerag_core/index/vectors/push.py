"""Push an index's three layers (documents, parents, children) into a vector store."""

from __future__ import annotations

from collections.abc import Callable

from treerag_core.index.vectors.base import KINDS, VectorStore
from treerag_core.strategies.drilldown.layers import layer_points

PUSH_BATCH = 1024


def push_index(
    index, store: VectorStore, progress: Callable[[int, int], None] | None = None
) -> dict[str, int]:
    """Upsert every point (ids are stable: pushing again replaces, never duplicates)."""
    points = layer_points(index)
    for start in range(0, len(points), PUSH_BATCH):
        store.upsert(points[start : start + PUSH_BATCH])
        if progress is not None:
            progress(min(start + PUSH_BATCH, len(points)), len(points))
    return {kind: sum(p.kind == kind for p in points) for kind in KINDS}
