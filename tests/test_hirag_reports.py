"""Community reports: extractive offline; LLM through the real SDK and a fake server, batched,
cached by content key, resumable, tokens recorded."""

from __future__ import annotations

import json
import re

import pytest
from fake_anthropic import FakeAnthropicServer, reply, status
from hirag_fixtures import two_cliques

from treerag_core.base.errors import LLMError
from treerag_core.llm import AnthropicClient
from treerag_core.strategies.hirag.communities import detect_communities
from treerag_core.strategies.hirag.reports import (
    CommunityReport,
    build_report_prompt,
    build_reports,
    parse_report_response,
)

KEY = "sk-ant-test-reports"


def reports_for(body) -> object:
    prompt = json.dumps(body, ensure_ascii=False)
    ids = re.findall(r"## (L\d+-\d+)", prompt)
    return reply(
        json.dumps({i: {"title": f"T {i}", "summary": "S", "findings": ["f1", "f2"]} for i in ids})
    )


def client(server) -> AnthropicClient:
    return AnthropicClient(KEY, base_url=server.base_url, timeout=5, max_retries=0)


def test_extractive_reports_use_the_community_words():
    graph = two_cliques()
    communities = detect_communities(graph)
    built = build_reports(communities, graph, "en")
    assert set(built.reports) == {c.community_id for c in communities}
    report = built.reports[communities[0].community_id]
    assert report.source == "extractive" and report.title.startswith("a0")  # a0: highest degree
    assert "6 entities and 15 relations" in report.summary
    assert len(report.findings) == 5 and report.findings[0].endswith("with a1")
    assert built.usage.input_tokens == 0 and built.llm_calls == 0
    assert CommunityReport.from_dict(report.to_dict()) == report


def test_llm_reports_batched_cached_and_resumed():
    graph = two_cliques()
    communities = detect_communities(graph)
    with FakeAnthropicServer(responder=reports_for, api_key=KEY) as server:
        saved: list[dict] = []
        built = build_reports(
            communities,
            graph,
            "en",
            client=client(server),
            model="claude-haiku-4-5",
            batch_size=1,
            on_batch=saved.append,
        )
        assert len(server.requests) == 2 and built.llm_calls == 2
        assert all(
            r.source == "llm" and r.title.startswith("T L0-") for r in built.reports.values()
        )
        assert built.usage.input_tokens > 0 and built.usage.cost_usd > 0
        assert len(saved) == 2  # a checkpoint after every batch
        # A new build with the reports as cache sends nothing.
        cache = {r.content_key: r for r in built.reports.values()}
        again = build_reports(communities, graph, "en", client=client(server), cache=cache)
        assert len(server.requests) == 2 and again.cached == 2
        assert again.reports == built.reports


def test_api_error_keeps_extractive_reports_and_says_so():
    graph = two_cliques()
    communities = detect_communities(graph)
    with FakeAnthropicServer(status(500), api_key=KEY) as server:
        built = build_reports(communities, graph, "en", client=client(server), model="m")
    assert all(r.source == "extractive" for r in built.reports.values())
    assert built.notes and "api_error" in built.notes[0]


def test_prompt_and_parse():
    graph = two_cliques()
    (c, *_) = detect_communities(graph)
    entities = graph.entity_map()
    prompt = build_report_prompt(
        [(c.community_id, [entities[k] for k in c.entity_keys], list(graph.relations[:2]))], "en"
    )
    assert f"## {c.community_id}" in prompt and "findings" in prompt
    got = parse_report_response(
        'Sure: {"L0-0": {"title": "X", "findings": "one"}, "L0-9": {"title": ""}}', ["L0-0", "L0-9"]
    )
    assert got == {"L0-0": {"title": "X", "summary": "", "findings": ["one"]}}
    with pytest.raises(LLMError):
        parse_report_response("no json here", ["L0-0"])
    with pytest.raises(ValueError, match="needs at least one community"):
        build_report_prompt([], "en")
