"""The tree editor (ui/documents/tree_editor.py) through AppTest, with a real edits sidecar."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from treerag_core.base.types import Usage
from treerag_core.ingest.tree_edits import TreeEdit, load_edits

APP = Path(__file__).parent / "apps" / "tree_editor_app.py"


class FakeClient:
    def complete(self, prefix, rest, model, max_tokens):
        return '{"2": 3}', Usage(model=model)


@pytest.fixture
def app(tmp_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.run()
    assert not at.exception
    return at


def _outline(at: AppTest) -> list[tuple[int, str]]:
    frame = at.dataframe[0].value
    return [(int(r.level), r.heading.strip("\u2003")) for r in frame.itertuples()]


def test_shows_the_inferred_tree(app: AppTest) -> None:
    assert _outline(app) == [(1, "Guide"), (2, "Leave"), (2, "Pay")]


def test_demote_mark_undo_and_save(app: AppTest, tmp_path: Path) -> None:
    app.selectbox(key="te_pick").select_index(2)
    app.selectbox(key="te_action").set_value("demote")
    app.button(key="te_apply").click().run()
    assert _outline(app)[2] == (3, "Pay")
    # The picker shows the heading's new level, and still the same heading.
    assert app.selectbox(key="te_pick").value == "2. L3 Pay"
    app.selectbox(key="te_action").set_value("promote")
    app.button(key="te_apply").click().run()
    assert app.selectbox(key="te_pick").value == "2. L2 Pay"
    app.button(key="te_undo").click().run()
    app.text_input(key="te_line").set_value("Sick Leave")
    app.number_input(key="te_level").set_value(3)
    app.button(key="te_mark").click().run()
    assert (3, "Sick Leave") in _outline(app)
    app.button(key="te_undo").click().run()
    assert (3, "Sick Leave") not in _outline(app)
    app.button(key="te_save").click().run()
    assert not app.exception
    (stored,) = load_edits(tmp_path).values()
    assert stored == (TreeEdit("demote", "Pay"),)


def test_rename_needs_text(app: AppTest) -> None:
    app.selectbox(key="te_action").set_value("rename")
    app.button(key="te_apply").click().run()
    assert "Type the new heading text first." in [e.value for e in app.error]
    app.text_input(key="te_rename").set_value("Handbook")
    app.button(key="te_apply").click().run()
    assert _outline(app)[0] == (1, "Handbook")


def test_llm_suggestions_are_accepted_as_a_diff(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.session_state["fake_client"] = FakeClient()
    at.run()
    at.button(key="te_suggest").click().run()
    assert at.checkbox(key="te_fix_2").label == "Pay: level 2 → 3"
    at.button(key="te_accept").click().run()
    assert _outline(at)[2] == (3, "Pay")


def test_every_line_like_one_changes_in_one_action_and_undoes_together(app: AppTest) -> None:
    app.selectbox(key="te_pick").select_index(1)  # Leave: level 2, from Markdown
    app.selectbox(key="te_like_by").set_value("style")
    app.button(key="te_like").click().run()
    assert app.multiselect(key="te_many").value == ["1. Leave", "2. Pay"]
    app.selectbox(key="te_bulk_op").set_value("demote")
    app.button(key="te_bulk").click().run()
    assert _outline(app) == [(1, "Guide"), (3, "Leave"), (3, "Pay")]
    assert app.multiselect(key="te_many").value == []  # the action clears the selection
    # Before / after, side by side.
    before, after = (app.dataframe[i].value for i in (1, 2))
    assert list(before.level) == [1, 2, 2] and list(after.level) == [1, 3, 3]
    app.button(key="te_undo").click().run()  # one undo takes back the whole action
    assert _outline(app) == [(1, "Guide"), (2, "Leave"), (2, "Pay")]


def test_selected_lines_stop_being_headings_in_one_action(app: AppTest) -> None:
    app.multiselect(key="te_many").select("1. Leave").select("2. Pay")
    app.selectbox(key="te_bulk_op").set_value("remove").run()  # the button counts them
    app.button(key="te_bulk").click().run()
    assert _outline(app) == [(1, "Guide")]
    assert "edits=2" in [t.value for t in app.text]


def test_a_run_of_junk_headings_goes_in_one_action_and_comes_back_with_one_undo(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    monkeypatch.setenv("TREE_EDITOR_DOC", "junk")
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.run()
    whole = [
        (1, "Report"),
        (2, "Item 1. Statements"),
        (2, "(Unaudited)"),
        (2, "(In millions)"),
        (2, "Total assets:"),
        (2, "Item 2. Discussion"),
    ]
    assert _outline(at) == whole
    # The shift-click: from one heading to another, picked bottom-up, both included.
    at.selectbox(key="te_from").set_value("4. Total assets:")
    at.selectbox(key="te_to").set_value("2. (Unaudited)")
    at.button(key="te_run").click().run()
    run = ["2. (Unaudited)", "3. (In millions)", "4. Total assets:"]
    assert at.multiselect(key="te_many").value == run
    at.selectbox(key="te_bulk_op").set_value("remove").run()
    assert at.button(key="te_bulk").label == "Apply to 3 selected"
    at.button(key="te_bulk").click().run()
    assert not at.exception
    assert _outline(at) == [(1, "Report"), (2, "Item 1. Statements"), (2, "Item 2. Discussion")]
    assert "edits=3" in [t.value for t in at.text]
    # The pickers stay on headings that still exist.
    assert at.selectbox(key="te_from").value == "2. Item 2. Discussion"
    at.button(key="te_undo").click().run()  # one undo takes back the whole run
    assert _outline(at) == whole
    assert "edits=0" in [t.value for t in at.text]
    # Combined with "every line like": a run added to the like selection, or replacing it.
    at.selectbox(key="te_pick").select_index(2)  # (Unaudited)
    at.selectbox(key="te_like_by").set_value("pattern")
    at.button(key="te_like").click().run()
    assert at.multiselect(key="te_many").value == run[:2]  # both wrapped in brackets
    at.checkbox(key="te_many_add").check()
    at.selectbox(key="te_from").set_value("5. Item 2. Discussion")
    at.selectbox(key="te_to").set_value("5. Item 2. Discussion")
    at.button(key="te_run").click().run()
    assert at.multiselect(key="te_many").value == [*run[:2], "5. Item 2. Discussion"]
    at.checkbox(key="te_many_add").uncheck()
    at.button(key="te_run").click().run()
    assert at.multiselect(key="te_many").value == ["5. Item 2. Discussion"]
