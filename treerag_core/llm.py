"""The only module importing anthropic: calls, streaming, errors as LLMError, usage and cost."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2

from .errors import LLMError
from .prompts import build_summary_prompt, parse_summary_response
from .settings import LLMSettings
from .types import Language, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"


# ---------------------------------------------------------------------------------------------
# Prices and cost
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float


PRICES: dict[str, Price] = {
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-opus-4-1": Price(15.0, 75.0),
}
CACHE_READ_FACTOR = 0.1  # a cache hit costs a tenth of the input price
CACHE_WRITE_FACTOR = 1.25  # writing the 5-minute cache costs a quarter more than input


def price_for(model: str) -> Price | None:
    """The price of a model name or one of its dated snapshots; None when not in the table."""
    name = model.strip()
    if name in PRICES:
        return PRICES[name]
    # "claude-haiku-4-5-20251001" is a snapshot of "claude-haiku-4-5"; longest name wins.
    for known in sorted(PRICES, key=len, reverse=True):
        if name.startswith(known + "-"):
            return PRICES[known]
    return None


def estimate_cost(usage: Usage, model: str) -> float:
    """Estimated US dollars for `usage` on `model`, cache reads at 0.1x and writes at 1.25x.

    Returns 0.0 for a model not in `PRICES` (unknown means "not estimated", not "free").
    `usage.input_tokens` excludes cached tokens, as the API reports it.
    """
    price = price_for(model)
    if price is None:
        return 0.0
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.input * CACHE_READ_FACTOR
        + usage.cache_write_tokens * price.input * CACHE_WRITE_FACTOR
    )
    return dollars / 1_000_000


def _to_usage(sdk_usage: Any, model: str) -> Usage:
    counts = Usage(
        input_tokens=int(getattr(sdk_usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(sdk_usage, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(sdk_usage, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(sdk_usage, "cache_creation_input_tokens", 0) or 0),
        model=model,
    )
    return Usage(
        counts.input_tokens,
        counts.output_tokens,
        counts.cache_read_tokens,
        counts.cache_write_tokens,
        estimate_cost(counts, model),
        model,
    )


# ---------------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------------


class TextStream:
    """Text deltas of one streamed reply; `usage`, `text` and `stop_reason` are final at the end.

    Iterate it once (`for delta in s`), then read `s.usage`. The request starts on the first
    `next()`, not at construction. If the consumer stops early (or an error ends the stream)
    `usage` holds what the API had reported so far, so partial calls are still costed.
    """

    def __init__(
        self, client: AnthropicClient, content: list[dict[str, Any]], model: str, max_tokens: int
    ) -> None:
        self.model = model
        self.usage = Usage(model=model)
        self.text = ""
        self.stop_reason: str | None = None
        self.done = False
        self._gen = self._run(client, content, max_tokens)

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        return next(self._gen)

    def close(self) -> None:
        """Stop reading and release the connection."""
        self._gen.close()

    def _run(
        self, client: AnthropicClient, content: list[dict[str, Any]], max_tokens: int
    ) -> Iterator[str]:
        parts: list[str] = []
        with (
            client.translate_errors(),
            client.sdk().messages.stream(
                model=self.model,
                max_tokens=max_tokens,
                messages=[{"role": "user", "content": content}],
            ) as sdk_stream,
        ):
            try:
                for delta in sdk_stream.text_stream:
                    parts.append(delta)
                    yield delta
                final = sdk_stream.get_final_message()
                self.stop_reason = final.stop_reason
                self.done = True
            finally:
                self.text = "".join(parts)
                with contextlib.suppress(AssertionError):  # no message_start seen yet
                    self.usage = _to_usage(sdk_stream.current_message_snapshot.usage, self.model)
                client.add_usage(self.usage)


class AnthropicClient:
    """A thin seam over `anthropic.Anthropic`: two calls, typed errors, usage with cost.

    The SDK client is built lazily, once, and is safe to share across threads (Streamlit's
    `cache_resource`). The key is kept private and never appears in repr, logs or errors.
    `total_usage` accumulates every call made through this client.
    """

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not api_key or not api_key.strip():
            raise ValueError("api_key must be a non-empty string (set ANTHROPIC_API_KEY)")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, but got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, but got {max_retries}")
        self._api_key = api_key.strip()
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or None
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.total_usage = Usage()
        self._sdk: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"AnthropicClient(base_url={self.base_url or DEFAULT_BASE_URL!r}, "
            f"timeout={self.timeout}, max_retries={self.max_retries})"
        )

    def sdk(self) -> anthropic.Anthropic:
        """The SDK client, built on first use."""
        with self._lock:
            if self._sdk is None:
                self._sdk = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            return self._sdk

    def add_usage(self, usage: Usage) -> None:
        with self._lock:
            self.total_usage = self.total_usage + usage

    def complete(
        self,
        prompt_prefix: str,
        prompt_rest: str,
        model: str,
        max_tokens: int,
    ) -> tuple[str, Usage]:
        """One reply as text. `prompt_prefix` (if any) is sent as a prompt-cached block.

        Streams internally, so `timeout` bounds the silence between bytes rather than the
        whole reply.

        Raises:
            LLMError: reason timeout | rate_limit | api_error | connection | auth.
        """
        content: list[dict[str, Any]] = []
        if prompt_prefix:
            content.append(
                {"type": "text", "text": prompt_prefix, "cache_control": {"type": "ephemeral"}}
            )
        if prompt_rest:
            content.append({"type": "text", "text": prompt_rest})
        stream = self._open(content, model, max_tokens)
        text = "".join(stream)
        return text, stream.usage

    def stream(self, prompt: str, model: str, max_tokens: int) -> TextStream:
        """A streamed reply: iterate for text deltas, then read `.usage` (see TextStream).

        Raises (while iterating):
            LLMError: reason timeout | rate_limit | api_error | connection | auth.
        """
        return self._open([{"type": "text", "text": prompt}], model, max_tokens)

    def _open(self, content: list[dict[str, Any]], model: str, max_tokens: int) -> TextStream:
        if not content:
            raise ValueError("the prompt is empty: nothing to send to the model")
        if not model.strip():
            raise ValueError("model must be a model name such as 'claude-haiku-4-5'")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, but got {max_tokens}")
        # No temperature: SDK 2.12's Messages API no longer takes sampling parameters.
        return TextStream(self, content, model, max_tokens)

    @contextlib.contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Turn SDK and transport errors into LLMError with a short `reason`."""
        try:
            yield
        except anthropic.AuthenticationError as err:
            raise LLMError(
                "Anthropic rejected the API key (HTTP 401): check ANTHROPIC_API_KEY.",
                reason="auth",
            ) from err
        except anthropic.RateLimitError as err:
            raise LLMError(
                f"Anthropic rate limit (HTTP 429) after {self.max_retries} retries: wait a "
                "minute, or raise llm_max_retries.",
                reason="rate_limit",
            ) from err
        except anthropic.APIStatusError as err:
            raise self._status_error(err) from err
        except (anthropic.APITimeoutError, httpx2.TimeoutException) as err:
            raise LLMError(
                f"No reply from Anthropic within {self.timeout:g} s (llm_timeout): retry, or "
                "raise llm_timeout.",
                reason="timeout",
            ) from err
        except (anthropic.APIConnectionError, httpx2.TransportError) as err:
            raise LLMError(
                f"Cannot reach the Anthropic API at {self.base_url or DEFAULT_BASE_URL}: check "
                "the network or ANTHROPIC_BASE_URL.",
                reason="connection",
            ) from err
        except anthropic.AnthropicError as err:
            raise LLMError(
                self._scrub(f"Anthropic SDK error: {type(err).__name__}: {err}"),
                reason="api_error",
            ) from err

    def _status_error(self, err: anthropic.APIStatusError) -> LLMError:
        kind = err.type or ""
        detail = self._scrub(str(err.api_message or err.message))[:300]
        if err.status_code == 200:
            # An `error` event inside a 200 stream (e.g. overloaded_error mid-answer).
            reason = {"rate_limit_error": "rate_limit", "authentication_error": "auth"}.get(
                kind, "api_error"
            )
            return LLMError(f"Anthropic stream failed ({kind or 'error'}): {detail}", reason=reason)
        label = f"HTTP {err.status_code}" + (f", {kind}" if kind else "")
        return LLMError(f"Anthropic API error ({label}): {detail}", reason="api_error")

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***")


def make_client(llm: LLMSettings, api_key: str | None) -> AnthropicClient | None:
    """A client configured from the LLM settings, or None when there is no key (local mode)."""
    if not api_key or not api_key.strip():
        return None
    return AnthropicClient(api_key, timeout=llm.timeout, max_retries=llm.max_retries)


SUMMARY_INPUT_CHARS = 1200  # per section: enough for one sentence, bounds the cost


def summarize_batch(
    client: AnthropicClient,
    items: Sequence[tuple[str, str]],
    language: Language,
    model: str,
) -> dict[str, str]:
    """One call summarising each (key, text) section in one sentence: {key: summary}.

    Keys the model skipped are absent (callers keep their local summary for those).
    Section texts are clipped to SUMMARY_INPUT_CHARS.

    Raises:
        LLMError: an API failure, or reason "invalid_json" when the reply has no JSON object.
    """
    if not items:
        return {}
    clipped = [(key, text.strip()[:SUMMARY_INPUT_CHARS]) for key, text in items]
    prompt = build_summary_prompt(clipped, language)
    max_tokens = min(8192, 200 + 120 * len(items))
    text, _usage = client.complete("", prompt, model, max_tokens)
    return parse_summary_response(text, [key for key, _ in items])
