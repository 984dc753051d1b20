"""Smoke test of the scale benchmark at a tiny size (the real run is not part of the suite)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import bench_scale

SAMPLES = Path(__file__).resolve().parents[1] / "sample_docs"
DOCS = {
    "qasper": "test_paper.md",
    "lecoqa_laws": "zh_sample.md",
    "gitlab_handbook": "1908.10461.md",
}


def test_mutate_changes_words_but_keeps_headings():
    text = (
        "# Title\n\nRouters route tokens between experts quickly.\n## 第二章 安装\n机器人需要充电。"
    )
    vocab = ["alpha", "beta", "gamma"]
    changed = bench_scale.mutate(text, 3, vocab)
    assert changed.splitlines()[0] == "# Title" and "## 第二章 安装" in changed
    assert changed != text and bench_scale.mutate(text, 3, vocab) == changed  # seeded


def test_tiny_run_reports_both_backends(tmp_path):
    for name, doc in DOCS.items():
        folder = tmp_path / name / "docs"
        folder.mkdir(parents=True)
        (folder / doc).write_text((SAMPLES / doc).read_text(encoding="utf-8"), encoding="utf-8")
        row = {"id": "q1", "doc": doc, "question": "How is the robot charged?", "answers": []}
        (tmp_path / name / "questions.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "scale.json"
    args = ["--data", str(tmp_path), "--sizes", "150", "--queries", "2", "--qdrant-queries", "1"]
    assert bench_scale.main([*args, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["backend"] for r in report["backends"]] == ["faiss", "qdrant"]
    assert report["builds"][0]["chunks"] > 50  # the size is a target, met roughly
    for row in report["backends"]:
        for strategy in bench_scale.STRATEGIES:
            assert row[f"{strategy}_cpu_p50_ms"] >= 0 and row[f"{strategy}_p95_ms"] > 0
