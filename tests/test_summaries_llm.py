"""LLM summaries through the real SDK and a fake server: batched, cached, never resent."""

from __future__ import annotations

import json
import re

import pytest
from fake_anthropic import FakeAnthropicServer, reply, status

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import LLMError
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.ingest.node_summaries_llm import make_llm_summarizer
from treerag_core.llm import AnthropicClient

KEY = "sk-ant-test-summaries"
SETTINGS = IndexSettings(embedder="hashing", llm_summaries=True)


def summaries_for(body) -> object:
    prompt = json.dumps(body, ensure_ascii=False)
    keys = re.findall(r"\[([0-9a-f]{64})\]", prompt)
    return reply(json.dumps({k: f"LLM summary {k[:6]}" for k in keys}))


@pytest.fixture
def server():
    with FakeAnthropicServer(responder=summaries_for, api_key=KEY) as fake:
        yield fake


def client(server) -> AnthropicClient:
    return AnthropicClient(KEY, base_url=server.base_url, timeout=5, max_retries=0)


def test_llm_summaries_are_batched_and_cached(server):
    sources = sample_sources(["test_paper.md"])
    embedder = get_embedder("hashing")
    summarize = make_llm_summarizer(client(server), "claude-haiku-4-5", {}, batch_size=5)
    first = build_index(sources, SETTINGS, embedder, summarizer=summarize)
    leaves = [n for n in first.leaves() if n.content.strip()]
    assert all(n.summary.startswith("LLM summary") for n in leaves)
    assert len(server.requests) == -(-len(leaves) // 5)  # ceil: batches of five
    assert len(first.summary_cache) == len(leaves)
    # Re-indexing the unchanged document sends nothing.
    sent = len(server.requests)
    again = make_llm_summarizer(client(server), "claude-haiku-4-5", first.summary_cache)
    second = build_index(sources, SETTINGS, embedder, previous=first, summarizer=again)
    assert len(server.requests) == sent
    assert [n.summary for n in second.leaves()] == [n.summary for n in first.leaves()]


def test_api_error_surfaces_as_llm_error():
    with FakeAnthropicServer(status(500), api_key=KEY) as fake:
        summarize = make_llm_summarizer(client(fake), "claude-haiku-4-5", {})
        with pytest.raises(LLMError):
            build_index(
                sample_sources(["zh_sample.md"]),
                SETTINGS,
                get_embedder("hashing"),
                summarizer=summarize,
            )


def test_cache_is_not_reused_when_the_option_is_off(server):
    sources = sample_sources(["test_paper.md"])
    embedder = get_embedder("hashing")
    summarize = make_llm_summarizer(client(server), "claude-haiku-4-5", {})
    first = build_index(sources, SETTINGS, embedder, summarizer=summarize)
    assert any(n.summary.startswith("LLM summary") for n in first.leaves())  # a cache to reuse
    local = build_index(sources, IndexSettings(embedder="hashing"), embedder, previous=first)
    assert not any(n.summary.startswith("LLM summary") for n in local.leaves())
    plain = build_index(sources, IndexSettings(embedder="hashing"), embedder)
    assert [n.summary for n in local.leaves()] == [n.summary for n in plain.leaves()]
