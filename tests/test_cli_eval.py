"""`eval` on the command line, in process: progress, --llm without a key, Ctrl-C, left out."""

from __future__ import annotations

import json

import pytest
from fake_anthropic import FakeAnthropicServer, reply

from treerag_core.cli import build_parser, main

LLM_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def no_llm_env(monkeypatch):
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TREERAG_LLM_PROVIDER", raising=False)


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("eval-cache")


def eval_argv(eval_dir, cache, *more: str) -> list[str]:
    return [
        "eval",
        "--data",
        str(eval_dir / "qasper"),
        "--cache",
        str(cache),
        "--embedder",
        "hashing",
        "--no-rerank",
        "--limit",
        "2",
        *more,
    ]


def test_building_the_index_shows_its_progress(eval_dir, tmp_path, capsys, no_llm_env):
    assert main(eval_argv(eval_dir, tmp_path, "--strategy", "flat-bm25")) == 0
    err = capsys.readouterr().err
    # The same plain lines `index` prints when stderr is not a terminal, before the runs.
    assert "parsing: " in err and "embedding: " in err and "chunks" in err
    assert err.index("embedding: ") < err.index("evaluating: ")


def test_llm_without_key_or_server_is_refused_before_any_work(
    eval_dir, tmp_path, capsys, no_llm_env
):
    cache = tmp_path / "cache"
    assert main(eval_argv(eval_dir, cache, "--strategy", "treerag", "--llm")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --llm needs ANTHROPIC_API_KEY"), err
    assert err.count("\n") == 1 and not cache.exists()


def test_llm_locator_fallbacks_are_said_under_the_table(
    eval_dir, index_cache, capsys, monkeypatch, no_llm_env
):
    def respond(body):  # the locator gets no JSON back, the answer is fine
        return reply("no idea" if "thinking" in json.dumps(body) else "An answer.")

    with FakeAnthropicServer(responder=respond) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        argv = eval_argv(eval_dir, index_cache, "--strategy", "treerag", "--llm")
        assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "treerag+llm" in out
    assert (
        "note: the LLM locator was not used for 2 of 2 questions of treerag+llm (invalid_json"
        in err
    ), err


def test_ctrl_c_writes_the_partial_report_and_exits_130(
    eval_dir, index_cache, tmp_path, capsys, monkeypatch, no_llm_env
):
    from treerag_core.evaluation import harness

    calls = []

    def run_then_interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run(*args, **kwargs)

    real_run = harness.run
    monkeypatch.setattr(harness, "run", run_then_interrupt)
    out_file = tmp_path / "report.json"
    argv = eval_argv(eval_dir, index_cache, "--strategy", "flat-bm25", "--out", str(out_file))
    assert main(argv) == 130
    assert "(interrupted: partial report)" in capsys.readouterr().out
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert report["partial"] is True and report["strategies"]["flat-bm25"]["n_questions"] == 1


def test_left_out_counts_the_questions_the_limit_walked(eval_dir, index_cache, capsys):
    from treerag_core.evaluation.dataset import load_dataset

    dataset = load_dataset(eval_dir / "qasper")
    second = dataset.questions.index(dataset.usable_questions[1])
    walked = sum(not q.usable for q in dataset.questions[: second + 1])
    assert main(eval_argv(eval_dir, index_cache, "--strategy", "flat-bm25")) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| flat-bm25 |"))
    assert row.split("|")[2:4] == [" 2 ", f" {walked} "]
    assert "left out among the questions --limit walked" in out and "whole set: " in out


def test_differences_are_printed_when_a_baseline_ran(eval_dir, index_cache, capsys):
    argv = eval_argv(eval_dir, index_cache, "--strategy", "flat-bm25,flat-hybrid")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Paired differences from the baselines" in out
    assert "| strategy | minus | recall@1000c | recall@2000c | hit@5 |" in out
    row = next(line for line in out.splitlines() if line.startswith("| flat-bm25 | flat-hybrid"))
    assert row.count("[") == 3  # an interval in every cell
    # Without flat-hybrid there is nothing to compare with, and nothing is printed.
    assert main(eval_argv(eval_dir, index_cache, "--strategy", "flat-bm25")) == 0
    assert "Paired differences" not in capsys.readouterr().out


def test_eval_help_shows_where_the_cache_goes():
    [sub] = [a for a in build_parser()._actions if hasattr(a, "choices") and a.choices]
    [cache] = [a for a in sub.choices["eval"]._actions if "--cache" in a.option_strings]
    text = cache.help % vars(cache)
    assert "default data/eval-cache" in text and "working directory" in text
