"""CLI: labels import/export, tune --out, and query --settings reading what tune wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_eval_tune import QUESTIONS, TOPICS
from treerag_core.cli import main
from treerag_core.evaluation.dataset import load_dataset


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A workspace folder as the explorer lays it out: index/ and (later) labels/."""
    root = tmp_path_factory.mktemp("ws")
    doc = root / "report.md"
    doc.write_text("# Report\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in TOPICS))
    assert main(["index", "--input", str(doc), "--output", str(root / "index"), "--mock"]) == 0
    return root


def _rows(n: int) -> str:
    return "".join(
        json.dumps({"id": f"q{i}", "doc": "report.md", "question": q, "evidence": [span]}) + "\n"
        for i, (q, span) in enumerate(QUESTIONS[:n])
    )


def test_tune_refuses_two_questions_with_the_minimum(workspace: Path, tmp_path: Path, capsys):
    few = tmp_path / "few.jsonl"
    few.write_text(_rows(2))
    index = str(workspace / "index")
    assert main(["tune", "--index", index, "--labels", str(few), "--mock"]) == 2
    assert "at least 8 labelled questions, this set has 2" in capsys.readouterr().err


def test_labels_tune_and_query_settings(workspace: Path, tmp_path: Path, capsys) -> None:
    index = str(workspace / "index")
    upload = tmp_path / "mine.jsonl"
    upload.write_text(_rows(len(QUESTIONS)) + json.dumps(
        {"id": "x", "doc": "gone.md", "question": "Gone?", "evidence": ["x"]}
    ) + "\n")  # fmt: skip
    assert main(["labels", "import", str(tmp_path / "none.jsonl"), "--index", index]) == 2
    assert "no questions file at" in capsys.readouterr().err
    assert main(["labels", "import", str(upload), "--index", index]) == 0
    out = capsys.readouterr().out
    assert "9 of 10 question(s) imported" in out and "gone.md (1)" in out
    assert (workspace / "labels" / "questions.jsonl").is_file()  # beside index/

    settings = tmp_path / "tuned.json"
    args = ["tune", "--index", index, "--mock", "--no-rerank", "--metric", "hit@3"]
    args += ["--strategies", "flat-structured,flat-hybrid"]
    assert main([*args, "--out", str(settings)]) == 0
    out = capsys.readouterr().out
    assert "4-fold cross-validation" in out and "| current |" in out
    assert "tuned, cross-validated" in out and "gain (paired)" in out
    written = json.loads(settings.read_text())
    assert written["settings"]["answer"]["final_top_k"] == 3  # reads what hit@3 scored
    assert written["about"]["tune"]["n_questions"] == 9

    assert main(["query", "--index", index, "--query", "How many epochs?", "--mock",
                 "--settings", str(settings), "--json"]) == 0  # fmt: skip
    trace = json.loads(capsys.readouterr().out)
    assert trace["strategy"] == written["settings"]["strategy"]
    assert len(trace["reranked"]) <= 3

    assert main(["query", "--index", index, "--query", "x y", "--mock",
                 "--settings", str(tmp_path / "none.json")]) == 2  # fmt: skip
    assert "does not exist" in capsys.readouterr().err

    exported = tmp_path / "export"
    assert main(["labels", "export", str(exported), "--index", index]) == 0
    assert len(load_dataset(exported).usable_questions) == 9  # eval --data reads it
    run = ["eval", "--data", str(exported), "--embedder", "hashing", "--strategy", "flat-hybrid"]
    assert main([*run, "--no-rerank", "--cache", str(tmp_path / "cache")]) == 0
    table = capsys.readouterr().out
    assert "| flat-hybrid | 9 | 0 |" in table  # every exported question scored, none left out
