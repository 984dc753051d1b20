"""A logged result shown read-only when the index it ran on is not the one open any more."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from treerag_core.base.types import Trace
from ui.ask import trace_panels
from ui.ask.story import context_used
from ui.common.corpora import key_label
from ui.common.text_safety import plain, safe_answer, shown_time


def stored_result(
    trace: Trace,
    corpus_key: str | None,
    query_id: int | None,
    ask_again: Callable[[], None] | None,
) -> None:
    """The stored answer, citations and step tables, clearly labelled as a stored result.

    Nothing here reads the current index: the node ids of the run may not exist in it, so
    citations are listed, not linked, and the tree is not marked.
    """
    when = shown_time(trace.created_at)
    logged = f" · #{query_id} in History" if query_id is not None else ""
    st.info(
        f"**Stored result**{logged} · asked {plain(when) or 'earlier'} on "
        f"{key_label(corpus_key, 'phrase')} with **{plain(trace.strategy)}**. The index it "
        "ran on is not the one open now (your workspace changed since, or another corpus is "
        "chosen), so it is shown read-only as it was logged."
        + (" Ask again to run it on the documents open now." if ask_again else ""),
        icon=":material/inventory_2:",
    )
    if ask_again is not None:
        st.button(
            "Ask again here",
            key="stored_ask_again",
            on_click=ask_again,
            icon=":material/replay:",
            type="primary",
        )
    st.subheader("③ Answer (stored)")
    st.caption(f"Q: {plain(trace.question)}")
    st.caption(context_used(trace))
    if trace.answer:
        st.markdown(safe_answer(trace.answer))
    else:
        st.info("No answer in this trace (steps 1-2 only).")
    trace_panels.question_flags(trace)
    for cite in trace.citations:
        mark = "✓" if cite.supported else "✗ not among the retrieved evidence:"
        st.caption(f"{mark} {plain(cite.heading_path)}")
    trace_panels.fallbacks(trace)
    st.subheader("② Evidence (stored)")
    tabs = st.tabs(["Final passages (rerank)", "Scores per searched group", "Step 1 details"])
    with tabs[0]:
        trace_panels.rerank(trace)
    with tabs[1]:
        trace_panels.step2(trace)
    with tabs[2]:
        trace_panels.step1(trace)
    with st.expander("Cost and time per stage"):
        trace_panels.costs(trace)
