"""HiRAG view: the question's graph neighbourhood (entities, bridge path, chosen communities
lit) and the context sections as tables. Reads only ContextSections, so a stored trace works."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import Engine, hirag_graph_store
from treerag_core.base.types import ContextSection, Trace

MAX_NODES = 60  # beyond this a force layout stops being readable
LABEL_CHARS = 24
COMMUNITY_COLOURS = ("#BFDBFE", "#BBF7D0", "#FDE68A", "#FBCFE8", "#DDD6FE", "#A5F3FC")
PALETTE = {
    "entity": "#EA580C",  # a top entity of the question
    "path": "#2563EB",  # border and edges of the bridge path
    "other": "#E2E8F0",
    "edge": "#CBD5E1",
    "no_path": "#DC2626",
}
HIDDEN_COLUMNS = {"nodes", "entity_keys", "key", "source_key", "target_key"}


@dataclass
class HiragGraphView:
    """Nodes and edges for vis-network, and how many candidate nodes were left out."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0
    communities: list[str] = field(default_factory=list)  # lit communities, colour order


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _section(sections: Sequence[ContextSection], kind: str) -> ContextSection | None:
    return next((s for s in sections if s.kind == kind), None)


def neighbourhood(
    sections: Sequence[ContextSection], store: Any = None, max_nodes: int = MAX_NODES
) -> HiragGraphView:
    """The graph a question touched, most important nodes first: path, top entities,
    relation ends, then members of the chosen communities; at most `max_nodes`.

    With a graph `store`, edges among the shown nodes are drawn too, not only those the
    sections list.
    """
    names: dict[str, str] = {}
    order: list[str] = []
    entities = _section(sections, "entities")
    relations = _section(sections, "relations")
    reports = _section(sections, "reports")
    path = _section(sections, "path")
    path_nodes: list[str] = []
    path_edges: set[tuple[str, str]] = set()
    for row in path.rows if path else ():
        nodes = list(row.get("nodes", ()))
        path_nodes.extend(nodes)
        path_edges.update(tuple(sorted(p)) for p in itertools.pairwise(nodes))
    top = [str(r["key"]) for r in entities.rows] if entities else []
    for row in entities.rows if entities else ():
        names[str(row["key"])] = str(row["entity"])
    rel_pairs = []
    for row in relations.rows if relations else ():
        a, b = str(row["source_key"]), str(row["target_key"])
        names.setdefault(a, str(row["source"]))
        names.setdefault(b, str(row["target"]))
        rel_pairs.append((a, b))
    member: dict[str, int] = {}
    lit = [str(r["community"]) for r in reports.rows] if reports else []
    for i, row in enumerate(reports.rows if reports else ()):
        for key in row.get("entity_keys", ()):
            member.setdefault(str(key), i % len(COMMUNITY_COLOURS))
    order = list(dict.fromkeys(path_nodes + top + [k for p in rel_pairs for k in p]))
    order += [k for k in member if k not in order]
    shown, left_out = order[:max_nodes], max(0, len(order) - max_nodes)
    keep = set(shown)
    view = HiragGraphView(left_out=left_out, communities=lit)
    top_set, path_set = set(top), set(path_nodes)
    for key in shown:
        if store is not None and key not in names:
            entity = store.get_node(key)
            names[key] = entity.name if entity is not None else key
        colour = PALETTE["entity"] if key in top_set else PALETTE["other"]
        if key not in top_set and key in member:
            colour = COMMUNITY_COLOURS[member[key]]
        view.nodes.append(
            {
                "id": key,
                "label": _short(names.get(key, key)),
                "title": names.get(key, key),
                "color": {
                    "background": colour,
                    "border": PALETTE["path"] if key in path_set else "#64748B",
                },
                "borderWidth": 4 if key in path_set else 1,
                "shape": "dot" if key not in top_set else "star",
                "size": 16 if key in top_set or key in path_set else 10,
            }
        )
    pairs = {tuple(sorted(p)) for p in rel_pairs} | path_edges
    if store is not None:
        pairs |= {tuple(sorted((r.source, r.target))) for r in store.subgraph_edges(shown)}
    for a, b in sorted(pairs):
        if a in keep and b in keep:
            on_path = (a, b) in path_edges
            view.edges.append(
                {
                    "from": a,
                    "to": b,
                    "color": PALETTE["path"] if on_path else PALETTE["edge"],
                    "width": 4 if on_path else 1,
                }
            )
    return view


def graph_config(height: int) -> dict[str, Any]:
    return {
        "height": f"{height}px",
        "width": "100%",
        "groups": {},
        "physics": {"enabled": True, "stabilization": {"iterations": 200}},
        "edges": {"arrows": {"to": {"enabled": False}}, "smooth": False},
        "interaction": {"hover": True, "tooltipDelay": 200},
    }


def _component():
    # agraph() takes no key (its iframe remounts on every change); the declared component does.
    from streamlit_agraph import _agraph

    return _agraph


def draw(view: HiragGraphView, key: str, height: int = 460) -> None:
    data = json.dumps({"nodes": view.nodes, "edges": view.edges}, ensure_ascii=False)
    digest = hashlib.sha1("\x1f".join(n["id"] for n in view.nodes).encode()).hexdigest()[:10]
    _component()(data=data, config=json.dumps(graph_config(height)), key=f"{key}_{digest}")


def section_table(section: ContextSection) -> pd.DataFrame:
    """A section's rows without the id columns only the graph needs."""
    rows = [{k: v for k, v in row.items() if k not in HIDDEN_COLUMNS} for row in section.rows]
    return pd.DataFrame(rows)


def is_hirag_trace(sections: Sequence[ContextSection]) -> bool:
    """Whether a trace's sections are the HiRAG kinds this view draws."""
    return any(s.kind in {"entities", "relations", "reports", "path"} for s in sections)


def graph_store_for(index: Any) -> tuple[Any, str]:
    """The index's HiRAG graph store when it is built or cached (never builds), and "" ; else
    None and why (not built, out of date, or a corrupt build: IndexFormatError's message)."""
    return hirag_graph_store(index)


def render_hirag(
    sections: Sequence[ContextSection], store: Any = None, key: str = "hirag_view"
) -> None:
    """The whole view: legend, graph, then one table per section (entities, relations,
    reports, path). Sections come from `Retrieval.sections` or a stored trace."""
    if not sections:
        st.info("This mode assembled no graph context (naive mode searches passages only).")
        return
    view = neighbourhood(sections, store)
    legend = "★ orange: the question's top entities · blue border and edges: the bridge path"
    if view.communities:
        legend += f" · tinted: members of the chosen communities ({', '.join(view.communities)})"
    if view.left_out:
        legend += f" · {view.left_out} more nodes not drawn"
    st.caption(legend)
    if view.nodes:
        draw(view, key)
    for section in sections:
        st.markdown(f"**{section.title}** · {len(section.rows)} rows")
        if section.kind == "path" and any(r.get("path") == "no path" for r in section.rows):
            st.warning("Some key entities are not connected: those legs have no path.")
        st.dataframe(section_table(section), hide_index=True, width="stretch")


def hirag_neighbourhood(trace: Trace, engine: Engine) -> None:
    """The HiRAG family's Ask view: the traced entities' neighbourhood in the corpus graph."""
    from ui.common.text_safety import plain

    if not is_hirag_trace(trace.sections):
        return
    st.subheader("HiRAG graph neighbourhood")
    store, problem = graph_store_for(engine.index)
    if problem:  # e.g. a corrupt build: say so, and draw what the trace holds
        st.warning(
            f"The HiRAG graph cannot be read: {plain(problem)}. The neighbourhood "
            "below is drawn from this trace's tables only.",
            icon=":material/error:",
        )
    render_hirag(trace.sections, store, key="ask_hirag")
