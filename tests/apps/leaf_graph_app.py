"""A small app drawing one leaf graph of the labour law, lit for a question (for AppTest)."""

from pathlib import Path

import streamlit as st

from treerag_core.index.tokens import tokenize
from treerag_core.ingest.chunking import chunk_leaf
from treerag_core.ingest.parsing import parse_document
from treerag_core.strategies.graph.extract import build_leaf_graph
from treerag_core.strategies.graph.search import search_graph
from ui.common.graph_view import render_leaf_graph

PATH = Path(__file__).resolve().parents[2] / "sample_docs" / "劳动合同法(2012-12-28).md"
QUESTION = "用人单位违反竞业限制约定应当支付什么违约金？"


@st.cache_resource
def leaf_graph():
    text = PATH.read_text(encoding="utf-8")
    nodes = parse_document(text, doc_id="law", name="law", max_depth=3, first_id=1)
    leaf = max((n for n in nodes if n.is_leaf), key=lambda n: n.end - n.start)
    return text, leaf, build_leaf_graph(leaf.node_id, "law", chunk_leaf(leaf, text), "zh")


text, leaf, graph = leaf_graph()
result = search_graph(graph, QUESTION, "zh", tokenize) if st.toggle("lit", value=True) else None
clicked = render_leaf_graph(graph, result, doc_text=text, heading=leaf.heading_path, key="g")
st.write(f"clicked: {clicked}")
