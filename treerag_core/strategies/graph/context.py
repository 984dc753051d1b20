"""Graph search results as context: path lines for synthesis and stage rows for the trace."""

from __future__ import annotations

from treerag_core.base.types import ContextSection
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.strategies.graph.search import GraphPath, GraphResult
from treerag_core.strategies.graph.types import ConceptRelation, LeafGraph

EVIDENCE_CHARS = 240  # of each edge's first supporting sentence, in the synthesis context


def _arrow(rel: ConceptRelation, names: dict[str, str], forward: bool) -> str:
    a, b = (rel.source, rel.target) if forward else (rel.target, rel.source)
    if rel.directed and not forward:
        return f"{names[a]} ←{rel.label}— {names[b]}"
    return f"{names[a]} —{rel.label}→ {names[b]}"


def path_text(path: GraphPath, names: dict[str, str]) -> str:
    """`A —relation→ B —relation→ C`, each hop written in the path's reading direction."""
    parts = [names[path.nodes[0]]]
    for a, rel in zip(path.nodes, path.edges, strict=False):
        forward = rel.source == a
        arrow = _arrow(rel, names, forward)
        parts.append(arrow[len(names[a]) :])  # drop the repeated left-hand name
    return "".join(parts)


def edge_evidence(rel: ConceptRelation, doc_text: str) -> tuple[str, str]:
    """(chunk id, sentence) of an edge's first supporting sentence."""
    if not rel.evidence:
        return "", ""
    span = rel.evidence[0]
    text = " ".join(doc_text[span.start : span.end].split())
    if len(text) > EVIDENCE_CHARS:
        text = text[: EVIDENCE_CHARS - 1] + "…"
    return (span.chunk_ids[0] if span.chunk_ids else ""), text


def graph_sections(
    graph: LeafGraph, result: GraphResult, doc_text: str, heading_path: str
) -> tuple[ContextSection, ContextSection]:
    """The leaf's paths (kind "graph": synthesis reads its text and may cite its chunks) and
    its stage record (kind "graph-stage": matched concepts, ranks, time, and the estimated
    tokens the paths add to the synthesis context; no text)."""
    names = {c.node_id: c.name for c in graph.concepts}
    lines, rows, chunk_ids = [], [], []
    for n, path in enumerate(result.paths, start=1):
        line = path_text(path, names)
        hops = []
        for rel in path.edges:
            chunk_id, sentence = edge_evidence(rel, doc_text)
            hops.append((chunk_id, sentence))
            if chunk_id:
                chunk_ids.append(chunk_id)
        evidence = " | ".join(f"[{c}] {s}" for c, s in hops if s)
        lines.append(f"{n}. {line}\n   evidence: {evidence}")
        rows.append(
            {
                "leaf": graph.leaf_id,
                "section": heading_path,
                "path": line,
                "hops": len(path.edges),
                "score": path.score,
                "weights": ", ".join(f"{r.weight:g}" for r in path.edges),
                "chunks": ", ".join(dict.fromkeys(c for c, _ in hops if c)),
                "evidence": evidence,
            }
        )
    # Titled by the leaf's own heading path: it is the label synthesis shows the model, so
    # a `[Source: path]` citing the paths maps to the leaf like a passage's would.
    intro = (
        "图路径（概念 —关系→ 概念），每一跳附其来源句："
        if graph.language == "zh"
        else "Graph paths (concept —relation→ concept), each hop with its source sentence:"
    )
    paths = ContextSection(
        kind="graph",
        title=heading_path,
        text="\n".join([intro, *lines]) if lines else "",
        rows=tuple(rows),
        chunk_ids=tuple(dict.fromkeys(chunk_ids)),
    )
    rank = dict(result.ranks)
    stage_rows = [
        {
            "leaf": graph.leaf_id,
            "concept": m.name,
            "node_id": m.node_id,
            "matched": m.how,
            "match_score": m.score,
            "pagerank": rank.get(m.node_id, 0.0),
        }
        for m in result.matches
    ]
    matched = {m.node_id for m in result.matches}
    stage_rows += [
        {
            "leaf": graph.leaf_id,
            "concept": names[node_id],
            "node_id": node_id,
            "matched": "",
            "match_score": 0.0,
            "pagerank": score,
        }
        for node_id, score in result.ranks
        if node_id not in matched
    ]
    summary = (
        f"{len(result.matches)} matched concepts, {len(result.paths)} paths, "
        f"{len(result.edges_used)} edges used of {len(graph.relations)}, "
        f"{len(result.chunk_scores)} chunks scored, {result.seconds * 1000:.1f} ms, "
        f"~{estimate_tokens(paths.text)} context tokens"
    )
    stage = ContextSection(
        kind="graph-stage",
        title=f"Graph stage in {heading_path}: {summary}",
        text="",
        rows=tuple(stage_rows),
        chunk_ids=tuple(c for c, _ in result.chunk_scores),
    )
    return paths, stage
