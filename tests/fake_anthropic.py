"""A scriptable local fake of Anthropic's Messages API (JSON and SSE streaming), loopback only.

Use it with the real SDK, through `base_url=` or the ANTHROPIC_BASE_URL environment variable:

    with FakeAnthropicServer(reply("Hello"), status(500)) as server:
        client = anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
        ...
        server.requests[0].body["messages"]

Each request takes the next scripted behaviour; when the script is empty, `responder(body)`
decides (if given), else `default` (a short fixed reply). Usage is computed from the prompt
(about 4 characters per token) and prompt caching is simulated: the first request with a
`cache_control` block reports `cache_creation_input_tokens`, a later identical prefix
reports `cache_read_input_tokens`.
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request; build it with reply/stream/status/delay/..."""

    kind: str  # reply | status | delay | stream_error | no_stop | cut | empty | html | malformed
    chunks: tuple[str, ...] = ()
    usage: Mapping[str, int] | None = None
    stop_reason: str = "end_turn"
    pause: float = 0.0  # seconds between streamed deltas
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    then: Behaviour | None = None
    error_type: str = "overloaded_error"


def _split(text: str, size: int = 8) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)


def reply(
    text: str,
    *,
    usage: Mapping[str, int] | None = None,
    stop_reason: str = "end_turn",
    pause: float = 0.0,
) -> Behaviour:
    """Answer with `text` (split into 8-character deltas when the request streams).

    `usage` overrides any of input_tokens, output_tokens, cache_read_input_tokens,
    cache_creation_input_tokens.
    """
    return Behaviour("reply", _split(text), usage, stop_reason, pause)


def stream(
    chunks: Iterable[str],
    *,
    usage: Mapping[str, int] | None = None,
    stop_reason: str = "end_turn",
    pause: float = 0.0,
) -> Behaviour:
    """Answer with exactly these text deltas (joined for a non-streaming request)."""
    return Behaviour("reply", tuple(chunks), usage, stop_reason, pause)


def status(code: int, body: Any = None, *, headers: Mapping[str, str] | None = None) -> Behaviour:
    """An HTTP error in Anthropic's error shape; 429 gets `retry-after: 0` by default."""
    if body is None:
        kind = ERROR_TYPES.get(code, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": f"fake {kind} ({code})"}}
    default_headers = {"retry-after": "0", "retry-after-ms": "1"} if code == 429 else {}
    return Behaviour(
        "status", status=code, body=body, headers={**default_headers, **(headers or {})}
    )


def delay(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """Wait before answering (with `then`, default a short reply): forces client timeouts."""
    return Behaviour("delay", seconds=seconds, then=then)


def stream_error(
    chunks: Iterable[str] = (), *, error_type: str = "overloaded_error", message: str = "Overloaded"
) -> Behaviour:
    """Start a 200 stream, send these deltas, then an SSE `error` event (as the API can)."""
    return Behaviour(
        "stream_error",
        tuple(chunks),
        body={"type": "error", "error": {"type": error_type, "message": message}},
        error_type=error_type,
    )


def no_stop(chunks: Iterable[str] = ("AdaRouter was ", "trained for fif")) -> Behaviour:
    """A 200 stream that sends these deltas and ends cleanly without its stop event."""
    return Behaviour("no_stop", tuple(chunks))


def cut(chunks: Iterable[str] = ("AdaRouter was ", "trained for fif")) -> Behaviour:
    """A 200 stream that promises more bytes (content-length) and closes the connection midway."""
    return Behaviour("cut", tuple(chunks))


def empty_stream() -> Behaviour:
    """A 200 event stream with no events at all."""
    return Behaviour("empty")


HTML_PAGE = (
    "<!DOCTYPE html><html><head><title>Proxy login</title></head>"
    "<body><h1>Please sign in</h1></body></html>"
)


def html_page(code: int = 200) -> Behaviour:
    """An HTML page (a proxy's login or error page) instead of an API reply."""
    return Behaviour("html", status=code, body=HTML_PAGE)


def malformed(chunks: Iterable[str] = ("The answer ",)) -> Behaviour:
    """A 200 stream whose deltas are followed by a `data:` line that is not JSON."""
    return Behaviour("malformed", tuple(chunks))


FAULT_KINDS = ("no_stop", "cut", "empty", "html", "malformed")


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or the raw text when it was not JSON

    @property
    def api_key(self) -> str | None:
        """The key the client sent (SDK 2.x: `Authorization: Bearer`; older: `x-api-key`)."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return self.headers.get("x-api-key")

    @property
    def prompt_text(self) -> str:
        """All text blocks of all messages, joined: what the model would read."""
        if not isinstance(self.body, dict):
            return ""
        texts: list[str] = []
        for message in self.body.get("messages", []):
            content = message.get("content", "")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.extend(b.get("text", "") for b in content if isinstance(b, dict))
        return "".join(texts)


def approx_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class ScriptedServer:
    """A ThreadingHTTPServer on 127.0.0.1 (free port) in a daemon thread; a context manager.

    Each request is recorded once and answered by the next scripted behaviour, else by
    `responder(body)`, else by `default`. Subclasses give the handler and the URL's path.
    """

    handler: type[BaseHTTPRequestHandler]
    thread_name = "fake-server"
    url_path = ""

    def __init__(
        self,
        *script: Behaviour,
        responder: Callable[[Any], Behaviour] | None = None,
        default: Behaviour | None = None,
        api_key: str | None = None,
    ) -> None:
        self._script: list[Behaviour] = list(script)
        self.responder = responder
        self.default = default or reply("Fake answer.")
        self.api_key = api_key  # when set, a request with any other key gets a 401
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0  # clients that hung up while a delay() held their reply
        self._hung_up = threading.Condition()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        self._stopping.clear()
        handler = type("_BoundHandler", (self.handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() returns within 50 ms
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in delay()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running: use start() or `with`")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{self.url_path}"

    # script and records --------------------------------------------------------------------

    def push(self, *behaviours: Behaviour) -> None:
        """Append behaviours to the script (consumed first in, first out)."""
        with self._lock:
            self._script.extend(behaviours)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    @property
    def disconnects(self) -> int:
        with self._hung_up:
            return self._disconnects

    def wait_for_disconnect(self, timeout: float) -> bool:
        """Whether a client hung up on a delayed reply within `timeout` seconds."""
        with self._hung_up:
            return self._hung_up.wait_for(lambda: self._disconnects > 0, timeout)

    def note_disconnect(self) -> None:
        with self._hung_up:
            self._disconnects += 1
            self._hung_up.notify_all()

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_behaviour(self, body: Any) -> Behaviour:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return self.default


def read_request(handler: BaseHTTPRequestHandler) -> RecordedRequest:
    """The request a handler is serving, its body parsed as JSON when it is JSON."""
    length = int(handler.headers.get("content-length") or 0)
    raw = handler.rfile.read(length).decode("utf-8", "replace") if length else ""
    try:
        body: Any = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        body = raw
    headers = {k.lower(): v for k, v in handler.headers.items()}
    return RecordedRequest(handler.command, handler.path, headers, body)


class ScriptedHandler(BaseHTTPRequestHandler):
    """What both fake APIs answer alike: behaviours other than a reply, and the plumbing.

    A subclass reads the request (`_handle`), shapes a whole reply (`_reply_json`) and a
    stream (`_send_sse`) in its API's format.
    """

    fake: ScriptedServer
    stream_error_status = 500  # a `stream_error` asked for without streaming
    json_headers: ClassVar[Mapping[str, str]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        raise NotImplementedError

    def _reply_json(self, behaviour: Behaviour, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _send_sse(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def _act(self, behaviour: Behaviour, body: Any) -> None:
        if behaviour.kind == "delay":
            if self._wait_unless_gone(behaviour.seconds):
                return
            self._act(behaviour.then or reply("Late answer."), body)
        elif behaviour.kind == "status":
            self._send_json(behaviour.status, behaviour.body, behaviour.headers)
        elif behaviour.kind == "html":
            self._send_raw(behaviour.status, "text/html; charset=utf-8", behaviour.body)
        elif behaviour.kind == "empty":
            self._send_raw(200, "text/event-stream", "")
        elif isinstance(body, dict) and body.get("stream"):
            self._send_sse(behaviour, body)
        elif behaviour.kind == "stream_error":
            self._send_json(self.stream_error_status, behaviour.body, {})
        else:
            self._send_json(200, self._reply_json(behaviour, body), {})

    def _wait_unless_gone(self, seconds: float) -> bool:
        """Sleep `seconds`; True when the server stops or the client hangs up first (counted,
        so a test sees a timeout as the client leaving, not as a wall-clock guess)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.fake._stopping.wait(min(left, 0.05)):
                return True
            if self._client_gone():
                self.fake.note_disconnect()
                return True
        return False

    def _client_gone(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _send_json(self, code: int, payload: Any, headers: Mapping[str, str]) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in {**self.json_headers, **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, code: int, content_type: str, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Handler(ScriptedHandler):
    fake: FakeAnthropicServer
    server_version = "FakeAnthropic/1.0"
    stream_error_status = 529  # "overloaded", as the API sends it
    json_headers: ClassVar[Mapping[str, str]] = {"request-id": "req_fake"}

    def _handle(self) -> None:
        request = read_request(self)
        body = request.body
        self.fake.record(request)
        try:
            if self.command != "POST" or self.path.split("?")[0] != "/v1/messages":
                self._act(status(404), body)
            elif self.fake.api_key is not None and request.api_key != self.fake.api_key:
                self._act(status(401), body)
            else:
                self._act(self.fake.next_behaviour(body), body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing left to answer

    def _reply_json(self, behaviour: Behaviour, body: dict[str, Any]) -> dict[str, Any]:
        text = "".join(behaviour.chunks)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": behaviour.stop_reason,
            "stop_sequence": None,
            "usage": self.fake._usage(body, text, behaviour.usage),
        }

    def _event(self, name: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _send_sse(self, behaviour: Behaviour, body: dict[str, Any]) -> None:
        message = self._reply_json(behaviour, body)
        usage = message["usage"]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake")
        if behaviour.kind == "cut":  # promise more than is sent: the client sees a cut body
            self.send_header("content-length", "1000000")
        self.end_headers()
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {**usage, "output_tokens": 1}
        self._event("message_start", {"type": "message_start", "message": start})
        self._event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        self._event("ping", {"type": "ping"})
        for i, chunk in enumerate(behaviour.chunks):
            if i and behaviour.pause and self.fake._stopping.wait(behaviour.pause):
                return
            delta = {"type": "text_delta", "text": chunk}
            self._event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
        if behaviour.kind == "stream_error":
            self._event("error", behaviour.body)
            return
        if behaviour.kind == "malformed":
            self.wfile.write(b"event: content_block_delta\ndata: {not json at all\n\n")
            self.wfile.flush()
            return
        if behaviour.kind in ("no_stop", "cut"):
            return
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": behaviour.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        self._event("message_stop", {"type": "message_stop"})


class FakeAnthropicServer(ScriptedServer):
    """Anthropic's Messages API; simulates prompt caching (see the module's docstring)."""

    handler = _Handler
    thread_name = "fake-anthropic"

    def __init__(self, *script: Behaviour, **kwargs: Any) -> None:
        super().__init__(*script, **kwargs)
        self._cache: set[str] = set()

    def _usage(self, body: Any, text: str, override: Mapping[str, int] | None) -> dict[str, int]:
        """Input tokens split into cached/uncached as the API reports them."""
        cache_read = cache_write = uncached = 0
        prefix_hash = hashlib.sha256()
        pending = 0  # tokens seen since the last cache breakpoint
        for message in body.get("messages", []) if isinstance(body, dict) else []:
            content = message.get("content", "")
            blocks = [{"text": content}] if isinstance(content, str) else content
            for block in blocks:
                block_text = block.get("text", "") if isinstance(block, dict) else ""
                prefix_hash.update(block_text.encode())
                pending += approx_tokens(block_text)
                if isinstance(block, dict) and block.get("cache_control"):
                    key = prefix_hash.hexdigest()
                    with self._lock:
                        hit = key in self._cache
                        self._cache.add(key)
                    if hit:
                        cache_read += pending
                    else:
                        cache_write += pending
                    pending = 0
        uncached += pending
        usage = {
            "input_tokens": uncached,
            "output_tokens": approx_tokens(text),
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        }
        usage.update(override or {})
        return usage
