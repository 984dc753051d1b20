"""Issue 28, row 9: a server that streams a token every so often, forever, cannot hold a call
past its deadline; the call fails as a time-out, which every step turns into its fallback."""

from __future__ import annotations

import time

import pytest
from fake_anthropic import FakeAnthropicServer, stream
from fake_openai import FakeOpenAIServer

from treerag_core.base.errors import LLMError
from treerag_core.base.settings import LLMSettings
from treerag_core.llm.anthropic_provider import AnthropicClient
from treerag_core.llm.openai_provider import OpenAIClient

KEY = "sk-test-deadline"
DRIP = stream(["tok "] * 10_000, pause=0.2)  # 2,000 s of steady tokens: no silence to time out


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_slow_drip_stream_is_cut_at_the_deadline(provider):
    server_cls, client_cls = {
        "anthropic": (FakeAnthropicServer, AnthropicClient),
        "openai": (FakeOpenAIServer, OpenAIClient),
    }[provider]
    with server_cls(DRIP, api_key=KEY) as server:
        client = client_cls(KEY, base_url=server.base_url, timeout=5, max_retries=0, deadline=1)
        started = time.monotonic()
        with pytest.raises(LLMError, match="within 1 s") as caught:
            client.complete("", "question", "model-x", 50)
        elapsed = time.monotonic() - started
    assert caught.value.reason == "timeout"  # the reason every step's fallback records
    assert elapsed < 15  # the deadline and one pause (slack for a busy machine), not 2,000 s


def test_deadline_is_a_setting_checked_like_the_others():
    assert LLMSettings(deadline=30).deadline == 30
    with pytest.raises(ValueError, match="deadline"):
        LLMSettings(deadline=0)
