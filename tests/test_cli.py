"""The command line, run as a user would: `python -m treerag_core ...` in a subprocess."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES, name_index_embedder

pytestmark = pytest.mark.slow


def cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANTHROPIC_API_KEY": ""}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "treerag_core", *args],
        cwd=REPO,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cli") / "index"
    docs = [str(SAMPLES / "test_paper.md"), str(SAMPLES / "zh_sample.md")]
    result = cli("index", "--input", *docs, "--output", str(folder), "--mock")
    assert result.returncode == 0, result.stderr
    assert "indexed 2 documents" in result.stdout
    for word in ("nodes", "leaves", "chunks", "longest leaf"):
        assert word in result.stdout
    return folder


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from treerag_core.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_option_of_every_command_has_help():
    commands = _subcommands()
    assert {"index", "query", "interactive", "eval", "qdrant-push", "milvus-push"} <= set(commands)
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, parser in commands.items()
        for action in parser._actions
        if not (action.help or "").strip()
    ]
    assert missing == []


def test_help_quotes_the_settings_defaults():
    from treerag_core.base.settings import QuerySettings

    query = QuerySettings()
    helps = {
        option: action.help % vars(action) if "%(" in action.help else action.help
        for action in _subcommands()["query"]._actions
        for option in action.option_strings
    }
    assert f"default {query.retrieve.candidate_window})" in helps["--candidate-window"]
    assert f"default {query.answer.final_top_k})" in helps["--top-k"]
    assert f"default {query.llm.context_tokens})" in helps["--context-tokens"]
    assert "--locate-cutoff" not in helps  # the setting is gone (nothing read it)


@pytest.mark.parametrize(
    "command", ["index", "query", "interactive", "eval", "qdrant-push", "milvus-push"]
)
def test_every_command_has_help(command):
    result = cli(command, "--help")
    assert result.returncode == 0 and "usage:" in result.stdout
    assert "needs ANTHROPIC_API_KEY" not in result.stdout  # --provider openai works too


def test_bad_files_in_a_folder_are_reported_and_skipped(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Title\n\n## Part\n\nSome real text about routers.\n")
    (docs / "empty.md").write_text("")
    (docs / "binary.md").write_bytes(b"\x00\x01\x02 binary")
    (docs / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1") + b"\xff\xfe\x81")
    result = cli("index", "--input", str(docs), "--output", str(tmp_path / "idx"), "--mock")
    assert result.returncode == 0, result.stderr
    assert "indexed 1 document: 2 nodes, 1 leaf, 1 chunk," in result.stdout
    for name in ("empty.md", "binary.md", "latin1.txt"):
        assert f"skipped {name}" in result.stderr


def test_no_readable_input_is_an_error(tmp_path):
    (tmp_path / "empty.md").write_text("")
    result = cli("index", "--input", str(tmp_path / "empty.md"), "--output", str(tmp_path / "i"))
    assert result.returncode == 2 and "no readable document" in result.stderr


def test_query_prints_the_seed_terminal_format(index_dir):
    result = cli(
        "query", "--index", str(index_dir), "--query", "How many epochs of training?", "--mock"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for marker in (
        ">>> Step 1: Node Locating",
        ">>> Step 2: Hybrid Retrieval + Rerank",
        ">>> Step 3: Answer",
    ):
        assert marker in out
    assert "sub_query:" in out and "dense=" in out and "fused=" in out and "rerank=" in out
    assert "Training Procedure" in out


def test_query_json_is_the_trace(index_dir):
    result = cli(
        "query",
        "--index",
        str(index_dir),
        "--query",
        "What is the router?",
        "--mock",
        "--json",
        "--fusion",
        "rrf",
        "--no-rerank",
        "--top-k",
        "3",
    )
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert trace["format"] == "treerag-trace/2"
    assert trace["settings"]["retrieve"]["fusion"] == "rrf"
    assert trace["settings"]["rerank"]["enabled"] is False
    assert len(trace["reranked"]) <= 3 and trace["answer"]


def test_drilldown_layers_and_document_routing_in_the_terminal(index_dir):
    question = "How many epochs of training?"
    result = cli(
        "query", "--index", str(index_dir), "--query", question, "--mock", "--no-rerank",
        "--strategy", "drilldown", "--drilldown-layers", "1,1,3", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert trace["settings"]["options"]["drilldown"]["documents"] == 1
    assert len(trace["locate"]["leaves"]) == 1 and len(trace["reranked"]) <= 3
    routing = trace["locate"]["document_scores"]
    assert [d["kept"] for d in routing] == [True, False]  # two documents: one kept, one cut
    text = cli("query", "--index", str(index_dir), "--query", question, "--mock")
    # treerag (the default) routes only past two documents: both kept, both scored.
    assert "Document routing (share of the window): 2 of 2 searched" in text.stdout
    assert "    1. kept  " in text.stdout and "    2. kept  " in text.stdout


def test_query_with_manual_leaves(index_dir):
    from treerag_core.index.store import load_index

    leaf = next(n for n in load_index(index_dir).leaves() if n.heading == "4.2 Performance")
    result = cli(
        "query",
        "--index",
        str(index_dir),
        "--query",
        "accuracy",
        "--mock",
        "--json",
        "--leaves",
        leaf.node_id,
    )
    trace = json.loads(result.stdout)
    assert [x["node_id"] for x in trace["locate"]["leaves"]] == [leaf.node_id]


def test_query_errors_are_one_line_and_exit_2(tmp_path, index_dir):
    result = cli("query", "--index", str(tmp_path / "missing"), "--query", "x", "--mock")
    assert result.returncode == 2 and result.stderr.startswith("error: no index at")
    result = cli("query", "--index", str(index_dir), "--query", "   ", "--mock")
    assert result.returncode == 2 and "empty" in result.stderr


def test_interactive_loop_with_history_and_quit(index_dir):
    script = "What is the dataset?\n\n:history\nthe of\n:q\n"
    result = cli("interactive", "--index", str(index_dir), "--mock", stdin=script)
    assert result.returncode == 0, result.stderr
    assert ">>> Step 3: Answer" in result.stdout
    assert "  1  What is the dataset?" in result.stdout
    assert "error: the question has no searchable words" in result.stdout  # loop survives


def test_interactive_ends_cleanly_on_eof(index_dir):
    result = cli("interactive", "--index", str(index_dir), "--mock", stdin="")
    assert result.returncode == 0 and result.stderr == ""  # no traceback, no error line
    # One prompt, then a clean line for the terminal (Ctrl-D leaves the cursor after it).
    assert result.stdout.startswith("TreeRAG interactive: ask a question;")
    assert result.stdout.endswith("treerag> \n") and result.stdout.count("treerag> ") == 1


def test_index_refuses_to_replace_a_folder_that_is_not_an_index(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("my thesis")
    result = cli(
        "index", "--input", str(SAMPLES / "test_paper.md"), "--output", str(precious), "--mock"
    )
    assert result.returncode == 2 and "is not a TreeRAG index" in result.stderr
    assert (precious / "thesis.txt").read_text() == "my thesis"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--leaves", "9999"], "not a leaf"),
        (["--top-k", "0"], "final_top_k"),
        (["--dense-weight", "2"], "dense_weight"),
        (["--strategy", "drilldown", "--drilldown-layers", "1,1"], "three whole numbers"),
        (["--strategy", "drilldown", "--drilldown-layers", "1,0,3"], "parents must be in 1..50"),
    ],
)
def test_bad_query_flags_are_one_line_errors(index_dir, flags, message):
    result = cli("query", "--index", str(index_dir), "--query", "router", "--mock", *flags)
    assert result.returncode == 2
    assert result.stderr.startswith("error:") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_index_converts_pdf_docx_html_and_query_shows_pages(tmp_path):
    import docx

    from tests.pdf_factory import report_pdf

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(report_pdf(3))
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4 broken")
    (docs / "page.html").write_text("<h1>Guide</h1><p>Some guide text about trains.</p>")
    document = docx.Document()
    document.add_heading("Memo", level=1)
    document.add_paragraph("A memo paragraph about hotels and budgets.")
    document.save(docs / "memo.docx")
    folder = tmp_path / "idx"
    result = cli("index", "--input", str(docs), "--output", str(folder), "--mock")
    assert result.returncode == 0, result.stderr
    assert "indexed 3 documents" in result.stdout
    assert "skipped scan.pdf: " in result.stderr and "not a readable PDF" in result.stderr
    result = cli("query", "--index", str(folder), "--query", "net income page 2", "--mock")
    assert result.returncode == 0, result.stderr
    assert "(p. " in result.stdout  # hits from the PDF name their page


def test_treerag_max_file_mb_is_read_by_index(tmp_path, monkeypatch, capsys):
    from treerag_core.cli import main

    monkeypatch.setenv("TREERAG_MAX_FILE_MB", "0.0001")  # ~104 bytes
    doc = tmp_path / "big.md"
    doc.write_text("# Big\n\n" + "word " * 100, encoding="utf-8")
    code = main(["index", "--input", str(doc), "--output", str(tmp_path / "ix"), "--mock"])
    err = capsys.readouterr().err
    assert code != 0 and "larger than the limit" in err
    monkeypatch.setenv("TREERAG_MAX_FILE_MB", "lots")
    assert main(["index", "--input", str(doc), "--output", str(tmp_path / "ix")]) == 2
    assert "TREERAG_MAX_FILE_MB" in capsys.readouterr().err


def test_terminal_output_escapes_control_sequences(tmp_path):
    osc52 = "\x1b]52;c;ZXZpbA==\x07"  # a clipboard write
    doc = tmp_path / "evil.md"
    doc.write_text(
        f"# Evil \x1b[31mred\x1b[0m\n\n## Router\n\nThe router {osc52}picks experts by score.\n",
        encoding="utf-8",
    )
    folder = tmp_path / "idx"
    assert cli("index", "--input", str(doc), "--output", str(folder), "--mock").returncode == 0
    question = "How does the router \x1b[2J pick\x9b experts?"
    result = cli("query", "--index", str(folder), "--query", question, "--mock")
    assert result.returncode == 0, result.stderr
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in result.stdout
    assert "\\x1b]52;c;" in result.stdout and "\\x1b[2J" in result.stdout
    as_json = cli("query", "--index", str(folder), "--query", question, "--mock", "--json")
    assert "\x9b" not in as_json.stdout and "\x1b" not in as_json.stdout
    assert json.loads(as_json.stdout)["question"] == question.strip()  # same value, escaped


# --- any LLM server (OpenAI-compatible) ------------------------------------------------------


def _summaries_for(body) -> object:
    from fake_openai import reply

    keys = re.findall(r"\[([0-9a-f]{64})\]", json.dumps(body, ensure_ascii=False))
    return reply(json.dumps({k: f"Local summary {k[:6]}" for k in keys}))


def test_index_llm_summaries_with_a_local_openai_server(tmp_path):
    from fake_openai import FakeOpenAIServer

    folder = tmp_path / "index"
    with FakeOpenAIServer(responder=_summaries_for) as fake:
        result = cli(
            "index", "--input", str(SAMPLES / "test_paper.md"), "--output", str(folder),
            "--mock", "--llm-summaries", "--provider", "openai", "--base-url", fake.base_url,
            "--model", "llama3.2",
        )  # fmt: skip
        bodies = fake.bodies
    assert result.returncode == 0, result.stderr
    assert bodies and all(b["model"] == "llama3.2" for b in bodies)
    nodes = (folder / "nodes.jsonl").read_text(encoding="utf-8")
    assert "Local summary" in nodes


def test_query_with_a_local_openai_server_locates_and_streams(index_dir):
    from fake_openai import FakeOpenAIServer, reply, stream

    nodes = [json.loads(line) for line in (index_dir / "nodes.jsonl").read_text().splitlines()]
    leaf = next(n["node_id"] for n in nodes if n["heading"] == "3.3 Training Procedure")
    picks = {"thinking": "training", "results": [{"node_id": leaf, "sub_query": "epochs"}]}
    with FakeOpenAIServer(reply(json.dumps(picks)), stream(["Fifty ", "epochs."])) as fake:
        result = cli(
            "query", "--index", str(index_dir), "--query", "How many epochs?", "--json",
            "--provider", "openai", "--base-url", fake.base_url, "--model", "llama3.2",
        )  # fmt: skip
        bodies = fake.bodies
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert trace["locate"]["locator"] == "llm" and trace["answer"] == "Fifty epochs."
    assert not trace["fallbacks"]
    assert [b["model"] for b in bodies] == ["llama3.2", "llama3.2"]


def test_query_with_an_unreachable_server_falls_back(index_dir):
    result = cli(
        "query", "--index", str(index_dir), "--query", "How many epochs?", "--json",
        "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "llama3.2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert [(f["stage"], f["reason"]) for f in trace["fallbacks"]] == [
        ("locate", "connection"),
        ("synthesize", "connection"),
    ]


def test_a_local_server_without_model_name_is_one_clear_error(index_dir):
    result = cli(
        "query", "--index", str(index_dir), "--query", "How many epochs?",
        "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert result.returncode == 2 and "needs --model" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--llm-summaries"], "--llm-summaries needs ANTHROPIC_API_KEY"),
        (["--llm-graphs", "--graph-min-leaf-chars", "10"], "--llm-graphs needs ANTHROPIC_API_KEY"),
        (["--hirag-llm"], "--hirag-llm* needs ANTHROPIC_API_KEY"),
        (["--llm-graphs", "--graph-min-leaf-chars", "10", "--provider", "openai"],
         "--llm-graphs needs OPENAI_API_KEY or --base-url"),
    ],
)  # fmt: skip
def test_every_llm_index_flag_names_the_missing_key_before_any_work(
    tmp_path, monkeypatch, capsys, flags, named
):
    from treerag_core.cli import main

    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    doc = SAMPLES / "test_paper.md"
    out = tmp_path / "ix"
    assert main(["index", "--input", str(doc), "--output", str(out), "--mock", *flags]) != 0
    assert named in capsys.readouterr().err
    assert not out.exists()  # refused before indexing anything


def test_llm_client_is_the_configured_provider(monkeypatch):
    from treerag_core.cli import _llm_client, build_parser
    from treerag_core.llm import LLMClient

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    args = build_parser().parse_args(["index", "--input", "x.md", "--output", "ix"])
    client, llm = _llm_client(args, "--llm-summaries")
    assert isinstance(client, LLMClient) and client.provider == llm.provider == "anthropic"


def test_query_loads_an_st_folder_only_when_the_user_names_it(index_dir, tmp_path, model_trap):
    import shutil

    folder = tmp_path / "index"
    shutil.copytree(index_dir, folder)
    name_index_embedder(folder, model_trap.name)  # refused before anything loads
    question = ("--query", "How many epochs of training?", "--mock")
    result = cli("query", "--index", str(folder), *question)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot choose" in result.stderr and f"--embedder {model_trap.name}" in result.stderr
    # --embedder naming the index's own built-in embedder changes nothing.
    result = cli("query", "--index", str(index_dir), "--embedder", "hashing", *question)
    assert result.returncode == 0, result.stderr
