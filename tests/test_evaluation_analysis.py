"""Reading eval reports: shape checks, per-question rows merged across strategies, filters."""

from __future__ import annotations

import json

import pytest

from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.analysis import (
    check_report,
    filter_rows,
    parse_report,
    question_rows,
    report_index_settings,
    report_query_settings,
    rerank_was_on,
)
from treerag_core.evaluation.dataset import EvalDataError


def record(qid: str, hit: float, picked=None) -> dict:
    return {
        "id": qid,
        "question": f"q{qid}",
        "doc": "d.md",
        "outcome": "hit" if hit else "miss",
        "metrics": {"hit@5": hit},
        "picked": picked or [],
        "gold_sections": ["A > B"],
    }


REPORT = {
    "dataset": "qasper",
    "strategies": {"treerag": {}, "flat-hybrid": {}},
    "questions": {
        "treerag": [record("1", 1.0, [{"path": "A > B"}]), record("2", 0.0), record("3", 0.0)],
        "flat-hybrid": [record("1", 0.0), record("2", 1.0), record("3", 0.0)],
    },
}


def test_rows_merge_strategies_and_filters_compare_treerag_with_flat_hybrid():
    rows = question_rows(REPORT)
    assert [r.id for r in rows] == ["1", "2", "3"]
    assert rows[0].picked == ("A > B",)
    assert [r.id for r in filter_rows(rows, "won by treerag")] == ["1"]
    assert [r.id for r in filter_rows(rows, "lost by treerag")] == ["2"]
    assert [r.id for r in filter_rows(rows, "missed by all")] == ["3"]
    with pytest.raises(ValueError, match="unknown filter"):
        filter_rows(rows, "nope")


def test_bad_reports_get_a_named_error():
    assert check_report(REPORT, "r.json") is REPORT
    with pytest.raises(EvalDataError, match="not an eval report"):
        check_report({"strategies": []}, "r.json")
    with pytest.raises(EvalDataError, match="not valid UTF-8 JSON"):
        parse_report(b"\xff{", "r.json")
    assert parse_report(json.dumps(REPORT).encode(), "r.json") == REPORT


def test_report_settings_default_when_unsaid():
    assert report_index_settings({}, "hashing").embedder == "hashing"
    assert report_query_settings({}).answer.final_top_k == 10


@pytest.mark.parametrize(
    ("settings", "what"),
    [
        ({"query": {"retrieve": {"dense_weight": 7}}}, "query"),
        ({"query": "rrf please"}, "query"),
        ({"query": {"options": {"treerag": "bad"}}}, "query"),
        ({"index": {"chunk_size": -5}}, "index"),
        ({"index": ["hashing"]}, "index"),
    ],
)
def test_unreadable_saved_settings_are_named_not_replaced_by_defaults(settings, what):
    """A report whose saved settings do not load is never replayed with the defaults."""
    report = {**REPORT, "settings": settings}
    with pytest.raises(EvalDataError, match=f"saved {what} settings cannot be read"):
        if what == "query":
            report_query_settings(report)
        else:
            report_index_settings(report, "hashing")
    if what == "query":
        with pytest.raises(EvalDataError, match="saved query settings cannot be read"):
            rerank_was_on(report)


def test_saved_settings_are_read_back():
    saved = QuerySettings().set("retrieve.dense_weight", 0.3).set("rerank.enabled", False)
    report = {"settings": {"query": saved.to_dict(), "index": {"chunk_size": 300}}}
    assert report_query_settings(report).retrieve.dense_weight == 0.3
    assert not rerank_was_on(report)
    assert report_index_settings(report, "hashing").chunk_size == 300
