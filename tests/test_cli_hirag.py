"""`index --hirag` as a user runs it: artifacts in the folder, LLM reports reused on re-index."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import pairwise

from fake_anthropic import FakeAnthropicServer, reply, status

from tests.conftest import REPO, SAMPLES

KEY = "sk-ant-test-cli-hirag"


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "treerag_core", *args],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "ANTHROPIC_API_KEY": "", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def reports_for(body) -> object:
    ids = re.findall(r"## (L\d+-\d+)", json.dumps(body, ensure_ascii=False))
    return reply(
        json.dumps({i: {"title": f"T {i}", "summary": "S", "findings": ["f"]} for i in ids})
    )


def test_index_hirag_offline_then_llm_reports_cached(tmp_path):
    folder = tmp_path / "index"
    doc = str(SAMPLES / "zh_sample.md")
    result = cli("index", "--input", doc, "--output", str(folder), "--mock", "--hirag")
    assert result.returncode == 0, result.stderr
    assert "HiRAG graph:" in result.stdout and "communities" in result.stdout
    meta = json.loads((folder / "hirag" / "manifest.json").read_text(encoding="utf-8"))
    assert meta["counts"]["entities"] > 0 and meta["report_llm_calls"] == 0

    missing = cli(
        "index", "--input", doc, "--output", str(folder), "--mock", "--hirag-llm-reports", "--hirag"
    )
    assert missing.returncode != 0 and "ANTHROPIC_API_KEY" in missing.stderr

    with FakeAnthropicServer(responder=reports_for, api_key=KEY) as server:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url}
        args = ("index", "--input", doc, "--output", str(folder), "--mock", "--hirag")
        first = cli(*args, "--hirag-llm-reports", env=env)
        assert first.returncode == 0, first.stderr
        sent = len(server.requests)
        assert sent > 0
        meta = json.loads((folder / "hirag" / "manifest.json").read_text(encoding="utf-8"))
        assert meta["report_usage"]["input_tokens"] > 0
        assert meta["counts"]["llm_reports"] == meta["counts"]["communities"]
        again = cli(*args, "--hirag-llm-reports", env=env)
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == sent  # unchanged communities are not asked again
        meta = json.loads((folder / "hirag" / "manifest.json").read_text(encoding="utf-8"))
        assert meta["report_cached"] == meta["counts"]["communities"]


def graph_reply(body) -> object:
    """The labour law's entities the block holds, chained by relations."""
    prompt = json.dumps(body, ensure_ascii=False)
    found = [n for n in ("用人单位", "劳动者", "劳动合同", "工资") if n in prompt]
    lines = [f'("entity", "{n}", "主体", "{n}的说明")' for n in found]
    lines += [f'("relationship", "{a}", "{b}", "关联", "{a}与{b}", 6)' for a, b in pairwise(found)]
    return reply("\n".join(lines))


def llm_responder(body) -> object:
    return (
        reports_for(body) if "## L" in json.dumps(body, ensure_ascii=False) else graph_reply(body)
    )


def test_index_hirag_llm_fails_midway_resumes_and_queries_use_it(tmp_path):
    folder = tmp_path / "index"
    doc = str(SAMPLES / "劳动合同法(2012-12-28).md")  # 12k characters: several batches
    args = ("index", "--input", doc, "--output", str(folder), "--mock", "--hirag-llm")
    with FakeAnthropicServer(responder=llm_responder, api_key=KEY) as server:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url}
        server.push(
            graph_reply(None), graph_reply(None), *(status(500) for _ in range(3))
        )  # + 2 retries
        first = cli(*args, env=env)
        assert first.returncode == 0, first.stderr
        assert "LLM graph extraction stopped" in first.stderr and "resume" in first.stderr
        meta = json.loads((folder / "hirag" / "manifest.json").read_text(encoding="utf-8"))
        made = meta["graph_llm_batches"]  # a long chapter takes two calls for one batch
        assert made >= 1 and meta["graph_offline_batches"] > 0
        assert meta["graph_usage"]["input_tokens"] > 0

        sent = len(server.requests)
        second = cli(*args, env=env)
        assert second.returncode == 0, second.stderr
        assert "(llm:claude-haiku-4-5 extractor)" in second.stdout
        meta = json.loads((folder / "hirag" / "manifest.json").read_text(encoding="utf-8"))
        assert meta["graph_cached"] == made and meta["graph_offline_batches"] == 0
        graph_calls = meta["graph_llm_calls"]
        assert graph_calls > 0 and len(server.requests) - sent >= graph_calls
        assert meta["counts"]["llm_reports"] == meta["counts"]["communities"]

    # The query reads the LLM build: no rebuild, the LLM's typed entities in its context.
    query = cli(
        "query",
        "--index",
        str(folder),
        "--mock",
        "--json",
        "--strategy",
        "hirag",
        "--query",
        "用人单位拖欠工资",
    )
    assert query.returncode == 0, query.stderr
    trace = json.loads(query.stdout)
    assert "graph_built" not in {f["reason"] for f in trace["fallbacks"]}
    (entities,) = [s for s in trace["sections"] if s["kind"] == "entities"]
    assert {r["kind"] for r in entities["rows"]} == {"主体"}


def test_reindex_says_when_the_previous_reports_cannot_be_read(tmp_path):
    folder = tmp_path / "index"
    args = ("index", "--input", str(SAMPLES / "zh_sample.md"), "--output", str(folder))
    assert cli(*args, "--mock", "--hirag").returncode == 0
    (folder / "hirag" / "reports.json").write_text("[{", encoding="utf-8")
    again = cli(*args, "--mock", "--hirag")
    assert again.returncode == 0, again.stderr
    assert "note: the previous HiRAG build's LLM reports could not be read" in again.stderr
    assert "reports.json is corrupt" in again.stderr and ".hirag-unreadable" in again.stderr
    assert [p.read_text("utf-8") for p in (folder / ".hirag-unreadable").iterdir()] == ["[{"]
