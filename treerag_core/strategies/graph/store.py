"""Leaf graphs to and from JSON (no pickle): the `graphs.json` file of an index folder."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from treerag_core.base.artifacts import (
    is_finite_number,
    is_whole_number,
    present,
    read_json,
)
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import Chunk, Usage
from treerag_core.strategies.graph.types import Concept, ConceptRelation, LeafGraph, Span

GRAPHS_FILE = "graphs.json"
GRAPH_FORMAT = 1  # bump when the JSON layout below changes


def _span(span: Span) -> list[Any]:
    return [span.start, span.end, list(span.chunk_ids)]


def _from_span(row: Any) -> Span:
    """A [start, end, [chunk ids]] triple, checked: the offsets slice the document text."""
    if not isinstance(row, list) or len(row) != 3:
        raise ValueError(f"span {row!r:.60} is not a [start, end, [chunk ids]] triple")
    start, end, chunk_ids = row
    if not (is_whole_number(start) and is_whole_number(end) and 0 <= start <= end):
        raise ValueError(f"span [{start!r:.20}, {end!r:.20}] is not 0 <= start <= end")
    if not isinstance(chunk_ids, list) or not all(isinstance(c, str) for c in chunk_ids):
        raise ValueError(f"span [{start}, {end}] has chunk ids {chunk_ids!r:.60}, not strings")
    return Span(start, end, tuple(chunk_ids))


def _finite(value: Any, what: str) -> float:
    """A JSON number as a float; NaN and Infinity (which Python's json reads) are refused."""
    if not is_finite_number(value):
        raise ValueError(f"{what} {value!r:.30} is not a finite number")
    return float(value)


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
    """The inverse of `graph_to_dict`; KeyError/TypeError/ValueError on a malformed dict.

    Checks what one graph can check alone (spans, finite numbers, relation ends that are
    concepts of the graph); `check_graphs` checks the graphs against their index.
    """
    usage = data.get("usage", {})
    graph = LeafGraph(
        leaf_id=str(data["leaf_id"]),
        doc_id=str(data["doc_id"]),
        content_key=str(data["content_key"]),
        extractor=str(data["extractor"]),
        language=str(data["language"]),
        build_seconds=_finite(data.get("build_seconds", 0.0), "build_seconds"),
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cost_usd=_finite(usage.get("cost_usd", 0.0), "cost_usd"),
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
                weight=_finite(r["weight"], f"relation {r.get('source')!r:.40} weight"),
                count=int(r["count"]),
                label=str(r.get("label", "")),
                description=str(r.get("description", "")),
                directed=bool(r.get("directed", False)),
                evidence=tuple(_from_span(s) for s in r["evidence"]),
            )
            for r in data["relations"]
        ),
    )
    _check_ends(graph)
    return graph


def _check_ends(graph: LeafGraph) -> None:
    """Concept ids are unique and every relation joins two of them (search indexes by id)."""
    ids = {c.node_id for c in graph.concepts}
    if len(ids) != len(graph.concepts):
        raise ValueError("two concepts share an id")
    for rel in graph.relations:
        missing = [end for end in (rel.source, rel.target) if end not in ids]
        if missing:
            raise ValueError(
                f"relation {rel.source} -> {rel.target} names {missing[0]}, not a concept of "
                "the graph"
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
        rows = data["graphs"]
        if not isinstance(rows, list):
            raise TypeError(f"graphs is a JSON {type(rows).__name__}, not an array")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise IndexFormatError(f"{where} is corrupt ({exc}); rebuild the index") from exc
    graphs = []
    for i, row in enumerate(rows):
        try:
            graphs.append(graph_from_dict(row))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            leaf = row.get("leaf_id") if isinstance(row, dict) else None
            what = f"lacks the field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise IndexFormatError(
                f"{where} is corrupt (graph {i}, leaf {leaf!r:.40}: {what:.200}); rebuild the index"
            ) from exc
    out = {g.leaf_id: g for g in graphs}
    if len(out) != len(graphs):
        raise IndexFormatError(f"{where} is corrupt (two graphs of one leaf); rebuild the index")
    return out


def check_graphs(
    graphs: Mapping[str, LeafGraph],
    chunks: Sequence[Chunk],
    texts: Mapping[str, str],
    where: str = GRAPHS_FILE,
    hint: str = "rebuild the index",
) -> None:
    """Each graph against its index: its chunk ids are chunks of its leaf and document, and
    its spans lie inside that document's text (evidence is read as `text[start:end]`).

    Raises:
        IndexFormatError: naming `where`, the leaf and the bad concept or relation.
    """
    by_id = {c.chunk_id: c for c in chunks}
    for leaf_id, graph in graphs.items():
        items = [(f"concept {c.node_id}", c.mentions) for c in graph.concepts]
        items += [(f"relation {r.source} -> {r.target}", r.evidence) for r in graph.relations]
        for what, spans in items:
            for span in spans:
                problem = _span_problem(span, graph, by_id, texts)
                if problem:
                    raise IndexFormatError(
                        f"{where}: the graph of leaf {leaf_id!r:.40} is corrupt ({what} "
                        f"{problem}); {hint}"
                    )


def _span_problem(
    span: Span, graph: LeafGraph, chunks: Mapping[str, Chunk], texts: Mapping[str, str]
) -> str:
    """What is wrong with one span of `graph` in its index ("" when nothing)."""
    text = texts.get(graph.doc_id)
    if text is None or span.end > len(text):
        size = "not in the index" if text is None else f"{len(text):,} characters"
        return f"spans [{span.start}, {span.end}), outside document {graph.doc_id!r:.40} ({size})"
    for chunk_id in span.chunk_ids:
        chunk = chunks.get(chunk_id)
        if chunk is None or chunk.source_node_id != graph.leaf_id or chunk.doc_id != graph.doc_id:
            return f"names chunk {chunk_id!r:.40}, not a chunk of the leaf"
    return ""


def save_graphs(graphs: Iterable[LeafGraph], folder: str | Path) -> Path:
    path = Path(folder) / GRAPHS_FILE
    path.write_text(dumps_graphs(graphs), encoding="utf-8")
    return path


def load_graphs(folder: str | Path) -> dict[str, LeafGraph] | None:
    """The graphs of an index folder, or None when it was built without them."""
    path = Path(folder) / GRAPHS_FILE
    if not present(path):
        return None
    return graphs_from_data(read_json(path, hint="rebuild the index"), str(path))
