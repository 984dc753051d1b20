"""A document's K-Type summary card (seed 001): knowledge types with shares, modules, use."""

from __future__ import annotations

import streamlit as st

from treerag_core import KTYPE_NAMES_ZH as TYPE_NAMES_ZH
from treerag_core import CorpusIndex, KTypeSummary, ensure_layers
from ui.common.text_safety import plain

_ORIGIN = {
    "llm": "written by the LLM from the document's outline (cached by content hash)",
    "extractive": "extractive: title, top-level headings, key terms, types from layout cues",
}


def ktype_card(summary: KTypeSummary, key: str = "ktype") -> None:
    """The card: each knowledge type's share, the core modules, key terms and what it is for."""
    zh = summary.language == "zh"
    st.markdown(f"**{plain(summary.title)}**")
    st.caption("K-Type summary · " + _ORIGIN.get(summary.method, summary.method))
    if summary.types:
        cols = st.columns(len(summary.types))
        for col, (kind, share) in zip(cols, summary.types, strict=True):
            label = f"{kind} {TYPE_NAMES_ZH.get(kind, '')}" if zh else kind
            col.metric(label, f"{share:.0%}")
            col.progress(min(1.0, max(0.0, share)))
    if summary.modules:
        st.markdown("**Core modules:** " + plain(" · ".join(summary.modules)))
    if summary.key_terms:
        st.markdown("**Key terms:** " + plain(", ".join(summary.key_terms)))
    if summary.use:
        st.markdown(f"**Good for:** {plain(summary.use)}")
    with st.expander("Text embedded as the document vector"):
        st.text(summary.text)


def document_ktype(index: CorpusIndex, doc_id: str, key: str = "doc_ktype") -> None:
    """The K-Type card of one document of an index, and why it is not the LLM's when it is not.

    An index saved before drill-down layers existed gets its extractive summaries computed
    here (once per index, in memory).
    """
    layers = ensure_layers(index)
    summary = layers.summaries.get(doc_id)
    if summary is None:
        st.caption("No K-Type summary for this document.")
        return
    with st.expander("K-Type summary (what the drill-down's document layer reads)"):
        ktype_card(summary, key=key)
        for note in layers.notes:
            st.caption(plain(note))
        if summary.method != "llm":
            st.caption(
                "With an LLM key set (the Ask page's LLM block, or the environment), documents "
                "added to your workspace get an LLM-written K-Type (five per call)."
            )
