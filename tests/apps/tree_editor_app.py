"""A page that shows one document's tree editor (for AppTest): the folder comes from the env;
the document is a small Markdown guide, or the PDF in the session state's "pdf"."""

import os

import streamlit as st

from treerag_core.ingest.documents import convert_upload
from ui.documents.tree_editor import tree_editor

DOC = (
    b"# Guide\n\n## Leave\n\nDays off.\n\nSick Leave\n\nTell your manager.\n\n## Pay\n\nMonthly.\n"
)

pdf = st.session_state.get("pdf")
name, data = ("c.pdf", pdf) if pdf else ("guide.md", DOC)
converted = convert_upload(name, data, 10 * 1024 * 1024)
edits = tree_editor(
    converted,
    key="te",
    folder=os.environ["TREE_EDITOR_DIR"],
    client=st.session_state.get("fake_client"),
    model="fake-model",
)
st.text(f"edits={len(edits)}")
