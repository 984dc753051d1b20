"""Typed session state: one object per page, each owning the session keys under its prefix."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

import streamlit as st

from treerag_core.base.types import Trace

T = TypeVar("T")


class Slot(Generic[T]):
    """One session-state entry of a page state: key `<prefix>_<name>`, created on first read."""

    def __init__(self, default: T | None = None, factory: Callable[[], T] | None = None) -> None:
        self.default = default
        self.factory = factory
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def fresh(self) -> T:
        return self.factory() if self.factory else copy.copy(self.default)  # type: ignore[return-value]

    def __get__(self, obj: PageState | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        key = obj.key(self.name)
        ss = st.session_state
        if key not in ss:
            ss[key] = self.fresh()
        return ss[key]

    def __set__(self, obj: PageState, value: T) -> None:
        st.session_state[obj.key(self.name)] = value


class PageState:
    """Base of the per-page state objects; they hold no data themselves (it is in the session)."""

    prefix: ClassVar[str] = ""

    def key(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def take(self, name: str) -> Any:
        """Read and clear a one-shot slot (a queued action)."""
        slot: Slot[Any] = getattr(type(self), name)
        value = st.session_state.get(self.key(name), slot.fresh())
        st.session_state[self.key(name)] = slot.fresh()
        return value


class WorkspaceState(PageState):
    """This browser session's own workspace: an unguessable id and its uploaded index."""

    prefix = "ws"
    id: Slot[str] = Slot(factory=lambda: secrets.token_hex(16))
    index: Slot[Any] = Slot(None)  # CorpusIndex of this session's uploads
    version: Slot[str] = Slot("empty")  # workspace.index_version of `index`
    engine: Slot[Any] = Slot(None)


class VectorStoreState(PageState):
    """Which vector store serves this session's workspace index (ui/common/vector_store.py)."""

    prefix = "vs"
    # The applied Milvus choice: {"uri" (resolved), "shown" (as typed), "collection"}; None:
    # in process (FAISS + BM25). Kept across reruns and pages; a rebuilt index is pushed again.
    milvus: Slot[dict[str, str] | None] = Slot(None)
    # (uri, collection) pairs this session wrote itself: only those are replaced on a rebuild.
    pushed: Slot[set[tuple[str, str]]] = Slot(factory=set)
    notice: Slot[str | None] = Slot(None)  # the last apply's outcome, shown once


class AskState(PageState):
    """The Ask page: the question's trace, the inspected node, queued actions."""

    prefix = "ask"
    trace: Slot[Trace | None] = Slot(None)
    trace_corpus: Slot[str | None] = Slot(None)  # the corpus key the trace ran on
    trace_scope: Slot[tuple[str, ...] | None] = Slot(None)
    trace_id: Slot[int | None] = Slot(None)  # its audit-log id
    origin: Slot[str] = Slot("")  # ask | override | answer | rerun | eval | history
    inspect: Slot[str | None] = Slot(None)  # node id open in the inspector
    expanded: Slot[set[str]] = Slot(factory=set)
    stale_answer: Slot[str | None] = Slot(None)
    rerun_ms: Slot[float | None] = Slot(None)
    pending: Slot[dict[str, Any] | None] = Slot(None)
    compare: Slot[dict[str, Any] | None] = Slot(None)
    eval_corpus: Slot[Any] = Slot(None)  # an eval set's corpus, opened from Evaluate
    previous_ranks: Slot[dict[str, int]] = Slot(factory=dict)  # chunk -> final rank before
    controls: Slot[dict[str, Any] | None] = Slot(None)  # sidebar settings the trace is shown for
    highlight: Slot[tuple[int, int] | None] = Slot(None)  # a cited passage, document offsets
    moved: Slot[tuple[str, ...]] = Slot(())  # the settings a slider rerun changed (labels)
    # What slider reruns are compared with: the controls and final ranks of the last view that
    # was not a slider rerun (an Ask, override, regenerated answer, History or Evaluate).
    base_controls: Slot[dict[str, Any] | None] = Slot(None)
    base_ranks: Slot[dict[str, int]] = Slot(factory=dict)
    # Nothing lost on navigation (ui/ask/kept.py): the question and the scope per corpus kind
    # as Ask last had them, and whether this session has read them from the link.
    kept_question: Slot[str] = Slot("")
    kept_scope: Slot[dict[str, list[str]]] = Slot(factory=dict)
    link_read: Slot[bool] = Slot(False)
    # A reload's reopened result (its audit-log id) and the step-2 values its link moved away
    # from the logged ones (setting path -> logged value): shown retuned, once.
    link_tuned: Slot[tuple[int, dict[str, Any]] | None] = Slot(None)
    # An Ask under way: {"question", "corpus"}, set before it runs and cleared when its trace
    # is stored (or its error shown). Still set on a later run: Streamlit stopped it midway
    # (a page switch or a control moved), so the page says so (kept.interrupted_notice).
    running: Slot[dict[str, str] | None] = Slot(None)

    def set_trace(
        self,
        trace: Trace | None,
        corpus_key: str | None,
        scope: Any,
        query_id: int | None,
        origin: str = "",
    ) -> None:
        old = self.trace
        if old is not None and trace is not None and old.question == trace.question:
            self.previous_ranks = {h.chunk.chunk_id: h.final_rank for h in old.reranked}
        else:
            self.previous_ranks = {}
        self.trace, self.trace_corpus, self.trace_id = trace, corpus_key, query_id
        self.trace_scope = tuple(scope) if scope else None
        self.stale_answer = None
        self.origin = origin

    def keep_inputs(self, kind: str, question: str, scope: list[str]) -> None:
        """The question and a corpus kind's scope as last set (by Ask, or by History or
        Evaluate opening a result): what a return to Ask puts back if its widgets lost them."""
        self.kept_question = question
        self.kept_scope = {**self.kept_scope, kind: list(scope)}

    def forget_nodes(self, inspect: str | None = None) -> None:
        """Close what is open in the tree (the inspected node, its marked passage, expanded
        sections), opening `inspect` instead: node ids are per corpus ("0012" is in every
        one), so after a corpus change they would open unrelated nodes."""
        self.inspect, self.highlight, self.expanded = inspect, None, set()


class DocsState(PageState):
    """The Documents page: the previewed document, its inspected node, the last upload."""

    prefix = "doc"
    corpus: Slot[str | None] = Slot(None)
    pick: Slot[str | None] = Slot(None)
    inspect: Slot[str | None] = Slot(None)
    expanded: Slot[set[str]] = Slot(factory=set)
    upload_report: Slot[dict[str, Any] | None] = Slot(None)
    uploader_round: Slot[int] = Slot(0)
    pending_copy: Slot[bool] = Slot(False)
    outline_seen: Slot[str | None] = Slot(None)
    removing: Slot[list[str] | None] = Slot(None)  # documents waiting for "Yes, remove"
    notice: Slot[str | None] = Slot(None)  # the last removal's outcome, shown once


class EvalState(PageState):
    """The Evaluate page: the report on show and the coverage map's focus."""

    prefix = "ev"
    report: Slot[dict[str, Any] | None] = Slot(None)
    meta: Slot[dict[str, Any]] = Slot(factory=dict)
    saved: Slot[str | None] = Slot(None)
    inspect: Slot[str | None] = Slot(None)  # the coverage map's inspected node
    expanded: Slot[set[str]] = Slot(factory=set)
    open: Slot[str | None] = Slot(None)  # a question queued to open on Ask
    visible: Slot[list[str]] = Slot(factory=list)
    upload_round: Slot[int] = Slot(0)
    # The run going on in its own thread is kept per workspace (run_job.job_for), not here:
    # a reload opens a new session and must still find it.


class HistoryState(PageState):
    prefix = "hist"
    pending_open: Slot[int | None] = Slot(None)


PAGE_NOW, PAGE_BEFORE = "nav_page", "nav_page_before"  # this run's page, the last run's


def require_app(page: str) -> None:
    """Run a page only under app.py's navigation.

    While no session has run app.py yet, Streamlit still treats pages/ as a v1 multipage
    folder: a first request for /documents runs pages/documents.py alone (no session setup).
    Such a run is sent through app.py, which then opens the page asked for. Every page calls
    this first, so it also notes which page each run shows (for `arrived_on`).
    """
    ss = st.session_state
    ss[PAGE_BEFORE], ss[PAGE_NOW] = ss.get(PAGE_NOW), page  # arrived_on() reads them
    if WorkspaceState().key("id") not in ss:
        ss.open_page = page
        st.switch_page("app.py")


def arrived_on(page: str) -> bool:
    """This run opens `page` ("pages/ask.py") coming from another page, or is the session's
    first run of a page (require_app notes each run's page)."""
    return st.session_state.get(PAGE_BEFORE) != page


def init_session(widget_defaults: dict[str, Any]) -> None:
    """Create this browser session's workspace id and the sidebar widgets' defaults once."""
    _ = WorkspaceState().id  # created on first read
    for key, value in widget_defaults.items():
        st.session_state.setdefault(key, copy.copy(value))
