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


def test_synthetic_in_process_child_reports_its_figures(capsys):
    from benchmarks import scale_synthetic

    assert scale_synthetic.child("faiss", 900, 3, 400) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["chunks"] == 900 and row["backend"] == "faiss" and row["disk_mb"] > 0
    assert row["flat-hybrid_p95_ms"] >= row["flat-hybrid_p50_ms"] > 0
    lines = scale_synthetic.table([row, {"chunks": 900, "backend": "milvus", "failed": "x"}])
    assert "| 900 | faiss |" in lines and "| 900 | milvus | failed: x |" in lines


def test_synthetic_routing_keeps_the_documents_of_the_best_chunks():
    import numpy as np

    from benchmarks import scale_synthetic

    per_doc = scale_synthetic.CHUNKS_PER_DOC
    rows = np.arange(3 * per_doc)
    fused = np.zeros(len(rows))
    fused[2 * per_doc + 5], fused[7] = 0.9, 0.8  # documents 2, then 0
    assert scale_synthetic.route(fused, rows) == [2, 0]
