"""Tests for treerag_core.llm with the real anthropic SDK against the local fake server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator

import anthropic
import pytest
from fake_anthropic import (
    FakeAnthropicServer,
    cut,
    delay,
    empty_stream,
    html_page,
    malformed,
    no_stop,
    reply,
    status,
    stream,
    stream_error,
)

from treerag_core.base.errors import LLMError
from treerag_core.base.settings import LLMSettings
from treerag_core.base.types import Usage
from treerag_core.llm import (
    SUMMARY_INPUT_CHARS,
    AnthropicClient,
    estimate_cost,
    make_client,
    price_for,
    summarize_batch,
)

KEY = "sk-ant-test-not-a-real-key-123"
HAIKU = "claude-haiku-4-5"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def client(server: FakeAnthropicServer) -> Callable[..., AnthropicClient]:
    def build(timeout: float = 5.0, max_retries: int = 0, key: str = KEY) -> AnthropicClient:
        return AnthropicClient(
            key, base_url=server.base_url, timeout=timeout, max_retries=max_retries
        )

    return build


def expect_reason(reason: str, call: Callable[[], object]) -> LLMError:
    with pytest.raises(LLMError) as info:
        call()
    assert info.value.reason == reason, str(info.value)
    assert KEY not in str(info.value)
    return info.value


# --- complete ---------------------------------------------------------------------------------


def test_complete_returns_text_usage_and_sends_a_cached_prefix(server, client) -> None:
    usage = {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 2000,
    }
    server.push(reply('{"thinking": "t", "results": []}', usage=usage))
    text, got = client().complete("TREE PREFIX\n\n", "用户问题: 什么?", HAIKU, 256)

    assert text == '{"thinking": "t", "results": []}'
    assert got == Usage(120, 30, 0, 2000, (120 * 1 + 30 * 5 + 2000 * 1.25) / 1e6, HAIKU)
    [request] = server.requests
    assert request.api_key == KEY
    assert request.body["model"] == HAIKU and request.body["max_tokens"] == 256
    assert request.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "TREE PREFIX\n\n", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "用户问题: 什么?"},
            ],
        }
    ]


def test_prefix_is_read_from_cache_on_the_next_question(server, client) -> None:
    llm = client()
    prefix = "[0001] Abstract (leaf)\n  Summary: ...\n\n" * 50
    _, first = llm.complete(prefix, "question one", HAIKU, 100)
    _, second = llm.complete(prefix, "another question", HAIKU, 100)
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    assert second.cost_usd < first.cost_usd


def test_complete_without_prefix_sends_one_plain_block(server, client) -> None:
    client().complete("", "just a question", HAIKU, 50)
    body = server.bodies[0]
    assert body["messages"][0]["content"] == [{"type": "text", "text": "just a question"}]


# --- stream -----------------------------------------------------------------------------------


def test_stream_yields_deltas_in_order_then_usage(server, client) -> None:
    chunks = ["AdaRouter ", "在EUR/USD上", "达到73.2%", " [来源: Experiments > Performance]"]
    server.push(stream(chunks, usage={"input_tokens": 900, "output_tokens": 40}))
    s = client().stream("请回答:", HAIKU, 1024)
    assert server.requests == []  # nothing is sent before the first next()

    assert list(s) == chunks
    assert s.done and s.text == "".join(chunks) and s.stop_reason == "end_turn"
    assert s.usage == Usage(900, 40, 0, 0, (900 * 1 + 40 * 5) / 1e6, HAIKU)
    assert server.bodies[0]["stream"] is True


def test_stream_stopped_early_still_reports_input_usage(server, client) -> None:
    server.push(stream(["one ", "two ", "three"], usage={"input_tokens": 500}))
    s = client().stream("prompt", HAIKU, 100)
    assert next(s) == "one "
    s.close()
    assert not s.done and s.text == "one " and s.usage.input_tokens == 500


def test_answer_cut_by_the_token_limit_is_truncated(server, client) -> None:
    server.push(reply("truncated answer", stop_reason="max_tokens"))
    s = client().stream("prompt", HAIKU, 4)
    err = expect_reason("truncated", lambda: "".join(s))
    assert "4 tokens" in str(err)
    assert s.text == "truncated answer" and s.stop_reason == "max_tokens" and not s.done
    server.push(reply('{"thinking": "t", "res', stop_reason="max_tokens"))
    expect_reason("truncated", lambda: client().complete("", "q", HAIKU, 4))


# --- errors -----------------------------------------------------------------------------------


def test_http_500_is_api_error_with_status(server, client) -> None:
    server.push(status(500))
    err = expect_reason("api_error", lambda: client().complete("", "q", HAIKU, 10))
    assert "HTTP 500" in str(err)


def test_http_529_overloaded_is_api_error(server, client) -> None:
    server.push(status(529))
    err = expect_reason("api_error", lambda: list(client().stream("q", HAIKU, 10)))
    assert "529" in str(err) and "overloaded_error" in str(err)


def test_http_429_is_rate_limit(server, client) -> None:
    server.push(status(429))
    expect_reason("rate_limit", lambda: client().complete("", "q", HAIKU, 10))


def test_retries_follow_max_retries(server, client) -> None:
    server.push(status(429), status(500, headers={"retry-after-ms": "1"}), reply("ok"))
    text, _ = client(max_retries=2).complete("", "q", HAIKU, 10)
    assert text == "ok" and len(server.requests) == 3


def test_slow_server_is_timeout(server, client) -> None:
    server.push(delay(60.0))
    start = time.perf_counter()
    err = expect_reason("timeout", lambda: client(timeout=0.5).complete("", "q", HAIKU, 10))
    assert "0.5 s" in str(err)
    # The client hung up on the held reply (seen by the server), long before it would come;
    # the bound is loose on purpose: the machine is shared.
    assert server.wait_for_disconnect(timeout=10) and len(server.requests) == 1
    assert time.perf_counter() - start < 30.0


def test_silence_in_the_middle_of_a_stream_is_timeout(server, client) -> None:
    server.push(reply("0123456789abcdef", pause=2.0))  # two deltas, 2 s apart
    s = client(timeout=0.5).stream("q", HAIKU, 10)
    assert next(s) == "01234567"
    expect_reason("timeout", lambda: next(s))
    assert s.text == "01234567" and s.usage.input_tokens > 0


def test_wrong_key_is_auth(server, client) -> None:
    err = expect_reason("auth", lambda: client(key="sk-wrong").complete("", "q", HAIKU, 10))
    assert "ANTHROPIC_API_KEY" in str(err) and "sk-wrong" not in str(err)


def test_closed_port_is_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = AnthropicClient(KEY, base_url=f"http://127.0.0.1:{port}", timeout=1.0, max_retries=0)
    err = expect_reason("connection", lambda: llm.complete("", "q", HAIKU, 10))
    assert str(port) in str(err)


def test_error_event_mid_stream(server, client) -> None:
    server.push(stream_error(["partial "], error_type="overloaded_error"))
    s = client().stream("q", HAIKU, 10)
    assert next(s) == "partial "
    err = expect_reason("api_error", lambda: next(s))
    assert "overloaded_error" in str(err)

    server.push(stream_error([], error_type="rate_limit_error", message="slow down"))
    expect_reason("rate_limit", lambda: list(client().stream("q", HAIKU, 10)))


def test_stream_without_stop_event_is_incomplete(server, client) -> None:
    server.push(no_stop(["AdaRouter was ", "trained for fif"]))
    s = client().stream("q", HAIKU, 100)
    err = expect_reason("incomplete", lambda: "".join(s))
    assert "stop event" in str(err) and s.text == "AdaRouter was trained for fif" and not s.done


def test_connection_closed_mid_stream_is_incomplete(server, client) -> None:
    server.push(cut(["AdaRouter was ", "trained for fif"]))
    s = client().stream("q", HAIKU, 100)
    expect_reason("incomplete", lambda: "".join(s))
    assert not s.done


def test_200_without_events_is_empty_response(server, client) -> None:
    server.push(empty_stream())
    expect_reason("empty_response", lambda: client().complete("", "q", HAIKU, 10))


def test_html_page_from_a_proxy_is_bad_response(server, client) -> None:
    server.push(html_page())
    err = expect_reason("bad_response", lambda: client().complete("", "q", HAIKU, 10))
    assert "HTML" in str(err)
    server.push(html_page(502))
    err = expect_reason("api_error", lambda: "".join(client().stream("q", HAIKU, 10)))
    assert "HTML page (Proxy login)" in str(err) and "<html" not in str(err)


def test_malformed_stream_data_is_bad_response(server, client) -> None:
    server.push(malformed())
    expect_reason("bad_response", lambda: "".join(client().stream("q", HAIKU, 10)))


@pytest.mark.parametrize(
    ("code", "reason"),
    [(403, "forbidden"), (404, "model_not_found"), (413, "too_large"), (400, "api_error")],
)
def test_http_status_reasons(server, client, code, reason) -> None:
    body = None
    if code == 404:
        body = {"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}
    server.push(status(code, body))
    expect_reason(reason, lambda: client().complete("", "q", HAIKU, 10))


def test_key_never_shows_in_errors_or_repr(server, client) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad {KEY}"}}
    server.push(status(400, body))
    llm = client()
    err = expect_reason("api_error", lambda: llm.complete("", "q", HAIKU, 10))
    assert "bad ***" in str(err)
    assert KEY not in repr(llm) and server.base_url in repr(llm)


# --- construction -----------------------------------------------------------------------------


def test_base_url_comes_from_the_environment(server, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    llm = AnthropicClient(KEY, timeout=5.0, max_retries=0)
    assert llm.base_url == server.base_url
    assert llm.complete("", "q", HAIKU, 10)[0] == "Fake answer."
    assert llm.sdk() is llm.sdk()  # built once


def test_make_client_needs_a_key(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    settings = LLMSettings(timeout=7.5, max_retries=1)
    assert make_client(settings, None) is None
    assert make_client(settings, "  ") is None
    llm = make_client(settings, KEY)
    assert llm is not None and llm.timeout == 7.5 and llm.max_retries == 1
    assert llm.sdk().max_retries == 1 and llm.base_url is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries")],
)
def test_bad_client_settings_are_rejected(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        AnthropicClient(KEY, **kwargs)
    with pytest.raises(ValueError, match="api_key"):
        AnthropicClient(" ")


def test_bad_call_arguments_are_rejected(client) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        client().complete("", "q", HAIKU, 0)
    with pytest.raises(ValueError, match="empty"):
        client().complete("", "", HAIKU, 10)


# --- cost -------------------------------------------------------------------------------------


def test_estimate_cost_per_model() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert estimate_cost(usage, "claude-haiku-4-5") == pytest.approx(6.0)
    assert estimate_cost(usage, "claude-sonnet-4-5") == pytest.approx(18.0)
    assert estimate_cost(usage, "claude-opus-4-1") == pytest.approx(90.0)
    cached = Usage(cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert estimate_cost(cached, "claude-sonnet-4-5") == pytest.approx(3 * 0.1 + 3 * 1.25)
    assert estimate_cost(usage, "claude-haiku-4-5-20251001") == pytest.approx(6.0)
    assert price_for("claude-haiku-4-5-20251001") == price_for("claude-haiku-4-5")
    assert estimate_cost(usage, "some-local-model") == 0.0
    assert price_for("claude-haiku-4") is None


# --- summaries --------------------------------------------------------------------------------


def test_summarize_batch_one_call(server, client) -> None:
    answer = {"0003": "立法目的和调整对象。", "0004": "自然人的权利能力。"}
    server.push(reply("```json\n" + json.dumps(answer, ensure_ascii=False) + "\n```"))
    items = [("0003", "第一条 为了保护民事主体的合法权益……"), ("0004", "自然人" * 2000)]
    got = summarize_batch(client(), items, "zh", HAIKU)

    assert got == answer
    [request] = server.requests
    prompt = request.body["messages"][0]["content"][0]["text"]
    assert "[0003]\n第一条 为了保护民事主体的合法权益……" in prompt
    assert "自然人" * (SUMMARY_INPUT_CHARS // 3) in prompt and "自然人" * 2000 not in prompt
    assert summarize_batch(client(), [], "zh", HAIKU) == {}
    assert len(server.requests) == 1


def test_summarize_batch_bad_reply_is_invalid_json(server, client) -> None:
    server.push(reply("I cannot summarise these."))
    expect_reason("invalid_json", lambda: summarize_batch(client(), [("a", "text")], "en", HAIKU))


# --- the fake server itself -------------------------------------------------------------------


def test_fake_server_answers_non_streaming_requests(server) -> None:
    server.push(reply("plain JSON reply", usage={"input_tokens": 11, "output_tokens": 3}))
    sdk = anthropic.Anthropic(api_key=KEY, base_url=server.base_url, max_retries=0)
    message = sdk.messages.create(
        model=HAIKU, max_tokens=10, messages=[{"role": "user", "content": "hello"}]
    )
    assert message.content[0].text == "plain JSON reply"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 3)
    assert server.requests[0].prompt_text == "hello"


def test_fake_server_responder_decides_when_the_script_is_empty() -> None:
    def responder(body: dict) -> object:
        prompt = body["messages"][0]["content"][-1]["text"]
        return reply("locate" if "问题" in prompt else "answer")

    with FakeAnthropicServer(responder=responder) as fake:
        llm = AnthropicClient(KEY, base_url=fake.base_url, max_retries=0)
        assert llm.complete("T", "用户问题: x", HAIKU, 10)[0] == "locate"
        assert "".join(llm.stream("other", HAIKU, 10)) == "answer"
