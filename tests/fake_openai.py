"""A scriptable local fake of the OpenAI chat-completions API (JSON and SSE), loopback only.

It speaks what Ollama, vLLM, LM Studio and llama.cpp's server speak: `POST
/v1/chat/completions` answered with `chat.completion.chunk` events, a final usage chunk
when `stream_options.include_usage` asks for it, then `data: [DONE]`; `GET /v1/models`.
Use it with the real `openai` SDK:

    with FakeOpenAIServer(reply("Hello"), status(500)) as server:
        client = openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0)

Behaviours are those of `fake_anthropic` (reply, stream, delay, no_stop, cut, empty_stream,
html_page, malformed), with `status` and `stream_error` in OpenAI's error shape. A stop
reason given as Anthropic's (end_turn, max_tokens) is sent as OpenAI's (stop, length).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fake_anthropic import (  # noqa: F401  (re-exported for tests)
    HTML_PAGE,
    Behaviour,
    ScriptedHandler,
    ScriptedServer,
    approx_tokens,
    cut,
    delay,
    empty_stream,
    html_page,
    malformed,
    no_stop,
    read_request,
    reply,
    stream,
)

FINISH = {"end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}
ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def status(code: int, body: Any = None, *, headers: Mapping[str, str] | None = None) -> Behaviour:
    """An HTTP error in OpenAI's error shape; 429 gets `retry-after: 0` by default."""
    if body is None:
        kind, error_code = ERRORS.get(code, ("server_error", None))
        message = f"fake {kind} ({code})"
        if code == 404:
            message = "The model `missing-model` does not exist or you do not have access to it."
        body = {"error": {"message": message, "type": kind, "param": None, "code": error_code}}
    default_headers = {"retry-after": "0", "retry-after-ms": "1"} if code == 429 else {}
    return Behaviour(
        "status", status=code, body=body, headers={**default_headers, **(headers or {})}
    )


def stream_error(
    chunks: Iterable[str] = (), *, message: str = "The server is overloaded"
) -> Behaviour:
    """Start a 200 stream, send these deltas, then a `data: {"error": ...}` chunk."""
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return Behaviour("stream_error", tuple(chunks), body=body)


class _Handler(ScriptedHandler):
    fake: FakeOpenAIServer
    server_version = "FakeOpenAI/1.0"

    def _handle(self) -> None:
        request = read_request(self)
        body = request.body
        self.fake.record(request)
        path = self.path.split("?")[0]
        try:
            if self.fake.api_key is not None and request.api_key != self.fake.api_key:
                self._act(status(401), body)
            elif self.command == "GET" and path == "/v1/models":
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.fake.models]
                self._send_json(200, {"object": "list", "data": data}, {})
            elif self.command != "POST" or path != "/v1/chat/completions":
                self._act(status(404, {"error": {"message": "404 page not found"}}), body)
            elif (
                not self.fake.json_mode
                and isinstance(body, dict)
                and body.get("response_format") is not None
            ):
                message = "response_format is not supported by this server"
                error = {"message": message, "type": "invalid_request_error"}
                self._send_json(400, {"error": {**error, "param": "response_format"}}, {})
            else:
                self._act(self.fake.next_behaviour(body), body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _usage(self, body: Any, text: str, override: Mapping[str, int] | None) -> dict[str, Any]:
        prompt = "".join(
            m.get("content", "") if isinstance(m.get("content"), str) else ""
            for m in (body or {}).get("messages", [])
        )
        usage: dict[str, Any] = {
            "prompt_tokens": approx_tokens(prompt),
            "completion_tokens": approx_tokens(text),
        }
        for key, value in (override or {}).items():  # Anthropic names accepted too
            name = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"}
            usage[name.get(key, key)] = value
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        cached = usage.pop("cache_read_input_tokens", 0)
        usage.pop("cache_creation_input_tokens", None)
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    def _reply_json(self, behaviour: Behaviour, body: dict[str, Any]) -> dict[str, Any]:
        text = "".join(behaviour.chunks)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": FINISH.get(behaviour.stop_reason, behaviour.stop_reason),
                }
            ],
            "usage": self._usage(body, text, behaviour.usage),
        }

    def _data(self, payload: Any) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        self.wfile.write(f"data: {text}\n\n".encode())
        self.wfile.flush()

    def _chunk(self, model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def _send_sse(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
        model = body.get("model", "fake")
        text = "".join(behaviour.chunks)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        if behaviour.kind == "cut":  # promise more than is sent: the client sees a cut body
            self.send_header("content-length", "1000000")
        self.end_headers()
        self._data(self._chunk(model, {"role": "assistant", "content": ""}, None))
        for i, piece in enumerate(behaviour.chunks):
            if i and behaviour.pause and self.fake._stopping.wait(behaviour.pause):
                return
            self._data(self._chunk(model, {"content": piece}, None))
        if behaviour.kind == "stream_error":
            self._data(behaviour.body)
            return
        if behaviour.kind == "malformed":
            self._data("{not json at all")
            return
        if behaviour.kind in ("no_stop", "cut"):
            return
        finish = FINISH.get(behaviour.stop_reason, behaviour.stop_reason)
        self._data(self._chunk(model, {}, finish))
        wants_usage = (body.get("stream_options") or {}).get("include_usage")
        if wants_usage and self.fake.include_usage:
            usage_chunk = {**self._chunk(model, {}, None), "choices": []}
            usage_chunk["usage"] = self._usage(body, text, behaviour.usage)
            self._data(usage_chunk)
        self._data("[DONE]")


class FakeOpenAIServer(ScriptedServer):
    """OpenAI's chat completions on 127.0.0.1; `base_url` ends in `/v1` as Ollama documents it.

    `api_key=None` accepts any key or none (a local server); `json_mode=False` answers a
    request carrying `response_format` with 400 (a server without JSON mode);
    `include_usage=False` never sends the usage chunk (an older server).
    """

    handler = _Handler
    thread_name = "fake-openai"
    url_path = "/v1"

    def __init__(
        self,
        *script: Behaviour,
        responder: Callable[[Any], Behaviour] | None = None,
        default: Behaviour | None = None,
        api_key: str | None = None,
        json_mode: bool = True,
        include_usage: bool = True,
        models: Iterable[str] = ("llama3.2", "qwen2.5:7b"),
    ) -> None:
        super().__init__(*script, responder=responder, default=default, api_key=api_key)
        self.json_mode = json_mode
        self.include_usage = include_usage
        self.models = tuple(models)
