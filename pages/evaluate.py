"""Evaluate: run strategies over an eval set, compare their metrics, open a question's trace."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st

from pages import eval_views as ev
from pages import state
from pages import widgets as w
from treerag_core.config import IndexSettings
from treerag_core.errors import TreeRAGError
from treerag_core.evaluation.dataset import EvalDataError, EvalDataset
from treerag_core.evaluation.harness import EvalConfig, evaluate, oracle_leaves
from treerag_core.evaluation.report import load_report, markdown_table
from treerag_core.settings import QuerySettings
from treerag_core.strategies import strategy_names

ss = st.session_state
state.require_app("pages/evaluate.py")
KEEP = "session"  # sidebar values survive a visit to another page
GRAPH_KEY = "ev_cov_graph"
FOLDER_HINT = (
    "Pick one of the dev sets in the sidebar, or choose “Another folder…” and type a folder "
    "that holds questions.jsonl and docs/*.md."
)
REPORT_HINT = "Load a report written by the Run button or by `python -m treerag_core eval --out`."
SCOPES = ("doc", "corpus")
VIEWS = ("Metrics", "Questions", "Coverage map")
FAILS = (TreeRAGError, OSError, ValueError)


def _rerank_on(query: dict[str, Any]) -> bool:
    """Whether a report's saved query settings (nested or the older flat keys) had rerank on."""
    try:
        return QuerySettings.from_dict(query).rerank.enabled
    except (TypeError, ValueError):
        return False


def _init() -> None:
    for key, value in ev.WIDGET_DEFAULTS.items():
        ss.setdefault(key, list(value) if isinstance(value, list) else value)
    ss.setdefault("ev_upload_round", 0)
    ss.setdefault("ev_view", VIEWS[0])
    ss.setdefault("eval_report", None)
    ss.setdefault("eval_meta", {})


# ---- sidebar -------------------------------------------------------------------------------


def _sidebar() -> tuple[bool, bool, Any]:
    """The run and load controls; returns (run clicked, load clicked, uploaded file)."""
    sb = st.sidebar
    sb.subheader("Eval set")
    sb.selectbox(
        "Dataset",
        [*ev.DEV_SETS, ev.OTHER],
        key="ev_dataset",
        persist_state=KEEP,
        format_func=lambda d: "Another folder…" if d == ev.OTHER else d,
        help="The dev sets beside the repo (../shared/eval), or a folder of your own.",
    )
    if ss.ev_dataset == ev.OTHER:
        sb.text_input(
            "Dataset folder",
            key="ev_folder",
            persist_state=KEEP,
            placeholder="/path/to/set",
            help="A folder with questions.jsonl and docs/*.md, in the dev sets' format.",
        )
    sb.multiselect(
        "Strategies",
        strategy_names(),
        key="ev_strategies",
        persist_state=KEEP,
        help="oracle-sections is handed the leaves that hold the gold evidence: the ceiling "
        "of the tree route.",
    )
    sb.radio(
        "Scope",
        SCOPES,
        key="ev_scope",
        persist_state=KEEP,
        horizontal=True,
        help="doc: each question searches its own document(s). corpus: every document of the set.",
    )
    sb.number_input(
        "Questions (0 = all)",
        min_value=0,
        step=5,
        key="ev_limit",
        persist_state=KEEP,
        help="Run the first N usable questions of the set.",
    )
    sb.toggle("Rerank (cross-encoder)", key="ev_rerank", persist_state=KEEP)
    sb.caption(
        f"Embedder: {w.plain(state.default_embedder())} · no LLM call (local locator, no "
        "answers written)."
    )
    run = sb.button(
        "Run evaluation",
        key="ev_run",
        type="primary",
        icon=":material/play_arrow:",
        width="stretch",
    )
    sb.subheader("Or load a report")
    upload = sb.file_uploader("Report JSON", type=["json"], key=f"ev_upload_{ss.ev_upload_round}")
    sb.text_input(
        "Report path on the server",
        key="ev_report_path",
        persist_state=KEEP,
        placeholder=f"{ev.reports_dir()}/….json",
    )
    load = sb.button(
        "Load from path", key="ev_load", icon=":material/folder_open:", width="stretch"
    )
    return run, load, upload


# ---- actions -------------------------------------------------------------------------------


def _dataset_status(folder: Path | None) -> EvalDataset | None:
    """The chosen set, with a one-line summary; an error with the next step when unreadable."""
    if folder is None:
        st.info("Type the dataset folder in the sidebar.", icon=":material/folder:")
        return None
    try:
        data = ev.dataset(folder)
    except FAILS as exc:
        w.show_error(exc, FOLDER_HINT)
        return None
    left = ", ".join(f"{n} {reason}" for reason, n in data.left_out.items() if n)
    st.caption(
        f"**{w.plain(data.name)}**: {len(data.usable_questions)} usable of "
        f"{len(data.questions)} questions over {len(data.doc_names)} documents"
        + (f" (left out: {w.plain(left)})" if left else "")
        + "."
    )
    return data


def _set_report(report: dict[str, Any], meta: dict[str, Any]) -> None:
    ss.eval_report, ss.eval_meta = report, meta
    ss.ev_saved = None
    ss.ev_cov_inspect, ss.ev_cov_expanded = None, set()
    ss.pop("ev_cov_doc", None)


def _run(folder: Path | None, data: EvalDataset | None) -> None:
    if folder is None or data is None:
        st.error("Nothing was run: the dataset folder cannot be read (see above).")
        return
    strategies = tuple(ss.ev_strategies)
    if not strategies:
        st.error("Nothing was run: pick at least one strategy in the sidebar.")
        return
    settings = IndexSettings(embedder=state.default_embedder())
    query = QuerySettings().set("answer.final_top_k", 10).set("rerank.enabled", bool(ss.ev_rerank))
    limit = int(ss.ev_limit) or None
    try:
        config = EvalConfig(
            strategies=strategies,
            scope=ss.ev_scope,
            limit=limit,
            use_llm=False,
            index_settings=settings,
            query_settings=query,
        )
        es = ev.eval_set(folder, settings)
    except FAILS as exc:
        w.show_error(exc, "Nothing was run. " + FOLDER_HINT)
        return
    if query.rerank:  # the first question's latency must not include loading the model
        state.warm_reranker(query.rerank.model)
    n = min(limit or len(data.usable_questions), len(data.usable_questions))
    bar = st.progress(0.0, text=f"Running {len(strategies)} strategies on {n} questions…")

    def progress(done: int, total: int) -> None:
        bar.progress(
            min(1.0, done / total) if total else 1.0,
            text=f"{done:,} / {total:,} runs ({len(strategies)} strategies × {n} questions)",
        )

    started = time.perf_counter()
    try:
        report = evaluate(
            es.folder, config, cache_dir=ev.cache_dir(), progress=progress, index=es.index
        )
    except FAILS as exc:
        bar.empty()
        w.show_error(exc, "The run stopped; no report was kept. " + FOLDER_HINT)
        return
    bar.empty()
    meta = {
        "source": "run",
        "folder": str(es.folder),
        "seconds": time.perf_counter() - started,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _set_report(report, meta)


def _load_path(text: str) -> None:
    if not text.strip():
        st.error("Type the path of a report JSON in the sidebar first. " + REPORT_HINT)
        return
    path = Path(text.strip()).expanduser()
    try:
        report = ev.check_report(load_report(path), str(path))
    except FAILS as exc:
        w.show_error(exc, REPORT_HINT)
        return
    _set_report(report, {"source": "file", "name": path.name})


def _load_upload(upload: Any) -> None:
    ss.ev_upload_round += 1  # a fresh uploader next run: the file is read once
    try:
        report = ev.parse_report(upload.getvalue(), upload.name)
    except FAILS as exc:
        w.show_error(exc, REPORT_HINT)
        return
    _set_report(report, {"source": "file", "name": upload.name})
    st.rerun()


def _report_set(report: dict[str, Any], folder: Path | None) -> ev.EvalSet:
    """The eval set and index the report was run on.

    Raises:
        EvalDataError: its dataset folder cannot be found (the message says what to pick).
    """
    ran_on = ss.eval_meta.get("folder")
    target = ev.resolve_folder(report, Path(ran_on) if ran_on else None, folder)
    if target is None:
        raise EvalDataError(
            f"This report's dataset {report.get('dataset')!r} is not one of the dev sets: choose "
            "“Another folder…” in the sidebar and type its folder, to open its questions and "
            "see the coverage map."
        )
    return ev.eval_set(target, ev.report_index_settings(report))


def _queue_open() -> None:
    ss.ev_open = ss.get("ev_pick")


def _select_row(key: str) -> None:
    """A row clicked in the question table opens that question (the rows shown last run)."""
    value = ss.get(key) or {}
    rows = (value.get("selection") or {}).get("rows") or []
    visible = ss.get("ev_visible", [])
    if rows and rows[0] < len(visible):
        ss.ev_open = visible[rows[0]]


def _open_question(qid: str, folder: Path | None) -> None:
    """Re-run the question with treerag (no LLM) on the eval index and show it on Ask."""
    report = ss.eval_report
    if report is None:
        return
    try:
        es = _report_set(report, folder)
        question = es.questions.get(qid)
        if question is None:
            raise EvalDataError(
                f"Question {qid!r} is not in {es.dataset.name} any more (the set changed since "
                "this report was made): run the evaluation again."
            )
        trace = ev.question_trace(es, question, report)
    except FAILS as exc:
        w.show_error(exc)
        return
    # The inspector opens the section that holds the gold evidence: the place to look first.
    gold = oracle_leaves(es.index, question)
    picked = [leaf.node_id for leaf in (trace.locate.leaves if trace.locate else ())]
    focus = next((i for i in [*gold, *picked] if i in es.index.nodes), None)
    state.open_trace(trace, es.corpus, ev.question_scope(question, report), inspect=focus)
    st.switch_page("pages/ask.py")


# ---- rendering -------------------------------------------------------------------------------


def _summary(report: dict[str, Any]) -> None:
    meta = ss.eval_meta
    settings = report.get("settings") or {}
    parts = [
        f"dataset **{w.plain(str(report.get('dataset')))}**",
        f"scope **{w.plain(str(report.get('scope')))}**",
        f"embedder {w.plain(str(settings.get('embedder', '?')))}",
        f"rerank {'on' if _rerank_on(settings.get('query') or {}) else 'off'}",
    ]
    if meta.get("source") == "run":
        parts.append(f"run here in {meta.get('seconds', 0.0):.1f} s")
    else:
        parts.append(f"loaded from {w.plain(str(meta.get('name', 'a file')))}")
    st.caption(" · ".join(parts))
    if report.get("partial"):
        st.warning(
            "This report is partial: its run was interrupted, so later questions are missing."
        )
    skipped = report.get("skipped") or {}
    if skipped:
        text = "; ".join(f"{reason} ({n}×)" for reason, n in skipped.items())
        st.warning(f"Some runs failed and are not in the means: {w.plain(text)}")
    left = ", ".join(f"{n} {r}" for r, n in (report.get("left_out") or {}).items() if n)
    missing = report.get("evidence_missing") or 0
    if left or missing:
        st.caption(
            f"Left out of the means: {w.plain(left or 'none')}"
            + (
                f"; {missing} gold evidence(s) not found verbatim in their document."
                if missing
                else "."
            )
        )
    c1, c2, _ = st.columns([1.4, 1.2, 3], vertical_alignment="center")
    c1.download_button(
        "Download the report (JSON)",
        ev.report_json(report),
        file_name=ev.report_file_name(report, meta.get("created")),
        mime="application/json",
        icon=":material/download:",
        key="ev_download",
        on_click="ignore",  # a download needs no rerun
    )
    if c2.button("Save on the server", key="ev_save", icon=":material/save:"):
        try:
            ss.ev_saved = str(ev.save_report(report, meta.get("created")))
        except FAILS as exc:
            w.show_error(exc, "The report was not saved: download it instead.")
    if ss.get("ev_saved"):
        st.success(
            f"Saved as {w.plain(ss.ev_saved)} (load it later with *Report path on the server*).",
            icon=":material/check_circle:",
        )


def _metrics(report: dict[str, Any]) -> None:
    if not report["strategies"]:
        st.info("No question was scored in this report (every run was skipped or left out).")
        return
    st.dataframe(
        ev.metric_frame(report),
        hide_index=True,
        width="stretch",
        column_config=ev.metric_columns(),
        key="ev_metric_table",
    )
    st.caption(
        "recall@1000c / @2000c: evidence recall within a 1,000 / 2,000-character budget (the "
        "headline when chunk sizes differ) · hit@5, recall@5, mrr@10: over the top passages · "
        "ctx_chars@5: characters in the top 5 · section_hit@5: a picked leaf is a gold section "
        "(strategies that pick sections) · p50: median milliseconds per question."
    )
    with st.expander("Every metric"):
        st.dataframe(
            ev.all_metrics_frame(report), hide_index=True, width="stretch", key="ev_all_metrics"
        )
    with st.expander("As a Markdown table"):
        st.code(markdown_table(report), language="markdown")
    st.subheader("Curves over k")
    family = st.radio(
        "Curve",
        list(ev.CURVES),
        key="ev_curve",
        horizontal=True,
        format_func=ev.CURVES.get,
        label_visibility="collapsed",
    )
    frame = ev.curve_frame(report, family)
    if frame.empty:
        st.info(f"No strategy in this report has {ev.CURVES[family]}.")
        return
    st.altair_chart(ev.curve_chart(frame, family), width="stretch")


def _questions(report: dict[str, Any]) -> None:
    rows = ev.question_rows(report)
    if not rows:
        st.info("This report has no per-question records.")
        return
    strategies = list(report.get("questions") or {})
    choice = st.radio("Show", ev.FILTERS, key="ev_filter", horizontal=True, persist_state=KEEP)
    if choice in ev.FILTERS[2:] and not {ev.TREE, ev.BASELINE} <= set(strategies):
        st.info(
            "Wins and losses compare treerag with flat-hybrid at hit@5: run both to use this "
            "filter.",
            icon=":material/info:",
        )
    shown = ev.filter_rows(rows, choice)
    st.caption(
        f"{len(shown)} of {len(rows)} questions. Outcome per strategy at hit@5: hit, right "
        "section but wrong chunk, wrong section picked, or miss. Click a row (or pick it "
        "below) to open its treerag trace on the Ask view."
    )
    ss.ev_visible = [r.id for r in shown]
    table_key = f"ev_questions_{ev.FILTERS.index(choice)}"  # a new filter: no stale selection
    st.dataframe(
        ev.question_frame(shown, strategies),
        hide_index=True,
        width="stretch",
        key=table_key,
        on_select=lambda: _select_row(table_key),
        selection_mode="single-row",
        column_config={
            "question": st.column_config.TextColumn("question", width="large"),
            "id": st.column_config.TextColumn("id", width="small"),
        },
    )
    if not shown:
        return
    by_id = {r.id: r for r in shown}
    if ss.get("ev_pick") not in by_id:
        ss.ev_pick = shown[0].id
    c1, c2 = st.columns([5, 1.6], vertical_alignment="bottom")
    c1.selectbox(
        "Question to open",
        list(by_id),
        key="ev_pick",
        format_func=lambda i: f"{w.preview(by_id[i].question, 90)} · {by_id[i].doc}",
    )
    c2.button(
        "Open its trace on Ask",
        key="ev_open_button",
        on_click=_queue_open,
        type="primary",
        icon=":material/open_in_new:",
        width="stretch",
        help="Runs the question again with treerag (no LLM) on the eval index.",
    )


def _reset_coverage_focus() -> None:
    ss.ev_cov_inspect, ss.ev_cov_expanded = None, set()


def _coverage_graph(es: ev.EvalSet, cov: ev.Coverage) -> None:
    index = es.index
    # A click arrives as the component's new value: apply it before drawing (as on Ask).
    clicked = w.handle_graph_click(w.last_click("ev_cov_graph_key"), "ev_cov_graph_seen")
    if clicked:
        w.apply_click(index, clicked, "ev_cov_inspect", "ev_cov_expanded")
    selected = ss.get("ev_cov_inspect")
    if selected not in index.nodes or index.nodes[selected].doc_id != cov.doc:
        selected = None
    st.toggle("Whole tree", key="ev_cov_full", help="Draw every node (no collapsing).")
    expanded = frozenset(ss.get("ev_cov_expanded") or ())
    view = ev.coverage_view(index, cov, selected, expanded, full=bool(ss.get("ev_cov_full")))
    ss.ev_cov_view = view  # tests read what was drawn
    new_key = w.graph_key(GRAPH_KEY, view)
    if new_key != ss.get("ev_cov_graph_key"):  # a fresh component starts with no click
        ss.ev_cov_graph_seen = None
        ss.ev_cov_graph_key = new_key
    value = w.draw_graph(view, key=ss.ev_cov_graph_key, height=w.graph_height(view))
    if w.handle_graph_click(value, "ev_cov_graph_seen"):
        w.apply_click(index, value, "ev_cov_inspect", "ev_cov_expanded")
        st.rerun()
    st.caption(
        "Leaf colour: pick rate (white: never picked → orange: picked by every question) · "
        ":green[green border: held gold evidence] · :red[⚠ red border: held gold, never "
        "picked] · :blue[blue border: selected] · dashed (+N): collapsed, click to open"
    )


def _coverage(report: dict[str, Any], folder: Path | None) -> None:
    st.caption(
        "Where treerag routes on one document: for each leaf section, how many of the "
        "report's questions about it picked the section, and how many had their gold "
        "evidence there."
    )
    records = (report.get("questions") or {}).get(ev.TREE)
    if not records:
        st.info("The coverage map shows treerag's picks: run the evaluation with treerag.")
        return
    try:
        es = _report_set(report, folder)
    except FAILS as exc:
        w.show_error(exc)
        return
    docs = dict(ev.coverage_docs(es, report))
    if not docs:
        st.info("None of this report's questions is in this dataset (it changed since the run).")
        return
    if ss.get("ev_cov_doc") not in docs:
        ss.ev_cov_doc = next(iter(docs))
    st.selectbox(
        "Document",
        list(docs),
        key="ev_cov_doc",
        on_change=_reset_coverage_focus,
        format_func=lambda d: f"{d} · {docs[d]} question(s)",
    )
    cov = ev.coverage(es.index, es.questions, records, ss.ev_cov_doc)
    if cov.stale_picks:
        st.warning(
            f"{cov.stale_picks} pick(s) in the report name sections this index does not have "
            "(the documents or index settings changed since the run): they are not counted."
        )
    # Full width: a document's sections are wide, and a narrow graph shrinks every label.
    _coverage_graph(es, cov)
    flagged = cov.frame[cov.frame["flag"] != ""]
    if len(flagged):
        names = "; ".join(w.plain(s) for s in flagged["section"])
        st.warning(
            f"{len(flagged)} section(s) held gold evidence but treerag never picked them: {names}",
            icon=":material/report:",
        )
    else:
        st.caption("Every section that held gold evidence was picked at least once.")
    st.dataframe(
        cov.frame,
        hide_index=True,
        width="stretch",
        column_config=ev.coverage_columns(),
        key="ev_coverage_table",
    )
    selected = ss.get("ev_cov_inspect")
    if selected in es.index.nodes and es.index.nodes[selected].doc_id == cov.doc:
        w.inspector(es.index, selected, key="ev_cov_inspector")


# ---- the page -------------------------------------------------------------------------------


def main() -> None:
    _init()
    run, load, upload = _sidebar()
    st.title("Evaluate")
    st.caption(
        "Run the retrieval strategies over an eval question set and compare them with the eval "
        "README's metrics; open any question's trace on the Ask view."
    )
    folder = ev.selected_folder(ss.ev_dataset, str(ss.get("ev_folder", "")))
    opening = ss.pop("ev_open", None)
    if opening is not None:
        _open_question(str(opening), folder)  # leaves for the Ask page when it works
    data = _dataset_status(folder)
    if run:
        _run(folder, data)
    if load:
        _load_path(str(ss.get("ev_report_path", "")))
    if upload is not None:
        _load_upload(upload)
    report = ss.eval_report
    if report is None:
        st.info(
            "Pick a dataset and strategies in the sidebar and press **Run evaluation**, or load "
            "a saved report.",
            icon=":material/analytics:",
        )
        return
    _summary(report)
    # One view at a time, not tabs: a graph drawn in a hidden tab fits itself to a zero-size
    # canvas, and only the coverage view needs the eval index.
    view = st.segmented_control(
        "View",
        VIEWS,
        key="ev_view",
        required=True,
        persist_state=KEEP,  # back from Ask, the view (and filter) is where it was
        label_visibility="collapsed",
    )
    if view == VIEWS[1]:
        _questions(report)
    elif view == VIEWS[2]:
        _coverage(report, folder)
    else:
        _metrics(report)


main()
