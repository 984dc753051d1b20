"""AppTest of the History page: queries are logged, listed per session, and reopen on Ask."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        data = tmp_path_factory.mktemp("history_data")
        mp.setenv("TREERAG_EMBEDDER", "hashing")
        mp.setenv("TREERAG_DATA_DIR", str(data))
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        yield data


def ask(at: AppTest, question: str) -> None:
    at.text_input(key="ask_question").input(question)
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception


def test_empty_history_page():
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    at.switch_page("pages/history.py").run()
    assert not at.exception, at.exception
    assert any("No questions yet" in i.value for i in at.info)


def test_queries_are_logged_listed_and_reopened_with_their_settings(app_env):
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
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
    first = AppTest.from_file(str(APP), default_timeout=90)
    first.run()
    ask(first, "How many epochs was the model trained for?")
    second = AppTest.from_file(str(APP), default_timeout=90)
    second.run()
    second.switch_page("pages/history.py").run()
    assert any("No questions yet" in i.value for i in second.info)


def test_a_reload_with_the_workspace_in_the_url_lists_its_queries():
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    ask(at, "How many epochs was the model trained for?")
    at.switch_page("pages/history.py").run()
    assert not at.exception, at.exception
    workspace = at.session_state["ws_id"]
    assert at.query_params["ws"] == workspace
    reloaded = AppTest.from_file(str(APP), default_timeout=90)
    reloaded.query_params["ws"] = workspace
    reloaded.run()
    reloaded.switch_page("pages/history.py").run()
    assert not reloaded.exception, reloaded.exception
    assert reloaded.session_state["ws_id"] == workspace
    assert any("How many epochs" in m.value for m in reloaded.markdown)
