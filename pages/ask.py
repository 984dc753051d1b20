"""Ask: one question through the three steps, drawn on the tree, every score on show."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from pages import panels, state
from pages import widgets as w
from treerag_core.errors import TreeRAGError
from treerag_core.llm import PRICES
from treerag_core.pipeline import Engine, Event, run, run_stream
from treerag_core.settings import QuerySettings
from treerag_core.trace_io import trace_to_json
from treerag_core.types import Trace

ss = st.session_state
state.require_app("pages/ask.py")
GRAPH_KEY = "ask_graph"
KEEP = "session"  # sidebar values survive a visit to another page


# ---- sidebar -------------------------------------------------------------------------------


def _sidebar(doc_options: dict[str, str], scope_key: str) -> None:
    sb = st.sidebar
    eval_corpus = ss.get("eval_corpus")  # set when a question was opened from Evaluate
    labels = {state.SAMPLES: "Sample documents", state.UPLOADS: "My uploads"}
    if eval_corpus is not None:
        labels[state.EVAL] = eval_corpus.label
    sb.radio(
        "Corpus",
        list(labels),
        key="qs_corpus",
        persist_state=KEEP,
        format_func=labels.get,
        horizontal=True,
    )
    ss[scope_key] = [d for d in ss.get(scope_key, []) if d in doc_options]
    sb.multiselect(
        "Document scope",
        list(doc_options),
        key=scope_key,
        persist_state=KEEP,
        format_func=lambda d: doc_options.get(d, d),
        placeholder="All documents",
        help="Search only these documents (empty: all of them).",
    )
    sb.subheader("LLM")
    sb.toggle("Use the LLM (Anthropic)", key="qs_use_llm", persist_state=KEEP)
    sb.text_input(
        "Anthropic API key",
        key="api_key",
        persist_state=KEEP,
        type="password",
        placeholder="sk-ant-… (this session only)",
        help="Kept in this browser session's memory only: never written to disk, the audit "
        "log or a trace. Empty: the server's ANTHROPIC_API_KEY, if it has one.",
    )
    typed = bool(str(ss.get("api_key", "")).strip())
    key = state.session_api_key()
    if not ss.qs_use_llm:
        sb.caption("LLM off: local locator and an extractive answer.")
    elif typed:
        sb.caption("Using the key typed in this session.")
    elif key:
        sb.caption("Using the server's ANTHROPIC_API_KEY.")
    else:
        sb.caption("No API key: the local locator and an extractive answer run offline.")
    models = list(PRICES)
    for widget_key, label in (
        ("qs_locate_model", "Locate model"),
        ("qs_answer_model", "Answer model"),
    ):
        options = models if ss[widget_key] in models else [ss[widget_key], *models]
        sb.selectbox(label, options, key=widget_key, disabled=not ss.qs_use_llm, persist_state=KEEP)

    sb.subheader("Step 1 · Locate")
    sb.selectbox(
        "Locator",
        state.LOCATORS,
        key="qs_locator",
        persist_state=KEEP,
        help="auto: the LLM when a key is set, else local. local: best chunk + heading "
        "match per leaf. keyword: the seed's mock (question terms in headings/summaries).",
    )
    sb.selectbox(
        "Strategy",
        state.runnable_strategies(),
        key="qs_strategy",
        persist_state=KEEP,
        help="treerag: locate leaves, then search inside them. flat-*: search every chunk.",
    )
    sb.slider("Max leaves", 1, 5, key="qs_max_leaves", persist_state=KEEP)

    sb.subheader("Step 2 · Retrieve and rerank")
    sb.caption("Changes here re-run steps 2-3 from the stored step 1: no new LLM call.")
    sb.selectbox(
        "Fusion",
        state.FUSIONS,
        key="qs_fusion",
        persist_state=KEEP,
        format_func={
            "weighted": "weighted (min-max, then weighted sum)",
            "rrf": "RRF (reciprocal rank)",
            "dbsf": "DBSF (mean ± 3 std)",
            "union": "union (either retriever, once per chunk)",
        }.get,
    )
    sb.slider("Dense weight", 0.0, 1.0, step=0.05, key="qs_dense_weight", persist_state=KEEP)
    sb.caption(f"BM25 weight = 1 − dense = {1.0 - float(ss.qs_dense_weight):.2f}")
    sb.slider(
        "RRF k",
        1,
        120,
        key="qs_rrf_k",
        persist_state=KEEP,
        disabled=ss.qs_fusion != "rrf",
        help="Used by RRF only: 1 / (k + rank).",
    )
    sb.slider("Top-k per leaf", 1, 20, key="qs_top_k_per_leaf", persist_state=KEEP)
    sb.slider("Final top-k", 1, 50, key="qs_final_top_k", persist_state=KEEP)
    sb.toggle("Rerank (cross-encoder)", key="qs_rerank", persist_state=KEEP)
    sb.toggle(
        "Rerank Chinese questions too",
        key="qs_rerank_chinese",
        persist_state=KEEP,
        disabled=not ss.qs_rerank,
        help="The bundled cross-encoder is English-only; off by default for Chinese.",
    )


# ---- actions -------------------------------------------------------------------------------


def _queue(kind: str, **extra: Any) -> None:
    ss.pending = {"kind": kind, **extra}


def _ask_example(question: str) -> None:
    ss.question = question
    _queue("ask")


def _cite(node_id: str) -> None:
    ss.inspect = node_id


def _picked(trace: Trace | None, index) -> list[str]:
    if trace is None or trace.locate is None:
        return []
    return [leaf.node_id for leaf in trace.locate.leaves if leaf.node_id in index.nodes]


def _events(kind: str, pending: dict, engine, trace: Trace | None, settings, scope, corpus):
    """The event stream for an action (raises TreeRAGError/ValueError before any work)."""
    if kind == "ask":
        return run_stream(engine, str(ss.question), settings, scope=scope)
    assert trace is not None and trace.locate is not None
    if kind == "override":
        located = state.override_locate(
            corpus.index, trace.locate, trace.question, pending["leaves"]
        )
        return run_stream(
            engine, trace.question, settings, strategy="treerag", located=located, scope=scope
        )
    return run_stream(  # "answer": a fresh answer from the current evidence
        engine, trace.question, settings, strategy=trace.strategy, located=trace.locate, scope=scope
    )


STATUS = {
    "located": "Step 2 · searching inside the picked sections…",
    "retrieved": "Reranking the pooled candidates…",
    "reranked": "Step 3 · writing the answer…",
}


def _run_until_answer(events: Iterator[Event]) -> Trace | None:
    """Consume steps 1-2 (showing progress); the answer deltas stay in `events`."""
    trace = None
    with st.status("Step 1 · locating the relevant sections…", expanded=False) as status:
        try:
            for event in events:
                trace = event.trace
                if event.kind in STATUS:
                    status.update(label=STATUS[event.kind])
                if event.kind in ("reranked", "done"):
                    break
        except (TreeRAGError, ValueError):
            status.update(label="Stopped", state="error")
            raise
        status.update(label="Evidence ready", state="complete")
    return trace


# ---- rendering ------------------------------------------------------------------------------


def _graph_docs(index, doc_ids: Sequence[str], marks: w.GraphMarks) -> list[str]:
    """Documents to draw: those holding picked/cited/selected nodes, else all in scope."""
    focus = marks.picked | marks.cited | ({marks.selected} if marks.selected else set())
    docs = [
        d for d in doc_ids if any(index.nodes[i].doc_id == d for i in focus if i in index.nodes)
    ]
    return docs or list(doc_ids)


def _graph(corpus, doc_ids: Sequence[str], trace: Trace | None) -> None:
    index = corpus.index
    # A click arrives as the component's new value: apply it before drawing, so the
    # colours and the inspector reflect it in this same run.
    clicked = w.handle_graph_click(w.last_click("ask_graph_key"), "ask_graph_seen")
    if clicked:
        w.apply_click(index, clicked)
    picked = _picked(trace, index)
    cited = {i for i in (state.iter_cited_nodes(trace) if trace else ()) if i in index.nodes}
    unsupported = {
        i
        for c in (trace.citations if trace else ())
        if not c.supported
        for i in c.node_ids
        if i in index.nodes and i not in cited
    }
    find = str(ss.get("ask_find", "")).strip()
    matches = w.heading_matches(index, doc_ids, find)
    marks = w.GraphMarks(
        picked=frozenset(picked),
        cited=frozenset(cited),
        unsupported=frozenset(unsupported),
        matches=frozenset(matches),
        selected=ss.inspect if ss.inspect in index.nodes else None,
        expanded=frozenset(ss.expanded),
    )
    docs = list(doc_ids) if ss.get("ask_all_docs") else _graph_docs(index, doc_ids, marks)
    head, c1, c2, c3 = st.columns([3, 3, 1.2, 1.4], vertical_alignment="bottom")
    head.subheader("Document tree")
    c1.text_input(
        "Find a heading",
        key="ask_find",
        placeholder="Find a heading, e.g. Router",
        label_visibility="collapsed",
    )
    c2.toggle("Whole tree", key="ask_full", help="Draw every node (no collapsing).")
    c3.toggle("All documents", key="ask_all_docs", help="Draw every document in scope.")
    view = w.graph_view(index, docs, marks, full=bool(ss.get("ask_full")))
    ss.ask_graph_view = view  # tests read what was drawn
    new_key = w.graph_key(GRAPH_KEY, view)
    if new_key != ss.get("ask_graph_key"):  # a fresh component starts with no click
        ss.ask_graph_seen = None
        ss.ask_graph_key = new_key
    value = w.draw_graph(view, key=ss.ask_graph_key, height=w.graph_height(view))
    if w.handle_graph_click(value, "ask_graph_seen"):  # a click the pre-read did not see
        w.apply_click(index, value)
        st.rerun()
    w.graph_legend(view)
    if find:
        st.caption(
            f"{len(matches)} heading(s) match “{w.plain(find)}”."
            if matches
            else "No heading matches."
        )


def _inspector_panel(corpus, doc_ids: Sequence[str], trace: Trace | None) -> None:
    index = corpus.index
    st.subheader("Inspector")
    options = [n.node_id for n in index.nodes.values() if n.doc_id in set(doc_ids)]
    ss.ask_inspect_pick = ss.inspect if ss.inspect in options else None

    def _pick() -> None:
        ss.inspect = ss.ask_inspect_pick

    st.selectbox(
        "Inspect a node",
        options,
        key="ask_inspect_pick",
        on_change=_pick,
        label_visibility="collapsed",
        placeholder="Click a node in the tree, or pick one here",
        format_func=lambda i: f"{i} · {index.nodes[i].heading_path or index.nodes[i].heading}",
    )
    if ss.inspect not in index.nodes:
        return
    picked = _picked(trace, index)
    can_override = trace is not None and trace.locate is not None and ss.trace_corpus == corpus.key
    w.inspector(
        index,
        ss.inspect,
        picked=picked if can_override else None,
        on_toggle=(lambda leaves: _queue("override", leaves=leaves)) if can_override else None,
        key="ask_inspector",
    )


def _answer_static(trace: Trace, index) -> None:
    if ss.stale_answer:
        st.warning(
            "The evidence changed since this answer was written: LLM answers are not "
            "regenerated when a slider moves (that would cost a call each time).",
            icon=":material/sync_problem:",
        )
        st.markdown(w.safe_answer(ss.stale_answer))
        st.button(
            "Regenerate the answer from the new evidence",
            on_click=_queue,
            args=("answer",),
            icon=":material/edit_note:",
            key="regenerate",
        )
        return
    if not trace.answer:
        st.info("No answer in this trace.")
        return
    st.markdown(w.safe_answer(trace.answer))
    panels.citations(trace, index, _cite)


def _compare(trace: Trace, engine, settings) -> None:
    scope = list(ss.trace_scope) if ss.trace_scope else None  # the question's own scope
    st.caption(
        "The same question through other strategies (steps 1-2 only, no LLM call: the tree "
        "strategy reuses this trace's step 1)."
    )
    stamp = (trace.created_at, trace.question, repr(settings.to_dict()))
    if st.button("Compare strategies", icon=":material/compare_arrows:", key="compare_run"):
        results: dict[str, tuple[Trace, float]] = {}
        local = settings.set("llm.enabled", False)  # comparing never calls the LLM
        for strategy in state.runnable_strategies():
            # The tree strategy reuses this trace's step 1 when it has one.
            located = trace.locate if strategy == trace.strategy == "treerag" else None
            started = time.perf_counter()
            try:
                out = run(
                    engine,
                    trace.question,
                    local,
                    strategy=strategy,
                    located=located,
                    scope=scope,
                    synthesize=False,
                )
            except (TreeRAGError, ValueError) as exc:
                w.show_error(exc)
                continue
            results[strategy] = (out, time.perf_counter() - started)
        ss.compare = {"stamp": stamp, "results": results}
    data = ss.get("compare")
    if not data or data["stamp"] != stamp:
        return
    results = data["results"]
    base = {h.chunk.chunk_id for h in results.get(trace.strategy, (trace, 0))[0].reranked}
    cols = st.columns(len(results))
    for col, (strategy, (out, seconds)) in zip(cols, results.items(), strict=True):
        ids = [h.chunk.chunk_id for h in out.reranked]
        shared = len(base & set(ids))
        col.markdown(f"**{strategy}**")
        col.caption(f"{seconds * 1000:,.0f} ms · {shared}/{len(ids)} shared with {trace.strategy}")
        col.dataframe(
            pd.DataFrame(
                [
                    {
                        "#": h.final_rank,
                        "section": h.chunk.heading_path,
                        "text": w.preview(h.chunk.text, 70),
                    }
                    for h in out.reranked
                ]
            ),
            hide_index=True,
            width="stretch",
            key=f"compare_{strategy}",
        )


def _examples(doc_ids: Sequence[str]) -> None:
    examples = state.examples_for(doc_ids)
    if not examples:
        st.caption("Type a question about your documents above.")
        return
    cols = st.columns(3)
    for i, (doc, question) in enumerate(examples):
        cols[i % 3].button(
            w.plain(question),
            key=f"example_{i}",
            on_click=_ask_example,
            args=(question,),
            help=f"About {doc}",
            width="stretch",
        )


def _welcome(doc_ids: Sequence[str]) -> None:
    st.markdown(
        "**Try a question** (no API key needed: a local locator and an extractive answer "
        "run offline)"
    )
    _examples(doc_ids)
    st.caption(
        "Step 1 picks 1-5 leaf sections of the heading tree (the LLM reads the tree, or a local "
        "locator scores every leaf), step 2 searches inside them (dense + BM25, fused, then "
        "reranked across sections), step 3 writes a cited answer. Every step is shown below."
    )


# ---- the page -------------------------------------------------------------------------------


def main() -> None:
    if ss.qs_corpus == state.EVAL and ss.get("eval_corpus") is None:
        ss.qs_corpus = state.SAMPLES  # no eval set opened in this session
    corpus_kind = ss.qs_corpus
    try:
        corpus = state.current_corpus(corpus_kind)
    except TreeRAGError as exc:
        st.title("TreeRAG Explorer")
        w.show_error(
            exc,
            "The sample documents cannot be indexed with this embedder: install the package "
            "named above, or start the app with TREERAG_EMBEDDER=hashing (no model).",
        )
        st.stop()
    scope_key = f"qs_scope_{corpus_kind}"
    doc_options = {d.doc_id: d.title or d.name for d in corpus.index.documents} if corpus else {}
    _sidebar(doc_options, scope_key)
    st.title("TreeRAG Explorer")
    if corpus is None:
        if corpus_kind == state.UPLOADS:
            st.info(
                "Your workspace is empty: upload Markdown or text files first.",
                icon=":material/description:",
            )
            st.page_link(
                "pages/documents.py", label="Go to Documents to upload", icon=":material/upload:"
            )
        else:
            st.error(
                "No sample documents found in sample_docs/: upload your own documents on the "
                "Documents page and choose “My uploads”."
            )
        st.stop()
    scope = list(ss[scope_key]) or None
    doc_ids = scope or list(doc_options)
    st.caption(
        f"{corpus.label}: {len(doc_ids)} of {len(doc_options)} document(s) in scope · "
        f"embedder {corpus.index.embedder_name} · {len(corpus.index.chunks):,} chunks"
    )

    try:
        settings = state.query_settings()
    except ValueError as exc:
        w.show_error(exc, "Reset the sidebar value named above.")
        st.stop()
    engine = state.engine_for(corpus, state.session_api_key())

    with st.form("ask_form", border=False):
        c1, c2 = st.columns([6, 1], vertical_alignment="bottom")
        c1.text_input(
            "Question",
            key="question",
            persist_state=KEEP,
            placeholder="Ask anything about the documents — English or 中文",
        )
        submitted = c2.form_submit_button("Ask", type="primary", width="stretch")

    pending = ss.pop("pending", None)
    if submitted:
        pending = {"kind": "ask"}
    trace: Trace | None = ss.trace if ss.trace_corpus == corpus.key else None
    if ss.trace is not None and trace is None:
        st.info(
            "Your last question ran on another corpus (or your workspace changed since): "
            "ask again here.",
            icon=":material/info:",
        )

    if pending is not None and (pending["kind"] == "ask" or trace is not None):
        _run_action(pending, engine, trace, settings, scope, corpus, doc_ids)
        return

    if trace is not None and trace.locate is not None:
        trace = _maybe_rerun(trace, engine, settings, corpus)
        ss_scope = tuple(scope) if scope else None
        changed = state.changed_settings(trace, settings, state.ASK_SETTINGS)
        if ss_scope != ss.trace_scope:
            changed.append("document scope")
        if changed:
            st.info(
                f"Step-1 settings changed ({', '.join(changed)}): press **Ask** to locate again. "
                "The results below still use the earlier pick.",
                icon=":material/info:",
            )
    _render(trace, corpus, doc_ids, engine, settings)


def _maybe_rerun(
    trace: Trace, engine: Engine, settings: QuerySettings, corpus: state.Corpus
) -> Trace:
    """Steps 2-3 again when only retrieval settings moved (no LLM call)."""
    if not state.changed_controls(trace, settings):
        return trace
    local_answer = engine.client(settings) is None  # extractive: cheap, so refresh it too
    scope = list(ss.trace_scope) if ss.trace_scope else None  # the trace's own scope
    try:
        new, seconds = state.timed_rerun(engine, trace, settings, scope, synthesize=local_answer)
    except (TreeRAGError, ValueError) as exc:
        w.show_error(exc, "Press Ask to run the question again.")
        return trace
    stale = None if local_answer else (ss.stale_answer or trace.answer or None)
    state.set_trace(new, corpus.key, scope, None)
    ss.stale_answer = stale
    ss.rerun_ms = seconds * 1000
    ss.trace_origin = "rerun"
    return new


def _run_action(pending, engine, trace, settings, scope, corpus, doc_ids) -> None:
    kind = pending["kind"]
    if kind != "ask":  # overrides and regenerated answers keep the trace's own scope
        scope = list(ss.trace_scope) if ss.trace_scope else None
    if settings.rerank.enabled:
        state.warm_reranker(settings.rerank.model)
    try:
        events = _events(kind, pending, engine, trace, settings, scope, corpus)
        partial = _run_until_answer(events)
    except (TreeRAGError, ValueError) as exc:
        w.show_error(exc, "Change the question or the settings, then ask again.")
        _render(trace, corpus, doc_ids, engine, settings)
        return
    if partial is None:
        return
    if kind == "ask":  # a new question opens its best leaf in the inspector
        picked = _picked(partial, corpus.index)
        ss.inspect = picked[0] if picked else None
    holder: dict[str, Trace] = {}

    def deltas() -> Iterator[str]:
        for event in events:
            holder["trace"] = event.trace
            if event.kind == "delta":
                yield event.delta

    ss.stale_answer = None
    _render(partial, corpus, doc_ids, engine, settings, live=deltas())
    final = holder.get("trace", partial)
    query_id = state.record(final, corpus.key, scope)
    state.set_trace(final, corpus.key, scope, query_id)
    ss.trace_origin = kind
    ss.rerun_ms = None
    st.rerun()


def _render(
    trace: Trace | None,
    corpus: state.Corpus,
    doc_ids: Sequence[str],
    engine: Engine,
    settings: QuerySettings,
    live: Iterator[str] | None = None,
) -> None:
    """The page below the question: the tree, answer, inspector and the step tabs.

    With `live`, the answer is streamed from it (after everything else is drawn).
    """
    index = corpus.index
    if trace is None:
        _welcome(doc_ids)
    _graph(corpus, doc_ids, trace)
    left, right = st.columns([1, 1], gap="large")
    with right:
        _inspector_panel(corpus, doc_ids, trace)
    if trace is None:
        return
    with left:
        st.subheader("Answer")
        st.caption(f"Q: {w.plain(trace.question)}")
        answer_slot = st.container()
        panels.fallbacks(trace)
        panels.costs(trace, ss.rerun_ms if ss.get("trace_origin") == "rerun" else None)
        st.download_button(
            "Download the trace (JSON)",
            trace_to_json(trace),
            file_name=f"treerag-trace-{(trace.created_at or 'run').replace(':', '')}.json",
            mime="application/json",
            icon=":material/download:",
            key="download_trace",
            on_click="ignore",  # a download needs no rerun
        )
        with st.expander("Example questions"):
            _examples(doc_ids)
    tabs = st.tabs(["① Locate", "② Retrieve", "Rerank", "Compare strategies"])
    with tabs[0]:
        panels.step1(trace)
    with tabs[1]:
        panels.step2(trace)
    with tabs[2]:
        panels.rerank(trace)
    with tabs[3]:
        _compare(trace, engine, settings)
    with answer_slot:
        if live is not None:
            st.write_stream(w.safe_answer_stream(live))
        else:
            _answer_static(trace, index)


main()
