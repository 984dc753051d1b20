"""A leaf's knowledge graph in the explorer: the question's concepts, paths and edges lit."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import GraphResult, graph_sections
from treerag_core.base.text_rules import UNSPACED_RANGES, is_unspaced
from treerag_core.strategies.graph.types import CO_OCCURS, LeafGraph

COLOURS = {
    "match": "#EA580C",  # a concept the question names
    "path": "#FDBA74",  # on a path between matched concepts
    "ranked": "#FDE68A",  # reached by the walk (PageRank), not on a path
    "plain": "#E2E8F0",
    "border": "#475569",
    "edge": "#CBD5E1",
    "edge_used": "#EA580C",
}
FONT_PX = 20  # legible on a projector (>= 18)
MAX_NODES = 40  # a leaf graph can hold hundreds of concepts: show the lit ones and the busiest
MAX_EDGES = 120
LINE_UNITS = 16  # a label line: 16 Latin letters or 8 CJK characters
MAX_LINES = 3
# A label's pieces: one CJK character, a run of other non-space characters, or a space.
_PIECES = re.compile(f"[{UNSPACED_RANGES}]|[^\\s{UNSPACED_RANGES}]+| ")


@dataclass(frozen=True)
class LeafGraphView:
    """vis-network nodes and edges for one leaf graph, and how many concepts were left out."""

    nodes: tuple[dict[str, Any], ...]
    edges: tuple[dict[str, Any], ...]
    hidden: int


def _width(piece: str) -> int:
    """Display width: a CJK character is about two Latin letters wide."""
    return sum(2 if is_unspaced(ch) else 1 for ch in piece)


def wrap_label(text: str, width: int = LINE_UNITS, max_lines: int = MAX_LINES) -> str:
    """A node label in lines of at most `width` units: English broken between words, Chinese
    between any two characters (vis-network wraps only at spaces, so CJK is broken here);
    at most `max_lines` lines, the last ending in "…" when cut."""
    pieces = _PIECES.findall(" ".join(text.split()))
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if piece == " ":
            line += " " if line else ""
            continue
        while _width(piece) > width:  # a word longer than a line: cut it
            room = width - _width(line)
            cut = max(1, _fit(piece, room)) if room > 1 else 0
            if cut:
                line, piece = line + piece[:cut], piece[cut:]
            lines.append(line.rstrip())
            line = ""
        if _width(line + piece) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        lines = [*lines[: max_lines - 1], last[: _fit(last, width - 1)] + "…"]
    return "\n".join(lines)


def _fit(piece: str, room: int) -> int:
    """How many leading characters of `piece` fit in `room` width units."""
    used = 0
    for n, ch in enumerate(piece):
        used += _width(ch)
        if used > room:
            return n
    return len(piece)


def build_view(
    graph: LeafGraph, result: GraphResult | None = None, max_nodes: int = MAX_NODES
) -> LeafGraphView:
    """The concepts to draw (lit ones first, then the most mentioned) and the edges among them."""
    matched = {m.node_id for m in result.matches} if result else set()
    on_path = {n for p in result.paths for n in p.nodes} if result else set()
    ranked = {n for n, _ in result.ranks} if result else set()
    used = set(result.edges_used) if result else set()
    lit = list(result.lit_nodes) if result else []
    busiest = sorted(graph.concepts, key=lambda c: (-c.count, c.node_id))
    shown = list(dict.fromkeys(lit + [c.node_id for c in busiest]))[:max_nodes]
    keep = set(shown)
    by_id = {c.node_id: c for c in graph.concepts}
    nodes = []
    for node_id in shown:
        concept = by_id[node_id]
        if node_id in matched:
            role = "match"
        elif node_id in on_path:
            role = "path"
        elif node_id in ranked:
            role = "ranked"
        else:
            role = "plain"
        font = "#FFFFFF" if role == "match" else "#0F172A"
        title = f"{concept.name} ({concept.kind}) · {concept.count} mentions"
        if concept.description:
            title += f"\n{concept.description}"
        nodes.append(
            {
                "id": node_id,
                "label": wrap_label(concept.name),
                "title": title,
                "shape": "box",
                "borderWidth": 3 if role != "plain" else 1,
                "color": {"background": COLOURS[role], "border": COLOURS["border"]},
                "font": {"size": FONT_PX, "color": font},
                "role": role,
            }
        )
    inside = [r for r in graph.relations if r.source in keep and r.target in keep]
    inside.sort(key=lambda r: (r not in used, -r.weight, r.source, r.target))
    edges = []
    for rel in inside[:MAX_EDGES]:
        hit = rel in used
        edge: dict[str, Any] = {
            "from": rel.source,
            "to": rel.target,
            "title": f"{rel.label} · weight {rel.weight:g} · {rel.count} sentences",
            "color": {"color": COLOURS["edge_used" if hit else "edge"]},
            "width": 5 if hit else 1,
            "arrows": {"to": {"enabled": rel.directed}},
            "used": hit,
        }
        if hit and rel.label != CO_OCCURS:
            edge["label"] = rel.label
            edge["font"] = {"size": FONT_PX - 2, "align": "top"}
        edges.append(edge)
    return LeafGraphView(tuple(nodes), tuple(edges), len(graph.concepts) - len(shown))


def view_config(height: int) -> dict[str, Any]:
    """Force layout with a fixed seed (the same graph lays out the same way), no groups."""
    return {
        "height": f"{height}px",
        "width": "100%",
        "autoResize": True,
        "groups": {},
        "layout": {"randomSeed": 7, "hierarchical": {"enabled": False}},
        "physics": {
            "enabled": True,
            "solver": "forceAtlas2Based",
            "forceAtlas2Based": {"springLength": 150, "avoidOverlap": 0.9},
            "stabilization": {"enabled": True, "iterations": 250},
        },
        "interaction": {"hover": True, "tooltipDelay": 150},
        "nodes": {"font": {"size": FONT_PX}, "margin": 8},
        "edges": {"smooth": {"enabled": False}},
    }


def path_table(graph: LeafGraph, result: GraphResult, doc_text: str, heading: str) -> pd.DataFrame:
    """One row per path: `A —relation→ B`, its score, and each hop's source chunk."""
    paths, _stage = graph_sections(graph, result, doc_text, heading)
    columns = ["path", "hops", "score", "weights", "chunks", "evidence"]
    return pd.DataFrame([{k: row[k] for k in columns} for row in paths.rows], columns=columns)


def concept_table(result: GraphResult, graph: LeafGraph) -> pd.DataFrame:
    """The matched concepts, how they matched and their PageRank."""
    names = {c.node_id: c.name for c in graph.concepts}
    rank = dict(result.ranks)
    rows = [
        {
            "concept": names[m.node_id],
            "matched": m.how,
            "score": m.score,
            "pagerank": rank.get(m.node_id, 0.0),
        }
        for m in result.matches
    ]
    return pd.DataFrame(rows, columns=["concept", "matched", "score", "pagerank"])


def _component() -> Callable[..., Any]:
    # agraph() takes no key (a colour change would remount it); its component function does.
    from streamlit_agraph import _agraph

    return _agraph


def legend() -> None:
    st.caption(
        "orange: named in the question · light orange: on a path · yellow: reached by the walk"
        " · thick orange lines: edges used"
    )


def stats_caption(graph: LeafGraph, view: LeafGraphView) -> str:
    stats = graph.stats()
    return (
        f"{stats['nodes']} concepts · {stats['edges']} edges · max degree "
        f"{stats['max_degree']} · built in {float(stats['build_seconds']) * 1000:.0f} ms "
        f"({stats['extractor']})"
        + (f" · showing {len(view.nodes)} (the lit and most mentioned)" if view.hidden else "")
    )


def draw_graph(view: LeafGraphView, *, key: str, height: int = 560) -> str | None:
    """Draw a built view; returns the id of a clicked concept."""
    data = json.dumps({"nodes": view.nodes, "edges": view.edges}, ensure_ascii=False)
    digest = hashlib.sha1("\x1f".join(n["id"] for n in view.nodes).encode()).hexdigest()[:10]
    value = _component()(
        data=data,
        config=json.dumps(view_config(height)),
        key=f"{key}_{digest}",
        default=None,
    )
    return value if isinstance(value, str) else None


def render_leaf_graph(
    graph: LeafGraph,
    result: GraphResult | None = None,
    *,
    doc_text: str = "",
    heading: str = "",
    key: str = "leaf_graph",
    height: int = 560,
    max_nodes: int = MAX_NODES,
) -> str | None:
    """Draw a leaf graph with the question's concepts, paths and used edges lit, its stats,
    and (with a result) the path and concept tables. Returns the id of a clicked concept."""
    view = build_view(graph, result, max_nodes)
    st.caption(stats_caption(graph, view))
    legend()
    clicked = draw_graph(view, key=key, height=height)
    if result is not None:
        st.markdown("**Paths** (each hop with the sentence it came from)")
        st.dataframe(path_table(graph, result, doc_text, heading), hide_index=True)
        st.markdown("**Concepts the question names**")
        st.dataframe(concept_table(result, graph), hide_index=True)
    return clicked
