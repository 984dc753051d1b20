"""CLI flags out of range: one `error:` line on stderr, exit 2, no traceback, nothing run."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from treerag_core.base.settings import QuerySettings
from treerag_core.cli import main, settings_from_args


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index", "--chunk-size", "0"], "chunk_size must be >= 20"),
        (["index", "--max-depth", "0"], "max_depth must be >= 1"),
        (["index", "--max-pages", "0"], "max_pages must be >= 1"),
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


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("section_weight=0.3", "--option wants STRATEGY.FIELD=VALUE"),
        ("nope.x=1", "strategy 'nope' has no options; these do: "),
        ("flat-structured.nope=1", "flat-structured has no option 'nope'; it has: section_weight"),
        ("flat-structured.section_weight=a lot", "section_weight wants a float, got 'a lot'"),
        ("flat-structured.route_check=maybe", "route_check wants true or false, got 'maybe'"),
        ("flat-structured.section_weight=2", "section_weight must be in 0..1, but got 2.0"),
    ],
)
def test_a_bad_strategy_option_is_a_one_line_error(tmp_path, capsys, option, message):
    paths = ["--data", str(tmp_path / "set"), "--cache", str(tmp_path / "cache")]
    assert main(["eval", *paths, "--option", option]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert err.count("\n") == 1 and not (tmp_path / "cache").exists()


def test_strategy_options_change_only_that_strategy_and_keep_its_other_options():
    from treerag_core.cli import build_parser

    options = (
        "flat-structured.section_weight=0.3",
        "flat-structured.route_check=off",
        "treerag.route_documents=3",
    )
    argv = ["query", "--index", "i", "--query", "q"]
    for option in options:
        argv += ["--option", option]
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args, QuerySettings())
    structured = settings.option("flat-structured", None)
    assert (structured.section_weight, structured.route_check) == (0.3, False)
    assert structured.route_documents == 2  # not given: the default kept
    assert settings.option("treerag", None).route_documents == 3
    assert settings.option("drilldown", None) is None
