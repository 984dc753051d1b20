"""Settings read from the environment: the per-file cap, the eval-set folders."""

from __future__ import annotations

import pytest

from treerag_core.base.config import DEFAULT_MAX_FILE_BYTES, IndexSettings, max_file_bytes


def test_treerag_max_file_mb_is_read(monkeypatch):
    monkeypatch.setenv("TREERAG_MAX_FILE_MB", "2.5")
    assert max_file_bytes() == 2_500_000  # decimal MB, as Streamlit's uploader counts
    assert IndexSettings().max_file_bytes == 2_500_000
    monkeypatch.delenv("TREERAG_MAX_FILE_MB")
    assert IndexSettings().max_file_bytes == DEFAULT_MAX_FILE_BYTES


@pytest.mark.parametrize("bad", ["zero", "0", "-1", "nan", "inf"])
def test_treerag_max_file_mb_bad_value_is_named(monkeypatch, bad):
    monkeypatch.setenv("TREERAG_MAX_FILE_MB", bad)
    with pytest.raises(ValueError, match="TREERAG_MAX_FILE_MB"):
        max_file_bytes()


def test_eval_roots_from_the_environment_or_beside_the_repo(monkeypatch, tmp_path):
    import os

    from treerag_core.base.config import eval_roots

    monkeypatch.setenv("TREERAG_EVAL_DIRS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert eval_roots() == (tmp_path / "a", tmp_path / "b")
    monkeypatch.delenv("TREERAG_EVAL_DIRS")
    default = eval_roots()
    monkeypatch.setenv("TREERAG_EVAL_DIRS", os.pathsep)  # nothing listed: the default
    assert eval_roots() == default and default[0].parts[-2:] == ("shared", "eval")


def test_changed_names_settings_off_their_default_by_their_labels():
    assert IndexSettings().changed() == []
    changed = IndexSettings(max_depth=4, article_leaves=True, graph_min_leaf_chars=3000)
    assert changed.changed() == [
        "Depth cap: 4",
        "Knowledge graphs for leaves from 3000 characters",
        "Statute articles as leaves",
    ]
    assert changed.changed(skip=("max_depth",)) == changed.changed()[1:]
