"""A page with the tree editor of one PDF (for AppTest): its bytes and the LLM client come
from the session state, the edits folder from the env."""

import os

import streamlit as st

from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.documents import Converted
from ui.documents.tree_editor import tree_editor

converted = Converted(convert_bytes("c.pdf", st.session_state["pdf"], 10 * 1024 * 1024), "sha")
edits = tree_editor(
    converted,
    key="te",
    folder=os.environ["TREE_EDITOR_DIR"],
    client=st.session_state.get("fake_client"),
    model="fake-model",
)
st.text(f"edits={len(edits)}")
