"""Queries in the audit log under this session's workspace: record, list, reopen on Ask."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import streamlit as st

from treerag_core.base.types import Trace
from ui.common.corpora import corpus_kind_of
from ui.common.query_controls import QUESTION, apply_settings, choose_corpus
from ui.common.resources import Corpus, audit_log
from ui.common.session import AskState, WorkspaceState
from ui.common.workspace import keep_for_reload


def record(trace: Trace, corpus_key: str, scope: Sequence[str] | None) -> int | None:
    """Log a finished query with this session's workspace id and the corpus it ran on.

    The workspace's folder is made on this first write, so a reload adopts the id and finds
    its History (a visit that asks nothing leaves no folder).
    """
    ws_id = WorkspaceState().id
    try:
        query_id = audit_log().record(trace, workspace=ws_id, corpus=corpus_key)
        keep_for_reload()
        return query_id
    except (sqlite3.Error, OSError) as exc:
        st.warning(f"The query ran but could not be written to the audit log ({exc}).")
        return None


def recent(limit: int = 100) -> list[dict[str, Any]]:
    """This session's logged queries, newest first."""
    return audit_log().recent(limit=limit, workspace=WorkspaceState().id)


def _show_on_ask(trace: Trace, corpus_key: str, kind: str, scope: Sequence[str] | None) -> None:
    ss = st.session_state
    choose_corpus(kind)  # the corpus it ran on, kept across page switches
    ss[f"qs_scope_{kind}"] = list(scope or [])
    ss[QUESTION] = trace.question
    AskState().keep_inputs(kind, trace.question, list(scope or []))  # a chosen "all documents"


def open_from_history(query_id: int) -> Trace:
    """Load a logged trace into the Ask view, restoring its corpus, scope and settings.

    Raises:
        KeyError: the audit log has no such query (or it belongs to another workspace).
    """
    rows = {r["id"]: r for r in recent(limit=10_000)}
    if query_id not in rows:
        raise KeyError(f"query {query_id} is not in this session's history")
    trace = audit_log().load(query_id, workspace=WorkspaceState().id)
    corpus_key = rows[query_id]["corpus"] or ""
    ask = AskState()
    ask.set_trace(trace, corpus_key, trace.scope, query_id, origin="history")
    apply_settings(trace.settings)
    # Set by the Ask page from the sidebar as it finds it there (with the run's settings just
    # applied): the LLM panel may not have been drawn yet in a reloaded session, and its
    # defaults then would read as a change nobody made ("Use an LLM: on → off").
    ask.controls = None
    ask.forget_nodes()  # the trace may be on another corpus
    _show_on_ask(trace, corpus_key, corpus_kind_of(corpus_key), trace.scope)
    return trace


def open_trace(
    trace: Trace, corpus: Corpus, scope: Sequence[str] | None, inspect: str | None = None
) -> None:
    """Show a trace made elsewhere (the Evaluate page) on the Ask view, against `corpus`.

    The sidebar settings stay as the user left them; the trace shows what it ran with. The
    corpus (an eval set's index) is kept so the Ask page offers it beside samples and uploads.
    """
    ask = AskState()
    ask.eval_corpus = corpus
    ask.set_trace(trace, corpus.key, scope, None, origin="eval")
    ask.controls = None  # set by the Ask page from the sidebar as it finds it
    ask.forget_nodes(inspect)
    _show_on_ask(trace, corpus.key, corpus.kind, scope)
