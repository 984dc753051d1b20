"""AppTest of issue 26's loop: mark evidence on Ask (a row, a span), see the question labelled
in History and in "My labelled questions" on Evaluate, score it, import more, tune, apply."""

from __future__ import annotations

import json
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import ask, open_app, page_text
from tests.conftest import keyless_app
from tests.test_eval_tune import QUESTIONS, TOPICS
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.intervals import Interval
from treerag_core.evaluation.labels import LabelStore
from treerag_core.evaluation.tune import Candidate, TuneResult

DOC = ("# Report\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in TOPICS)).encode()


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("labels_app_data")) as data:
        yield data


def _store(at: AppTest, data) -> LabelStore:
    return LabelStore.for_workspace(data / "workspaces" / at.session_state["ws_id"])


def _frame(at: AppTest, column: str):
    """The first table on the page with `column` (AppTest's tables carry no widget key)."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def _hit_with(at: AppTest, text: str):
    trace = at.session_state["ask_trace"]
    return next(h for h in trace.reranked if text in h.chunk.text)


@pytest.fixture(scope="module")
def marked(app_env) -> AppTest:
    """Uploaded the report, asked two questions: one marked by a row, one by a span."""
    at = open_app()
    at.switch_page("pages/documents.py").run()
    at.file_uploader[0].set_value([("report.md", DOC, "text/markdown")]).run()
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    at.toggle(key="qs_rerank").set_value(False).run()  # keeps the tune below to seconds
    (q1, span1), (q2, span2) = QUESTIONS[:2]
    ask(at, q1)
    hit = _hit_with(at, span1)
    at.button(key=f"lab_row_{hit.chunk.chunk_id}_yes").click().run()
    assert not at.exception, at.exception
    ask(at, q2)
    hit = _hit_with(at, span2)
    at.session_state["ask_inspect"] = hit.chunk.source_node_id  # the inspector opens its leaf
    at.run()
    at.text_area(key="lab_span").input(span2).run()  # what the selection script copies in
    at.button(key="lab_mark_span").click().run()
    assert not at.exception, at.exception
    return at


def test_a_row_and_a_span_make_labelled_questions(marked: AppTest, app_env) -> None:
    stored = {q.question: q for q in _store(marked, app_env).load()}
    (q1, span1), (q2, span2) = QUESTIONS[:2]
    assert stored[q1].labelled and span1 in stored[q1].evidence[0].text  # the whole passage
    assert [m.text for m in stored[q2].evidence] == [span2]  # exactly the selected span
    assert "Marked" in page_text(marked, "success")
    # Pressing the same verdict again removes the mark; "does not" is kept, never gold.
    hit = _hit_with(marked, span2)
    marked.button(key=f"lab_row_{hit.chunk.chunk_id}_no").click().run()
    marked.button(key=f"lab_row_{hit.chunk.chunk_id}_no").click().run()
    assert [m.text for m in _store(marked, app_env).get(q2).marks] == [span2]


def test_history_tags_labelled_questions(marked: AppTest) -> None:
    marked.switch_page("pages/history.py").run()
    labelled = [m.value for m in marked.markdown if "🏷 labelled" in m.value]
    assert len(labelled) == 2


def test_evaluate_lists_scores_imports_tunes_and_applies(marked: AppTest) -> None:
    at = marked
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, at.exception
    # The labelled set is an entry of the dataset menu, beside the dev sets.
    assert "My labelled questions" in at.selectbox(key="ev_dataset").options
    assert "**2** labelled question(s)" not in page_text(at, "caption")  # a dev set is chosen
    at.selectbox(key="ev_dataset").set_value("mine").run()
    assert "**2** labelled question(s)" in page_text(at, "caption")
    assert "needs at least 8 labelled questions; you have 2" in page_text(at, "info")
    _score_like_a_dev_set(at)

    rows = [{"id": f"q{i}", "doc": "report.md", "question": q, "evidence": [s]}
            for i, (q, s) in enumerate(QUESTIONS)]  # fmt: skip
    rows.append({"id": "x", "doc": "missing.md", "question": "Missing?", "evidence": ["x"]})
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    at.file_uploader(key="my_import_0").set_value([("q.jsonl", data, "application/json")]).run()
    note = page_text(at, "warning", plain=True)
    assert "documents not in the workspace: missing.md (1)" in note
    # The two questions marked on Ask come again: merged, and the note says so.
    n = len(QUESTIONS)
    assert f"{n} of {n + 1} question(s) imported ({n - 2} new, 2 merged with a label" in note
    assert f"**{len(QUESTIONS)}** labelled question(s)" in page_text(at, "caption")

    at.multiselect(key="my_tune_strategies").set_value(["flat-hybrid"]).run()
    at.button(key="my_tune_run").click().run()
    for _ in range(120):
        if any("score [95%]" in df.value.columns for df in at.dataframe):
            break
        time.sleep(0.5)
        at.run()
    assert not at.exception, at.exception
    table = _frame(at, "score [95%]")
    rows, (current, best, _) = list(table[""]), list(table["settings"])
    assert rows[0] == "current" and "cross-validated" in rows[1]
    folds = _frame(at, "chosen on the other folds")
    assert sum(folds["n"]) == len(QUESTIONS)
    # Every setting reads the whole short report within 2,000 characters: a tie, which keeps
    # the current settings, so there is nothing to apply (the Apply is tested below).
    assert best == current
    assert "already the best found" in page_text(at, "info")
    assert "my_tune_apply" not in [b.key for b in at.button]


def _score_like_a_dev_set(at: AppTest) -> None:
    """The sidebar's Run on the labelled set: the dev sets' views, each mean with its interval."""
    at.multiselect(key="ev_strategies").set_value(["treerag", "flat-structured"])
    at.toggle(key="ev_rerank").set_value(False)
    at.number_input(key="ev_limit").set_value(0)
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    report = at.session_state["ev_report"]
    assert report["dataset"] == "my labelled questions"
    at.segmented_control(key="ev_view").set_value("Metrics").run()
    scores = _frame(at, "recall@1000c")
    assert list(scores["strategy"]) == ["treerag", "flat-structured"]
    assert list(scores["n"]) == [2, 2]
    spread = _frame(at, "recall@1000c 95%")  # the intervals: a table of their own, same columns
    assert list(spread["strategy"]) == ["treerag", "flat-structured"]
    for column in ("recall@1000c", "recall@2000c", "hit@5", "recall@5", "mrr@10", "ctx_chars@5"):
        assert column + " 95%" not in scores.columns
        assert all(cell.startswith("[") for cell in spread[f"{column} 95%"]), column
    assert "Fewer than 20 questions" in page_text(at, "caption")
    every = _frame(at, "metric")
    assert "treerag 95%" in every.columns  # every mean there too
    [chart] = at.get("vega_lite_chart")  # the curves over k
    assert chart is not None
    at.segmented_control(key="ev_view").set_value("Questions").run()
    assert not at.exception, at.exception
    outcomes = _frame(at, "gold sections")
    assert len(outcomes) == 2 and {"treerag", "flat-structured"} <= set(outcomes.columns)
    at.segmented_control(key="ev_view").set_value("Coverage map").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    cov = _frame(at, "pick rate")
    assert cov["gold"].sum() >= 2  # both questions' evidence sits in the report's leaves
    assert at.session_state["ev_cov_doc"] == "report.md"
    at.segmented_control(key="ev_view").set_value("Metrics").run()


def test_a_pdf_passage_on_its_page_gets_the_same_marks(app_env) -> None:
    """A passage opened on its rendered PDF page has the rows' verdict buttons and rule."""
    from tests.pdf_factory import report_pdf

    at = open_app("pages/documents.py")
    at.file_uploader[0].set_value([("report.pdf", report_pdf(3), "application/pdf")]).run()
    at.button(key="review_go").click().run()
    assert not at.exception, at.exception
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    at.toggle(key="qs_rerank").set_value(False).run()
    question = "What does page 2 say about revenue and costs?"
    ask(at, question)
    hit = next(h for h in at.session_state["ask_trace"].reranked if h.chunk.doc_id == "report.pdf")
    c = hit.chunk
    # What a citation does: open its leaf with the passage marked (story.open_citation).
    at.session_state["ask_inspect"] = c.source_node_id
    at.session_state["ask_highlight"] = (c.start, c.end)
    at.run()
    assert not at.exception, at.exception
    assert at.get("imgs") or [e for e in at.get("image")], "the page is rendered"
    at.button(key="lab_page_yes").click().run()
    assert not at.exception, at.exception
    [mark] = _store(at, app_env).get(question).marks
    assert (mark.doc, mark.start, mark.end, mark.answers) == ("report.pdf", c.start, c.end, True)
    assert "✅ answers · Does this passage answer" in page_text(at, "caption", plain=True)
    # One rule: the passage's row shows the verdict, and the page's "does not" replaces it.
    assert at.button(key=f"lab_row_{c.chunk_id}_yes").proto.type == "primary"
    at.button(key="lab_page_no").click().run()
    [mark] = _store(at, app_env).get(question).marks
    assert mark.answers is False
    at.button(key="lab_page_no").click().run()  # the same verdict again removes it
    assert not _store(at, app_env).get(question).marks


def test_a_labelled_question_opens_its_trace_on_ask(marked: AppTest) -> None:
    at = marked
    at.switch_page("pages/evaluate.py").run()
    at.selectbox(key="ev_dataset").set_value("mine").run()
    at.multiselect(key="ev_strategies").set_value(["treerag"])
    at.toggle(key="ev_rerank").set_value(False)
    at.button(key="ev_run").click().run()
    assert not at.exception, at.exception
    at.segmented_control(key="ev_view").set_value("Questions").run()
    first = at.session_state["ev_report"]["questions"]["treerag"][0]
    at.selectbox(key="ev_pick").set_value(first["id"])
    at.button(key="ev_open_button").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    trace = at.session_state["ask_trace"]
    assert trace.question == first["question"] and trace.strategy == "treerag"
    assert trace.reranked and {h.chunk.doc_id for h in trace.reranked} == {"report.md"}


def test_an_unmarked_passage_has_no_badge_and_no_doubled_separator():
    from ui.ask.labels_marks import _badged

    assert _badged(None, "PART II > Item 8") == "PART II > Item 8"  # was "· · PART II …"
    assert _badged(True, "PART II") == "✅ answers · PART II"
    assert _badged(False, "PART II") == "❌ does not · PART II"


def _tune_table_app() -> None:
    import streamlit as st

    from ui.evaluate.my_labels import result_table

    result_table(st.session_state["result"])


@pytest.mark.parametrize("best_is_current", [True, False])
def test_a_tune_that_found_the_current_settings_offers_no_apply(best_is_current) -> None:
    current = Candidate("treerag · current", QuerySettings())
    tuned = Candidate("flat-hybrid · tuned", QuerySettings(strategy="flat-hybrid"))
    best = current if best_is_current else tuned
    zero = Interval(0.0, 0.0, 0.0)
    result = TuneResult(
        "recall@2000c", 8, 4, current, best, 0.5, Interval(0.5, 0.4, 0.6),
        Interval(0.5, 0.4, 0.6), zero, (), 2, 2, False, 1.0, 1.0,
    )  # fmt: skip
    at = AppTest.from_function(_tune_table_app)
    at.session_state["result"] = result
    at.run()
    assert not at.exception, at.exception
    offered = [b.key for b in at.button] == ["my_tune_apply"]
    said = "already the best found" in page_text(at, "info")
    assert (offered, said) == (not best_is_current, best_is_current)
    if offered:  # the sidebar takes the tuned settings, those it has no widget for too
        at.button(key="my_tune_apply").click().run()
        assert not at.exception, at.exception
        assert at.session_state["qs_strategy"] == "flat-hybrid"
        assert at.session_state["qs_tuned"]["label"] == best.label
        assert "Applied" in page_text(at, "success")


def test_rows_name_their_document_when_two_hold_the_same_text(app_env) -> None:
    """A report uploaded twice (as a law may be, as Markdown and as PDF): the rows would read
    the same, so each names the document it is from."""
    at = open_app("pages/documents.py")
    at.file_uploader[0].set_value(
        [("report.md", DOC, "text/markdown"), ("copy.md", DOC, "text/markdown")]
    ).run()
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    at.toggle(key="qs_rerank").set_value(False).run()
    ask(at, QUESTIONS[0][0])
    assert not at.exception, at.exception
    rows = [m.value for m in at.markdown if m.value.startswith("**#")]
    docs = {h.chunk.doc_id for h in at.session_state["ask_trace"].reranked}
    assert docs == {"report.md", "copy.md"} and rows
    assert all(re.match(r"\*\*#\d+\*\* (report|copy)\\\.md › ", row) for row in rows), rows
