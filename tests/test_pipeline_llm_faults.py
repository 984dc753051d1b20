"""Every LLM fault, for both providers and both LLM steps, falls back through the whole pipeline.

Against the local fake servers with the real SDKs: nothing incomplete or malformed is ever
accepted; the local locator or the extractive answer is used and the Fallback recorded.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fake_anthropic
import fake_openai
import pytest

from treerag_core.base.settings import LLMSettings, QuerySettings
from treerag_core.index.embedders import get_embedder
from treerag_core.llm import make_client
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.pipeline import Engine, run

pytestmark = pytest.mark.slow

QUESTION = "How many epochs was AdaRouter trained for?"
PARTIAL = ("AdaRouter was ", "trained for fif")


@dataclass
class Setup:
    """One provider's fake server and an Engine wired to it."""

    provider: str
    fake: Any  # the fake module (status, reply, ... in that provider's shapes)
    server: Any
    engine: Engine


def _engine(hashing_index, provider: str) -> Engine:
    key = "sk-test" if provider == "anthropic" else None  # a local OpenAI server needs none
    embedder = get_embedder("hashing")  # model quality does not matter here: speed does
    return Engine(hashing_index, embedder, api_key=key, client_factory=make_client)


@pytest.fixture(params=["anthropic", "openai"])
def setup(request, hashing_index) -> Iterator[Setup]:
    provider = request.param
    if provider == "anthropic":
        module, server = fake_anthropic, fake_anthropic.FakeAnthropicServer()
    else:
        module, server = fake_openai, fake_openai.FakeOpenAIServer()
    with server:
        yield Setup(provider, module, server, _engine(hashing_index, provider))


def fast(provider: str, base_url: str) -> QuerySettings:
    """Settings pointing at the fake server: short time-out, no retries, no rerank (speed)."""
    llm = LLMSettings(provider=provider, base_url=base_url, timeout=1.0, max_retries=0)
    if provider == "openai":
        llm = llm.with_(locate_model="llama3.2", answer_model="llama3.2")
    return QuerySettings(llm=llm).set("rerank.enabled", False)


def locate_json(engine: Engine) -> str:
    leaf = next(n.node_id for n in engine.index.leaves() if n.heading == "3.3 Training Procedure")
    return json.dumps(
        {"thinking": "training", "results": [{"node_id": leaf, "sub_query": "epochs"}]}
    )


def check_falls_back(setup: Setup, stage: str, fault, reason: str) -> None:
    """`fault` in the given step: the other step works, the faulty one falls back."""
    fake, server, engine = setup.fake, setup.server, setup.engine
    if stage == "locate":
        server.push(fault, fake.stream(["Fifty epochs."]))
    else:
        server.push(fake.reply(locate_json(engine)), fault)
    trace = run(engine, QUESTION, fast(setup.provider, server.base_url))
    label = "synthesize" if stage == "answer" else "locate"
    assert [(f.stage, f.reason) for f in trace.fallbacks] == [(label, reason)]
    detail = trace.fallbacks[0].detail
    if stage == "locate":
        assert trace.locate.locator == "local" and "local locator" in detail
        assert trace.answer == "Fifty epochs."
    else:
        assert trace.locate.locator == "llm" and "extractive answer" in detail
        assert "[Source: " in trace.answer  # the extractive answer, every sentence cited
        assert "fif" not in trace.answer  # the cut reply is never kept
    assert trace.reranked


STAGES = pytest.mark.parametrize("stage", ["locate", "answer"])


@STAGES
def test_stream_without_stop_event_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.no_stop(PARTIAL), "incomplete")


@STAGES
def test_connection_closed_mid_reply_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.cut(PARTIAL), "incomplete")


@STAGES
def test_reply_cut_by_token_limit_falls_back(setup, stage) -> None:
    fault = setup.fake.reply("AdaRouter was trained for fif", stop_reason="max_tokens")
    check_falls_back(setup, stage, fault, "truncated")


@STAGES
def test_200_without_events_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.empty_stream(), "empty_response")


@STAGES
def test_html_page_from_a_proxy_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.html_page(), "bad_response")


@STAGES
def test_malformed_stream_data_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.malformed(), "bad_response")


@STAGES
def test_slow_server_times_out_and_falls_back(setup, stage) -> None:
    check_falls_back(setup, stage, setup.fake.delay(4.0), "timeout")


@STAGES
@pytest.mark.parametrize(
    ("code", "reason"),
    [(403, "forbidden"), (404, "model_not_found"), (413, "too_large"), (500, "api_error")],
)
def test_http_error_falls_back(setup, stage, code, reason) -> None:
    body = None
    if code == 404 and setup.provider == "anthropic":
        body = {"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}
    check_falls_back(setup, stage, setup.fake.status(code, body), reason)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_connection_refused_falls_back_in_both_steps(hashing_index, provider) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    suffix = "/v1" if provider == "openai" else ""
    engine = _engine(hashing_index, provider)
    trace = run(engine, QUESTION, fast(provider, f"http://127.0.0.1:{port}{suffix}"))
    assert [(f.stage, f.reason) for f in trace.fallbacks] == [
        ("locate", "connection"),
        ("synthesize", "connection"),
    ]
    assert trace.locate.locator == "local" and "[Source:" in trace.answer


def test_openai_local_model_locates_and_answers_with_tokens_at_no_cost(hashing_index) -> None:
    with fake_openai.FakeOpenAIServer() as server:
        engine = _engine(hashing_index, "openai")
        server.push(
            fake_openai.reply(locate_json(engine)), fake_openai.stream(["Fifty ", "epochs."])
        )
        server_url = server.base_url
        trace = run(engine, QUESTION, fast("openai", server_url))
        bodies = server.bodies
    assert not trace.fallbacks and trace.locate.locator == "llm"
    assert trace.answer == "Fifty epochs."
    assert bodies[0]["response_format"] == {"type": "json_object"}  # locate asks for JSON
    assert "response_format" not in bodies[1]
    assert "structured output: openai: response_format json_object" in trace.locate.notes
    assert trace.provider["llm_provider"] == "openai"
    assert trace.provider["llm_endpoint"] == server_url
    for usage in (trace.locate.usage, trace.answer_usage):
        assert usage.input_tokens > 0 and usage.cost_known and usage.cost_usd == 0.0


def test_openai_without_json_mode_parses_text_and_notes_why(hashing_index) -> None:
    with fake_openai.FakeOpenAIServer(json_mode=False) as server:
        engine = _engine(hashing_index, "openai")
        server.push(fake_openai.reply("```json\n" + locate_json(engine) + "\n```"))
        trace = run(engine, QUESTION, fast("openai", server.base_url))
    assert trace.locate.locator == "llm" and not trace.fallbacks
    [note] = [n for n in trace.locate.notes if n.startswith("structured output")]
    assert "unsupported" in note and "parsed from the reply text" in note


def test_small_context_cuts_the_tree_and_the_trace_says_so(hashing_index) -> None:
    with fake_openai.FakeOpenAIServer() as server:
        engine = _engine(hashing_index, "openai")
        server.push(fake_openai.reply(locate_json(engine)))
        settings = fast("openai", server.base_url).set("llm.context_tokens", 2000)
        trace = run(engine, QUESTION, settings, scope=["test_paper.md"])
        prompt = server.requests[0].prompt_text
    notes = " | ".join(trace.locate.notes)
    assert "set by the model's context (2,000 tokens" in notes
    assert "the tree was cut after" in notes
    assert estimate_tokens(prompt) < 2000 - 1024


def test_tokens_without_a_price_are_shown_as_unknown_never_as_zero(hashing_index) -> None:
    from treerag_core.records.terminal import render_footer
    from treerag_core.records.trace_json import stage_summary, trace_from_json, trace_to_json

    with fake_openai.FakeOpenAIServer(include_usage=False) as server:  # reports no tokens
        engine = _engine(hashing_index, "openai")
        server.push(fake_openai.reply(locate_json(engine)), fake_openai.stream(["Fifty."]))
        trace = run(engine, QUESTION, fast("openai", server.base_url))
    assert not trace.fallbacks and not trace.answer_usage.cost_known
    rows = {row["stage"]: row for row in stage_summary(trace)}
    assert not rows["locate"]["cost_known"] and rows["retrieve"]["cost_known"]
    assert "cost unknown" in render_footer(trace) and "$0.0000" not in render_footer(trace)
    again = trace_from_json(trace_to_json(trace))
    assert not again.locate.usage.cost_known and not again.answer_usage.cost_known


def test_answer_prompt_beyond_the_context_falls_back_without_a_call(hashing_index) -> None:
    with fake_openai.FakeOpenAIServer() as server:
        engine = _engine(hashing_index, "openai")
        leaf = json.loads(locate_json(engine))["results"][0]["node_id"]
        settings = fast("openai", server.base_url).set("llm.context_tokens", 1200)
        trace = run(engine, QUESTION, settings, leaves=[leaf])  # step 1 by hand: no call
        calls = len(server.requests)
    assert [(f.stage, f.reason) for f in trace.fallbacks] == [("synthesize", "context_too_small")]
    assert calls == 0  # the answer prompt was never sent
    assert "[Source: " in trace.answer  # the extractive answer, every sentence cited
