"""The graph family's Ask view: each searched leaf graph, lit as step 2 searched it."""

from __future__ import annotations

import streamlit as st

from treerag_core import Engine, graphs_of, leaf_graph_search
from treerag_core.base.types import Trace
from ui.common.graph_view import render_leaf_graph
from ui.common.text_safety import plain


def leaf_graphs(trace: Trace, engine: Engine) -> None:
    """Each leaf graph the trace searched, lit for its question (its concepts, paths, edges)."""
    index = engine.index
    graphs = graphs_of(index) or {}
    groups = [g for g in trace.retrieved if g.kind == "graph" and g.leaf_id in graphs]
    if not groups:
        return
    st.subheader("Leaf knowledge graphs")
    for number, group in enumerate(groups):
        leaf_id = str(group.leaf_id)
        node = index.nodes[leaf_id]
        with st.expander(f"[{leaf_id}] {plain(node.heading_path)}", expanded=number == 0):
            result = leaf_graph_search(index, trace, leaf_id, engine.query_vector)
            render_leaf_graph(
                graphs[leaf_id], result, doc_text=index.texts[node.doc_id],
                heading=node.heading_path, key=f"ask_leaf_graph_{number}",
            )  # fmt: skip
