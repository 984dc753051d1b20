"""Plain progress lines: a stage's first line, one every few seconds, its last; nothing more."""

from __future__ import annotations

import io

import pytest

from treerag_core.base.progress import PlainProgress


def test_lines_at_start_periodically_and_at_the_end():
    now = [0.0]
    out = io.StringIO()
    progress = PlainProgress(out, every_s=10, units={"embedding": "chunks"}, clock=lambda: now[0])
    for done in range(0, 1001, 50):
        now[0] = done * 0.05  # 1,000 chunks in 50 s
        progress.update("embedding", done, 1000)
    progress.update("embedding", 1000, 1000)  # a repeated end prints nothing
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding: 0 / 1,000 chunks (0%)"
    assert lines[-1] == "embedding: 1,000 / 1,000 chunks (100%)"
    assert 5 <= len(lines) <= 7  # start, one per 10 s, end
    with pytest.raises(ValueError, match="every_s"):
        PlainProgress(out, every_s=0)


def test_the_cli_prints_plain_progress_when_stderr_is_not_a_terminal(tmp_path, capsys):
    from treerag_core.cli import main

    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\n## A\n\nSome text about alpha.\n\n## B\n\nMore text.\n")
    code = main(["index", "--input", str(doc), "--output", str(tmp_path / "idx"), "--mock"])
    assert code == 0
    err = capsys.readouterr().err
    assert "embedding: " in err and "(100%)" in err
    # Conversion (minutes for a folder of PDFs) reports too, before the first file.
    assert err.splitlines()[:2] == [
        "converting: 0 / 1 files (0%)",
        "converting: 1 / 1 files (100%)",
    ]


def test_a_piped_cli_process_prints_plain_lines_and_no_bar(tmp_path):
    """A real process whose stderr is a pipe (CI, a log file): lines, no carriage returns."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "treerag_core", "index", "--mock", "--output", str(tmp_path / "i"),
         "--input", str(repo / "sample_docs" / "test_paper.md")],
        cwd=repo, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = out.stderr.splitlines()
    assert "\r" not in out.stderr
    for stage in ("converting", "parsing", "embedding"):
        assert any(line.startswith(f"{stage}: ") and line.endswith("(100%)") for line in lines)


def test_conversion_reports_every_file_a_refused_one_too():
    from treerag_core.ingest.documents import sources_from

    calls: list[tuple[int, int]] = []
    uploads = [("a.md", b"# A\n\nSome text."), ("big.md", b"# B\n\n" + b"x" * 200)]
    sources, rejected = sources_from(uploads, 100, progress=lambda d, t: calls.append((d, t)))
    assert [s.name for s in sources] == ["a.md"] and [r.name for r in rejected] == ["big.md"]
    assert calls == [(0, 2), (1, 2), (2, 2)]
    sources_from([], 100, progress=lambda d, t: calls.append((d, t)))
    assert len(calls) == 3  # nothing to convert: no line
