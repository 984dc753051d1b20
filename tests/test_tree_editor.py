"""The tree editor (ui/documents/tree_editor.py) through AppTest, with a real edits sidecar."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.pdf_factory import UNSEEN, contents_answer, contents_pdf, filing_pdf
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


def _proposals(at: AppTest) -> list[str]:
    """The keys of the contents check's proposal boxes (the editor has other checkboxes)."""
    return [c.key for c in at.checkbox if c.key.startswith("te_skel_fix_")]


class ContentsClient:
    """Answers the contents check as a model would (`pdf_factory.contents_answer`)."""

    def complete(self, prefix, rest, model, max_tokens, json_mode=False):
        return contents_answer(rest), Usage(model=model)


def _pdf_app(tmp_path, monkeypatch, client) -> AppTest:
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.session_state["pdf"] = contents_pdf()
    if client is not None:
        at.session_state["fake_client"] = client
    at.run()
    assert not at.exception
    return at


def test_the_contents_check_shows_only_with_contents_and_an_llm(tmp_path, monkeypatch) -> None:
    keys = [b.key for b in _pdf_app(tmp_path, monkeypatch, None).button]
    assert "te_skel" not in keys and "te_suggest" not in keys
    md = AppTest.from_file(str(APP), default_timeout=30)
    md.session_state["fake_client"] = FakeClient()
    md.run()
    keys = [b.key for b in md.button]
    assert "te_suggest" in keys and "te_skel" not in keys  # a Markdown file has no contents


def test_contents_fixes_are_accepted_as_a_diff_and_undone(tmp_path, monkeypatch) -> None:
    at = _pdf_app(tmp_path, monkeypatch, ContentsClient())
    assert (1, UNSEEN) not in _outline(at)
    at.button(key="te_skel").click().run()
    assert not at.exception
    box = at.checkbox(key="te_skel_fix_1")
    assert box.label == (
        f"'Item 2. Properties': the body line '{UNSEEN}' (p. 3) becomes its heading at level 1"
    )
    at.button(key="te_skel_accept").click().run()
    assert [h for h in _outline(at) if h[0] == 1][:3] == [
        (1, "Item 1. Business"),
        (1, UNSEEN),
        (1, "Item 3. Legal Proceedings"),
    ]
    assert "edits=1" in [t.value for t in at.text]
    at.button(key="te_undo").click().run()
    assert (1, UNSEEN) not in _outline(at)
    # Rejected (unticked) proposals are not applied.
    at.button(key="te_skel").click().run()
    at.checkbox(key="te_skel_fix_1").uncheck().run()
    assert at.button(key="te_skel_accept").disabled


def test_contents_proposals_made_before_another_edit_are_dropped(tmp_path, monkeypatch) -> None:
    at = _pdf_app(tmp_path, monkeypatch, ContentsClient())
    at.button(key="te_skel").click().run()
    assert _proposals(at) == ["te_skel_fix_1"]
    at.text_input(key="te_line").set_value(UNSEEN)
    at.button(key="te_mark").click().run()
    assert not _proposals(at) and "check them again" in " ".join(i.value for i in at.info)


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


def _said(at: AppTest) -> list[str]:
    return [i.value for i in at.info]


def test_to_follows_from_until_the_user_picks_it(app: AppTest) -> None:
    # "From" on a late line with "To" left alone: the run is that line, not all above it.
    app.selectbox(key="te_from").set_value("2. Pay").run()
    assert app.selectbox(key="te_to").value == "2. Pay"
    app.button(key="te_run").click().run()
    assert app.multiselect(key="te_many").value == ["2. Pay"]
    # A "To" the user picks stays when "From" moves; picked upwards, it is the same run.
    app.selectbox(key="te_to").set_value("0. Guide").run()
    app.selectbox(key="te_from").set_value("1. Leave").run()
    assert app.selectbox(key="te_to").value == "0. Guide"
    app.button(key="te_run").click().run()
    assert app.multiselect(key="te_many").value == ["0. Guide", "1. Leave"]


def test_an_edit_that_changes_nothing_is_said_not_recorded(app: AppTest) -> None:
    app.selectbox(key="te_action").set_value("promote")
    app.button(key="te_apply").click().run()  # Guide is at level 1
    assert "'Guide' is already at the top level: nothing to promote." in _said(app)
    assert "edits=0" in [t.value for t in app.text]
    assert not any(c.value.startswith("Corrections:") for c in app.caption)
    # A bulk promote promotes those it can and says how many it left.
    app.selectbox(key="te_to").set_value("2. Pay").run()
    app.button(key="te_run").click().run()
    app.selectbox(key="te_bulk_op").set_value("promote")
    app.button(key="te_bulk").click().run()
    assert "Promoted 2; 1 already at the top level." in _said(app)
    assert _outline(app) == [(1, "Guide"), (1, "Leave"), (1, "Pay")]
    assert "edits=2" in [t.value for t in app.text]
    # Nothing to do: nothing recorded, and the selection stays.
    app.multiselect(key="te_many").select("0. Guide").run()
    app.button(key="te_bulk").click().run()
    assert "Nothing to promote: 1 already at the top level." in _said(app)
    assert "edits=2" in [t.value for t in app.text]
    assert app.multiselect(key="te_many").value == ["0. Guide"]


def test_the_selection_is_counted_named_and_shaded(app: AppTest) -> None:
    assert "Nothing selected." in [c.value for c in app.caption]
    assert "selected" not in app.dataframe[0].value.columns
    app.multiselect(key="te_many").select("1. Leave").select("2. Pay").run()
    assert "2 selected: Leave, Pay" in [c.value for c in app.caption]
    assert not app.exception
    assert list(app.dataframe[0].value.selected) == ["", "✓", "✓"]
    assert _outline(app) == [(1, "Guide"), (2, "Leave"), (2, "Pay")]


def test_the_made_up_cover_page_is_never_like_a_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.session_state["pdf"] = filing_pdf()
    at.run()
    assert _outline(at)[:2] == [(1, "Cover page"), (1, "PART I")]
    at.selectbox(key="te_like_by").set_value("style")  # both from the contents, at level 1
    at.button(key="te_like").click().run()  # the picked heading is the cover page
    assert "'Cover page' is not a line of the document: nothing is like it." in _said(at)
    assert at.multiselect(key="te_many").value == []
    at.selectbox(key="te_pick").select_index(1)  # PART I
    at.button(key="te_like").click().run()
    assert "0. Cover page" not in at.multiselect(key="te_many").value
    assert "1. PART I" in at.multiselect(key="te_many").value


def test_the_preamble_is_shown_as_the_section_it_becomes() -> None:
    from ui.documents.tree_editor import preamble_note

    note = preamble_note("Home | Papers\n\n# Interpreting *tweets*")
    assert note.startswith("Before the first heading, 2 lines of text become a section named")
    assert "Home \\| Papers / \\# Interpreting \\*tweets\\*" in note  # document text escaped
    assert "1 line of text becomes" in preamble_note("x" * 500) and "…" in preamble_note("x" * 500)
