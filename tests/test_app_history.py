"""AppTest of the History page: queries are logged, listed per session, and reopen on Ask."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import APP, ask, open_app, page_text
from tests.conftest import keyless_app


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("history_data")) as data:
        yield data


def test_empty_history_page():
    at = open_app("pages/history.py")
    assert any("No questions yet" in i.value for i in at.info)


def test_queries_are_logged_listed_and_reopened_with_their_settings(app_env):
    at = open_app()
    at.slider(key="qs_dense_weight").set_value(0.7).run()
    ask(at, "How many epochs was the model trained for?")
    first = at.session_state["ask_trace"]
    ask(at, "What does the ablation study remove?")
    workspace = at.session_state["ws_id"]

    # Every finished query is in the audit log under this session's workspace, with its hits.
    with sqlite3.connect(app_env / "audit.sqlite") as db:
        rows = db.execute(
            "SELECT id, question, corpus FROM query WHERE workspace = ? ORDER BY id", (workspace,)
        ).fetchall()
        hits = db.execute("SELECT COUNT(*) FROM hit").fetchone()[0]
    assert all(r[2].startswith("samples:") for r in rows)
    assert [r[1] for r in rows] == [
        "How many epochs was the model trained for?",
        "What does the ablation study remove?",
    ]
    assert hits > 0

    # Change a setting, then reopen the first query: its settings come back with it.
    at.slider(key="qs_dense_weight").set_value(0.2).run()
    at.switch_page("pages/history.py").run()
    assert not at.exception, at.exception
    first_id, second_id = rows[0][0], rows[1][0]
    listed = [b.key for b in at.button if b.key and b.key.startswith("open_")]
    assert listed == [f"open_{second_id}", f"open_{first_id}"]  # newest first, each once
    assert not at.dataframe  # one list, not a table and then buttons
    at.button(key=f"open_{first_id}").click().run()
    assert not at.exception, at.exception
    trace = at.session_state["ask_trace"]
    assert trace.question == first.question
    assert trace.answer == first.answer
    assert [leaf.node_id for leaf in trace.locate.leaves] == [
        leaf.node_id for leaf in first.locate.leaves
    ]
    assert at.session_state["qs_dense_weight"] == 0.7
    assert at.session_state["ask_trace_id"] == first_id  # shown as logged, not re-run
    assert at.title[0].value == "TreeRAG Explorer"  # we are on the Ask page


def test_history_is_per_session():
    first = open_app()
    ask(first, "How many epochs was the model trained for?")
    query_id = first.session_state["ask_trace_id"]
    second = open_app("pages/history.py")
    assert second.session_state["ws_id"] != first.session_state["ws_id"]
    assert any("No questions yet" in i.value for i in second.info)
    assert not any("How many epochs" in m.value for m in second.markdown)
    # The session that asked lists its question, with the button that reopens it.
    first.switch_page("pages/history.py").run()
    assert not first.exception, first.exception
    assert not any("No questions yet" in i.value for i in first.info)
    assert any("How many epochs" in m.value for m in first.markdown)
    assert [b.key for b in first.button if (b.key or "").startswith("open_")] == [
        f"open_{query_id}"
    ]


def test_a_reload_with_the_workspace_in_the_url_lists_its_queries():
    at = open_app()
    ask(at, "How many epochs was the model trained for?")
    at.switch_page("pages/history.py").run()
    assert not at.exception, at.exception
    workspace = at.session_state["ws_id"]
    assert at.query_params["ws"] == workspace
    reloaded = open_app("pages/history.py", ws=workspace)
    assert reloaded.session_state["ws_id"] == workspace
    assert any("How many epochs" in m.value for m in reloaded.markdown)


def test_reopening_after_a_reload_on_history_raises_no_change_banner():
    """A reload straight onto History (the Ask sidebar not drawn yet in that session): the
    reopened run matches the controls, so nothing reads as changed or pending."""
    at = open_app()
    ask(at, "How many epochs was the model trained for?")
    query_id = at.session_state["ask_trace_id"]
    reloaded = open_app(ws=at.session_state["ws_id"])
    # A browser reload on /history?ws= never draws the Ask sidebar; AppTest's first run is
    # Ask, so the LLM panel's record is taken away again to stand for that.
    del reloaded.session_state["qs_llm_settings"]
    reloaded.switch_page("pages/history.py").run()
    reloaded.button(key=f"open_{query_id}").click().run()
    assert not reloaded.exception, reloaded.exception
    assert reloaded.title[0].value == "TreeRAG Explorer"
    assert not [w.value for w in reloaded.warning if "Not applied" in w.value]
    assert "Since the last full run" not in page_text(reloaded)
    # A move after that is named by its label, against the reopened run.
    reloaded.switch_page("pages/ask.py").run()  # AppTest stays on History after a switch_page
    assert not [w.value for w in reloaded.warning if "Not applied" in w.value]
    reloaded.toggle(key="qs_rerank_chinese").set_value(True).run()
    text = page_text(reloaded, plain=True)
    assert "Rerank Chinese questions too: off → on" in text, text
    assert "Use an LLM" not in text and "enabled" not in text


PAPER = (Path(__file__).resolve().parents[1] / "sample_docs" / "test_paper.md").read_bytes()
NOTES = b"# Notes\n\n## Routers\n\nSomething ordinary about routers and epochs.\n"


def upload(at: AppTest, name: str, data: bytes) -> None:
    at.switch_page("pages/documents.py").run()
    at.file_uploader[0].set_value([(name, data, "text/markdown")]).run()
    assert not at.exception, at.exception


def asked_on_an_upload() -> AppTest:
    """A session that uploaded the paper and asked one question of it on Ask."""
    at = open_app()
    upload(at, "paper.md", PAPER)
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    ask(at, "How many epochs was the model trained for?")
    return at


def test_a_reload_after_an_upload_shows_the_result_live_not_stored():
    """A reload is a new session restoring the same workspace index: the result asked of it
    comes back live (lit graph, links), not read-only as if the workspace had changed;
    also after the session changed its workspace more than once before asking."""
    at = open_app()
    upload(at, "notes.md", NOTES)
    upload(at, "paper.md", PAPER)  # a second change in this session
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    first = ask(at, "How many epochs was the model trained for?").session_state["ask_trace"]
    again = AppTest.from_file(str(APP), default_timeout=90)  # F5: the same link
    for name, value in at.query_params.items():
        again.query_params[name] = value
    again.run()
    assert not again.exception, again.exception
    shown = again.session_state["ask_trace"]
    assert shown is not None and shown.answer == first.answer
    assert again.session_state["ask_trace_corpus"] == at.session_state["ask_trace_corpus"]
    assert "Stored result" not in page_text(again)


def test_an_upload_question_reopens_as_a_stored_result_after_the_workspace_changed():
    at = asked_on_an_upload()
    first, first_id = at.session_state["ask_trace"], at.session_state["ask_trace_id"]
    assert first.answer and first.reranked
    upload(at, "notes.md", NOTES)  # the workspace changes: its index is rebuilt
    at.switch_page("pages/history.py").run()
    at.button(key=f"open_{first_id}").click().run()
    assert not at.exception, at.exception
    # The stored answer, citations and step tables, read-only and labelled so.
    text = page_text(at)
    assert "Stored result" in text and f"#{first_id} in History" in text, text
    assert any(h.value == "③ Answer (stored)" for h in at.subheader)
    assert any(first.answer.splitlines()[0][:30] in m.value for m in at.markdown)
    reranked = [d.value for d in at.dataframe if "change" in d.value.columns]
    assert len(reranked) == 1 and len(reranked[0]) >= len(first.reranked)
    # A refused question loses nothing: the stored result stays on screen.
    at.switch_page("pages/ask.py").run()  # AppTest stays on History after a switch_page
    ask(at, "   ")
    assert any("the question is empty" in e.value for e in at.error)
    assert "Stored result" in page_text(at)
    # Ask again: the question runs on the workspace as it is now.
    at.button(key="stored_ask_again").click().run()
    assert not at.exception, at.exception
    again = at.session_state["ask_trace"]
    assert again is not first and again.question == first.question
    assert at.session_state["ask_trace_corpus"] == f"ws:{at.session_state['ws_id']}:" + str(
        at.session_state["ws_version"]
    )
    assert "Stored result" not in page_text(at)


def test_after_choosing_another_corpus_the_last_result_is_one_toggle_away():
    at = asked_on_an_upload()
    at.radio(key="qs_corpus").set_value("samples").run()
    assert not at.exception, at.exception
    assert "Stored result" not in page_text(at)  # a deliberate switch: the samples' own view
    at.toggle(key="ask_show_stored").set_value(True).run()
    assert "Stored result" in page_text(at) and "your uploads as they were then" in page_text(at)
    assert any(b.key == "stored_ask_again" for b in at.button)


def test_with_every_upload_removed_the_last_result_stays_readable():
    at = asked_on_an_upload()
    at.switch_page("pages/documents.py").run()
    at.multiselect(key="ws_remove").set_value(["paper.md"]).run()
    at.button(key="ws_remove_go").click().run()
    at.button(key="ws_remove_yes").click().run()  # Remove asks first
    assert not at.exception, at.exception
    at.switch_page("pages/ask.py").run()
    assert not at.exception, at.exception
    text = page_text(at)
    assert "Stored result" in text and "upload documents first" in text, text
    assert any(h.value == "③ Answer (stored)" for h in at.subheader)
    assert not [b for b in at.button if b.key == "stored_ask_again"]  # nothing to ask on
