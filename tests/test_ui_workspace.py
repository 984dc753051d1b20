"""ui/common/workspace.py through AppTest: clearing the workspace loses nothing on failure."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest


def clear_app() -> None:
    import streamlit as st

    from treerag_core.base.config import IndexSettings
    from treerag_core.base.errors import WorkspaceDeleteError
    from ui.common.session import WorkspaceState
    from ui.common.workspace import set_workspace, workspace_folder

    ws = WorkspaceState()
    ws.index = "the session's index"
    st.session_state["folder"] = str(workspace_folder())
    folder = workspace_folder() / "index"
    folder.parent.mkdir(parents=True)
    if st.session_state["stuck"]:
        # rmtree refuses a symlinked folder: a real failure that leaves the files on disk.
        folder.symlink_to(st.session_state["stuck"], target_is_directory=True)
    else:
        folder.mkdir()
        (folder / "manifest.json").write_text("{}")
    try:
        st.session_state["out"] = set_workspace([], IndexSettings(embedder="hashing"))
    except WorkspaceDeleteError as exc:
        st.session_state["out"] = f"error: {exc}"
    st.session_state["kept"] = WorkspaceState().index


def test_clearing_a_workspace_whose_files_stay_keeps_the_session_index(tmp_path, monkeypatch):
    monkeypatch.setenv("TREERAG_DATA_DIR", str(tmp_path / "data"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "manifest.json").write_text("{}")
    at = AppTest.from_function(clear_app, default_timeout=30)
    at.session_state["stuck"] = str(elsewhere)
    at.run()
    assert not at.exception
    assert (
        at.session_state["out"].startswith("error: ")
        and "could not be deleted" in (at.session_state["out"])
    )
    assert at.session_state["kept"] == "the session's index"
    assert (elsewhere / "manifest.json").is_file()


def test_clearing_a_workspace_removes_its_index(tmp_path, monkeypatch):
    monkeypatch.setenv("TREERAG_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_function(clear_app, default_timeout=30)
    at.session_state["stuck"] = ""
    at.run()
    assert not at.exception
    assert at.session_state["out"] is None and at.session_state["kept"] is None
    assert not (Path(at.session_state["folder"]) / "index").exists()
