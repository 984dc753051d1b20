"""Evaluate: "Compare the LLM locator" (issue 26): with the session's LLM, each strategy that
uses the locator runs twice on the same questions, local and `+llm`, as `eval --llm` does;
its calls are counted before the run, its fall-backs said after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from treerag_core import (
    llm_endpoint_of,
    llm_fallback_notes,
    llm_locate_calls,
    llm_locator_strategies,
    strategy_names,
)
from ui.common.llm_panel import SessionLLM, session_llm
from ui.common.query_controls import LLM_PREFIX
from ui.common.text_safety import plain

KEY = "ev_llm"
LABEL = "Compare the LLM locator"


def toggle(sb: Any, keep: str) -> SessionLLM | None:
    """The sidebar toggle (off by default; disabled, with the reason, without an LLM).
    Returns the session's LLM when the toggle is on, else None."""
    llm = session_llm(LLM_PREFIX)
    if llm.settings is None:
        st.session_state[KEY] = False  # a disabled toggle must not read "on"
    sb.toggle(
        LABEL,
        key=KEY,
        persist_state=keep,
        disabled=llm.settings is None,
        help="Each strategy that uses the locator (treerag, treerag-kg) runs twice on the same "
        "questions: with the local locator and with the LLM's (its `+llm` row), as "
        "`python -m treerag_core eval --llm` does. One LLM call per question per such strategy; "
        "no answer is written.",
    )
    if llm.settings is None:
        sb.caption(f"Off: {plain(llm.why_not)}")
        return None
    return llm if st.session_state.get(KEY) else None


def calls_note(llm: SessionLLM, strategies: Sequence[str], n_questions: int) -> str:
    """What the run will cost in calls, said before it runs."""
    assert llm.settings is not None
    locating = llm_locator_strategies(strategies)
    if not locating:
        users = ", ".join(llm_locator_strategies(strategy_names()))
        return (
            f"None of the chosen strategies uses the locator ({users} do): the run makes no "
            "LLM call."
        )
    calls = llm_locate_calls(strategies, n_questions)
    return (
        f"The run makes **{calls:,} LLM calls** ({n_questions} questions × {len(locating)} "
        f"strateg{'y' if len(locating) == 1 else 'ies'} using the locator: "
        f"{plain(', '.join(locating))}) to {plain(llm.settings.locate_model)} at "
        f"{plain(llm_endpoint_of(llm.settings))}, billed by its provider. No answer is written."
    )


def fallback_notes(report: Mapping[str, Any]) -> None:
    """The CLI's note, on the page: a `+llm` row that fell back is partly the local one's."""
    for note in llm_fallback_notes(report):
        st.warning("Note: " + plain(note), icon=":material/swap_horiz:")
