"""Evaluate: "My labelled questions", an entry of the dataset menu: the workspace's own eval
set, exported and imported, scored by the page's Run button as a dev set is (its report,
every mean with its interval), and tuned (progress, estimate, result, one click to the
sidebar)."""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from treerag_core import SMALL_SET_N as SMALL_N
from treerag_core import TUNABLE_STRATEGIES as TUNABLE
from treerag_core import TUNE_DEFAULT_METRIC as DEFAULT_METRIC
from treerag_core import TUNE_MIN_QUESTIONS as MIN_QUESTIONS
from treerag_core import (
    EvalQuestion,
    Interval,
    LabelledQuestion,
    Refound,
    TuneError,
    TuneResult,
    eval_questions,
    export_set,
    import_rows,
    labelled_report,
    refind,
    tune_metrics,
)
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import QuerySettings
from ui.ask.labels_marks import store
from ui.common import query_controls as qc
from ui.common import tune_apply
from ui.common.llm_panel import SessionLLM
from ui.common.resources import Corpus, engine_for
from ui.common.session import WorkspaceState
from ui.common.text_safety import plain, show_error
from ui.common.workspace import workspace_corpus
from ui.evaluate import tune_job

TITLE = "My labelled questions"


def _iv(i: Interval) -> str:
    return f"{i.mean:.3f} [{i.low:.3f}, {i.high:.3f}]"


def _current() -> QuerySettings:
    """The sidebar's settings as Ask would run them (defaults before Ask first ran)."""
    try:
        return qc.query_settings()
    except (KeyError, ValueError):
        return tune_apply.with_tuned(QuerySettings())


def section() -> LabelledSet | None:
    """The whole section, for the dataset menu's "My labelled questions"; returns the set the
    sidebar's Run button scores (None while nothing is labelled). Nothing runs until a
    button asks."""
    with st.expander(TITLE, expanded=True, icon=":material/label:"):
        corpus = workspace_corpus()
        if corpus is None:
            st.info(
                "Upload documents, ask questions on Ask and mark the passages that answer "
                "them: they become your own eval set here (or import a questions.jsonl once "
                "your documents are uploaded)."
            )
            return None
        index = corpus.index
        try:
            stored = store().load()
        except (TreeRAGError, OSError) as exc:
            show_error(exc, "The labels file could not be read; nothing in it was changed.")
            return None
        found = refind(index, stored)
        _status(found)
        import_note()
        _import(index)
        labelled = [q for q in found.questions if q.labelled]
        if not labelled:
            return None
        _table(labelled)
        _export(index, labelled)
        questions = eval_questions(labelled)
        st.caption(
            "Press **Run evaluation** in the sidebar to score the strategies on them: the "
            "metrics (each mean with its bootstrap interval below "
            f"{SMALL_N} questions), the curves, every question's outcome and the coverage map "
            "appear below, as for a dev set."
        )
        _tune(corpus.engine, questions)
    return LabelledSet(corpus, questions)


@dataclass(frozen=True)
class LabelledSet:
    """The workspace's labelled questions as eval questions, over its corpus."""

    corpus: Corpus
    questions: list[EvalQuestion]


def labelled_set() -> LabelledSet | None:
    """The labelled set without drawing anything (None: no workspace, or nothing labelled)."""
    corpus = workspace_corpus()
    if corpus is None:
        return None
    questions = eval_questions(q for q in refind(corpus.index, store().load()).questions
                               if q.labelled)  # fmt: skip
    return LabelledSet(corpus, questions) if questions else None


def run_settings(rerank: bool) -> QuerySettings:
    """What the labelled set is scored with: Ask's settings (a tune applied shows here), with
    the Evaluate sidebar's rerank switch."""
    return _current().set("rerank.enabled", rerank)


def score(
    mine: LabelledSet, strategies: Sequence[str], scope: str, limit: int | None,
    settings: QuerySettings, progress: Callable[[int, int], None], llm: SessionLLM | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict:  # fmt: skip
    """The harness's report of `strategies` on the labelled questions with `settings` (from
    `run_settings`, read by the page first: this runs in the run's thread, which has no
    session) (raises ValueError or TreeRAGError as `labelled_report` does); with `llm`, also
    the LLM locator's `+llm` rows."""
    if llm is None or llm.settings is None:
        return labelled_report(mine.corpus.engine, mine.questions, settings,
                               strategies, scope=scope, limit=limit, progress=progress,
                               should_stop=should_stop)  # fmt: skip
    return labelled_report(
        engine_for(mine.corpus, llm.key), mine.questions,
        settings.with_(llm=llm.settings), strategies, scope=scope, limit=limit,
        progress=progress, use_llm=True, should_stop=should_stop,
    )  # fmt: skip


def _status(found: Refound) -> None:
    n = sum(1 for q in found.questions if q.labelled)
    moved = f"; {found.moved} mark(s) re-found by their text after an edit" if found.moved else ""
    st.caption(f"**{n}** labelled question(s) in this workspace{moved}.")
    if found.lost:
        st.warning(
            f"{len(found.lost)} mark(s) are lost: their text is no longer in the document "
            "(edited or removed). They are not scored, and were not moved anywhere.",
            icon=":material/link_off:",
        )
        st.dataframe(
            pd.DataFrame([{"question": m.question_id, "document": m.doc, "text": m.text[:120],
                           "why": m.why} for m in found.lost]),
            hide_index=True, width="stretch",
        )  # fmt: skip


def _table(labelled: list[LabelledQuestion]) -> None:
    st.dataframe(
        pd.DataFrame(
            [{"question": q.question, "evidence spans": len(q.evidence),
              "marked not answering": len(q.marks) - len(q.evidence),
              "documents": ", ".join(dict.fromkeys(m.doc for m in q.evidence))}
             for q in labelled]
        ),
        hide_index=True, width="stretch", key="my_labels_table",
    )  # fmt: skip


def _export(index, labelled: list[LabelledQuestion]) -> None:
    """A zip of questions.jsonl + docs/: `eval --data` reads the folder it unpacks to."""
    with tempfile.TemporaryDirectory() as tmp:
        export_set(index, labelled, Path(tmp))
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    z.write(path, path.relative_to(tmp).as_posix())
    st.download_button(
        "Export (questions.jsonl + docs/, zip)", buffer.getvalue(),
        file_name="my-labelled-questions.zip", mime="application/zip",
        icon=":material/download:", key="my_export", on_click="ignore",
    )  # fmt: skip


def _import(index) -> None:
    up = st.file_uploader(
        "Import a questions.jsonl (eval-set format) for these documents",
        type=["jsonl"], key=f"my_import_{st.session_state.get('my_import_round', 0)}",
    )  # fmt: skip
    if up is None:
        return
    st.session_state.my_import_round = st.session_state.get("my_import_round", 0) + 1
    try:
        result = store().merge_import(import_rows(index, up.getvalue(), up.name))
    except (TreeRAGError, OSError) as exc:
        show_error(exc, "Nothing was imported.")
        return
    st.session_state.my_import_note = result
    st.rerun()


def import_note() -> None:
    result = st.session_state.pop("my_import_note", None)
    if result is None:
        return
    (st.success if not (result.missing_docs or result.not_verbatim) else st.warning)(
        plain(result.summary())
    )
    if result.not_verbatim:
        st.dataframe(
            pd.DataFrame([{"question": q, "evidence (start)": t} for q, t in result.not_verbatim]),
            hide_index=True, width="stretch",
        )  # fmt: skip


def _tune(engine, questions) -> None:
    st.markdown("**Tune**: find the settings that find your evidence")
    ws = WorkspaceState().id
    job = tune_job.job_for(ws)
    if len(questions) < MIN_QUESTIONS:
        st.info(f"A tune needs at least {MIN_QUESTIONS} labelled questions; you have "
                f"{len(questions)}. Mark the evidence of more questions on Ask.")  # fmt: skip
        return
    st.selectbox("Maximise", tune_metrics(), index=tune_metrics().index(DEFAULT_METRIC),
                 key="my_tune_metric")  # fmt: skip
    st.multiselect(
        "Strategies the search tries", TUNABLE, default=list(TUNABLE), key="my_tune_strategies",
        help="Also searched: routing, fusion and dense weight, candidate window, and (when "
        "rerank is on in the sidebar) what the cross-encoder reads, or no cross-encoder.",
    )  # fmt: skip
    idle = job is None or not job.running
    if idle and st.button(
        "Run the tune", key="my_tune_run", icon=":material/tune:", type="primary"
    ):
        try:
            tune_job.start(ws, engine, questions, _current(), st.session_state.my_tune_metric,
                           st.session_state.my_tune_strategies)  # fmt: skip
        except TuneError as exc:
            show_error(exc)
            return
        st.rerun()
    _progress(ws)


@st.fragment(run_every=1.0)
def _progress(ws: str) -> None:
    job = tune_job.job_for(ws)
    if job is None:
        return
    if job.running:
        if job.stage == "estimating":
            st.info(f"Estimating the time: {job.planned_settings} settings × {job.n_questions} "
                    "questions…", icon=":material/timer:")  # fmt: skip
        else:
            frac = job.done / job.total if job.total else 0.0
            est = f"estimate {job.estimate:.0f} s" if job.estimate is not None else ""
            st.progress(frac, text=f"{job.done:,} / {job.total:,} runs · {job.elapsed:.0f} s "
                                   f"({est}) · trying {job.label}")  # fmt: skip
        st.button("Stop (keep what is done)", key="my_tune_stop", on_click=job.stop.set,
                  icon=":material/stop:")  # fmt: skip
        return
    if job.error:
        st.error(plain(job.error))
        return
    if job.result is not None:
        result_table(job.result)


def result_table(result: TuneResult) -> None:
    """Best settings against the current ones, per fold and overall, with intervals."""
    head = (f"{result.tried} of {result.planned} settings × {result.n_questions} questions in "
            f"{result.seconds:.0f} s (estimate {result.estimate_seconds:.0f} s), "
            f"{result.metric}, {result.n_folds}-fold cross-validation")  # fmt: skip
    if result.partial:
        st.warning(f"Stopped early: {head}. The settings finished so far are compared.")
    else:
        st.caption(head)
    st.dataframe(
        pd.DataFrame([
            {"": "current", "settings": result.current.label,
             "score [95%]": _iv(result.current_score)},
            {"": "tuned (cross-validated: expect this on new questions)",
             "settings": result.best.label, "score [95%]": _iv(result.cross_validated)},
            {"": "gain (paired)", "settings": "", "score [95%]": result.gain.text()},
        ]),
        hide_index=True, width="stretch", key="my_tune_result",
    )  # fmt: skip
    st.dataframe(
        pd.DataFrame([{"fold": f.index, "n": f.n_questions, "chosen on the other folds": f.chosen,
                       "its score here": round(f.chosen_score, 3),
                       "current here": round(f.current_score, 3)} for f in result.folds]),
        hide_index=True, width="stretch", key="my_tune_folds",
    )  # fmt: skip
    if result.warning:
        st.warning(plain(result.warning), icon=":material/warning:")
    if result.best_is_current:  # an Apply here would change nothing, yet say "Applied"
        st.info("The current settings are already the best found: nothing to apply.",
                icon=":material/check:")  # fmt: skip
        return
    st.button(
        "Apply these settings to the sidebar", key="my_tune_apply", type="primary",
        icon=":material/check:", on_click=_apply, args=(result,),
    )  # fmt: skip
    if st.session_state.get("my_tune_applied"):
        st.success("Applied: Ask now runs with the tuned settings (see the sidebar).")


def _apply(result: TuneResult) -> None:
    tune_apply.apply(result.applied(), result.best.label)
    st.session_state.my_tune_applied = True
