"""After a reload: offer this workspace's last logged question, restored as it ran, in one click."""

from __future__ import annotations

import sqlite3

import streamlit as st

from ui.common.corpora import key_label
from ui.common.query_log import open_from_history, recent
from ui.common.session import AskState
from ui.common.text_safety import plain, shown_time

RESTORE_ERROR = "ask_restore_error"  # session key: why the last restore failed, shown once
RESTORED = "ask_restored"  # session key: a restore just opened a trace (the page redraws whole)


def _restore(query_id: int) -> None:
    try:
        open_from_history(query_id)
    except (KeyError, ValueError, sqlite3.Error) as exc:  # forgotten meanwhile, or the log
        st.session_state[RESTORE_ERROR] = str(exc)  # is locked or damaged: said, not raised
    else:
        st.session_state[RESTORED] = True


def restored_just_now() -> bool:
    """Whether the offer's button has just opened a trace (read once): the question box
    above the story must show its question, so the whole page reruns, not the story alone."""
    return bool(st.session_state.pop(RESTORED, False))


def offer_last_question() -> None:
    """While Ask shows no result: this workspace's newest audit-log query, one button away.
    Drawn in the answer's own place (where a question's progress then appears), so pressing
    Ask replaces it there and nothing above the graph moves.

    A reload keeps the workspace (`?ws=`) but not the session, so the question box and the
    answer are gone; the audit log still has them. Nothing runs again (no model or LLM
    call): the stored trace is opened as History opens it. Only this workspace's rows are
    read, so another session's questions never show here.
    """
    failed = st.session_state.pop(RESTORE_ERROR, None)
    if failed:
        st.error(f"The last question could not be restored: {plain(failed)}")
    if AskState().trace is not None:
        return
    try:
        rows = recent(limit=1)
    except sqlite3.Error as exc:
        st.warning(f"The audit log could not be read ({exc}).")
        return
    if not rows:
        return
    last = rows[0]
    when = shown_time(last["created_at"])
    st.info(
        f"**Your last question in this workspace** (#{last['id']} in History, asked "
        f"{plain(when)} on {key_label(last['corpus'], 'phrase')}): “{plain(last['question'])}”",
        icon=":material/history:",
    )
    st.button(
        "Show the stored result of your last question",
        key="ask_restore_last",
        on_click=_restore,
        args=(last["id"],),
        icon=":material/restore:",
        help="Opens the question and its answer as the audit log stored them: nothing "
        "runs again (no LLM call).",
    )
