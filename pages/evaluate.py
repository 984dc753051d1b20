"""Evaluate: run strategies over an eval set, compare their metrics, open a question's trace."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st

from treerag_core import BASELINE_STRATEGY as BASELINE
from treerag_core import (
    MY_SET,
    EvalConfig,
    EvalDataError,
    EvalDataset,
    check_report,
    coverage,
    coverage_docs,
    evaluate,
    llm_locate_calls,
    load_report,
    oracle_leaves,
    parse_report,
    report_index_settings,
    strategy_names,
)
from treerag_core import TREE_STRATEGY as TREE
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import QuerySettings
from ui.common.llm_panel import SessionLLM
from ui.common.query_log import open_trace
from ui.common.resources import default_embedder, warm_reranker
from ui.common.session import EvalState, WorkspaceState, require_app
from ui.common.text_safety import plain, show_error
from ui.common.workspace import keep_for_reload, sync_workspace, workspace_folder
from ui.evaluate import data as ed
from ui.evaluate import llm_compare, my_labels, panels, run_job

require_app("pages/evaluate.py")
ss = st.session_state
ev = EvalState()
KEEP = "session"  # sidebar values survive a visit to another page
FOLDER_HINT = (
    "Pick one of the dev sets in the sidebar, or choose “Another folder…” and type a folder "
    "that holds questions.jsonl and docs/*.md."
)
REPORT_HINT = "Load a report written by the Run button or by `python -m treerag_core eval --out`."
VIEWS = ("Metrics", "Questions", "Coverage map")
POLL_SECONDS = 0.25  # how often a followed run's progress is redrawn (and a page switch seen)
FAILS = (TreeRAGError, OSError, ValueError)
WIDGET_DEFAULTS: dict[str, Any] = {
    "ev_dataset": ed.DEV_SETS[0],
    "ev_folder": "",
    "ev_strategies": [TREE, BASELINE],
    "ev_scope": "doc",
    "ev_limit": 20,
    "ev_rerank": True,
    llm_compare.KEY: False,  # LLM calls cost money: never on by default
    "ev_report_path": "",
    "ev_view": VIEWS[0],
}


def _sidebar() -> tuple[bool, bool, Any, SessionLLM | None, Any]:
    """The run and load controls; returns (run clicked, load clicked, uploaded file, the
    session's LLM when the run compares its locator, the box for the run's call count)."""
    sb = st.sidebar
    sb.subheader("Eval set")
    sb.selectbox(
        "Dataset",
        list(ed.CHOICES),
        key="ev_dataset",
        persist_state=KEEP,
        format_func=ed.choice_label,
        help="The dev sets beside the repo (../shared/eval), the questions you labelled on "
        "Ask (your own documents), or a folder of your own.",
    )
    if ss.ev_dataset == ed.OTHER:
        sb.text_input(
            "Dataset folder",
            key="ev_folder",
            persist_state=KEEP,
            placeholder="/path/to/set",
            help="A folder with questions.jsonl and docs/*.md, in the dev sets' format, "
            "inside one of: " + ", ".join(str(r) for r in ed.dataset_roots()) + ".",
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
        ("doc", "corpus"),
        key="ev_scope",
        persist_state=KEEP,
        horizontal=True,
        help="doc: each question searches its own document(s). corpus: every document of the set.",
    )
    sb.number_input(
        "Questions (0 = all)", min_value=0, step=5, key="ev_limit", persist_state=KEEP,
        help="Run the first N usable questions of the set.",
    )  # fmt: skip
    sb.toggle("Rerank (cross-encoder)", key="ev_rerank", persist_state=KEEP)
    llm = llm_compare.toggle(sb, KEEP)
    calls = sb.container()  # the call count, once the set's size is known
    locator = "local and LLM locator" if llm is not None else "no LLM call (local locator"
    sb.caption(
        f"Embedder: {plain(default_embedder())} · {locator}"
        + (", no answers written)." if llm is None else " · no answers written.")
    )
    run = sb.button(
        "Run evaluation", key="ev_run", type="primary", icon=":material/play_arrow:",
        width="stretch",
    )  # fmt: skip
    sb.subheader("Or load a report")
    upload = sb.file_uploader("Report JSON", type=["json"], key=f"ev_upload_{ev.upload_round}")
    sb.text_input(
        "Report path on the server",
        key="ev_report_path",
        persist_state=KEEP,
        placeholder=f"{ed.reports_dir()}/….json",
    )
    load = sb.button(
        "Load from path", key="ev_load", icon=":material/folder_open:", width="stretch"
    )
    return run, load, upload, llm, calls


def _dataset_status(folder: Path | None) -> EvalDataset | None:
    """The chosen set, with a one-line summary; an error with the next step when unreadable."""
    if folder is None:
        st.info("Type the dataset folder in the sidebar.", icon=":material/folder:")
        return None
    try:
        data = ed.dataset(folder)
    except FAILS as exc:
        show_error(exc, FOLDER_HINT)
        return None
    left = ", ".join(f"{n} {reason}" for reason, n in data.left_out.items() if n)
    st.caption(
        f"**{plain(data.name)}**: {len(data.usable_questions)} usable of "
        f"{len(data.questions)} questions over {len(data.doc_names)} documents"
        + (f" (left out: {plain(left)})" if left else "")
        + "."
    )
    return data


def _set_report(report: dict[str, Any], meta: dict[str, Any]) -> None:
    ev.report, ev.meta, ev.saved = report, meta, None
    ev.inspect, ev.expanded = None, set()
    ss.pop("ev_cov_doc", None)


def _job() -> run_job.EvalJob | None:
    """This workspace's run, going on or done and not shown yet: kept per workspace, so a
    reload (a new session of the same `?ws=` link) finds it too."""
    return run_job.job_for(WorkspaceState().id)


def _n_questions(data: EvalDataset | None, mine: my_labels.LabelledSet | None) -> int:
    """The questions a run will score: the set's usable ones, up to the sidebar's limit."""
    usable = len(mine.questions) if mine is not None else len(data.usable_questions if data else ())
    return min(int(ss.ev_limit) or usable, usable)


def _run(
    folder: Path | None, data: EvalDataset | None, mine: my_labels.LabelledSet | None,
    llm: SessionLLM | None,
) -> None:  # fmt: skip
    """Run the sidebar's strategies on the chosen set: a dev set's folder, or (`mine`) the
    workspace's labelled questions; with `llm`, the locator's strategies also with the LLM's.
    The run goes on in a thread of its own (run_job): leaving the page does not stop it."""
    earlier = _job()
    if earlier is not None and earlier.running:
        _refuse_second_run()
        return
    if ss.ev_dataset == ed.MINE and mine is None:
        st.error("Nothing was run: no question is labelled yet (see above).")
        return
    if ss.ev_dataset != ed.MINE and (folder is None or data is None):
        st.error("Nothing was run: the dataset folder cannot be read (see above).")
        return
    strategies = tuple(ss.ev_strategies)
    if not strategies:
        st.error("Nothing was run: pick at least one strategy in the sidebar.")
        return
    limit = int(ss.ev_limit) or None
    n = _n_questions(data, mine)
    label = f"{len(strategies)} strategies on {n} questions"
    if llm is not None:
        label += f" ({llm_locate_calls(strategies, n):,} LLM calls)"
    if mine is not None:
        work = _mine_work(mine, strategies, limit, n, llm)
    else:
        assert folder is not None
        work = _folder_work(folder, strategies, limit, n, llm)
    if work is None:
        return
    try:  # the workspace's folder: a reload adopts its id, and so finds the run
        keep_for_reload()
    except (OSError, ValueError) as exc:
        st.warning(
            f"The run goes on, but a reload of the page would not find it ({plain(str(exc))}).",
            icon=":material/warning:",
        )
    job = run_job.EvalJob(label, n)
    if run_job.start(WorkspaceState().id, job, work, FAILS) is not job:
        _refuse_second_run()  # another tab of this workspace started one meanwhile
        return
    _follow(job)


def _refuse_second_run() -> None:
    st.info(
        "Nothing new was run: your earlier run is still going (above). Its report shows "
        "here when it is done.",
        icon=":material/hourglass_top:",
    )


def _follow(job: run_job.EvalJob) -> None:
    """The run's progress while this script run lasts (leaving the page stops the following,
    not the run); its report, or its error, once done. Everything the run shows goes inside
    one status box: it takes the place of the earlier info box instead of being drawn over
    it."""
    with st.status(f"Running {job.label}…", expanded=True) as status:
        bar = st.progress(0.0, text=f"Running {job.label}…")
        _stop_button(job, "ev_stop_follow")
        while not job.finished.wait(POLL_SECONDS):
            bar.progress(job.fraction(), text=job.text())  # each update lets a switch stop us
        bar.empty()
        stopped = job.stop.is_set()
        if not _adopt(job):
            shown_elsewhere = job.result is not None and not stopped  # by another tab
            label = "Stopped" if stopped else "Done" if shown_elsewhere else "Nothing was run"
            status.update(label=label, state="error", expanded=True)
            return
        label = "Stopped: a partial report" if stopped else "Evaluation done"
        status.update(label=label, state="complete", expanded=False)


def _stop_button(job: run_job.EvalJob, key: str) -> None:
    """Stop a run that takes longer than wanted; what it finished is kept as a partial report
    (whole questions: every strategy scored on the same ones)."""
    st.button(
        "Stop (keep what is done)", key=key, on_click=job.stop.set, icon=":material/stop:",
        disabled=job.stop.is_set(),
        help="Ends the run before its next question; the questions already run make a partial "
        "report. Indexing, once started, finishes first and is kept for the next run.",
    )  # fmt: skip


def _adopt(job: run_job.EvalJob) -> bool:
    """A finished run's report becomes the page's (True), or its error is shown (False); once
    (two tabs of one workspace: the first to see it done)."""
    if not run_job.take(WorkspaceState().id, job):
        st.info(
            "This run's report opened in another tab of this workspace.",
            icon=":material/tab:",
        )
        return False
    if job.stopped_empty():
        st.info(
            "Stopped before any question had run: there is nothing to report. The index is "
            "kept, so the next run starts with the questions.",
            icon=":material/stop_circle:",
        )
        return False
    if job.result is not None:
        _set_report(*job.result)
        return True
    show_error(job.error or RuntimeError("the run ended without a report"), job.hint)
    return False


@st.fragment(run_every=1.0)
def _still_going() -> None:
    """A run started on an earlier visit (before a reload, or a control moved) still going:
    said, with its progress; once it is done the whole page runs again to show its report."""
    job = _job()
    if job is None or not job.running:
        st.rerun(scope="app")
    st.info(
        f"**Your run of {plain(job.label)} is still going**, {job.elapsed:.0f} s so far: it "
        "goes on while you use other pages, and its report shows here when it is done.",
        icon=":material/hourglass_top:",
    )
    st.progress(job.fraction(), text=job.text())  # "n / N runs", or the indexing's seconds
    _stop_button(job, "ev_stop")


def _arrived(job: run_job.EvalJob) -> None:
    """This run found a run started by an earlier one: still going, or done meanwhile."""
    if job.running:
        _still_going()
        return
    done = _adopt(job)
    if done and job.stop.is_set():
        st.success(
            f"**Your run of {plain(job.label)} stopped** as asked: the questions it finished "
            "make the partial report below.",
            icon=":material/stop_circle:",
        )
    elif done:
        st.success(
            f"**Your run of {plain(job.label)} finished** in the background: its report is below.",
            icon=":material/task_alt:",
        )


def _dataset_note(report: dict[str, Any], folder: Path | None) -> None:
    """The report on show stays when the sidebar's dataset changes (until a run or a load
    replaces it): say whose it is, so it is not read as the new set's."""
    if ss.ev_dataset == ed.MINE:
        chosen, label = MY_SET, ed.choice_label(ed.MINE)
    elif folder is not None:
        chosen = label = folder.name  # a report names its set by its folder's name
    else:
        return  # "another folder" with none typed yet: nothing to compare with
    shown = str(report.get("dataset") or "")
    if shown == chosen:
        return
    st.info(
        f"This report is of **{plain(shown)}**, not of **{plain(label)}** chosen in the "
        f"sidebar: press **Run evaluation** for {plain(label)}.",
        icon=":material/swap_horiz:",
    )


def _run_meta(
    report: dict[str, Any], began: float, started: float, n: int, folder: Path | None = None
) -> dict[str, Any]:
    """Where a run came from and its time: the whole run (from `began`: indexing unless
    cached, model loads) and its questions alone (from `started`); a stopped run also how
    many of its `n` questions it answered."""
    meta: dict[str, Any] = {"source": "run"}
    if folder is not None:
        meta["folder"] = str(folder)
    now = time.perf_counter()
    meta["seconds"] = now - began
    meta["prepare_seconds"] = started - began  # indexing the documents, loading the reranker
    meta["question_seconds"] = now - started
    meta["questions"] = n
    if report.get("partial"):
        rows = (report.get("questions") or {}).values()
        meta["questions_run"] = max((len(records) for records in rows), default=0)
    meta["created"] = datetime.now(UTC).isoformat(timespec="seconds")
    return meta


def _mine_work(
    mine: my_labels.LabelledSet, strategies: tuple[str, ...], limit: int | None, n: int,
    llm: SessionLLM | None,
) -> Callable[[run_job.EvalJob], run_job.Report]:  # fmt: skip
    """The labelled questions' run, as a dev set's; the sidebar is read here, not in the
    run's thread (it has no session)."""
    scope, rerank = str(ss.ev_scope), bool(ss.ev_rerank)
    settings = my_labels.run_settings(rerank)

    def work(job: run_job.EvalJob) -> run_job.Report:
        job.hint = "The run stopped; no report was kept."
        began = time.perf_counter()
        if rerank:  # the first question's latency must not include loading the model
            job.stage = "loading"
            warm_reranker(settings.rerank.model)
        job.stage = "running"
        started = time.perf_counter()
        report = my_labels.score(
            mine, strategies, scope, limit, settings, job.progress, llm, job.stop.is_set
        )
        return report, _run_meta(report, began, started, n)

    return work


def _folder_work(
    folder: Path, strategies: tuple[str, ...], limit: int | None, n: int,
    llm: SessionLLM | None,
) -> Callable[[run_job.EvalJob], run_job.Report] | None:  # fmt: skip
    """One dev set's run (None, error shown, when its settings are refused); the sidebar is
    read here, not in the run's thread (it has no session)."""
    settings = IndexSettings(embedder=default_embedder())
    query = QuerySettings().set("answer.final_top_k", 10).set("rerank.enabled", bool(ss.ev_rerank))
    try:
        config = EvalConfig(
            strategies=strategies,
            scope=ss.ev_scope,
            limit=limit,
            use_llm=llm is not None,
            write_answers=False,  # retrieval is compared: an answer would only cost calls
            index_settings=settings,
            query_settings=query if llm is None else query.with_(llm=llm.settings),
        )
    except FAILS as exc:
        show_error(exc, "Nothing was run. " + FOLDER_HINT)
        return None

    def work(job: run_job.EvalJob) -> run_job.Report:
        began = time.perf_counter()  # the whole run: indexing (unless cached), model loads too
        job.stage, job.hint = "indexing", "Nothing was run. " + FOLDER_HINT
        es = ed.eval_set(folder, settings)  # cached: a later run (or Ask) reuses the index
        if query.rerank.enabled:  # the first question's latency must not include the load
            job.stage = "loading"
            warm_reranker(query.rerank.model)
        job.stage, job.hint = "running", "The run stopped; no report was kept. " + FOLDER_HINT
        started = time.perf_counter()
        report = evaluate(
            es.folder, config, cache_dir=ed.cache_dir(), progress=job.progress, index=es.index,
            api_key=llm.key if llm is not None else None, should_stop=job.stop.is_set,
        )  # fmt: skip
        return report, _run_meta(report, began, started, n, es.folder)

    return work


def _load_path(text: str) -> None:
    if not text.strip():
        st.error("Type the path of a report JSON in the sidebar first. " + REPORT_HINT)
        return
    path = Path(text.strip()).expanduser()
    try:
        report = check_report(load_report(path), str(path))
    except FAILS as exc:
        show_error(exc, REPORT_HINT)
        return
    _set_report(report, {"source": "file", "name": path.name})


def _load_upload(upload: Any) -> None:
    ev.upload_round += 1  # a fresh uploader next run: the file is read once
    try:
        report = parse_report(upload.getvalue(), upload.name)
    except FAILS as exc:
        show_error(exc, REPORT_HINT)
        return
    _set_report(report, {"source": "file", "name": upload.name})
    st.rerun()


def _report_set(report: dict[str, Any], folder: Path | None) -> ed.EvalSet:
    """The eval set and index the report was run on (EvalDataError when its folder is unknown,
    or, for the labelled questions, when none is labelled any more)."""
    if report.get("dataset") == MY_SET:
        mine = my_labels.labelled_set()
        if mine is None:
            raise EvalDataError(
                "This report scored the workspace's labelled questions, and none is labelled "
                "now: label questions on Ask (or import them above) and run it again."
            )
        return ed.EvalSet(workspace_folder(), None, mine.corpus, {q.id: q for q in mine.questions})
    ran_on = ev.meta.get("folder")
    target = ed.resolve_folder(report, Path(ran_on) if ran_on else None, folder)
    if target is None:
        raise EvalDataError(
            f"This report's dataset {report.get('dataset')!r} is not one of the dev sets: choose "
            "“Another folder…” in the sidebar and type its folder, to open its questions and "
            "see the coverage map."
        )
    return ed.eval_set(target, report_index_settings(report, default_embedder()))


def _queue_open() -> None:
    ev.open = ss.get("ev_pick")


def _open_question(qid: str, folder: Path | None) -> None:
    """Re-run the question with treerag (no LLM) on the eval index and show it on Ask."""
    report = ev.report
    if report is None:
        return
    try:
        es = _report_set(report, folder)
        question = es.questions.get(qid)
        if question is None:
            raise EvalDataError(
                f"Question {qid!r} is not in {es.name} any more (the set changed since "
                "this report was made): run the evaluation again."
            )
        trace = ed.question_trace(es, question, report)
    except FAILS as exc:
        show_error(exc)
        return
    # The inspector opens the section that holds the gold evidence: the place to look first.
    gold = oracle_leaves(es.index, question)
    picked = [leaf.node_id for leaf in (trace.locate.leaves if trace.locate else ())]
    focus = next((i for i in [*gold, *picked] if i in es.index.nodes), None)
    open_trace(trace, es.corpus, ed.question_scope(question, report), inspect=focus)
    st.switch_page("pages/ask.py")


def _coverage(report: dict[str, Any], folder: Path | None) -> None:
    st.caption(
        "Where treerag routes on one document: for each leaf section, how many of the "
        "report's questions about it picked the section, and how many had their gold "
        "evidence there."
    )
    records = (report.get("questions") or {}).get(TREE)
    if not records:
        st.info("The coverage map shows treerag's picks: run the evaluation with treerag.")
        return
    try:
        es = _report_set(report, folder)
    except FAILS as exc:
        show_error(exc)
        return
    docs = dict(coverage_docs(es.questions, report))
    if not docs:
        st.info("None of this report's questions is in this dataset (it changed since the run).")
        return
    if ss.get("ev_cov_doc") not in docs:
        ss.ev_cov_doc = next(iter(docs))
    st.selectbox(
        "Document",
        list(docs),
        key="ev_cov_doc",
        on_change=panels.reset_coverage_focus,
        format_func=lambda d: f"{d} · {docs[d]} question(s)",
    )
    cov = coverage(es.index, es.questions, records, ss.ev_cov_doc)
    if cov.stale_picks:
        st.warning(
            f"{cov.stale_picks} pick(s) in the report name sections this index does not have "
            "(the documents or index settings changed since the run): they are not counted."
        )
    panels.coverage_graph(es.index, cov)  # full width: a narrow graph shrinks every label
    panels.coverage_table(es.index, cov)


def main() -> None:
    for key, value in WIDGET_DEFAULTS.items():
        ss.setdefault(key, list(value) if isinstance(value, list) else value)
    sync_workspace()  # the ?ws= workspace of a reload: opened questions are logged under it
    run, load, upload, llm, calls = _sidebar()
    st.title("Evaluate")
    st.caption(
        "Run the retrieval strategies over an eval question set and compare them with the eval "
        "README's metrics; open any question's trace on the Ask view."
    )
    folder = ed.selected_folder(ss.ev_dataset, str(ss.get("ev_folder", "")))
    opening = ev.take("open")
    if opening is not None:
        _open_question(str(opening), folder)  # leaves for the Ask page when it works
    mine = data = None
    if ss.ev_dataset == ed.MINE:  # issue 26: the workspace's own labelled questions, and Tune
        mine = my_labels.section()
    else:
        data = _dataset_status(folder)
    if llm is not None:  # before the run: what it will cost in calls
        calls.warning(
            llm_compare.calls_note(llm, tuple(ss.ev_strategies), _n_questions(data, mine)),
            icon=":material/payments:",
        )
    job = _job()
    if job is not None:  # a run started earlier (before a reload too): going on, or done
        _arrived(job)
    if run:
        _run(folder, data, mine, llm)
    if load:
        _load_path(str(ss.get("ev_report_path", "")))
    if upload is not None:
        _load_upload(upload)
    report = ev.report
    if report is None:
        if _job() is not None:  # said above: its report shows when it is done
            return
        st.info(
            "Pick a dataset and strategies in the sidebar and press **Run evaluation**, or load "
            "a saved report.",
            icon=":material/analytics:",
        )
        return
    _dataset_note(report, folder)
    panels.summary(report, FAILS)
    # One view at a time, not tabs: a graph drawn in a hidden tab fits itself to a zero-size
    # canvas, and only the coverage view needs the eval index.
    view = st.segmented_control(
        "View", VIEWS, key="ev_view", required=True, persist_state=KEEP,
        label_visibility="collapsed",
    )  # fmt: skip
    if view == VIEWS[1]:
        panels.questions(report, _queue_open)
    elif view == VIEWS[2]:
        _coverage(report, folder)
    else:
        panels.metrics(report)


main()
