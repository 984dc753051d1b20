"""Eval reports are loaded only from the app's own folders, never from any typed path."""

from __future__ import annotations

import os

import pytest

from treerag_core.base.errors import UnsafePathError
from treerag_core.evaluation.dataset import EvalDataError, load_dataset
from treerag_core.evaluation.report import load_report, write_report

REPORT = {"strategies": {"treerag": {"hit@5": 0.5}}, "questions": {}}


@pytest.fixture
def app_dirs(tmp_path, monkeypatch):
    data, evals = tmp_path / "data", tmp_path / "eval"
    data.mkdir()
    evals.mkdir()
    monkeypatch.setenv("TREERAG_DATA_DIR", str(data))
    monkeypatch.setenv("TREERAG_EVAL_DIRS", str(evals))
    return data, evals


def test_report_under_the_data_folder_loads(app_dirs):
    data, _ = app_dirs
    write_report(data / "eval-reports" / "r.json", REPORT)
    assert load_report(data / "eval-reports" / "r.json") == REPORT


def test_report_path_dev_zero_is_refused(app_dirs):
    with pytest.raises(UnsafePathError, match="outside"):
        load_report("/dev/zero")


def test_report_path_outside_the_app_folders_is_refused(app_dirs, tmp_path):
    write_report(tmp_path / "elsewhere.json", REPORT)
    with pytest.raises(UnsafePathError, match="outside"):
        load_report(tmp_path / "elsewhere.json")
    # A missing file outside gives the same answer: no probing which files exist.
    with pytest.raises(UnsafePathError, match="outside"):
        load_report(tmp_path / "missing.json")


def test_report_path_fifo_is_refused(app_dirs):
    data, _ = app_dirs
    os.mkfifo(data / "r.json")
    with pytest.raises(UnsafePathError, match="FIFO"):
        load_report(data / "r.json")


def test_report_path_too_large_is_refused_before_reading(app_dirs):
    data, _ = app_dirs
    with (data / "big.json").open("wb") as fh:
        fh.truncate(2_000_000)
    with pytest.raises(UnsafePathError, match="larger"):
        load_report(data / "big.json", max_bytes=1_000_000)


def test_report_missing_inside_is_a_clear_error(app_dirs):
    data, _ = app_dirs
    with pytest.raises(EvalDataError, match="No eval report"):
        load_report(data / "nope.json")


def test_another_folder_outside_the_roots_is_refused(app_dirs, tmp_path):
    outside = tmp_path / "other"
    (outside / "docs").mkdir(parents=True)
    (outside / "questions.jsonl").write_text("")
    with pytest.raises(UnsafePathError, match="outside"):
        load_dataset(outside, roots=[app_dirs[1]])


def test_another_folder_with_a_fifo_questions_file_is_refused(app_dirs):
    _, evals = app_dirs
    folder = evals / "mine"
    (folder / "docs").mkdir(parents=True)
    os.mkfifo(folder / "questions.jsonl")
    # Refused as what it is, not reported as a missing file.
    with pytest.raises(UnsafePathError, match="FIFO or socket, not a regular file"):
        load_dataset(folder, roots=[evals])
