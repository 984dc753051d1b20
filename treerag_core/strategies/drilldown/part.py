"""Drill-down's index part: the K-Type summaries and the document and section layer vectors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from treerag_core.base.errors import IndexFormatError
from treerag_core.index.parts import BuildCost, PartBuild
from treerag_core.strategies.drilldown.layers import (
    LAYERS_JSON,
    LAYERS_NPY,
    PART,
    Layers,
    build_layers,
    load_layers,
    save_layers,
)

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex


class LayersPart:
    """Built with every index (extractive K-Type summaries, or the LLM's when given a
    `ktype_summarizer`); vectors of unchanged texts are reused from the previous index."""

    key = PART
    files = (LAYERS_JSON, LAYERS_NPY)
    kept_on_rebuild: tuple[str, ...] = ()
    inputs = ("ktype_summarizer",)  # LLM K-Type summaries (ktype.make_ktype_summarizer)
    # benchmarks/bench_parts.py, 8 QASPER papers: 1.05 CPU s for 108 texts (extractive
    # summaries + embedding each text)
    cost = BuildCost("layer text (a document or a section)", 0.010)

    def build(self, index: CorpusIndex, ctx: PartBuild) -> Layers:
        summarizer = ctx.inputs.get("ktype_summarizer")
        return build_layers(index, ctx.embedder.embed, summarizer, ctx.previous)

    def save(self, part: Layers, folder: Path, index: CorpusIndex) -> None:
        save_layers(part, folder)

    def load(self, folder: Path, index: CorpusIndex, hint: str) -> Layers | None:
        layers = load_layers(folder, index.dim, hint)
        if layers is not None and (
            layers.doc_ids != [d.doc_id for d in index.documents]
            or any(p not in index.nodes for p in layers.parent_ids)
        ):
            raise IndexFormatError(f"{folder / LAYERS_JSON} does not match this index; {hint}")
        return layers

    def stats(self, part: Any | None) -> dict[str, int]:
        return {}

    def units(self, index: CorpusIndex) -> int:
        sections = sum(1 for n in index.leaves() if len(index.leaf_rows(n.node_id)))
        return len(index.documents) + sections
