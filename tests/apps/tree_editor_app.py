"""A page that shows one document's tree editor (for AppTest): the folder comes from the env;
the document is a small Markdown guide, the PDF in the session state's "pdf", or with
TREE_EDITOR_DOC=junk a filing-like document with a run of junk headings."""

import os

import streamlit as st

from treerag_core.ingest.documents import convert_upload
from ui.documents.tree_editor import tree_editor

DOC = (
    b"# Guide\n\n## Leave\n\nDays off.\n\nSick Leave\n\nTell your manager.\n\n## Pay\n\nMonthly.\n"
)
# A statement's junk lines, each taken for a heading: 2-4 are one run.
JUNK = (
    b"# Report\n\n## Item 1. Statements\n\nRevenue rose.\n\n## (Unaudited)\n\nBelow.\n\n"
    b"## (In millions)\n\nA table.\n\n## Total assets:\n\n100.\n\n## Item 2. Discussion\n\nText.\n"
)

pdf = st.session_state.get("pdf")
if pdf:
    name, data = "c.pdf", pdf
elif os.environ.get("TREE_EDITOR_DOC") == "junk":
    name, data = "report.md", JUNK
else:
    name, data = "guide.md", DOC
converted = convert_upload(name, data, 10 * 1024 * 1024)
edits = tree_editor(
    converted,
    key="te",
    folder=os.environ["TREE_EDITOR_DIR"],
    client=st.session_state.get("fake_client"),
    model="fake-model",
)
st.text(f"edits={len(edits)}")
