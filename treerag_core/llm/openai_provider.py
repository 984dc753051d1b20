"""The only module importing openai: chat completions on any OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import openai

from treerag_core.base.errors import LLMError
from treerag_core.base.names import Provider
from treerag_core.base.types import Usage
from treerag_core.llm import endpoints
from treerag_core.llm.base import SDKClient, TextStream, check_call
from treerag_core.llm.errors import clean_detail, malformed, sdk_error, status_error
from treerag_core.llm.prices import priced

# The variable names and the default endpoint are defined once, in endpoints.py.
DEFAULT_BASE_URL = endpoints.DEFAULT_BASE_URL[Provider.OPENAI]
KEY_ENV = endpoints.KEY_ENV[Provider.OPENAI]
BASE_URL_ENV = endpoints.BASE_URL_ENV[Provider.OPENAI]
# Local servers (Ollama, vLLM, llama.cpp) need no key, but the SDK insists on one; they
# ignore the Authorization header it becomes.
NO_KEY = "no-key"


def _to_usage(sdk_usage: Any) -> Usage:
    prompt = int(getattr(sdk_usage, "prompt_tokens", 0) or 0)
    details = getattr(sdk_usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),  # OpenAI counts cached tokens inside prompt_tokens
        output_tokens=int(getattr(sdk_usage, "completion_tokens", 0) or 0),
        cache_read_tokens=cached,
    )


def _json_mode_refused(exc: LLMError) -> bool:
    """A 400/422 (or an error naming response_format): the server may not know JSON mode."""
    text = str(exc)
    return exc.reason == "api_error" and (
        "response_format" in text or "HTTP 400" in text or "HTTP 422" in text
    )


class OpenAIClient(SDKClient[openai.OpenAI]):
    """A thin seam over `openai.OpenAI` chat completions: two calls, typed errors, usage.

    Works with OpenAI itself and with OpenAI-compatible servers (`base_url`, e.g. Ollama's
    `http://127.0.0.1:11434/v1`). The key may be empty for a local server. JSON mode is
    `response_format={"type": "json_object"}`; a server that rejects it is remembered per
    model and asked again without it (`structured_output` says so).
    """

    provider = "openai"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        api_key: str | None,
        *,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        deadline: float = 180.0,
    ) -> None:
        api_key = (api_key or "").strip()
        self.url_source = endpoints.url_source(base_url, BASE_URL_ENV, os.environ.get(BASE_URL_ENV))
        base_url = (base_url or os.environ.get(BASE_URL_ENV, "")).strip() or None
        if not api_key and base_url is None:
            raise ValueError(f"api_key is needed for OpenAI's own API (set {KEY_ENV})")
        super().__init__(api_key, base_url, timeout, max_retries, deadline)
        self._json_notes: dict[str, str] = {}

    def _build_sdk(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key=self._api_key or NO_KEY,
            base_url=self.base_url or DEFAULT_BASE_URL,  # SDK: the real URL
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def structured_output(self, model: str) -> str:
        """What JSON mode did for `model` on this server (empty before the first call)."""
        with self._lock:
            return self._json_notes.get(model, "")

    def _note_json(self, model: str, note: str) -> None:
        with self._lock:
            self._json_notes[model] = note

    def complete(
        self, prefix: str, rest: str, model: str, max_tokens: int, json_mode: bool = False
    ) -> tuple[str, Usage]:
        """One reply as text; `prefix` goes first so the server's prefix cache can reuse it.

        Streams internally, so `timeout` bounds the silence between bytes.

        Raises:
            LLMError: any reason of `base.REASONS` except invalid_json.
        """
        check_call([prefix, rest], model, max_tokens)
        prompt = prefix + rest
        if json_mode and "unsupported" not in self.structured_output(model):
            try:
                stream = self._open(prompt, model, max_tokens, json_mode=True)
                text = "".join(stream)
                self._note_json(model, "openai: response_format json_object")
                return text, stream.usage
            except LLMError as exc:
                if not _json_mode_refused(exc):
                    raise
                self._note_json(
                    model,
                    f"openai: JSON mode unsupported by this server ({exc}); JSON parsed from "
                    "the reply text",
                )
        stream = self._open(prompt, model, max_tokens, json_mode=False)
        text = "".join(stream)
        return text, stream.usage

    def stream(self, prompt: str, model: str, max_tokens: int) -> TextStream:
        """A streamed reply: iterate for text deltas, then read `.usage` (see TextStream)."""
        check_call([prompt], model, max_tokens)
        return self._open(prompt, model, max_tokens, json_mode=False)

    def _open(self, prompt: str, model: str, max_tokens: int, json_mode: bool) -> TextStream:
        return TextStream(model, lambda s: self._run(s, prompt, max_tokens, json_mode))

    def _request(self, model: str, prompt: str, max_tokens: int, json_mode: bool) -> dict:
        args: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's own newer models take only max_completion_tokens; compatible servers
        # (Ollama, vLLM, llama.cpp, LM Studio) all take max_tokens.
        args["max_completion_tokens" if self.base_url is None else "max_tokens"] = max_tokens
        if json_mode:
            args["response_format"] = {"type": "json_object"}
        return args

    def _run(self, out: TextStream, prompt: str, max_tokens: int, json_mode: bool) -> Iterator[str]:
        parts: list[str] = []
        events = 0
        finish: str | None = None
        reported = False
        content_type = ""
        started = time.monotonic()
        try:
            with self.translate_errors():
                sdk_stream = self.sdk().chat.completions.create(
                    **self._request(out.model, prompt, max_tokens, json_mode)
                )
                content_type = sdk_stream.response.headers.get("content-type", "")
                with sdk_stream:
                    for chunk in sdk_stream:
                        self.check_deadline(started)
                        events += 1
                        if getattr(chunk, "usage", None) is not None:
                            out.usage = _to_usage(chunk.usage)
                            reported = True
                        for choice in chunk.choices or ():
                            delta = getattr(choice.delta, "content", None)
                            if delta:
                                parts.append(delta)
                                yield delta
                            if choice.finish_reason:
                                finish = out.stop_reason = choice.finish_reason
        finally:
            out.text = "".join(parts)
            # A server without usage chunks: the tokens are unknown, so is the cost.
            out.usage = priced(out.usage, out.model, self.base_url, reported)
        label = f"OpenAI-compatible server at {self.where}"
        out.finish(label, events, content_type, max_tokens, stopped=finish is not None)

    @contextlib.contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Turn SDK and transport errors into LLMError with a short `reason`."""
        where = self.where
        unreachable = (
            f"Cannot reach the OpenAI-compatible server at {where}: is it running? Check "
            f"the base URL ({self.url_source})."
        )
        try:
            with self.transport_errors(
                where,
                unreachable,
                openai.APIStatusError,
                openai.APITimeoutError,
                openai.APIConnectionError,
                hint=" (a local model may need longer to load)",
                unwrap_cut=True,  # the SDK wraps a cut stream
            ):
                yield
        except json.JSONDecodeError as err:
            raise malformed(where, "not JSON") from err
        except openai.APIError as err:
            # An error chunk inside a 200 stream.
            detail = clean_detail(str(err.message), self._api_key)
            raise LLMError(f"{where}: the stream failed: {detail}", reason="api_error") from err
        except openai.OpenAIError as err:
            raise sdk_error("OpenAI", err, self._api_key) from err

    def _status_error(self, err: openai.APIStatusError) -> LLMError:
        body = err.body if isinstance(err.body, dict) else {}
        error = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
        kind = str(error.get("code") or error.get("type") or "")
        message = error.get("message") or err.message
        if not error and err.response is not None:
            with contextlib.suppress(Exception):
                message = err.response.text or message
        detail = clean_detail(str(message), self._api_key)
        model = ""
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            model = json.loads(err.request.content or b"{}").get("model", "")
        label = f"OpenAI-compatible server at {self.where}"
        return status_error(label, err.status_code, kind, detail, model, KEY_ENV)
