"""The Evaluate page's views of a report: summary, metrics and curves, questions, coverage map."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from treerag_core import BASELINE_STRATEGY as BASELINE
from treerag_core import (
    LOCATOR_KEYS,
    CorpusIndex,
    Coverage,
    difference_table,
    filter_rows,
    markdown_table,
    question_rows,
    rerank_was_on,
)
from treerag_core import QUESTION_FILTERS as FILTERS
from treerag_core import SMALL_SET_N as SMALL_N
from treerag_core import TREE_STRATEGY as TREE
from treerag_core.base.text_rules import preview
from ui.common.inspector import inspector
from ui.common.session import EvalState
from ui.common.text_safety import plain, show_error
from ui.common.tree_graph import TreeGraph
from ui.evaluate import llm_compare
from ui.evaluate import tables as et
from ui.evaluate.data import report_file_name, report_json, save_report

KEEP = "session"
GRAPH = TreeGraph("ev_cov_graph")


def run_time(meta: dict[str, Any]) -> str:
    """How long a run here took, whole: the questions alone would hide the indexing before
    them (59 s of indexing read "run here in 1.9 s"). Both parts are named."""
    whole = f"run here in {meta.get('seconds', 0.0):.1f} s"
    if "question_seconds" not in meta:
        return whole
    n = meta.get("questions")
    questions = f"{n} question{'s' if n != 1 else ''}" if n else "the questions"
    if n and "questions_run" in meta:  # a stopped run: what it answered of what it planned
        questions = f"{meta['questions_run']} of {questions}"
    return (
        f"{whole} ({meta.get('prepare_seconds', 0.0):.1f} s indexing and loading models, "
        f"{meta['question_seconds']:.1f} s answering {questions})"
    )


def summary(report: dict[str, Any], fails: tuple[type[Exception], ...]) -> None:
    ev = EvalState()
    meta = ev.meta
    settings = report.get("settings") or {}
    try:
        rerank = "on" if rerank_was_on(report) else "off"
    except fails as exc:
        rerank, unreadable = "unknown", exc
    else:
        unreadable = None
    parts = [
        f"dataset **{plain(str(report.get('dataset')))}**",
        f"scope **{plain(str(report.get('scope')))}**",
        f"embedder {plain(str(settings.get('embedder', '?')))}",
        f"rerank {rerank}",
    ]
    if meta.get("source") == "run":
        parts.append(run_time(meta))
    else:
        parts.append(f"loaded from {plain(str(meta.get('name', 'a file')))}")
    st.caption(" · ".join(parts))
    if unreadable is not None:
        show_error(unreadable)  # the metrics stand; replaying a question would not
    llm_compare.fallback_notes(report)  # a `+llm` row that is partly the local locator's
    if report.get("partial"):
        st.warning(
            "This report is partial: its run was interrupted, so later questions are missing."
        )
    skipped = report.get("skipped") or {}
    if skipped:
        text = "; ".join(f"{reason} ({n}×)" for reason, n in skipped.items())
        st.warning(f"Some runs failed and are not in the means: {plain(text)}")
    left = ", ".join(f"{n} {r}" for r, n in (report.get("left_out") or {}).items() if n)
    missing = report.get("evidence_missing") or 0
    if left or missing:
        st.caption(
            f"Left out of the whole set (before the question limit): {plain(left or 'none')}"
            + (
                f"; {missing} gold evidence(s) not found verbatim in their document."
                if missing
                else "."
            )
        )
    c1, c2, _ = st.columns([1.4, 1.2, 3], vertical_alignment="center")
    c1.download_button(
        "Download the report (JSON)",
        report_json(report),
        file_name=report_file_name(report, meta.get("created")),
        mime="application/json",
        icon=":material/download:",
        key="ev_download",
        on_click="ignore",  # a download needs no rerun
    )
    if c2.button("Save on the server", key="ev_save", icon=":material/save:"):
        try:
            ev.saved = str(save_report(report, meta.get("created")))
        except fails as exc:
            show_error(exc, "The report was not saved: download it instead.")
    if ev.saved:
        st.success(
            f"Saved as {plain(ev.saved)} (load it later with *Report path on the server*).",
            icon=":material/check_circle:",
        )


def _table(frame: Any, columns: dict[str, Any], key: str) -> None:
    """One of the metric tables: the page's width, no index, its own columns."""
    st.dataframe(frame, hide_index=True, width="stretch", column_config=columns, key=key)


def metrics(report: dict[str, Any]) -> None:
    if not report["strategies"]:
        st.info("No question was scored in this report (every run was skipped or left out).")
        return
    _table(et.metric_frame(report), et.metric_columns(), "ev_metric_table")
    if et.small(report):
        st.caption(
            f"Fewer than {SMALL_N} questions: under each mean, its 95% bootstrap interval over "
            "the questions. Read the interval, not the mean: two strategies whose intervals "
            "overlap are not told apart by these questions."
        )
        _table(et.interval_frame(report), et.interval_columns(), "ev_interval_table")
    if et.has_llm_rows(report):
        st.markdown("**Locators on the same questions (local vs LLM)**")
        _table(et.locator_frame(report), et.locator_columns(), "ev_locator_table")
        st.caption(
            "A `+llm` row is its strategy with the LLM's locator; the row above it, on the same "
            "questions, the local one. section_hit@k: a gold section among the first k picked "
            "leaves · tokens and cost: the locator's calls, summed (LLM cost: every call)."
        )
    st.caption(
        "recall@1000c / @2000c: evidence recall within a 1,000 / 2,000-character budget (the "
        "headline when chunk sizes differ) · hit@5, recall@5, mrr@10: over the top passages · "
        "ctx_chars@5: characters in the top 5 · section_hit@5: a picked leaf is a gold section "
        "(strategies that pick sections) · p50: median milliseconds per question."
    )
    with st.expander("Every metric"):
        st.dataframe(
            et.all_metrics_frame(report), hide_index=True, width="stretch", key="ev_all_metrics"
        )
    with st.expander("As a Markdown table"):
        # the paired bootstrap intervals against the baselines follow the means
        locators = markdown_table(report, LOCATOR_KEYS) if et.has_llm_rows(report) else ""
        st.code(
            markdown_table(report) + "\n" + difference_table(report)
            + ("\n" + locators if locators else ""),
            language="markdown",
        )  # fmt: skip
    st.subheader("Curves over k")
    family = st.radio(
        "Curve",
        list(et.CURVES),
        key="ev_curve",
        horizontal=True,
        format_func=et.CURVES.get,
        label_visibility="collapsed",
    )
    frame = et.curve_frame(report, family)
    if frame.empty:
        st.info(f"No strategy in this report has {et.CURVES[family]}.")
        return
    st.altair_chart(et.curve_chart(frame, family), width="stretch")


def questions(report: dict[str, Any], on_open: Callable[[], None]) -> None:
    ev = EvalState()
    rows = question_rows(report)
    if not rows:
        st.info("This report has no per-question records.")
        return
    strategies = list(report.get("questions") or {})
    choice = st.radio("Show", FILTERS, key="ev_filter", horizontal=True, persist_state=KEEP)
    if choice in FILTERS[2:] and not {TREE, BASELINE} <= set(strategies):
        st.info(
            f"Wins and losses compare {TREE} with {BASELINE} at hit@5: run both to use this "
            "filter.",
            icon=":material/info:",
        )
    shown = filter_rows(rows, choice)
    st.caption(
        f"{len(shown)} of {len(rows)} questions. Outcome per strategy at hit@5: hit, right "
        "section but wrong chunk, wrong section picked, or miss. Click a row (or pick it "
        "below) to open its treerag trace on the Ask view."
    )
    ev.visible = [r.id for r in shown]
    table_key = f"ev_questions_{FILTERS.index(choice)}"  # a new filter: no stale selection

    def select_row() -> None:
        value = st.session_state.get(table_key) or {}
        picked = (value.get("selection") or {}).get("rows") or []
        if picked and picked[0] < len(ev.visible):
            ev.open = ev.visible[picked[0]]

    st.dataframe(
        et.question_frame(shown, strategies),
        hide_index=True,
        width="stretch",
        key=table_key,
        on_select=select_row,
        selection_mode="single-row",
        column_config={
            "question": st.column_config.TextColumn("question", width="large"),
            "id": st.column_config.TextColumn("id", width="small"),
        },
    )
    if not shown:
        return
    by_id = {r.id: r for r in shown}
    if st.session_state.get("ev_pick") not in by_id:
        st.session_state.ev_pick = shown[0].id
    c1, c2 = st.columns([5, 1.6], vertical_alignment="bottom")
    c1.selectbox(
        "Question to open",
        list(by_id),
        key="ev_pick",
        format_func=lambda i: f"{preview(by_id[i].question, 90)} · {by_id[i].doc}",
    )
    c2.button(
        "Open its trace on Ask",
        key="ev_open_button",
        on_click=on_open,
        type="primary",
        icon=":material/open_in_new:",
        width="stretch",
        help="Runs the question again with treerag (no LLM) on the eval index; your Ask "
        "settings stay as they are.",
    )


def reset_coverage_focus() -> None:
    ev = EvalState()
    ev.inspect, ev.expanded = None, set()


def coverage_graph(index: CorpusIndex, cov: Coverage) -> None:
    ev = EvalState()
    GRAPH.take_click(index, ev)
    selected = ev.inspect
    if selected not in index.nodes or index.nodes[selected].doc_id != cov.doc:
        selected = None
    st.toggle("Whole tree", key="ev_cov_full", help="Draw every node (no collapsing).")
    expanded = frozenset(ev.expanded)
    view = et.coverage_view(
        index, cov, selected, expanded, full=bool(st.session_state.get("ev_cov_full"))
    )
    st.session_state.ev_cov_view = view  # tests read what was drawn
    GRAPH.draw(index, view, ev)
    st.caption(
        "Leaf colour: pick rate (white: never picked → orange: picked by every question) · "
        ":green[green border: held gold evidence] · :red[⚠ red border: held gold, never "
        "picked] · :blue[blue border: selected] · dashed (+N): collapsed, click to open"
    )


def coverage_table(index: CorpusIndex, cov: Coverage) -> None:
    ev = EvalState()
    frame = et.coverage_frame(cov)
    flagged = frame[frame["flag"] != ""]
    if len(flagged):
        names = "; ".join(plain(s) for s in flagged["section"])
        st.warning(
            f"{len(flagged)} section(s) held gold evidence but treerag never picked them: {names}",
            icon=":material/report:",
        )
    else:
        st.caption("Every section that held gold evidence was picked at least once.")
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_config=et.coverage_columns(),
        key="ev_coverage_table",
    )
    if ev.inspect in index.nodes and index.nodes[ev.inspect].doc_id == cov.doc:
        inspector(index, ev.inspect, key="ev_cov_inspector")
