"""Tests for treerag_core.llm.openai_provider with the real openai SDK against a local fake."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import openai
import pytest
from fake_openai import (
    FakeOpenAIServer,
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
from treerag_core.base.types import Usage
from treerag_core.llm import LLMClient, format_cost, structured_output_note, summarize_batch
from treerag_core.llm.openai_provider import OpenAIClient

KEY = "sk-openai-test-not-a-real-key-456"
LOCAL = "llama3.2"
MINI = "gpt-4o-mini"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def client(server: FakeOpenAIServer) -> Callable[..., OpenAIClient]:
    def build(timeout: float = 5.0, max_retries: int = 0, key: str | None = None) -> OpenAIClient:
        return OpenAIClient(key, base_url=server.base_url, timeout=timeout, max_retries=max_retries)

    return build


def expect_reason(reason: str, call: Callable[[], object]) -> LLMError:
    with pytest.raises(LLMError) as info:
        call()
    assert info.value.reason == reason, str(info.value)
    assert KEY not in str(info.value)
    return info.value


# --- replies ----------------------------------------------------------------------------------


def test_it_is_an_llm_client(client) -> None:
    llm = client()
    assert isinstance(llm, LLMClient)
    assert llm.provider == "openai" and llm.name.endswith("/v1")


def test_complete_streams_with_usage_chunk_and_local_model_costs_zero(server, client) -> None:
    server.push(reply("Fifty epochs.", usage={"prompt_tokens": 120, "completion_tokens": 4}))
    text, usage = client().complete("TREE\n\n", "question?", LOCAL, 64)
    assert text == "Fifty epochs."
    assert usage == Usage(120, 4, 0, 0, 0.0, LOCAL, True)  # unlisted model on 127.0.0.1: free
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.api_key == "no-key"  # a local server needs no key; the SDK wants one
    body = request.body
    assert body["messages"] == [{"role": "user", "content": "TREE\n\nquestion?"}]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 64 and "response_format" not in body


def test_stream_yields_deltas_then_usage_with_a_listed_price(server, client) -> None:
    chunks = ["AdaRouter ", "reaches 73.2%", " [Source: Results]"]
    server.push(stream(chunks, usage={"prompt_tokens": 1000, "completion_tokens": 30}))
    s = client(key=KEY).stream("answer:", MINI, 256)
    assert server.requests == []  # nothing is sent before the first next()
    assert list(s) == chunks and s.done and s.stop_reason == "stop"
    assert s.usage.cost_known and s.usage.cost_usd == pytest.approx((1000 * 0.15 + 30 * 0.6) / 1e6)
    assert server.requests[0].api_key == KEY


def test_cached_prompt_tokens_are_priced_as_cached(server, client) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 0, "cache_read_input_tokens": 800}
    server.push(reply("ok", usage=usage))
    _, got = client(key=KEY).complete("", "q", MINI, 10)
    assert (got.input_tokens, got.cache_read_tokens) == (200, 800)
    assert got.cost_usd == pytest.approx((200 * 0.15 + 800 * 0.075) / 1e6)


def test_server_without_usage_chunk_gives_tokens_unknown_not_zero_cost(client) -> None:
    with FakeOpenAIServer(include_usage=False) as fake:
        llm = OpenAIClient(None, base_url=fake.base_url, max_retries=0)
        text, usage = llm.complete("", "q", MINI, 10)
    assert text == "Fake answer." and not usage.cost_known
    assert format_cost(usage) == f"price unknown ({MINI})"


def test_unlisted_model_on_a_remote_host_has_no_price() -> None:
    from treerag_core.llm import priced

    usage = priced(Usage(100, 10), "some-hosted-model", "https://api.example.com/v1")
    assert not usage.cost_known and format_cost(usage) == "price unknown (some-hosted-model)"
    assert priced(Usage(100, 10), "some-hosted-model", "http://192.168.1.5:8000/v1").cost_known


# --- structured output ------------------------------------------------------------------------


def test_json_mode_sends_response_format(server, client) -> None:
    server.push(reply('{"results": []}'))
    llm = client()
    assert structured_output_note(llm, LOCAL) == ""
    llm.complete("", "Output JSON", LOCAL, 50, json_mode=True)
    assert server.bodies[0]["response_format"] == {"type": "json_object"}
    assert structured_output_note(llm, LOCAL) == "openai: response_format json_object"


def test_json_mode_rejected_falls_back_to_text_and_says_why() -> None:
    with FakeOpenAIServer(reply('```json\n{"a": 1}\n```'), json_mode=False) as fake:
        llm = OpenAIClient(None, base_url=fake.base_url, max_retries=0)
        text, _ = llm.complete("", "Output JSON", LOCAL, 50, json_mode=True)
        assert text == '```json\n{"a": 1}\n```'
        note = structured_output_note(llm, LOCAL)
        assert "unsupported" in note and "response_format" in note
        llm.complete("", "Output JSON", LOCAL, 50, json_mode=True)  # not asked again
        bodies = fake.bodies
    assert [("response_format" in b) for b in bodies] == [True, False, False]


def test_summaries_use_json_mode(server, client) -> None:
    server.push(reply('{"0003": "Training setup."}'))
    got = summarize_batch(client(), [("0003", "We train for 50 epochs.")], "en", LOCAL)
    assert got == {"0003": "Training setup."}
    assert server.bodies[0]["response_format"] == {"type": "json_object"}


# --- faults -----------------------------------------------------------------------------------


def test_stream_without_finish_reason_is_incomplete(server, client) -> None:
    server.push(no_stop(["AdaRouter was ", "trained for fif"]))
    s = client().stream("q", LOCAL, 100)
    err = expect_reason("incomplete", lambda: "".join(s))
    assert "stop event" in str(err) and s.text == "AdaRouter was trained for fif"


def test_answer_cut_by_length_is_truncated(server, client) -> None:
    server.push(reply("cut short", stop_reason="length"))
    s = client().stream("q", LOCAL, 3)
    expect_reason("truncated", lambda: "".join(s))
    assert s.stop_reason == "length" and not s.done


def test_connection_closed_mid_stream_is_incomplete(server, client) -> None:
    server.push(cut())
    expect_reason("incomplete", lambda: "".join(client().stream("q", LOCAL, 100)))


def test_200_without_events_is_empty_response(server, client) -> None:
    server.push(empty_stream())
    expect_reason("empty_response", lambda: client().complete("", "q", LOCAL, 10))


def test_html_page_is_bad_response(server, client) -> None:
    server.push(html_page())
    expect_reason("bad_response", lambda: client().complete("", "q", LOCAL, 10))
    server.push(html_page(502))
    err = expect_reason("api_error", lambda: client().complete("", "q", LOCAL, 10))
    assert "HTML page (Proxy login)" in str(err)


def test_malformed_stream_data_is_bad_response(server, client) -> None:
    server.push(malformed())
    expect_reason("bad_response", lambda: "".join(client().stream("q", LOCAL, 10)))


def test_error_chunk_mid_stream_is_api_error(server, client) -> None:
    server.push(stream_error(["partial "], message="overloaded"))
    s = client().stream("q", LOCAL, 10)
    assert next(s) == "partial "
    err = expect_reason("api_error", lambda: next(s))
    assert "overloaded" in str(err)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (400, "api_error"),
        (401, "auth"),
        (403, "forbidden"),
        (404, "model_not_found"),
        (413, "too_large"),
        (429, "rate_limit"),
        (500, "api_error"),
    ],
)
def test_http_status_reasons(server, client, code, reason) -> None:
    server.push(status(code))
    err = expect_reason(reason, lambda: client(key=KEY).complete("", "q", "missing-model", 10))
    if code == 404:
        assert "'missing-model'" in str(err)
    if code == 401:
        assert "OPENAI_API_KEY" in str(err)


def test_wrong_path_is_not_found() -> None:
    with FakeOpenAIServer() as fake:
        root = fake.base_url.removesuffix("/v1")  # forgot the /v1
        llm = OpenAIClient(None, base_url=root, max_retries=0)
        err = expect_reason("not_found", lambda: llm.complete("", "q", LOCAL, 10))
    assert "base URL" in str(err)


def test_slow_server_is_timeout(server, client) -> None:
    server.push(delay(60.0))
    start = time.perf_counter()
    err = expect_reason("timeout", lambda: client(timeout=0.5).complete("", "q", LOCAL, 10))
    assert "0.5 s" in str(err)
    # The client hung up on the held reply (seen by the server), long before it would come;
    # the bound is loose on purpose: the machine is shared.
    assert server.wait_for_disconnect(timeout=10) and len(server.requests) == 1
    assert time.perf_counter() - start < 30.0


def test_closed_port_is_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = OpenAIClient(None, base_url=f"http://127.0.0.1:{port}/v1", timeout=1.0, max_retries=0)
    err = expect_reason("connection", lambda: llm.complete("", "q", LOCAL, 10))
    assert str(port) in str(err)


def test_retries_follow_max_retries(server, client) -> None:
    server.push(status(503), reply("ok"))
    text, _ = client(max_retries=1).complete("", "q", LOCAL, 10)
    assert text == "ok" and len(server.requests) == 2


def test_key_never_shows_in_errors_or_repr(server, client) -> None:
    body = {"error": {"message": f"bad key {KEY}", "type": "invalid_request_error"}}
    server.push(status(400, body))
    llm = client(key=KEY)
    err = expect_reason("api_error", lambda: llm.complete("", "q", LOCAL, 10))
    assert "bad key ***" in str(err) and KEY not in repr(llm)


# --- construction and the fake ----------------------------------------------------------------


def test_hosted_openai_needs_a_key(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIClient(None)
    hosted = OpenAIClient(KEY)
    assert hosted.base_url is None and "api.openai.com" in hosted.name
    body = hosted._request(MINI, "q", 10, json_mode=False)
    assert body["max_completion_tokens"] == 10 and "max_tokens" not in body


def test_base_url_comes_from_the_environment(server, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    llm = OpenAIClient(None, max_retries=0)
    assert llm.complete("", "q", LOCAL, 10)[0] == "Fake answer."
    assert llm.sdk() is llm.sdk()


def test_fake_server_answers_non_streaming_requests_and_lists_models(server) -> None:
    server.push(reply("plain", usage={"prompt_tokens": 5, "completion_tokens": 1}))
    sdk = openai.OpenAI(api_key="x", base_url=server.base_url, max_retries=0)
    done = sdk.chat.completions.create(model=LOCAL, messages=[{"role": "user", "content": "hi"}])
    assert done.choices[0].message.content == "plain" and done.usage.prompt_tokens == 5
    assert [m.id for m in sdk.models.list()] == ["llama3.2", "qwen2.5:7b"]
