"""Settings read from the environment: the per-file cap, the eval-set folders."""

from __future__ import annotations

import pytest

from treerag_core.config import DEFAULT_MAX_FILE_BYTES, IndexSettings, max_file_bytes


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
