"""The one place a provider name becomes a client; keys, endpoints and the connection test."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from treerag_core.base.errors import LLMError
from treerag_core.base.names import Provider
from treerag_core.base.settings import LLMSettings
from treerag_core.llm.base import LLMClient
from treerag_core.llm.endpoints import BASE_URL_ENV, DEFAULT_BASE_URL, KEY_ENV
from treerag_core.llm.errors import public_url


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


def server_endpoint(provider: Provider | str, env: Mapping[str, str] | None = None) -> str:
    """The endpoint the server's own key belongs to: *_BASE_URL, else the provider's API."""
    env = os.environ if env is None else env
    provider = Provider.parse(str(provider))
    return env.get(BASE_URL_ENV[provider], "").strip() or DEFAULT_BASE_URL[provider]


def _comparable(url: str) -> tuple[str, ...]:
    # Scheme and host are case-blind and a trailing slash changes nothing; the rest (user
    # info, port, path, query) must match exactly, so a near-miss counts as another server.
    parts = urlsplit(url.strip())
    return (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query)


def other_endpoint(llm: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The settings' base URL when it names another server than `server_endpoint`, else None.

    That is an endpoint someone typed (in the browser: anyone): the environment's key is
    never sent to it (`resolve_key`).
    """
    llm = llm_settings_of(llm)
    url = llm.base_url.strip()
    if not url or _comparable(url) == _comparable(server_endpoint(llm.provider, env)):
        return None
    return url


def resolve_key(llm: Any, typed: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The key to use: one typed in the UI, else the provider's from the environment, but
    the environment's key only for the server's own endpoint (`server_endpoint`).

    An endpoint typed in the browser gets the key typed with it, or none: the server's key
    would otherwise go to any URL a visitor names. `key_needed` says so for the UI.
    """
    typed = (typed or "").strip()
    if typed:
        return typed
    llm = llm_settings_of(llm)
    if other_endpoint(llm, env) is not None:
        return None
    return api_key_for(llm.provider, env)


def needs(provider: Provider | str, base_url: str = "a base URL") -> str:
    """What a client of `provider` needs: its key variable, or for an OpenAI-compatible
    server a base URL instead (`base_url` names how the caller sets one)."""
    provider = Provider.parse(str(provider))
    need = KEY_ENV[provider]
    return f"{need} or {base_url}" if provider == Provider.OPENAI else need


def key_needed(llm: Any, typed: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """Why the LLM cannot be used as set, when the cause is a typed endpoint without a
    typed key (Anthropic's API always needs one), else None."""
    llm = llm_settings_of(llm)
    if not llm.enabled or (typed or "").strip() or llm.provider != Provider.ANTHROPIC:
        return None
    url = other_endpoint(llm, env)
    if url is None:
        return None
    return (
        f"The endpoint {public_url(url)} needs a key typed with it: this server's "
        f"{KEY_ENV[llm.provider]}, if it has one, is sent only to the server's own endpoint "
        f"({public_url(server_endpoint(llm.provider, env))}). Type the key for this "
        "endpoint, or empty the endpoint field to use the server's."
    )


def llm_configured(
    llm: Any, api_key: str | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether an LLM would be called: enabled, and a key, or (OpenAI) a custom endpoint.

    `api_key` is a key typed in the UI; without it the provider's environment key is used,
    for the server's own endpoint only (`resolve_key`).
    """
    llm = llm_settings_of(llm)
    if not llm.enabled:
        return False
    if resolve_key(llm, api_key, env):
        return True
    return llm.provider == Provider.OPENAI and base_url_for(llm, env) is not None


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
            key,
            base_url=base_url,
            timeout=llm.timeout,
            max_retries=llm.max_retries,
            deadline=llm.deadline,
        )
    from treerag_core.llm.anthropic_provider import AnthropicClient

    return AnthropicClient(
        key or "",
        base_url=base_url,
        timeout=llm.timeout,
        max_retries=llm.max_retries,
        deadline=llm.deadline,
    )


PING_PROMPT = "Reply with the single word: ok"


def test_connection(llm: LLMSettings, api_key: str | None) -> str:
    """Ask the locate model for one word and say what answered, e.g. for the sidebar button.

    `api_key` is the typed key, or None for the provider's environment key (used for the
    server's own endpoint only: see `resolve_key`).

    Returns "openai at http://127.0.0.1:11434/v1 · model llama3.2 · answered 'ok' in 412 ms
    · 9 in / 2 out tokens". A reply cut by the tiny token limit still proves the connection.

    Raises:
        LLMError: reason key_needed (an endpoint named without its key: `key_needed`),
            not_configured, or why the call failed.
    """
    needed = key_needed(llm, api_key)
    if needed:
        raise LLMError(needed, reason="key_needed")
    client = make_client(llm, resolve_key(llm, api_key))
    if client is None:
        need = KEY_ENV[llm.provider]
        extra = needs(llm.provider)[len(need) :]
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
