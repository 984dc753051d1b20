"""benchmarks/make_weak_structure_set.py: headings gone, everything else and the questions kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import make_weak_structure_set as weak

DOC = (
    "# 刑法\n\n## 第一章  总则\n\n第一条 为了惩罚犯罪，保护人民。\n\n"
    "   ### 第一节 范围\n#hashtag is text, not a heading\n第二条 任务是保护国家安全。\n"
)


def _set(folder: Path) -> Path:
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "刑法.md").write_text(DOC, encoding="utf-8")
    rows = [
        {"id": "q1", "question": "任务？", "doc": "刑法.md", "answers": ["a"],
         "evidence": ["第二条 任务是保护国家安全。"]},
        {"id": "q2", "question": "章名？", "doc": "刑法.md", "answers": ["b"],
         "evidence": ["第一章  总则", "第一条 为了惩罚犯罪，保护人民。"]},
    ]  # fmt: skip
    (folder / "questions.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return folder


def test_headings_are_removed_and_the_rest_kept_byte_for_byte() -> None:
    assert weak.strip_headings(DOC) == (
        "\n\n第一条 为了惩罚犯罪，保护人民。\n\n#hashtag is text, not a heading\n"
        "第二条 任务是保护国家安全。\n"
    )
    assert weak.strip_headings("#\nx\r\n## y\r\n") == "x\r\n"  # an empty heading goes too


def test_the_copy_keeps_the_questions_and_counts_evidence_found(tmp_path: Path) -> None:
    source, out = _set(tmp_path / "src"), tmp_path / "out"
    before, after = weak.make_weak_set(source, out)
    # The evidence that was a heading line is no longer in the text; the articles are.
    assert (before, after) == (3, 2)
    assert (out / "questions.jsonl").read_bytes() == (source / "questions.jsonl").read_bytes()
    assert "#" not in (out / "docs" / "刑法.md").read_text(encoding="utf-8").split("#hashtag")[0]
    assert (source / "docs" / "刑法.md").read_text(encoding="utf-8") == DOC  # source untouched
    with pytest.raises(ValueError, match="new folder"):
        weak.make_weak_set(source, source)


def test_main_prints_the_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _set(tmp_path / "src")
    assert weak.main(["--data", str(source), "--out", str(tmp_path / "out")]) == 0
    assert "2 of 3 gold evidences still found verbatim" in capsys.readouterr().out
