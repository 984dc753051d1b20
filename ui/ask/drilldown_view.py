"""Drill-down views: each layer's table, and the ids to light (the K-Type card: ktype_card.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from treerag_core import Engine, layers_of
from treerag_core.base.types import ContextSection, Trace

LAYER_KINDS = ("document", "parent", "passages")
_LAYER_HELP = {
    "document": "Every document in scope, scored by its K-Type summary (vector + BM25), its "
    "best passage, or both (the doc_signal option).",
    "parent": "Sections of the chosen document(s), scored by heading path + summary, their "
    "best passage, or both (the parent_signal option).",
    "passages": "Passages of the chosen section(s): dense + BM25, fused.",
}


@dataclass(frozen=True)
class LitIds:
    """What to light on the tree: chosen documents, parent sections and child chunks."""

    documents: tuple[str, ...]
    parents: tuple[str, ...]
    chunks: tuple[str, ...]
    chunk_parents: tuple[str, ...]  # the leaf of each chosen chunk, for node highlighting


def lit_ids(sections: Sequence[ContextSection]) -> LitIds:
    """The chosen ids of each layer, read from the strategy's context sections."""
    by_kind = {s.kind: s for s in sections}

    def chosen(kind: str) -> tuple[str, ...]:
        section = by_kind.get(kind)
        return tuple(str(r["id"]) for r in section.rows if r.get("chosen")) if section else ()

    children = by_kind.get("passages")
    parents_of = (
        tuple(dict.fromkeys(str(r["parent"]) for r in children.rows if "parent" in r))
        if children
        else ()
    )
    return LitIds(chosen("document"), chosen("parent"), chosen("passages"), parents_of)


def is_drilldown(sections: Sequence[ContextSection]) -> bool:
    return {s.kind for s in sections} >= set(LAYER_KINDS)


def layer_view(sections: Sequence[ContextSection]) -> LitIds:
    """The three layers, each as a table of its candidates with the chosen ones marked, and
    the text synthesis reads. Returns the ids a page should light on the tree."""
    by_kind = {s.kind: s for s in sections}
    for number, kind in enumerate(LAYER_KINDS, start=1):
        section = by_kind.get(kind)
        if section is None:
            continue
        n_chosen = sum(1 for r in section.rows if r.get("chosen"))
        st.markdown(f"**{number}. {section.title}** · {n_chosen} of {len(section.rows)} chosen")
        st.caption(_LAYER_HELP[kind])
        if section.rows:
            st.dataframe(pd.DataFrame(list(section.rows)), hide_index=True, width="stretch")
        if section.text:
            with st.expander(f"{section.title}: text given to the answer"):
                st.text(section.text)
    return lit_ids(sections)


def drilldown_layers(trace: Trace, engine: Engine) -> None:
    """The drill-down family's Ask view: the K-Type summary of each chosen document, then the
    three layers."""
    from ui.common.ktype_card import ktype_card
    from ui.common.text_safety import plain

    if not is_drilldown(trace.sections):
        return
    st.subheader("Drill-down: document → section → passages")
    layers = layers_of(engine.index)
    summaries = layers.summaries if layers is not None else {}
    for number, doc_id in enumerate(lit_ids(trace.sections).documents):
        if doc_id in summaries:
            with st.expander(f"K-Type summary · {plain(doc_id)}", expanded=number == 0):
                ktype_card(summaries[doc_id], key=f"ask_ktype_{number}")
    layer_view(trace.sections)
