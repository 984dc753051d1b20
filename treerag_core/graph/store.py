"""Leaf graphs to and from JSON (no pickle): the `graphs.json` file of an index folder."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from treerag_core.artifacts import read_json
from treerag_core.errors import IndexFormatError
from treerag_core.graph.types import Concept, ConceptRelation, LeafGraph, Span
from treerag_core.types import Usage

GRAPHS_FILE = "graphs.json"
GRAPH_FORMAT = 1  # bump when the JSON layout below changes


def _span(span: Span) -> list[Any]:
    return [span.start, span.end, list(span.chunk_ids)]


def _from_span(row: list[Any]) -> Span:
    start, end, chunk_ids = row
    return Span(int(start), int(end), tuple(str(c) for c in chunk_ids))


def graph_to_dict(graph: LeafGraph) -> dict[str, Any]:
    """A JSON-ready dict; spans are compact [start, end, [chunk ids]] triples."""
    return {
        "leaf_id": graph.leaf_id,
        "doc_id": graph.doc_id,
        "content_key": graph.content_key,
        "extractor": graph.extractor,
        "language": graph.language,
        "build_seconds": graph.build_seconds,
        "usage": {
            "input_tokens": graph.usage.input_tokens,
            "output_tokens": graph.usage.output_tokens,
            "cost_usd": graph.usage.cost_usd,
            "model": graph.usage.model,
        },
        "concepts": [
            {
                "id": c.node_id,
                "key": c.key,
                "name": c.name,
                "kind": c.kind,
                "description": c.description,
                "mentions": [_span(s) for s in c.mentions],
            }
            for c in graph.concepts
        ],
        "relations": [
            {
                "source": r.source,
                "target": r.target,
                "weight": r.weight,
                "count": r.count,
                "label": r.label,
                "description": r.description,
                "directed": r.directed,
                "evidence": [_span(s) for s in r.evidence],
            }
            for r in graph.relations
        ],
    }


def graph_from_dict(data: dict[str, Any]) -> LeafGraph:
    """The inverse of `graph_to_dict`; KeyError/TypeError/ValueError on a malformed dict."""
    usage = data.get("usage", {})
    return LeafGraph(
        leaf_id=str(data["leaf_id"]),
        doc_id=str(data["doc_id"]),
        content_key=str(data["content_key"]),
        extractor=str(data["extractor"]),
        language=str(data["language"]),
        build_seconds=float(data.get("build_seconds", 0.0)),
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cost_usd=float(usage.get("cost_usd", 0.0)),
            model=str(usage.get("model", "")),
        ),
        concepts=tuple(
            Concept(
                node_id=str(c["id"]),
                key=str(c["key"]),
                name=str(c["name"]),
                kind=str(c.get("kind", "term")),
                description=str(c.get("description", "")),
                mentions=tuple(_from_span(s) for s in c["mentions"]),
            )
            for c in data["concepts"]
        ),
        relations=tuple(
            ConceptRelation(
                source=str(r["source"]),
                target=str(r["target"]),
                weight=float(r["weight"]),
                count=int(r["count"]),
                label=str(r.get("label", "")),
                description=str(r.get("description", "")),
                directed=bool(r.get("directed", False)),
                evidence=tuple(_from_span(s) for s in r["evidence"]),
            )
            for r in data["relations"]
        ),
    )


def dumps_graphs(graphs: Iterable[LeafGraph]) -> str:
    rows = [graph_to_dict(g) for g in sorted(graphs, key=lambda g: g.leaf_id)]
    return json.dumps({"format": GRAPH_FORMAT, "graphs": rows}, ensure_ascii=False)


def loads_graphs(text: str, where: str = GRAPHS_FILE) -> dict[str, LeafGraph]:
    """{leaf id: graph} from `dumps_graphs` output; IndexFormatError when corrupt or newer."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise IndexFormatError(f"{where} is corrupt ({exc}); rebuild the index") from exc
    return graphs_from_data(data, where)


def graphs_from_data(data: Any, where: str = GRAPHS_FILE) -> dict[str, LeafGraph]:
    """{leaf id: graph} from the parsed JSON of a graphs file; IndexFormatError when corrupt."""
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        if data.get("format") != GRAPH_FORMAT:
            raise IndexFormatError(
                f"{where} has graph format {data.get('format')}, this TreeRAG reads "
                f"{GRAPH_FORMAT}; rebuild the index to refresh its graphs"
            )
        graphs = [graph_from_dict(row) for row in data["graphs"]]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise IndexFormatError(f"{where} is corrupt ({exc}); rebuild the index") from exc
    out = {g.leaf_id: g for g in graphs}
    if len(out) != len(graphs):
        raise IndexFormatError(f"{where} is corrupt (two graphs of one leaf); rebuild the index")
    return out


def save_graphs(graphs: Iterable[LeafGraph], folder: str | Path) -> Path:
    path = Path(folder) / GRAPHS_FILE
    path.write_text(dumps_graphs(graphs), encoding="utf-8")
    return path


def load_graphs(folder: str | Path) -> dict[str, LeafGraph] | None:
    """The graphs of an index folder, or None when it was built without them."""
    path = Path(folder) / GRAPHS_FILE
    if not path.is_file():
        return None
    return graphs_from_data(read_json(path, hint="rebuild the index"), str(path))
