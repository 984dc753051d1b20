"""What the explorer tells a user whose index has no leaf knowledge graphs (and how to add them)."""

from __future__ import annotations

import streamlit as st

from treerag_core import CorpusIndex, TreeRAGKG, graphs_of
from treerag_core.base.config import GRAPH_LEAF_CHARS
from ui.common.corpora import EVAL, SAMPLES, UPLOADS

# The explorer's own steps (the engine's error names the CLI's flag, for the CLI).
SETTING = (
    f'"Knowledge graphs for leaves from … characters" ({GRAPH_LEAF_CHARS} is the measured setting)'
)
COPY = "**Copy the sample documents into my workspace**"
# The steps on the Documents page, per corpus kind.
HOW_TO_ADD = {
    UPLOADS: f"under Your workspace, open **Rebuild with other settings** and set {SETTING}.",
    SAMPLES: f"press {COPY} (the sample index itself is read-only), then open **Rebuild with "
    f"other settings** and set {SETTING}; ask on My uploads.",
    EVAL: "upload this eval set's documents (its index here is read-only), then open **Rebuild "
    f"with other settings** and set {SETTING}; ask on My uploads.",
}
MISSING = "This index has no leaf knowledge graphs, which the **treerag-kg** strategy needs."
WHERE = {UPLOADS: "your workspace's index", SAMPLES: "the sample index", EVAL: "this eval index"}


def how_to_add(kind: str | None) -> str:
    """The Documents page's steps to an index with graphs, for a corpus kind (None: any)."""
    if kind in HOW_TO_ADD:
        return HOW_TO_ADD[kind]
    return (
        f"open **Rebuild with other settings** under Your workspace and set {SETTING}; for "
        f"the sample documents, press {COPY} first, then ask on My uploads."
    )


def missing_graphs_message(kind: str | None = None) -> str:
    """Markdown for a treerag-kg run on an index without graphs: what is wrong, what to do."""
    return f"{MISSING} To add them, on **Documents**: {how_to_add(kind)} Or pick another strategy."


def documents_note(kind: str) -> str:
    """The note under each document of an index without graphs: self-contained, so it reads
    right under any document, after any removal."""
    return (
        f"No leaf knowledge graphs in {WHERE.get(kind, 'this index')} (the treerag-kg strategy "
        f"needs them). To add them: {how_to_add(kind)}"
    )


def warn_if_missing(strategy: str, index: CorpusIndex, kind: str) -> None:
    """On Ask: say at once, when treerag-kg is picked on an index without graphs."""
    if strategy != TreeRAGKG.name or graphs_of(index) is not None:
        return
    st.warning(missing_graphs_message(kind), icon=":material/hub:")
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")
