"""The one place a provider name becomes a client; keys, endpoints and the connection test."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from treerag_core.errors import LLMError
from treerag_core.llm.base import LLMClient
from treerag_core.llm.errors import public_url
from treerag_core.names import Provider
from treerag_core.settings import LLMSettings

KEY_ENV = {Provider.ANTHROPIC: "ANTHROPIC_API_KEY", Provider.OPENAI: "OPENAI_API_KEY"}
BASE_URL_ENV = {Provider.ANTHROPIC: "ANTHROPIC_BASE_URL", Provider.OPENAI: "OPENAI_BASE_URL"}
DEFAULT_BASE_URL = {
    Provider.ANTHROPIC: "https://api.anthropic.com",
    Provider.OPENAI: "https://api.openai.com/v1",
}


def llm_settings_of(settings: Any) -> LLMSettings:
    """LLMSettings itself, or the `.llm` part of a QuerySettings."""
    if isinstance(settings, LLMSettings):
        return settings
    nested = getattr(settings, "llm", None)
    if isinstance(nested, LLMSettings):
        return nested
    raise TypeError(f"expected LLMSettings or QuerySettings, got {type(settings).__name__}")


MODEL_ENV = "TREERAG_LLM_MODEL"  # the model a custom server serves (it has no default)
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


def settings_from_env(env: Mapping[str, str] | None = None) -> LLMSettings:
    """LLMSettings as the environment suggests, before any flag or widget changes them.

    The provider is openai when only OpenAI variables (OPENAI_API_KEY, OPENAI_BASE_URL) are
    set, else anthropic. TREERAG_LLM_MODEL names both models (for openai: else gpt-4o-mini).
    """
    env = os.environ if env is None else env
    has_openai = bool(api_key_for(Provider.OPENAI, env) or env.get(BASE_URL_ENV[Provider.OPENAI]))
    provider = (
        Provider.OPENAI
        if has_openai and not api_key_for(Provider.ANTHROPIC, env)
        else Provider.ANTHROPIC
    )
    model = env.get(MODEL_ENV, "").strip()
    if provider == Provider.OPENAI:
        model = model or OPENAI_DEFAULT_MODEL
    if not model:
        return LLMSettings(provider=provider)
    return LLMSettings(provider=provider, locate_model=model, answer_model=model)


def api_key_for(provider: Provider | str, env: Mapping[str, str] | None = None) -> str | None:
    """The provider's key from the environment (ANTHROPIC_API_KEY / OPENAI_API_KEY), or None."""
    env = os.environ if env is None else env
    key = env.get(KEY_ENV[Provider.parse(str(provider))], "").strip()
    return key or None


def base_url_for(llm: LLMSettings, env: Mapping[str, str] | None = None) -> str | None:
    """The endpoint: the setting, else the provider's *_BASE_URL variable, else None (default)."""
    env = os.environ if env is None else env
    url = llm.base_url.strip() or env.get(BASE_URL_ENV[llm.provider], "").strip()
    return url or None


def endpoint_of(llm: LLMSettings, env: Mapping[str, str] | None = None) -> str:
    """The server a client for `llm` talks to, safe to show and record (no user:password)."""
    return public_url(base_url_for(llm, env) or DEFAULT_BASE_URL[llm.provider])


def llm_configured(
    llm: Any, api_key: str | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether an LLM would be called: enabled, and a key, or (OpenAI) a custom endpoint.

    `api_key` is a key typed in the UI; without it the provider's environment key is used.
    """
    llm = llm_settings_of(llm)
    if not llm.enabled:
        return False
    key = (api_key or "").strip() or api_key_for(llm.provider, env)
    if key:
        return True
    return llm.provider == Provider.OPENAI and base_url_for(llm, env) is not None


def resolve_key(llm: Any, typed: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The key to use: one typed in the UI, else the provider's from the environment."""
    return (typed or "").strip() or api_key_for(llm_settings_of(llm).provider, env)


def make_client(llm: Any, api_key: str | None) -> LLMClient | None:
    """A client for `llm` (LLMSettings; a QuerySettings is read for its LLM part), or None.

    None when the LLM is switched off or not configured (no key, and for OpenAI no endpoint
    either): callers then take their local path. `api_key` is used as given, never looked
    up here (pass `resolve_key(...)` for "typed, else the environment's"), so an engine
    built without a key never picks one up by surprise. The endpoint does come from the
    settings or the provider's *_BASE_URL variable. Only the chosen provider's SDK is
    imported.
    """
    llm = llm_settings_of(llm)
    key = (api_key or "").strip() or None
    if not llm.enabled or not (
        key or (llm.provider == Provider.OPENAI and base_url_for(llm) is not None)
    ):
        return None
    base_url = base_url_for(llm)
    if llm.provider == Provider.OPENAI:
        from treerag_core.llm.openai_provider import OpenAIClient

        return OpenAIClient(
            key, base_url=base_url, timeout=llm.timeout, max_retries=llm.max_retries
        )
    from treerag_core.llm.anthropic_provider import AnthropicClient

    return AnthropicClient(
        key or "", base_url=base_url, timeout=llm.timeout, max_retries=llm.max_retries
    )


PING_PROMPT = "Reply with the single word: ok"


def test_connection(llm: LLMSettings, api_key: str | None) -> str:
    """Ask the locate model for one word and say what answered, e.g. for the sidebar button.

    `api_key` is the typed key, or None for the provider's environment key.

    Returns "openai at http://127.0.0.1:11434/v1 · model llama3.2 · answered 'ok' in 412 ms
    · 9 in / 2 out tokens". A reply cut by the tiny token limit still proves the connection.

    Raises:
        LLMError: reason not_configured, or why the call failed.
    """
    client = make_client(llm, resolve_key(llm, api_key))
    if client is None:
        need = KEY_ENV[llm.provider]
        extra = " or a base URL" if llm.provider == Provider.OPENAI else ""
        why = "the LLM is switched off" if not llm.enabled else f"no key ({need}){extra}"
        raise LLMError(f"Not configured: {why}.", reason="not_configured")
    model = llm.locate_model
    started = time.perf_counter()
    stream = client.stream(PING_PROMPT, model, max_tokens=16)
    try:
        text = "".join(stream)
    except LLMError as exc:
        if exc.reason != "truncated":
            raise
        text = stream.text
    ms = (time.perf_counter() - started) * 1000
    usage = stream.usage
    said = " ".join(text.split())[:40]
    return (
        f"{client.name} · model {model} · answered {said!r} in {ms:,.0f} ms · "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens"
    )


test_connection.__test__ = False  # not a pytest test, despite its name
