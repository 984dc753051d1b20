"""A leaf's knowledge graph in the explorer: the question's concepts, paths and edges lit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core.graph.context import graph_sections
from treerag_core.graph.search import GraphResult
from treerag_core.graph.types import CO_OCCURS, LeafGraph

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
LABEL_CHARS = 24


@dataclass(frozen=True)
class LeafGraphView:
    """vis-network nodes and edges for one leaf graph, and how many concepts were left out."""

    nodes: tuple[dict[str, Any], ...]
    edges: tuple[dict[str, Any], ...]
    hidden: int


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LABEL_CHARS else flat[: LABEL_CHARS - 1] + "…"


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
                "label": _short(concept.name),
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
            "forceAtlas2Based": {"springLength": 140, "avoidOverlap": 0.6},
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
    stats = graph.stats()
    st.caption(
        f"{stats['nodes']} concepts · {stats['edges']} edges · max degree "
        f"{stats['max_degree']} · built in {float(stats['build_seconds']) * 1000:.0f} ms "
        f"({stats['extractor']})"
        + (f" · showing {len(view.nodes)} (the lit and most mentioned)" if view.hidden else "")
    )
    st.caption(
        "orange: named in the question · light orange: on a path · yellow: reached by the walk"
        " · thick orange lines: edges used"
    )
    data = json.dumps({"nodes": view.nodes, "edges": view.edges}, ensure_ascii=False)
    digest = hashlib.sha1("\x1f".join(n["id"] for n in view.nodes).encode()).hexdigest()[:10]
    value = _component()(
        data=data,
        config=json.dumps(view_config(height)),
        key=f"{key}_{digest}",
        default=None,
    )
    if result is not None:
        st.markdown("**Paths** (each hop with the sentence it came from)")
        st.dataframe(path_table(graph, result, doc_text, heading), hide_index=True)
        st.markdown("**Concepts the question names**")
        st.dataframe(concept_table(result, graph), hide_index=True)
    return value if isinstance(value, str) else None
