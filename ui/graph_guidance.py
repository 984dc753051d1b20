"""What the explorer tells a user whose index has no leaf knowledge graphs (and how to add them)."""

from __future__ import annotations

import streamlit as st

from treerag_core.index import CorpusIndex
from treerag_core.strategies.treerag_kg import TreeRAGKG
from ui.resources import EVAL, SAMPLES, UPLOADS

# The explorer's own steps (the engine's error names the CLI's flag, for the CLI).
SETTING = '"Knowledge graphs for leaves from … characters" (3000 is the measured setting)'
HOW_TO_ADD = {
    UPLOADS: f"To add them: on **Documents**, under Your workspace, open **Rebuild with other "
    f"settings** and set {SETTING}.",
    SAMPLES: "To add them: on **Documents**, press **Copy the sample documents into my "
    f"workspace** (the sample index itself is read-only), open **Rebuild with other "
    f"settings** and set {SETTING}; then ask on My uploads.",
    EVAL: "An eval set's index is built without them: ask on your uploads instead (on "
    f"**Documents**, open **Rebuild with other settings** and set {SETTING}).",
}
MISSING = "This index has no leaf knowledge graphs, which the **treerag-kg** strategy needs."
WHERE = {UPLOADS: "your workspace's index", SAMPLES: "the sample index", EVAL: "this eval index"}


def how_to_add(kind: str | None) -> str:
    """The explorer's steps to an index with graphs, for a corpus kind (None: unknown)."""
    if kind in HOW_TO_ADD:
        return HOW_TO_ADD[kind]
    return (
        f"To add them: on **Documents**, open **Rebuild with other settings** and set {SETTING} "
        "(for the sample documents, press **Copy the sample documents into my workspace** "
        "first, then ask on My uploads)."
    )


def missing_graphs_message(kind: str | None = None) -> str:
    """Markdown for a treerag-kg run on an index without graphs: what is wrong, what to do."""
    return f"{MISSING} {how_to_add(kind)} Or pick another strategy."


def documents_note(kind: str) -> str:
    """The note under each document of an index without graphs: self-contained, so it reads
    right under any document, after any removal."""
    return (
        f"No leaf knowledge graphs in {WHERE.get(kind, 'this index')} (the treerag-kg strategy "
        f"needs them). {how_to_add(kind)}"
    )


def warn_if_missing(strategy: str, index: CorpusIndex, kind: str) -> None:
    """On Ask: say at once, when treerag-kg is picked on an index without graphs."""
    if strategy != TreeRAGKG.name or index.graphs is not None:
        return
    st.warning(missing_graphs_message(kind), icon=":material/hub:")
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")
