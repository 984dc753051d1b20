"""Ask: one question as a numbered story: ① Locate → ② Evidence → ③ Answer."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from treerag_core import Engine, Event, override_locate, rerun
from treerag_core import ask as ask_events
from treerag_core import resolve_llm_key as resolve_key
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import Trace
from ui.ask import kept, labels_marks, story
from ui.ask.last_question import offer_last_question, restored_just_now
from ui.ask.stored_view import stored_result
from ui.common import query_controls as qc
from ui.common.corpora import EVAL, SAMPLES, UPLOADS, corpus_kind_of, key_label
from ui.common.graph_guidance import warn_if_missing
from ui.common.query_log import record
from ui.common.resources import Corpus, engine_for, warm_reranker
from ui.common.session import AskState, WorkspaceState, require_app
from ui.common.text_safety import plain, show_error
from ui.common.vector_store import served_caption
from ui.common.workspace import current_corpus, sync_workspace

require_app("pages/ask.py")
ss = st.session_state
ask = AskState()
STATUS = {
    "located": "② Evidence: searching inside the picked sections…",
    "retrieved": "② Evidence: reranking the pooled candidates…",
    "reranked": "③ Answer: writing…",
}


def _queue(kind: str, **extra: Any) -> None:
    ask.pending = {"kind": kind, **extra}


def _ask_example(question: str) -> None:
    ss[qc.QUESTION] = question
    _queue("ask")


def _events(kind: str, pending: dict, engine: Engine, trace: Trace | None, settings, scope, corpus):
    """The event stream for an action (raises TreeRAGError/ValueError before any work)."""
    if kind == "ask":
        return ask_events(engine, str(ss[qc.QUESTION]), settings, scope=scope)
    assert trace is not None and trace.locate is not None
    located = trace.locate
    if kind == "override":
        located = override_locate(corpus.index, trace.locate, trace.question, pending["leaves"])
    return ask_events(
        engine, trace.question, settings, strategy=trace.strategy, located=located, scope=scope
    )


def _run_action(pending, engine, trace, settings, scope, corpus, doc_ids, box) -> bool:
    """Run a queued action; on bad input keep the error for one rerun, which shows it with
    the last result as it was, labelled (bad input loses nothing)."""
    kind = pending["kind"]
    if kind != "ask":  # overrides and regenerated answers keep the trace's own scope
        scope = list(ask.trace_scope) if ask.trace_scope else None
    else:  # before any work: a run stopped midway leaves this for the next visit to find
        ask.running = {"question": str(ss[qc.QUESTION]), "corpus": str(corpus.key)}
    if settings.rerank.enabled:
        warm_reranker(settings.rerank.model)
    try:
        events = _events(kind, pending, engine, trace, settings, scope, corpus)
        if kind == "ask":
            ask.inspect, ask.highlight = None, None
        final = _render(trace, corpus, doc_ids, engine, settings, events=events, box=box)
    except (TreeRAGError, ValueError) as exc:
        # A run that failed midway has drawn part of the story, and its widgets' keys are
        # taken for this script run: the error and the previous result are shown after a
        # rerun, where the story is drawn once.
        st.session_state[FAILED_RUN] = (exc, corpus.kind, kind)
        ask.running = None  # not interrupted: its error is shown
        st.rerun()
    if final is None:
        ask.running = None
        return False
    query_id = record(final, corpus.key, scope)
    controls = settings.to_dict() if kind == "ask" else _asked_controls(settings, final)
    ask.set_trace(final, corpus.key, scope, query_id, origin=kind)
    ask.running = None  # stored: nothing was interrupted
    ask.controls = controls
    ask.rerun_ms = None
    st.rerun()
    return False  # not reached: st.rerun() ends this run


FAILED_RUN = "ask_failed_run"  # (error, corpus kind, action) of a run that failed, for one rerun


def _previous_shown(trace: Trace, kind: str) -> None:
    """Under an error: what stays on screen is the earlier run, and says so."""
    what = "question" if kind == "ask" else "result"
    st.info(
        f"**Showing the previous {what}:** “{plain(trace.question)}”. The answer, graph "
        "and tables below are from that earlier run: nothing new ran.",
        icon=":material/history:",
    )


def _scope_moved(scope: Sequence[str] | None) -> bool:
    return (tuple(scope) if scope else None) != ask.trace_scope


def _waiting_for_ask(settings: QuerySettings, scope: Sequence[str] | None) -> list[str]:
    """Changes the stored step 1 cannot serve (strategy, locator, LLM, scope): they wait for
    Ask, together with every other change made meanwhile, so nothing is half applied."""
    before = ask.controls or {}
    step1 = qc.describe_moves(before, settings, qc.ASK_SETTINGS)
    if _scope_moved(scope):
        step1.append("Document scope")
    if not step1:
        return []
    return step1 + qc.describe_moves(before, settings, qc.RERUN_SETTINGS, skip_new=True)


def _asked_controls(settings: QuerySettings, trace: Trace) -> dict[str, Any]:
    """The controls a non-Ask action ran with: it kept the trace's step 1, so the step-1
    settings stay those of the last Ask (a pending strategy change stays pending)."""
    now = settings.to_dict()
    before = ask.controls or {}
    for path in qc.ASK_SETTINGS:
        head, _, last = path.rpartition(".")
        target = now
        for part in head.split(".") if head else ():
            target = target.setdefault(part, {})
        old = qc.setting(before, path)
        if old is not None:
            target[last] = old
    now["strategy"] = trace.strategy
    if "options" in before:  # a strategy's options (the drill-down limits) belong to its step 1
        now["options"] = before["options"]
    return now


def _pending_banner(trace: Trace, moves: Sequence[str]) -> None:
    st.warning(
        f"**Not applied yet: {plain(', '.join(moves))}.** A new step 1 (locate) is needed, "
        f"and it runs only when you press **Ask**. The results below are still those of "
        f"**{plain(trace.strategy)}** as it last ran.",
        icon=":material/pending:",
    )
    st.button(
        "Ask again with these settings",
        key="apply_pending",
        on_click=_ask_example,
        args=(trace.question,),
        icon=":material/play_arrow:",
        type="primary",
    )


def _maybe_rerun(trace: Trace, engine: Engine, settings: QuerySettings, corpus: Corpus) -> Trace:
    """Steps 2-3 again when a rerun-at-once control moved (the engine decides on step 1)."""
    if ask.controls is None:  # opened from elsewhere: shown as it ran (a reload: as its link)
        ask.controls = kept.logged_controls(settings)
    before, now = ask.controls, settings.to_dict()
    if not [p for p in qc.RERUN_SETTINGS if qc.setting(before, p) != qc.setting(now, p)]:
        return trace
    if ask.origin != "rerun" or ask.base_controls is None:
        # The first move since the last full run: what the user saw then is the baseline, so
        # arrow keys through 5 → 4 → 3 → 2 read "5 → 2", not "3 → 2" (runs never looked at).
        ask.base_controls = dict(before)
        ask.base_ranks = {h.chunk.chunk_id: h.final_rank for h in trace.reranked}
    local_answer = engine.client(settings) is None  # extractive: cheap, so refresh it too
    scope = list(ask.trace_scope) if ask.trace_scope else None
    started = time.perf_counter()
    try:
        new = rerun(engine, trace, settings, synthesize=local_answer, scope=scope)
    except (TreeRAGError, ValueError) as exc:
        show_error(exc, "Press Ask to run the question again.")
        return trace
    stale = None if local_answer else (ask.stale_answer or trace.answer or None)
    ask.set_trace(new, corpus.key, scope, None, origin="rerun")
    ask.controls = now
    ask.stale_answer = stale
    ask.rerun_ms = (time.perf_counter() - started) * 1000
    ask.previous_ranks = dict(ask.base_ranks)
    ask.moved = tuple(qc.describe_moves(ask.base_controls, settings, qc.RERUN_SETTINGS))
    return new


def _render(trace, corpus, doc_ids, engine, settings, events=None, box=None) -> Trace | None:
    """The story below the question; with `events` (a run under way) its progress shows in
    the answer column while the previous graph stays on screen (dimmed as stale), is re-lit
    in place when step 1 arrives, and the answer streams in beside it. Everything is drawn
    inside one container at a fixed place (`box`, made by the caller right after the
    notices), so nothing above or below it moves; a run that stops with an error is
    replaced by the error's own view. Returns the run's trace."""
    box = box if box is not None else st.empty().container()
    with box:
        return _story(trace, corpus, doc_ids, engine, settings, events)


def _story(trace, corpus, doc_ids, engine, settings, events) -> Trace | None:
    if ss.get(story.PRESENT):
        graph_col, answer_col = story.present_columns()
    else:
        graph_col, answer_col = st.columns([3, 2], gap="medium")
    with answer_col:
        progress = st.empty()  # the same place in every run: the answer below it never moves
        if trace is None and events is None:  # beside the graph: the graph never moves
            offer_last_question()  # a reload: the question and its result, one click away
            story.welcome(doc_ids, _ask_example, llm=settings.llm.enabled)
    status = None
    if events is None and trace is not None:  # the run's last line stays: nothing moves up
        story.evidence_ready(progress)
    if events is not None:
        status = progress.status("① Locate: finding the relevant sections…", expanded=False)
        trace = _advance(events, status, until=("located",)) or trace
    with graph_col:
        story.locate_step(corpus, doc_ids, trace)
    live = None
    if events is not None and status is not None:
        trace = _advance(events, status, until=("reranked", "done")) or trace
        status.update(label=story.READY, state="complete")
        ask.stale_answer = None
        holder: dict[str, Trace] = {}

        def deltas() -> Iterator[str]:
            for event in events:
                holder["trace"] = event.trace
                if event.kind == "delta":
                    yield event.delta

        live = deltas()
    if trace is None:
        with answer_col:
            story.inspector_panel(corpus, doc_ids, None, lambda _: None)
        qc.step2_controls(bool(ss.get(story.PRESENT)))  # set before the first question too
        return None
    # The answer is drawn right after the graph, before the evidence tables: the browser
    # renders messages in order, so the first streamed token no longer waits behind them.
    with answer_col:
        story.answer_step(trace, corpus.index, live, lambda: _queue("answer"))
    if live is not None:
        for _ in live:  # the stream was consumed by the answer; drain what is left
            pass
        trace = holder.get("trace", trace)
    # The inspector next, before the long evidence tables: a citation or node click opens it
    # (and scrolls to it) instead of a screen below them.
    story.inspector_panel(
        corpus,
        doc_ids,
        trace,
        lambda leaves: _queue("override", leaves=leaves),
        labels_marks.page_marks(trace, corpus),  # issue 26: mark the passage on its PDF page
    )
    labels_marks.inspector_marks(trace, corpus, ask.inspect)  # issue 26: mark a span
    qc.step2_controls(bool(ss.get(story.PRESENT)))  # right above the tables they change
    story.evidence_step(trace)
    labels_marks.passage_marks(trace, corpus)  # issue 26: mark the final passages
    story.strategy_views(trace, engine)
    if not ss.get(story.PRESENT):
        left, _ = st.columns([3, 2], gap="medium")
        with left:
            story.details(trace)
    with st.expander("Compare strategies side by side", expanded=ask.compare is not None):
        story.compare_panel(trace, engine, settings, corpus.kind)
    with st.expander("Example questions"):
        story.examples(doc_ids, _ask_example)
    return trace


def _advance(events: Iterator[Event], status, until: tuple[str, ...]) -> Trace | None:
    """Consume events up to one of `until`, showing each step's progress in `status`."""
    trace = None
    try:
        for event in events:
            trace = event.trace
            if event.kind in STATUS:
                status.update(label=STATUS[event.kind])
            if event.kind in until:
                break
    except (TreeRAGError, ValueError):
        status.update(label="Stopped", state="error")
        raise
    return trace


def _stored(trace: Trace, kind: str, can_ask: bool) -> None:
    """The last result when its index is not the open one: read-only, as it was logged.

    Shown in full when it belongs here (opened from History, or the workspace changed under
    it); behind a toggle when the user chose another corpus on purpose."""
    here = ask.origin == "history" or corpus_kind_of(ask.trace_corpus) == kind
    if not here and not st.toggle(
        "Show the stored result of your last question "
        f"(on {key_label(ask.trace_corpus, 'phrase')})",
        key="ask_show_stored",
    ):
        return
    again = (lambda: _ask_example(trace.question)) if can_ask else None
    stored_result(trace, ask.trace_corpus, ask.trace_id, again)
    st.divider()


def _no_corpus(kind: str) -> None:
    if kind == UPLOADS:
        st.info("Your workspace is empty: upload documents first.", icon=":material/description:")
        st.page_link(
            "pages/documents.py", label="Go to Documents to upload", icon=":material/upload:"
        )
    else:
        st.error(
            "No sample documents found in sample_docs/: upload your own documents on the "
            "Documents page and choose “My uploads”."
        )
    st.stop()


def main() -> None:
    sync_workspace()  # the ?ws= workspace of a reload: its uploads and History come back
    has_uploads = WorkspaceState().index is not None
    qc.sync_corpus_choice(has_uploads)  # the ?corpus= the user picked before a reload
    qc.default_corpus(has_uploads)
    kept.restore_from_link()  # a reload: the link's question and scope (and its result)
    if ss.qs_corpus == EVAL and ask.eval_corpus is None:
        ss.qs_corpus = SAMPLES  # no eval set opened in this session
    kind = ss.qs_corpus
    try:
        corpus = current_corpus(kind)
    except TreeRAGError as exc:
        st.title("TreeRAG Explorer")
        if kind != SAMPLES:  # the way out the message names: another corpus
            qc.corpus_radio(ask.eval_corpus.label if ask.eval_corpus else None)
        show_error(
            exc,
            "The sample documents cannot be indexed with this embedder: install the package "
            "named above, or start the app with TREERAG_EMBEDDER=hashing (no model)."
            if kind == SAMPLES
            else "This corpus cannot be searched as it is: choose another corpus in the sidebar.",
        )
        st.stop()
    scope_key = f"qs_scope_{kind}"
    doc_options = {d.doc_id: d.title or d.name for d in corpus.index.documents} if corpus else {}
    eval_corpus = ask.eval_corpus
    kept.restore_after_visit(scope_key, kind)  # back from another page: nothing lost
    llm, typed_key = qc.sidebar(doc_options, scope_key, eval_corpus.label if eval_corpus else None)
    head, mode = st.columns([4, 1.6], vertical_alignment="bottom")  # the toggle's label whole
    head.title("TreeRAG Explorer")
    story.sync_present()  # ?present=1 of a reload
    mode.toggle("Presentation mode", key=story.PRESENT, help=story.PRESENT_HELP)
    if ss.get(story.PRESENT):
        st.html(story.PRESENT_CSS)
    if corpus is None:
        if ask.trace is not None:  # the workspace is empty now: its last result stays readable
            _stored(ask.trace, kind, can_ask=False)
        _no_corpus(kind)
        return
    scope = list(ss[scope_key]) or None
    doc_ids = scope or list(doc_options)
    st.container(key="ask_corpus_line").caption(
        f"{corpus.label}: {len(doc_ids)} of {len(doc_options)} document(s) in scope · "
        f"embedder {corpus.index.embedder_name} · {len(corpus.index.chunks):,} chunks"
    )
    served_caption(corpus)  # Milvus, when it serves this corpus' searches
    try:
        settings = qc.query_settings()
    except ValueError as exc:
        show_error(exc, "Reset the sidebar value named above.")
        st.stop()
    engine = engine_for(corpus, resolve_key(llm, typed_key))
    warn_if_missing(settings.strategy, corpus.index, corpus.kind)  # treerag-kg without graphs
    with st.form("ask_form", border=False):
        c1, c2 = st.columns([6, 1], vertical_alignment="bottom")
        c1.text_input(
            "Question",
            key=qc.QUESTION,
            persist_state=qc.KEEP,
            # No max_chars: the browser would silently drop a longer paste; the engine's
            # limit is said up front here and, if passed, in one message with the text kept.
            help=f"Up to {settings.max_question_chars:,} characters.",
            placeholder="Ask anything about the documents — English or 中文",
        )
        submitted = c2.form_submit_button("Ask", type="primary", width="stretch")
    kept.keep(scope_key, kind)  # before any answer runs: a switch or reload midway keeps both
    if submitted:
        _queue("ask")
    trace: Trace | None = ask.trace if ask.trace_corpus == corpus.key else None
    asking = ask.pending is not None and ask.pending["kind"] == "ask"
    with st.container():  # notices of the whole page, above the story
        failed = st.session_state.pop(FAILED_RUN, None)
        if failed is not None:  # the run before this one failed: its error, what stays shown
            error, corpus_kind, action = failed
            show_error(error, "Change the question or the settings, then ask again.", corpus_kind)
            if trace is not None:
                _previous_shown(trace, action)
        if ask.trace is not None and trace is None and not asking:
            _stored(ask.trace, kind, can_ask=True)
        if ask.pending is None:
            kept.interrupted_notice(trace, _ask_example)  # an Ask stopped by a page switch
    story_fragment(corpus, doc_ids, engine, scope)


def _fragment_run() -> bool:
    """Whether this script run reruns fragments only (a widget inside one moved)."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


@st.fragment
def story_fragment(corpus: Corpus, doc_ids: list[str], engine: Engine, scope) -> None:
    """The story (graph, answer, evidence and step 2's controls beside it) as one fragment: a
    step-2 slider or a click inside it reruns this alone, not the sidebar, the question
    box or the notices above. Its arguments are those of the last full run (a fragment
    rerun replays them), so the trace and the settings are read here, each time."""
    if _fragment_run() and ask.pending is not None and ask.pending["kind"] == "ask":
        # A question asked from inside (an example, "Ask again"): the whole page runs it, so
        # the question box, the link and the notices follow (kept.keep before the answer).
        st.rerun(scope="app")
    if restored_just_now() and _fragment_run():  # the question box shows the restored one
        st.rerun(scope="app")
    kept.keep_tuning()  # step 2's controls are in here: a move reruns only this
    trace: Trace | None = ask.trace if ask.trace_corpus == corpus.key else None
    try:
        settings = qc.query_settings()
    except ValueError as exc:
        show_error(exc, "Reset the value named above.")
        return
    pending = ask.take("pending")
    # Notices (errors, banners, a model's loading spinner) go in their own container above
    # the story's slot, so however many there are, the slot keeps its place and the graph
    # inside it is never remounted.
    notices, slot = st.container(), st.empty()
    box = slot.container()  # created at once: the previous run's story stays until redrawn
    with notices:
        if pending is not None and (pending["kind"] == "ask" or trace is not None):
            _run_action(pending, engine, trace, settings, scope, corpus, doc_ids, box)
        if trace is not None and trace.locate is not None:
            waiting = _waiting_for_ask(settings, scope) if ask.controls is not None else []
            if waiting:  # never a rerun under the old strategy presented as the new one
                _pending_banner(trace, waiting)
            else:
                trace = _maybe_rerun(trace, engine, settings, corpus)
    _render(trace, corpus, doc_ids, engine, settings, box=box)


main()
