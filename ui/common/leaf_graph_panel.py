"""The Documents page's leaf graphs: per-leaf statistics, and the inspected leaf's graph."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from treerag_core import CorpusIndex, GraphResult, graphs_of, leaf_graph_search
from treerag_core.base.types import Trace
from treerag_core.strategies.graph.types import LeafGraph
from ui.common.graph_guidance import documents_note
from ui.common.graph_view import build_view, draw_graph, legend, path_table, stats_caption
from ui.common.resources import Corpus
from ui.common.session import AskState
from ui.common.text_safety import plain

PANEL_NODES = 30  # fewer than on Ask: the graph shares the row with its tables (projector)


def _cost(graph: LeafGraph) -> str:
    if not graph.extractor.startswith("llm"):
        return ""
    return f"${graph.usage.cost_usd:.4f}" if graph.usage.cost_known else "unknown"


def graph_stats_frame(index: CorpusIndex, doc_id: str | None = None) -> pd.DataFrame:
    """One row per leaf graph (of `doc_id`, or all): size, hub check, extractor, build cost."""
    rows = []
    graphs = graphs_of(index) or {}
    for leaf_id in sorted(graphs):
        graph = graphs[leaf_id]
        node = index.nodes.get(leaf_id)
        if node is None or (doc_id is not None and node.doc_id != doc_id):
            continue
        llm = graph.extractor.startswith("llm")
        rows.append(
            {
                "leaf": leaf_id,
                "section": node.heading_path,
                "characters": node.end - node.start,
                "nodes": len(graph.concepts),
                "edges": len(graph.relations),
                "max degree": graph.max_degree,
                "extractor": graph.extractor,
                "build ms": round(graph.build_seconds * 1000, 1),
                "tokens": graph.usage.input_tokens + graph.usage.output_tokens if llm else None,
                "cost": _cost(graph),
            }
        )
    columns = [
        "leaf", "section", "characters", "nodes", "edges", "max degree", "extractor",
        "build ms", "tokens", "cost",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def graph_stats(index: CorpusIndex, doc_id: str, kind: str) -> None:
    """Which leaves of the document have a graph, and each graph's statistics; or, for an
    index without them, how to add them to this corpus (`kind`) in the explorer."""
    if graphs_of(index) is None:
        st.caption(documents_note(kind))  # self-contained: right under any document
        return
    frame = graph_stats_frame(index, doc_id)
    threshold = index.settings.graph_min_leaf_chars
    label = (
        f"Leaf knowledge graphs · {len(frame)} leaves of this document "
        f"(leaves from {threshold:,} characters)"
    )
    with st.expander(label, expanded=False):
        if frame.empty:
            st.caption(f"No leaf of this document reaches {threshold:,} characters.")
            return
        everything = graph_stats_frame(index)
        st.caption(
            f"Whole index: {len(everything)} leaf graphs, {int(everything['nodes'].sum())} "
            f"nodes, {int(everything['edges'].sum())} edges, largest degree "
            f"{int(everything['max degree'].max())} (the hub check), built in "
            f"{everything['build ms'].sum() / 1000:.2f} s"
            + _llm_total(index)
            + ". Inspect a leaf below to see its graph."
        )
        st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            key="doc_graph_stats",
            column_config={"section": st.column_config.TextColumn("section", width="large")},
        )


def _llm_total(index: CorpusIndex) -> str:
    graphs = [g for g in (graphs_of(index) or {}).values() if g.extractor.startswith("llm")]
    if not graphs:
        return " (offline extractor: no tokens, no cost)"
    tokens = sum(g.usage.input_tokens + g.usage.output_tokens for g in graphs)
    cost = sum(g.usage.cost_usd for g in graphs)
    known = all(g.usage.cost_known for g in graphs)
    return f"; {len(graphs)} by the LLM: {tokens:,} tokens, " + (
        f"${cost:.4f}" if known else "cost unknown"
    )


def node_table(graph: LeafGraph, result: GraphResult | None) -> pd.DataFrame:
    """Every concept: its role for the question (when lit), mentions, degree and PageRank;
    the lit ones first, then the most mentioned."""
    matched = {m.node_id: m.how for m in result.matches} if result else {}
    on_path = {n for p in result.paths for n in p.nodes} if result else set()
    rank = dict(result.ranks) if result else {}
    degree = graph.degrees()
    rows = []
    for c in graph.concepts:
        if c.node_id in matched:
            role = f"question ({matched[c.node_id]})"
        elif c.node_id in on_path:
            role = "on a path"
        elif c.node_id in rank:
            role = "reached"
        else:
            role = ""
        rows.append(
            {
                "concept": c.name,
                "lit": role,
                "kind": c.kind,
                "mentions": c.count,
                "degree": degree.get(c.node_id, 0),
                "pagerank": rank.get(c.node_id),
                "chunks": ", ".join(c.chunk_ids),
            }
        )
    frame = pd.DataFrame(
        rows, columns=["concept", "lit", "kind", "mentions", "degree", "pagerank", "chunks"]
    )
    order = [0 if role else 1 for role in frame["lit"]]
    return (
        frame.assign(_lit=order)
        .sort_values(["_lit", "mentions"], ascending=[True, False], kind="stable")
        .drop(columns="_lit")
        .reset_index(drop=True)
    )


def edge_table(graph: LeafGraph, result: GraphResult | None) -> pd.DataFrame:
    """Every relation: its ends, label, weight and support; the edges used first."""
    names = {c.node_id: c.name for c in graph.concepts}
    used = set(result.edges_used) if result else set()
    rows = [
        {
            "from": names.get(r.source, r.source),
            "relation": r.label,
            "to": names.get(r.target, r.target),
            "used": r in used,
            "weight": round(r.weight, 3),
            "sentences": r.count,
            "chunks": ", ".join(r.chunk_ids),
        }
        for r in graph.relations
    ]
    frame = pd.DataFrame(
        rows, columns=["from", "relation", "to", "used", "weight", "sentences", "chunks"]
    )
    return frame.sort_values(
        ["used", "weight"], ascending=[False, False], kind="stable"
    ).reset_index(drop=True)


def leaf_graph_panel(
    index: CorpusIndex,
    leaf_id: str,
    *,
    trace: Trace | None = None,
    query_vector: Callable[[str], np.ndarray] | None = None,
    key: str = "doc_leaf_graph",
) -> GraphResult | None:
    """The inspected leaf's graph beside its node and edge tables. When the last question
    (`trace`, on this index) searched this leaf's graph, its concepts, paths and used edges
    are lit and its path table follows. Returns the lit search (None: nothing lit)."""
    node = index.nodes.get(leaf_id)
    graphs = graphs_of(index)
    if node is None or not node.is_leaf:
        return None
    if graphs is None or leaf_id not in graphs:
        chars, threshold = node.end - node.start, index.settings.graph_min_leaf_chars
        if graphs is not None and chars < threshold:
            st.caption(
                f"No knowledge graph for this leaf: {chars:,} characters, graphs are built "
                f"for leaves from {threshold:,}."
            )
        elif graphs is not None:
            st.caption("This leaf has no chunks, so no knowledge graph.")
        return None
    graph = graphs[leaf_id]
    result = leaf_graph_search(index, trace, leaf_id, query_vector) if query_vector else None
    view = build_view(graph, result, PANEL_NODES)
    with st.container(border=True):
        st.markdown(f"**Knowledge graph of this leaf** · `{leaf_id}`")
        st.caption(stats_caption(graph, view))
        if result is not None and trace is not None:
            st.caption(f"Lit for the last question: «{plain(trace.question)}»")
            legend()
        left, right = st.columns([3, 2])
        with left:
            draw_graph(view, key=key, height=640)
        with right:
            nodes_tab, edges_tab = st.tabs(["Nodes", "Edges"])
            with nodes_tab:
                st.dataframe(
                    node_table(graph, result), hide_index=True, height=560, key=f"{key}_nodes"
                )
            with edges_tab:
                st.dataframe(
                    edge_table(graph, result), hide_index=True, height=560, key=f"{key}_edges"
                )
        if result is not None:
            st.markdown("**Paths** (each hop with the sentence it came from)")
            frame = path_table(graph, result, index.texts[node.doc_id], node.heading_path)
            st.dataframe(frame, hide_index=True, key=f"{key}_paths")
    return result


def inspected_leaf_graph(corpus: Corpus, leaf_id: str) -> GraphResult | None:
    """`leaf_graph_panel` for the Documents inspector: lit by the Ask page's last question
    when it ran on this corpus."""
    ask = AskState()
    trace = ask.trace if ask.trace_corpus == corpus.key else None
    return leaf_graph_panel(
        corpus.index, leaf_id, trace=trace, query_vector=corpus.engine.query_vector
    )
