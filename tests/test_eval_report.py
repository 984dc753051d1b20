"""Eval reports are loaded only from the app's own folders, never from any typed path."""

from __future__ import annotations

import json
import os

import pytest

from treerag_core.base.errors import UnsafePathError
from treerag_core.evaluation.dataset import EvalDataError, load_dataset
from treerag_core.evaluation.report import (
    difference_table,
    differences_json,
    load_report,
    paired_differences,
    routing_summary,
    write_report,
)

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


def _records(values: dict[str, list[float]]) -> dict[str, list[dict]]:
    return {
        row: [{"id": f"q{i}", "metrics": {"hit@5": v}} for i, v in enumerate(vs)]
        for row, vs in values.items()
    }


def _report(values: dict[str, list[float]]) -> dict:
    return {
        "strategies": {row: {"hit@5": sum(v) / len(v)} for row, v in values.items()},
        "questions": _records(values),
    }


def test_differences_pair_each_strategy_with_its_baselines():
    report = _report(
        {
            "treerag": [1.0, 1.0, 1.0, 1.0],
            "flat-structured": [1.0, 1.0, 1.0, 0.0],
            "flat-hybrid": [0.0, 0.0, 0.0, 0.0],
        }
    )
    found = paired_differences(report, keys=("hit@5",))
    # flat-hybrid is the baseline itself; only routing strategies meet flat-structured.
    assert set(found) == {"treerag", "flat-structured"}
    assert set(found["treerag"]) == {"flat-hybrid", "flat-structured"}
    assert set(found["flat-structured"]) == {"flat-hybrid"}
    every = found["treerag"]["flat-hybrid"]["hit@5"]
    assert (every.mean, every.low, every.high) == (1.0, 1.0, 1.0)  # no spread: no width
    one = found["treerag"]["flat-structured"]["hit@5"]
    assert one.mean == 0.25 and one.low == 0.0 and one.high <= 1.0  # one question of four


def test_differences_pair_by_question_and_drop_the_unpaired():
    report = _report({"treerag+llm": [1.0, 0.0, 1.0], "flat-hybrid": [0.0, 0.0]})
    # The third question ran only for treerag+llm (skipped by the baseline): it is not paired.
    got = paired_differences(report, keys=("hit@5",))["treerag+llm"]
    assert set(got) == {"flat-hybrid"}  # flat-structured did not run in this report
    assert got["flat-hybrid"]["hit@5"].mean == 0.5


def test_difference_table_marks_intervals_that_exclude_zero():
    report = _report(
        {"treerag": [1.0, 0.0] * 3, "flat-hybrid": [0.0] * 6, "flat-structured": [0.0, 1.0] * 3}
    )
    assert difference_table(report, keys=("hit@5",)).splitlines() == [
        "| strategy | minus | hit@5 |",
        "|---|---|---:|",
        # Three questions gained of six: the interval stays above zero, so it is bold.
        "| treerag | flat-hybrid | **+0.500 [+0.167, +0.833]** |",
        # Three gained and three lost: no difference, and an interval across zero.
        "| treerag | flat-structured | +0.000 [-0.667, +0.667] |",
        "| flat-structured | flat-hybrid | **+0.500 [+0.167, +0.833]** |",
    ]


def test_no_baseline_in_the_report_means_no_difference_table():
    assert difference_table(_report({"treerag": [1.0], "flat-dense": [0.0]})) == ""
    assert differences_json(_report({"treerag": [1.0]})) == {}


def test_differences_json_holds_plain_numbers():
    got = differences_json(_report({"flat-dense": [1.0, 0.0], "flat-hybrid": [0.0, 0.0]}))
    assert list(got) == ["flat-dense"] and list(got["flat-dense"]) == ["flat-hybrid"]
    cell = got["flat-dense"]["flat-hybrid"]["hit@5"]
    assert json.loads(json.dumps(cell)) == cell
    assert cell["mean"] == 0.5 and 0.0 <= cell["low"] <= cell["mean"] <= cell["high"] <= 1.0


def test_routing_summary_counts_the_questions_routing_cut():
    report = {
        "questions": {
            "treerag": [{"id": "a", "routed": ["d1"]}, {"id": "b", "routed": []}],
            "flat-hybrid": [{"id": "a", "routed": []}],
        }
    }
    assert routing_summary(report) == "treerag routed 1 of 2 questions"
    assert routing_summary({"questions": {"flat-hybrid": [{"id": "a"}]}}) == ""
