"""A small app rendering the HiRAG view for one question (tests/test_ui_hirag_view.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.conftest import sample_sources  # noqa: E402
from treerag_core.base.config import IndexSettings  # noqa: E402
from treerag_core.base.settings import QuerySettings  # noqa: E402
from treerag_core.index.corpus import build_index  # noqa: E402
from treerag_core.index.embedders import get_embedder  # noqa: E402
from treerag_core.index.tokens import tokenize  # noqa: E402
from treerag_core.strategies import get_strategy  # noqa: E402
from treerag_core.strategies.base import QueryContext  # noqa: E402
from treerag_core.strategies.hirag.build import hirag_for  # noqa: E402
from ui.ask.hirag_view import render_hirag  # noqa: E402


@st.cache_resource
def index():
    embedder = get_embedder("hashing")
    return build_index(
        sample_sources(["test_paper.md"]), IndexSettings(embedder="hashing"), embedder
    )


mode = st.selectbox("mode", ["hirag", "hirag-local", "hirag-global", "hirag-bridge", "hirag-naive"])
question = st.text_input("question", "How does the bandit router choose the breakout expert?")
strategy = get_strategy(mode)
embedder = get_embedder("hashing")
ctx = QueryContext(
    index(), question, "en", QuerySettings(strategy=mode), None, embedder.embed_query, tokenize
)
result = strategy.retrieve(ctx, strategy.locate(ctx))
render_hirag(result.sections, hirag_for(index()).store, key=mode)
