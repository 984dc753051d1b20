"""CLI flags out of range: one `error:` line on stderr, exit 2, no traceback, nothing run."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from treerag_core.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index", "--chunk-size", "0"], "chunk_size must be >= 20"),
        (["index", "--max-depth", "0"], "max_depth must be >= 1"),
        (["index", "--max-pages", "0"], "max_pages must be > 0"),
        (["eval", "--chunk-size", "0"], "chunk_size must be >= 20"),
        (["eval", "--max-depth", "0"], "max_depth must be >= 1"),
        (["eval", "--strategy", "nope"], "unknown strategies ['nope']"),
        (["eval", "--top-k", "0"], "final_top_k must be >= 1"),
    ],
)
def test_bad_index_and_eval_flags_are_one_line_errors(tmp_path, capsys, argv, message):
    command, *flags = argv
    if command == "index":
        paths = ["--input", str(SAMPLES / "test_paper.md"), "--output", str(tmp_path / "i")]
        paths.append("--mock")
    else:
        paths = ["--data", str(tmp_path / "set"), "--cache", str(tmp_path / "cache")]
    assert main([command, *paths, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "i").exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("limit", ["0", "-1", "two"])
def test_eval_limit_below_one_is_refused_by_the_parser(tmp_path, capsys, limit):
    with pytest.raises(SystemExit) as info:
        main(["eval", "--data", str(tmp_path), "--limit", limit])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --limit:" in err and ">= 1" in err and "Traceback" not in err
