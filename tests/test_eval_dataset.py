"""Tests for loading eval question sets: the three real dev sets and small hand-made ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.evaluation.dataset import (
    NO_EVIDENCE,
    UNANSWERABLE,
    EvalDataError,
    EvalDataset,
    load_dataset,
)

# Measured on the dev split (independently of this loader, with a plain str.find loop).
# name: (docs, questions, usable, unanswerable, no evidence, evidences found, missing)
REAL_COUNTS = {
    "qasper": (20, 92, 86, 5, 1, 220, 0),
    "lecoqa_laws": (40, 87, 87, 0, 0, 136, 0),
    "gitlab_handbook": (50, 250, 164, 0, 86, 194, 137),
}


@pytest.fixture(scope="module", params=sorted(REAL_COUNTS))
def real(request: pytest.FixtureRequest) -> EvalDataset:
    folder = EVAL_DIR / request.param
    if not folder.is_dir():
        skip_unless_ci("eval-data test", f"eval data not found at {folder}")
    return load_dataset(folder)


def test_real_counts(real: EvalDataset) -> None:
    docs, n_q, usable, unanswerable, no_ev, found, missing = REAL_COUNTS[real.name]
    print(
        f"{real.name}: {len(real.doc_names)} docs, {len(real.questions)} questions, "
        f"{len(real.usable_questions)} usable, left out {real.left_out}, "
        f"evidence found {real.n_evidence_found}, missing {real.n_evidence_missing}"
    )
    assert len(real.doc_names) == docs
    assert len(real.questions) == n_q
    assert len(real.usable_questions) == usable
    assert real.left_out == {UNANSWERABLE: unanswerable, NO_EVIDENCE: no_ev}
    assert real.n_evidence_found == found
    assert real.n_evidence_missing == missing


def test_real_spans_are_first_verbatim_occurrences(real: EvalDataset) -> None:
    texts = {name: (real.docs_dir / name).read_text(encoding="utf-8") for name in real.doc_names}
    for q in real.questions:
        assert q.usable == (not q.unanswerable and bool(q.evidences))
        for e in q.evidences:
            assert e.doc in q.docs
            assert texts[e.doc][e.start : e.end] == e.text
            assert texts[e.doc].find(e.text) == e.start


def test_real_rows_match_the_file(real: EvalDataset) -> None:
    lines = (real.docs_dir.parent / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    assert [q.id for q in real.questions] == [r["id"] for r in rows]
    for q, row in zip(real.questions, rows, strict=True):
        assert len(q.evidences) + q.n_evidence_missing == len(row["evidence"])
        assert q.answers == tuple(row["answers"])
        assert q.qtype == row.get("type")
        assert set(q.evidence_sections) == {s for s in row["evidence_sections"] if s and s.strip()}


def test_lecoqa_keeps_en_spaces_in_gold_sections() -> None:
    folder = EVAL_DIR / "lecoqa_laws"
    if not folder.is_dir():
        skip_unless_ci("eval-data test", f"eval data not found at {folder}")
    ds = load_dataset(folder)
    paths = {p for q in ds.questions for p in q.evidence_sections}
    assert "物权编 > 第二分编\u2002\u2002所有权 > 第七章\u2002\u2002相邻关系" in paths
    sections = {e.section for q in ds.questions for e in q.evidences}
    assert None in sections  # articles of laws without chapters have no section


# --- small hand-made sets ----------------------------------------------------------------


def make_set(
    tmp_path: Path, rows: list[Any], docs: dict[str, str], raw: list[str] | None = None
) -> Path:
    folder = tmp_path / "mini"
    (folder / "docs").mkdir(parents=True)
    for name, text in docs.items():
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    lines = raw if raw is not None else [json.dumps(r, ensure_ascii=False) for r in rows]
    (folder / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def row(qid: str = "q1", **fields: Any) -> dict[str, Any]:
    return {"id": qid, "doc": "a.md", "question": "?", "answers": ["x"], **fields}


DOCS = {"a.md": "# A\n\nalpha beta. alpha beta.\n", "b.md": "# B\n\ngamma delta\n"}


def test_span_is_the_first_occurrence(tmp_path: Path) -> None:
    ds = load_dataset(make_set(tmp_path, [row(evidence=["alpha beta"])], DOCS))
    (e,) = ds.questions[0].evidences
    assert (e.doc, e.start, e.end) == ("a.md", 5, 15)
    assert ds.name == "mini"
    assert ds.doc_names == ("a.md", "b.md")


def test_evidence_docs_are_tried_in_order_then_doc_then_docs(tmp_path: Path) -> None:
    rows = [
        row("q1", evidence=["gamma"], evidence_docs=["a.md", "b.md"]),
        row("q2", doc="b.md", evidence=["alpha"]),  # not in its only doc: missing
        row("q3", doc="b.md", docs=["b.md", "a.md"], evidence=["alpha"]),
    ]
    ds = load_dataset(make_set(tmp_path, rows, DOCS))
    q1, q2, q3 = ds.questions
    assert [(e.doc, e.start) for e in q1.evidences] == [("b.md", 5)]
    assert q2.evidences == () and q2.n_evidence_missing == 1
    assert [(e.doc, e.start) for e in q3.evidences] == [("a.md", 5)]
    assert q1.docs == ("a.md", "b.md")


def test_missing_evidence_is_counted_and_flags_the_question(tmp_path: Path) -> None:
    rows = [
        row("q1", evidence=["alpha beta", "not there"], evidence_sections=["A", "A > X"]),
        row("q2", evidence=["nowhere"], evidence_sections=["A"]),
        row("q3", evidence=[]),
        row("q4", evidence=["alpha"], unanswerable=True),
    ]
    ds = load_dataset(make_set(tmp_path, rows, DOCS))
    q1, q2, q3, q4 = ds.questions
    assert q1.usable and q1.n_evidence_missing == 1 and len(q1.evidences) == 1
    assert q1.evidences[0].section == "A"
    assert q1.evidence_sections == ("A", "A > X")
    assert q2.left_out_reason == NO_EVIDENCE and not q2.usable
    assert q3.left_out_reason == NO_EVIDENCE
    assert q4.left_out_reason == UNANSWERABLE and q4.unanswerable
    assert ds.left_out == {UNANSWERABLE: 1, NO_EVIDENCE: 2}
    assert [q.id for q in ds.usable_questions] == ["q1"]


def test_null_and_non_parallel_sections(tmp_path: Path) -> None:
    rows = [
        row("q1", evidence=["alpha", "beta"], evidence_sections=[None, " "]),
        row("q2", evidence=["alpha", "beta"], evidence_sections=["A"]),  # not parallel
    ]
    q1, q2 = load_dataset(make_set(tmp_path, rows, DOCS)).questions
    assert [e.section for e in q1.evidences] == [None, None]
    assert q1.evidence_sections == ()
    assert [e.section for e in q2.evidences] == [None, None]
    assert q2.evidence_sections == ("A",)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    raw = ["", json.dumps(row("q1", evidence=["alpha"])), "   "]
    assert len(load_dataset(make_set(tmp_path, [], DOCS, raw=raw)).questions) == 1


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"id": "q2", "doc": "a.md", "answers": []}), "'question'"),
        (json.dumps(row("q2", evidence="alpha")), "'evidence' must be a list"),
        (json.dumps(row("q2", evidence_sections=[1])), "'evidence_sections'"),
        (json.dumps(row("q2", type=3)), "'type'"),
        (json.dumps(row("q2", doc="zzz.md", evidence=["alpha"])), "'zzz.md' is not in"),
        (json.dumps(row("q1", evidence=["alpha"])), "already used on line 1"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, bad_line: str, message: str) -> None:
    raw = [json.dumps(row("q1", evidence=["alpha"])), "", bad_line]
    folder = make_set(tmp_path, [], DOCS, raw=raw)
    with pytest.raises(EvalDataError, match=message) as info:
        load_dataset(folder)
    assert f"{folder / 'questions.jsonl'}, line 3" in str(info.value)


def test_missing_folder_parts(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match=r"questions\.jsonl"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(EvalDataError, match="docs/"):
        load_dataset(tmp_path)


def test_a_raw_line_separator_inside_a_string_does_not_split_the_line(tmp_path: Path) -> None:
    rows = [row("q1", question="one\u2028two", evidence=["alpha"]), row("q2", evidence=["beta"])]
    ds = load_dataset(make_set(tmp_path, rows, DOCS))
    assert [q.question for q in ds.questions] == ["one\u2028two", "?"]


def test_pdf_set_reads_evidence_pages_as_page_gold(tmp_path):
    from tests.pdf_factory import report_pdf
    from treerag_core.evaluation.dataset import GoldPage, dataset_sources

    (tmp_path / "pdfs").mkdir()
    (tmp_path / "pdfs" / "r.pdf").write_bytes(report_pdf(2))
    rows = [
        {"id": "q1", "doc": "r.pdf", "question": "Net income?", "evidence_pages": [1]},
        {"id": "q2", "doc": "r.pdf", "question": "Nothing?", "evidence_pages": []},
    ]
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    data = load_dataset(tmp_path)
    assert data.paged and data.doc_names == ("r.pdf",)
    assert data.questions[0].gold_pages == (GoldPage("r.pdf", 2),)  # 0-based in the file
    assert [q.id for q in data.usable_questions] == ["q1"]
    assert data.left_out["no evidence pages"] == 1
    (source,) = dataset_sources(data)
    assert source.page_starts and source.source_format == "pdf"


def test_pdf_set_refuses_a_duplicate_question_id(tmp_path):
    # The per-question analysis keys rows by id: two questions with one id would be merged.
    from tests.pdf_factory import report_pdf

    (tmp_path / "pdfs").mkdir()
    (tmp_path / "pdfs" / "r.pdf").write_bytes(report_pdf(1))
    rows = [
        {"id": "q1", "doc": "r.pdf", "question": "Net income?", "evidence_pages": [0]},
        {"id": "q1", "doc": "r.pdf", "question": "Revenue?", "evidence_pages": [0]},
    ]
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(EvalDataError, match="line 2: question id 'q1' already used on line 1"):
        load_dataset(tmp_path)


def test_eval_data_error_is_the_named_error_of_errors_py():
    from treerag_core.base import errors

    assert EvalDataError is errors.EvalDataError and issubclass(EvalDataError, errors.TreeRAGError)


def test_unreferenced_docs_are_read_inside_the_set_and_size_capped(tmp_path: Path) -> None:
    # dataset_sources and the eval cache key read every docs/*.md, not only referenced ones.
    from treerag_core.base.config import IndexSettings
    from treerag_core.evaluation.dataset import dataset_sources
    from treerag_core.evaluation.harness import index_cache_key

    folder = make_set(tmp_path, [row(evidence=["alpha"])], DOCS)
    (folder / "docs" / "big.md").write_text("# Big\n\n" + "x" * 5000, encoding="utf-8")
    data = load_dataset(folder, max_bytes=1000)
    for read in (dataset_sources, lambda d: index_cache_key(d, IndexSettings())):
        with pytest.raises(EvalDataError, match=r"cannot read big\.md: .*larger than the limit"):
            read(data)
    with pytest.raises(EvalDataError, match=r"big\.md.*larger than the limit of 1,000"):
        dataset_sources(load_dataset(folder, roots=[tmp_path], max_bytes=1000))


@pytest.mark.parametrize("with_roots", [False, True])
def test_a_doc_symlinked_outside_the_set_is_refused(tmp_path: Path, with_roots: bool) -> None:
    from treerag_core.base.config import IndexSettings
    from treerag_core.evaluation.dataset import dataset_sources
    from treerag_core.evaluation.harness import index_cache_key

    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nnot part of the set\n", encoding="utf-8")
    folder = make_set(tmp_path / "set", [row(evidence=["alpha"])], DOCS)
    (folder / "docs" / "leak.md").symlink_to(secret)
    data = load_dataset(folder, roots=[folder] if with_roots else None)
    for read in (dataset_sources, lambda d: index_cache_key(d, IndexSettings())):
        with pytest.raises(EvalDataError, match=r"cannot read leak\.md: .*outside the folders"):
            read(data)
