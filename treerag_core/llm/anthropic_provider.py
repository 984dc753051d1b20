"""The only module importing anthropic: Messages API calls, streaming, errors as LLMError."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import anthropic

from treerag_core.base.errors import LLMError
from treerag_core.base.names import Provider
from treerag_core.base.types import Usage
from treerag_core.llm import endpoints
from treerag_core.llm.base import SDKClient, TextStream, check_call
from treerag_core.llm.errors import clean_detail, malformed, sdk_error, status_error
from treerag_core.llm.prices import priced

# The variable names and the default endpoint are defined once, in endpoints.py.
DEFAULT_BASE_URL = endpoints.DEFAULT_BASE_URL[Provider.ANTHROPIC]
KEY_ENV = endpoints.KEY_ENV[Provider.ANTHROPIC]
BASE_URL_ENV = endpoints.BASE_URL_ENV[Provider.ANTHROPIC]


def _to_usage(sdk_usage: Any) -> Usage:
    return Usage(
        input_tokens=int(getattr(sdk_usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(sdk_usage, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(sdk_usage, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(sdk_usage, "cache_creation_input_tokens", 0) or 0),
    )


class AnthropicClient(SDKClient[anthropic.Anthropic]):
    """A thin seam over `anthropic.Anthropic`: two calls, typed errors, usage with cost."""

    provider = "anthropic"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        deadline: float = 180.0,
    ) -> None:
        if not api_key or not api_key.strip():
            raise ValueError(f"api_key must be a non-empty string (set {KEY_ENV})")
        self.url_source = endpoints.url_source(base_url, BASE_URL_ENV, os.environ.get(BASE_URL_ENV))
        base_url = base_url or os.environ.get(BASE_URL_ENV, "").strip() or None
        super().__init__(api_key.strip(), base_url, timeout, max_retries, deadline)

    def _build_sdk(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def structured_output(self, model: str) -> str:
        """Anthropic's Messages API has no JSON mode here: replies are parsed from text."""
        return "anthropic: no JSON mode on the Messages API; JSON parsed from the reply text"

    def complete(
        self, prefix: str, rest: str, model: str, max_tokens: int, json_mode: bool = False
    ) -> tuple[str, Usage]:
        """One reply as text. `prefix` (if any) is sent as a prompt-cached block.

        Streams internally, so `timeout` bounds the silence between bytes rather than the
        whole reply. `json_mode` changes nothing here (see `structured_output`).

        Raises:
            LLMError: any reason of `base.REASONS` except invalid_json.
        """
        content: list[dict[str, Any]] = []
        if prefix:
            content.append({"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}})
        if rest:
            content.append({"type": "text", "text": rest})
        check_call([prefix, rest], model, max_tokens)
        stream = TextStream(model, lambda s: self._run(s, content, max_tokens))
        text = "".join(stream)
        return text, stream.usage

    def stream(self, prompt: str, model: str, max_tokens: int) -> TextStream:
        """A streamed reply: iterate for text deltas, then read `.usage` (see TextStream)."""
        check_call([prompt], model, max_tokens)
        # No temperature: SDK 2.12's Messages API no longer takes sampling parameters.
        content = [{"type": "text", "text": prompt}]
        return TextStream(model, lambda s: self._run(s, content, max_tokens))

    def _run(
        self, out: TextStream, content: list[dict[str, Any]], max_tokens: int
    ) -> Iterator[str]:
        parts: list[str] = []
        events = 0
        stopped = False
        content_type = ""
        started = time.monotonic()
        with (
            self.translate_errors(),
            self.sdk().messages.stream(
                model=out.model,
                max_tokens=max_tokens,
                messages=[{"role": "user", "content": content}],
            ) as sdk_stream,
        ):
            try:
                content_type = sdk_stream.response.headers.get("content-type", "")
                # Raw events, not `text_stream`: the stop event must be seen, not assumed.
                for event in sdk_stream:
                    self.check_deadline(started)
                    events += 1
                    kind = event.type
                    if kind == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                        yield event.delta.text
                    elif kind == "message_delta":
                        out.stop_reason = event.delta.stop_reason
                    elif kind == "message_stop":
                        stopped = True
            finally:
                out.text = "".join(parts)
                reported = False
                with contextlib.suppress(AssertionError):  # no message_start seen yet
                    sdk_usage = sdk_stream.current_message_snapshot.usage
                    out.usage = _to_usage(sdk_usage)
                    reported = True
                out.usage = priced(out.usage, out.model, self.base_url, reported)
        out.finish(f"Anthropic at {self.where}", events, content_type, max_tokens, stopped=stopped)

    @contextlib.contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Turn SDK and transport errors into LLMError with a short `reason`."""
        where = self.where
        unreachable = (
            f"Cannot reach the Anthropic API at {where}: check the network or {self.url_source}."
        )
        try:
            with self.transport_errors(
                f"Anthropic at {where}",
                unreachable,
                anthropic.APIStatusError,
                anthropic.APITimeoutError,
                anthropic.APIConnectionError,
            ):
                yield
        except (json.JSONDecodeError, AssertionError) as err:
            # Malformed `data:` lines, or events out of order (a delta before message_start).
            raise malformed(f"Anthropic at {where}", type(err).__name__) from err
        except anthropic.AnthropicError as err:
            raise sdk_error("Anthropic", err, self._api_key) from err

    def _status_error(self, err: anthropic.APIStatusError) -> LLMError:
        kind = getattr(err, "type", None) or ""
        detail = clean_detail(str(err.api_message or err.message), self._api_key)
        if err.status_code == 200:
            # An `error` event inside a 200 stream (e.g. overloaded_error mid-answer).
            reason = {"rate_limit_error": "rate_limit", "authentication_error": "auth"}.get(
                kind, "api_error"
            )
            return LLMError(f"Anthropic stream failed ({kind or 'error'}): {detail}", reason=reason)
        label = f"Anthropic at {self.where}"
        model = ""
        if err.request is not None:
            with contextlib.suppress(ValueError, AttributeError):
                model = json.loads(err.request.content or b"{}").get("model", "")
        return status_error(label, err.status_code, kind, detail, model, KEY_ENV)
