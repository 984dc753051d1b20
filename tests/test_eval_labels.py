"""Labelled questions of a workspace: marks, re-finding after edits, export and import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.analysis import check_report, question_rows
from treerag_core.evaluation.dataset import load_dataset
from treerag_core.evaluation.labels import (
    LabelsError,
    LabelStore,
    eval_questions,
    export_set,
    import_rows,
    make_mark,
    mark_from_text,
    refind,
)
from treerag_core.evaluation.my_set import MY_SET, labelled_report
from treerag_core.evaluation.report import mean_intervals
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine

DOC = """# Router

## Design

The router sends each question to two experts chosen by a learned gate.

## Training

We trained for 12 epochs on 8 GPUs with a batch size of 64.
"""
OTHER = """# Notes

## Costs

Inference costs 3 cents per thousand questions.
"""


def _index(doc: str = DOC):
    sources = [SourceDocument("router.md", doc), SourceDocument("notes.txt", OTHER)]
    return build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))


@pytest.fixture(scope="module")
def index():
    return _index()


def test_mark_add_change_remove_stored_atomically(index, tmp_path: Path) -> None:
    store = LabelStore.for_workspace(tmp_path)
    q = "How long was training?"
    span = "12 epochs on 8 GPUs"
    mark = mark_from_text(index, "router.md", span, near=DOC.index("## Training"))
    assert DOC[mark.start : mark.end] == span and mark.section == "Training"
    labelled = store.mark(q, mark)
    assert labelled.labelled and store.labelled_texts() == {q}
    row = json.loads(store.path.read_text(encoding="utf-8"))
    assert row["evidence"] == [span] and row["evidence_sections"] == ["Training"]
    assert row["doc"] == "router.md" and row["question"] == q
    assert not list(store.path.parent.glob(".*.tmp"))  # the atomic write left nothing behind
    # A change of verdict replaces the mark: a span is never both evidence and not.
    store.mark(q, make_mark(index, "router.md", mark.start, mark.end, answers=False))
    again = store.get("  How long   was training? ")  # the same question, spaced differently
    assert len(again.marks) == 1 and not again.labelled and store.labelled_texts() == set()
    store.unmark(q, "router.md", mark.start, mark.end)
    assert store.load() == []  # a question with no marks left is removed


def test_bad_marks_are_refused_with_a_reason(index) -> None:
    with pytest.raises(LabelsError, match="not verbatim"):
        mark_from_text(index, "router.md", "twelve epochs")
    with pytest.raises(LabelsError, match="empty"):
        mark_from_text(index, "router.md", "   ")
    with pytest.raises(LabelsError, match="not in this index"):
        make_mark(index, "gone.md", 0, 3)
    with pytest.raises(LabelsError, match="not inside"):
        make_mark(index, "router.md", 5, 5)


def test_marks_refound_by_text_or_reported_lost_never_shifted(index) -> None:
    store_q = "How long was training?"
    kept = mark_from_text(index, "router.md", "12 epochs on 8 GPUs")
    gone = mark_from_text(index, "router.md", "two experts chosen by a learned gate")
    other = mark_from_text(index, "notes.txt", "3 cents per thousand questions")
    from treerag_core.evaluation.labels import LabelledQuestion, question_id

    q = LabelledQuestion(question_id(store_q), store_q, (kept, gone, other))
    edited = DOC.replace("# Router\n", "# Router\n\nA new paragraph pushes everything down.\n")
    edited = edited.replace("two experts chosen by a learned gate", "one expert")
    new = build_index(
        [SourceDocument("router.md", edited)],
        IndexSettings(embedder="hashing"),
        get_embedder("hashing"),
    )
    result = refind(new, [q])
    (after,) = result.questions
    assert result.moved == 1
    (moved,) = after.marks
    assert edited[moved.start : moved.end] == "12 epochs on 8 GPUs" and moved.start > kept.start
    assert sorted(lost.why for lost in result.lost) == [
        "document no longer in the workspace",
        "text no longer in the document",
    ]
    (gold,) = eval_questions(result.questions)
    assert gold.evidences[0].start == moved.start and gold.usable


def test_export_then_eval_loader_reads_the_same_gold(index, tmp_path: Path) -> None:
    store = LabelStore.for_workspace(tmp_path / "ws")
    store.mark("How long was training?", mark_from_text(index, "router.md", "12 epochs"))
    store.mark("What does inference cost?", mark_from_text(index, "notes.txt", "3 cents"))
    assert export_set(index, store.load(), tmp_path / "out") == 2
    data = load_dataset(tmp_path / "out")
    assert data.doc_names == ("notes.txt.md", "router.md")  # every document named is there
    assert [len(q.evidences) for q in data.usable_questions] == [1, 1]
    assert data.n_evidence_missing == 0
    # ... and the export imports back into the workspace unchanged.
    back = import_rows(index, (tmp_path / "out" / "questions.jsonl").read_bytes())
    assert {(m.doc, m.text) for q in back.questions for m in q.marks} == {
        ("router.md", "12 epochs"),
        ("notes.txt", "3 cents"),
    }


def test_import_counts_and_lists_missing_docs_and_unfound_spans(index) -> None:
    rows = [
        {"id": "a", "doc": "router.md", "question": "Epochs?", "evidence": ["12 epochs", "nope"]},
        {"id": "b", "doc": "absent.md", "question": "Absent?", "evidence": ["x"]},
        {"id": "c", "doc": "router.md", "question": "Gone?", "evidence": ["not in it"]},
    ]
    raw = "\n".join(json.dumps(r) for r in rows).encode()
    result = import_rows(index, raw)
    assert [q.id for q in result.questions] == ["a"] and result.rows == 3
    assert result.missing_docs == {"absent.md": 1}
    assert [qid for qid, _ in result.not_verbatim] == ["a", "b", "c"]
    assert result.without_evidence == ("b", "c")
    assert "1 of 3 question(s) imported" in result.summary()
    assert "absent.md (1)" in result.summary()
    with pytest.raises(LabelsError, match="line 1"):
        import_rows(index, b"not json\n")


def test_import_replaces_a_question_with_the_same_text(index, tmp_path: Path) -> None:
    store = LabelStore.for_workspace(tmp_path)
    store.mark("How long was training?", mark_from_text(index, "router.md", "12 epochs"))
    row = {"id": "t1", "doc": "router.md", "question": "How long  was training?",
           "evidence": ["8 GPUs"]}  # fmt: skip
    other = {"id": "t2", "doc": "router.md", "question": "How many GPUs?", "evidence": ["8 GPUs"]}
    raw = "\n".join(json.dumps(r) for r in (row, other)).encode()
    result = store.merge_import(import_rows(index, raw))
    only, _ = store.load()
    assert only.id == "t1" and [m.text for m in only.evidence] == ["8 GPUs"]
    # The summary says one replaced a stored label: the count rose by 1, not by 2.
    assert result.merged == 1 and len(store.load()) == 2
    assert "2 of 2 question(s) imported (1 new, 1 merged with a label you already had)" in (
        result.summary()
    )


def test_labelled_questions_score_as_an_eval_report_with_intervals(index, tmp_path: Path) -> None:
    """The labelled set's report has the harness's shape (so Evaluate shows its metrics,
    curves, questions and coverage as a dev set's), and each mean its bootstrap interval."""
    store = LabelStore.for_workspace(tmp_path)
    for q, span, heading in (
        ("How long was training?", "12 epochs on 8 GPUs", "## Training"),
        ("What picks the experts?", "a learned gate", "## Design"),
    ):
        store.mark(q, mark_from_text(index, "router.md", span, near=DOC.index(heading)))
    questions = eval_questions(store.load())
    engine = Engine(index, get_embedder("hashing"))
    settings = QuerySettings().set("rerank.enabled", False)
    report = labelled_report(engine, questions, settings, ["treerag", "flat-hybrid"])
    assert check_report(report, "labelled") is report and report["dataset"] == MY_SET
    assert [r.id for r in question_rows(report)] == [q.id for q in questions]
    for name, metrics in report["strategies"].items():
        assert metrics["n_questions"] == 2
        assert all(f"recall@{k}" in metrics for k in (1, 3, 5, 10))  # the curves' points
        found = mean_intervals(report, name, ["hit@5", "recall@2000c", "latency_ms.total.p50"])
        assert set(found) == {"hit@5", "recall@2000c"}  # latency is no per-question mean
        for key, interval in found.items():
            assert interval.low <= metrics[key] + 1e-4 and metrics[key] - 1e-4 <= interval.high
    assert (
        labelled_report(engine, questions, settings, ["treerag"], limit=1)["strategies"]["treerag"][
            "n_questions"
        ]
        == 1
    )
