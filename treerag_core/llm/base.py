"""The LLM client interface every caller codes against, and the stream every provider returns."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import httpx2

from treerag_core.base.errors import LLMError
from treerag_core.base.types import Usage
from treerag_core.llm.errors import cut_reply, no_reply, public_url

# Why a reply was refused or failed, as `LLMError.reason` (the trace's Fallback.reason).
REASONS: dict[str, str] = {
    "connection": "the server could not be reached",
    "timeout": "no reply within the time-out",
    "auth": "the key was rejected (401)",
    "forbidden": "the key may not use this (403)",
    "model_not_found": "the model does not exist on this server (404)",
    "not_found": "wrong endpoint path (404)",
    "too_large": "the request is too large (413)",
    "rate_limit": "rate limited (429)",
    "api_error": "the server answered with an error",
    "bad_response": "not an answer (an HTML page, or malformed stream data)",
    "empty_response": "a 200 reply without any event",
    "incomplete": "the stream ended before its stop event",
    "truncated": "the answer was cut by the token limit",
    "invalid_json": "the reply holds no usable JSON",
    "context_too_small": "the model's context cannot hold the prompt",
}


# The stop reasons that say the token limit cut the reply: Anthropic's, OpenAI's.
TOKEN_LIMIT_STOPS = ("max_tokens", "length")


class TextStream:
    """Text deltas of one streamed reply; `usage`, `text` and `stop_reason` are final at the end.

    Iterate it once (`for delta in s`), then read `s.usage`. The request starts on the first
    `next()`, not at construction. A reply that ends without its stop event, or is cut by the
    token limit, raises LLMError at the end: nothing incomplete is ever a final answer. If the
    consumer stops early (or an error ends the stream) `usage` holds what the server had
    reported so far, so partial calls are still costed.
    """

    def __init__(self, model: str, run: Callable[[TextStream], Iterator[str]]) -> None:
        self.model = model
        self.usage = Usage(model=model)
        self.text = ""
        self.stop_reason: str | None = None
        self.done = False
        self._gen = run(self)

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        return next(self._gen)

    def close(self) -> None:
        """Stop reading and release the connection."""
        self._gen.close()

    def finish(
        self, label: str, events: int, content_type: str, max_tokens: int, *, stopped: bool
    ) -> None:
        """Mark the stream done once `check_finished` found it a complete reply (`stopped`:
        the stop event was seen; `truncated` comes from `stop_reason`)."""
        check_finished(
            label,
            events=events,
            stopped=stopped,
            stop_reason=self.stop_reason,
            truncated=self.stop_reason in TOKEN_LIMIT_STOPS,
            text=self.text,
            max_tokens=max_tokens,
            content_type=content_type,
        )
        self.done = True


@runtime_checkable
class LLMClient(Protocol):
    """What every LLM use (locate, summaries, graph extraction, reports, answers) calls.

    `provider` is the API spoken ("anthropic" | "openai"); `name` says which server, for
    traces and the explorer. Both calls raise LLMError (see REASONS) and never return a
    reply that was cut short.
    """

    provider: str
    name: str

    def complete(
        self, prefix: str, rest: str, model: str, max_tokens: int, json_mode: bool = False
    ) -> tuple[str, Usage]:
        """One whole reply. `prefix` is the cacheable part of the prompt (may be "").

        `json_mode` asks for a JSON object where the server supports it; callers still
        parse the reply robustly (`structured_output_note` says what happened).
        """
        ...

    def stream(self, prompt: str, model: str, max_tokens: int) -> TextStream:
        """A streamed reply: iterate for text deltas, then read `.usage`."""
        ...


def structured_output_note(client: object, model: str) -> str:
    """What a client did with `json_mode` for `model` (empty when it has nothing to say)."""
    note = getattr(client, "structured_output", None)
    return note(model) if callable(note) else ""


def check_call(prompt_parts: list[str], model: str, max_tokens: int) -> None:
    """The argument checks every provider shares (bad calls are the caller's bug)."""
    if not any(part for part in prompt_parts):
        raise ValueError("the prompt is empty: nothing to send to the model")
    if not model.strip():
        raise ValueError("model must be a model name such as 'claude-haiku-4-5' or 'llama3.2'")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, but got {max_tokens}")


def check_finished(
    label: str,
    *,
    events: int,
    stopped: bool,
    stop_reason: str | None,
    truncated: bool,
    text: str,
    max_tokens: int,
    content_type: str = "",
) -> None:
    """Raise LLMError unless the stream was a complete reply (shared by every provider).

    `events` counts parsed stream events, `stopped` says the provider's stop/finish event
    was seen, `truncated` that it named the token limit.
    """
    kind = content_type.split(";")[0].strip().lower()
    if kind == "text/html":
        raise LLMError(
            f"{label} answered with an HTML page, not an event stream: a proxy, a login page "
            "or a wrong base URL?",
            reason="bad_response",
        )
    if events == 0:
        raise LLMError(
            f"{label} answered 200 with no stream events"
            + (f" (content-type {kind})" if kind else "")
            + ": wrong base URL, or a server that does not stream?",
            reason="empty_response",
        )
    if not stopped:
        raise LLMError(
            f"{label}'s stream ended without its stop event after {len(text)} characters: "
            "the reply is incomplete and was not used.",
            reason="incomplete",
        )
    if truncated:
        raise LLMError(
            f"{label}'s reply was cut by the token limit ({max_tokens} tokens, stop reason "
            f"{stop_reason}) after {len(text)} characters: not used as a final answer.",
            reason="truncated",
        )


def caused_by(err: BaseException, kind: type[BaseException]) -> bool:
    """True when `err` or any error it was raised from (cause or context) is a `kind`."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


SDK = TypeVar("SDK")


class SDKClient(Generic[SDK]):
    """What both providers share: checked settings, a public endpoint name, a lazy SDK client.

    The SDK client is built once, on first use, and is safe to share across threads
    (Streamlit's `cache_resource`). The key stays private: never in repr, logs or errors.
    """

    provider: str
    default_base_url: str

    def __init__(
        self,
        api_key: str,
        base_url: str | None,
        timeout: float,
        max_retries: int,
        deadline: float = 180.0,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, but got {timeout}")
        if deadline <= 0:
            raise ValueError(f"deadline must be > 0 seconds, but got {deadline}")
        self.deadline = float(deadline)
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, but got {max_retries}")
        self._api_key = api_key
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self._sdk: SDK | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        """The endpoint as shown in names, messages and traces (no user:password)."""
        return public_url(self.base_url or self.default_base_url)

    @property
    def name(self) -> str:
        return f"{self.provider} at {self.where}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.where!r}, "
            f"timeout={self.timeout}, max_retries={self.max_retries})"
        )

    def check_deadline(self, started: float) -> None:
        """Raise a time-out LLMError once the call begun at `started` (time.monotonic()) is
        past `deadline`: checked on every stream event, so a server that streams slowly but
        steadily cannot hold a call longer than the deadline and one event."""
        if time.monotonic() - started > self.deadline:
            raise LLMError(
                f"No complete reply from {self.where} within {self.deadline:g} s (the deadline "
                "of one call): the partial reply was not used; raise the deadline "
                "(--llm-deadline) for a slow model.",
                reason="timeout",
            )

    @contextlib.contextmanager
    def transport_errors(
        self,
        label: str,
        unreachable: str,
        sdk_status: type[BaseException],
        sdk_timeout: type[BaseException],
        sdk_connection: type[BaseException],
        *,
        hint: str = "",
        unwrap_cut: bool = False,
    ) -> Iterator[None]:
        """The part of both providers' error translation that is the same: an HTTP status
        error (`_status_error`), no reply in time, a cut stream, an unreachable server
        (`unreachable` is the message). `unwrap_cut`: a connection error caused by a cut
        stream is a cut reply (the OpenAI SDK wraps it)."""
        try:
            yield
        except sdk_status as err:
            raise self._status_error(err) from err
        except (sdk_timeout, httpx2.TimeoutException) as err:
            raise no_reply(label, self.timeout, hint) from err
        except httpx2.RemoteProtocolError as err:
            raise cut_reply(label) from err
        except (sdk_connection, httpx2.TransportError) as err:
            if unwrap_cut and caused_by(err, httpx2.RemoteProtocolError):
                raise cut_reply(label) from err
            raise LLMError(unreachable, reason="connection") from err

    def _status_error(self, err: Any) -> LLMError:
        """The LLMError for the SDK's HTTP status error `err` (each provider reads its own)."""
        raise NotImplementedError

    def sdk(self) -> SDK:
        """The SDK client, built on first use."""
        with self._lock:
            if self._sdk is None:
                self._sdk = self._build_sdk()
            return self._sdk

    def _build_sdk(self) -> SDK:
        raise NotImplementedError
