"""`query` and `interactive`: options a strategy does not use are said, never silently dropped."""

from __future__ import annotations

import io
import json
import sys

import pytest

from tests.conftest import SAMPLES
from treerag_core.base.settings import QuerySettings
from treerag_core.cli import build_parser, main, settings_from_args, unused_option_notes
from treerag_core.search.rerank import CHINESE_SKIPPED

QUESTION = "How many epochs was the model trained for?"


@pytest.fixture(scope="module")
def paper_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cliq") / "ix"
    paper = str(SAMPLES / "test_paper.md")
    assert main(["index", "--input", paper, "--output", str(folder), "--mock"]) == 0
    return folder


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def notes(*flags: str) -> list[str]:
    args = build_parser().parse_args(["query", "--index", "x", "--query", "q", "--mock", *flags])
    return unused_option_notes(args, settings_from_args(args, QuerySettings()))


def test_options_the_strategy_does_not_read_are_noted():
    assert notes("--strategy", "flat-hybrid", "--leaves", "0012") == [
        "--leaves is not used: flat-hybrid does not locate sections"
    ]
    assert notes("--drilldown-layers", "1,1,3") == [
        "--drilldown-layers is not used: only drilldown reads it, not treerag"
    ]
    assert notes("--strategy", "drilldown", "--drilldown-layers", "1,1,3") == []
    assert notes("--strategy", "drilldown", "--locator", "keyword", "--max-leaves", "2") == [
        "--locator is not used: drilldown has no section locator",
        "--max-leaves is not used: drilldown has no section locator",
    ]
    assert notes("--leaves", "0012", "--locator", "keyword") == [
        "--locator is not used: --leaves picks the sections"
    ]
    assert notes("--strategy", "flat-bm25", "--dense-weight", "0.7") == [
        "--dense-weight 0.7 is not used: flat-bm25 runs with 0.0"
    ]
    assert notes("--strategy", "treerag", "--locator", "keyword", "--dense-weight", "0.7") == []
    assert notes("--option", "flat-structured.section_weight=0.3") == [
        "--option flat-structured.section_weight=0.3 is not used: only flat-structured reads "
        "it, not treerag"
    ]
    assert notes("--option", "treerag.section_weight=0.3") == []


def test_top_k_beyond_the_candidate_window_is_noted():
    assert notes("--top-k", "100") == [
        "--top-k 100 is capped at the candidate window, 40; raise --candidate-window to keep more"
    ]
    assert notes("--top-k", "100", "--candidate-window", "100") == []
    assert notes("--top-k", "3", "--context-chars", "2000") == [
        "--top-k is not used: --context-chars fills the answer's context instead"
    ]


def test_flat_query_with_leaves_says_so_and_prints_no_empty_locate(paper_index, capsys):
    code = main(
        ["query", "--index", str(paper_index), "--query", QUESTION, "--mock", "--no-rerank",
         "--strategy", "flat-hybrid", "--leaves", "0012", "--top-k", "1"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    assert "note: --leaves is not used: flat-hybrid does not locate sections" in err
    assert "Located 0 leaf nodes" not in out and "Located" not in out
    assert "Retrieved 1 chunk (from 1 searched group):" in out


def test_a_chinese_question_names_the_flag_that_reranks_it(paper_index, capsys):
    """The skip note names the CLI's own control (the explorer's names its switch)."""
    base = ["query", "--index", str(paper_index), "--query", "模型训练了多少轮？", "--mock"]
    assert main(base) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("Fallback (rerank)")]
    note = f"{CHINESE_SKIPPED}; --rerank-chinese switches it on"
    assert line == f"Fallback (rerank): kept_fused_order - {note}"
    assert main([*base, "--rerank-chinese"]) == 0
    assert "Fallback (rerank)" not in capsys.readouterr().out
    parse, args = build_parser().parse_args, ["query", "--index", "x", "--query", "q", "--mock"]
    off = parse(args)
    assert settings_from_args(parse([*args, "--rerank-chinese"]), QuerySettings()).rerank.chinese
    # Unset, the flag keeps the base's value (a --settings file's).
    assert settings_from_args(off, QuerySettings().set("rerank.chinese", True)).rerank.chinese


def test_mock_answer_says_it_is_extractive_and_the_trace_records_it(paper_index, capsys):
    base = ["query", "--index", str(paper_index), "--query", QUESTION, "--mock", "--no-rerank"]
    assert main(base) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("Fallback (synthesize)")]
    assert line == (
        "Fallback (synthesize): llm_off - --mock asked for no LLM: extractive answer "
        "(cited sentences from the evidence, no LLM)"
    )
    # treerag's local locator scores the whole scope; step 2 only cuts the window from it
    assert "ms (scored in locate)" in out
    assert main([*base, "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert ["synthesize", "llm_off"] in [[f["stage"], f["reason"]] for f in trace["fallbacks"]]


def test_interactive_json_keeps_prompts_off_stdout(paper_index, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{QUESTION}\n:history\n:q\n"))
    args = ["interactive", "--index", str(paper_index), "--mock", "--no-rerank", "--json"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["question"] == QUESTION  # stdout: the one trace, nothing else
    assert "treerag> " in err and f"  1  {QUESTION}" in err


def test_an_unreachable_base_url_names_the_flag_that_set_it(paper_index, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    code = main(
        ["query", "--index", str(paper_index), "--query", QUESTION, "--json", "--no-rerank",
         "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "llama3.2"]
    )  # fmt: skip
    assert code == 0
    details = [f["detail"] for f in json.loads(capsys.readouterr().out)["fallbacks"]]
    assert details and all("Check the base URL (--base-url, or Endpoint" in d for d in details)
    assert not any("OPENAI_BASE_URL" in d for d in details)
    assert not any(".;" in d for d in details)  # the error's full stop, then "; used the …"


def test_url_source_is_the_variable_only_when_the_url_is_its():
    from treerag_core.llm.endpoints import BASE_URL_SETTING, url_source

    assert url_source("http://h/v1", "OPENAI_BASE_URL", None) == BASE_URL_SETTING
    assert url_source("http://h/v1", "OPENAI_BASE_URL", "http://h/v1") == "OPENAI_BASE_URL"
    assert url_source(None, "OPENAI_BASE_URL", None) == "OPENAI_BASE_URL"


def test_skipped_files_are_named_once_and_small_limits_are_readable(tmp_path, capsys):
    (tmp_path / "binary.md").write_bytes(b"a\x00b")
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n" + "word " * 3000, encoding="utf-8")  # 15,007 bytes
    (tmp_path / "ok.md").write_text("# Ok\n\nA small readable note.\n", encoding="utf-8")
    code = main(
        ["index", "--input", str(tmp_path), "--output", str(tmp_path / "ix"), "--mock",
         "--max-file-mb", "0.01"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0
    assert "skipped binary.md: looks binary (contains NUL bytes)" in err
    assert (
        "skipped big.md: 15,007 bytes (15.0 KB) is larger than the limit of 10,000 bytes (10.0 KB)"
    ) in err


def test_size_text():
    from treerag_core.ingest.loading import size_text

    assert size_text(10_000) == "10.0 KB"
    assert size_text(20_000_000) == "20.0 MB"
