"""`index --hirag` as a user runs it: artifacts in the folder, LLM reports reused on re-index."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from fake_anthropic import FakeAnthropicServer, reply

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
