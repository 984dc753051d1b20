"""The sidebar block choosing the LLM: provider, endpoint, models, key, context, connection test."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import streamlit as st

from treerag_core import LLM_BASE_URL_ENV as BASE_URL_ENV
from treerag_core import LLM_DEFAULT_BASE_URL as DEFAULT_BASE_URL
from treerag_core import LLM_KEY_ENV as KEY_ENV
from treerag_core import api_key_for, llm_configured, public_url
from treerag_core import llm_endpoint_of as endpoint_of
from treerag_core import llm_key_needed as key_needed
from treerag_core import llm_server_endpoint as server_endpoint
from treerag_core import llm_settings_from_env as settings_from_env
from treerag_core import make_llm_client as make_client
from treerag_core import other_llm_endpoint as other_endpoint
from treerag_core import resolve_llm_key as resolve_key
from treerag_core import test_llm_connection as test_connection
from treerag_core.base.errors import LLMError
from treerag_core.base.names import Provider
from treerag_core.base.settings import LLMSettings, settings_info

KEEP = "session"  # values survive a visit to another page (the key too: memory only)
LABELS = {
    Provider.ANTHROPIC: "Anthropic",
    Provider.OPENAI: "OpenAI-compatible (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)",
}
# Defaults per provider; a local OpenAI-compatible server serves whatever its user pulled.
DEFAULTS: dict[Provider, dict[str, Any]] = {
    Provider.ANTHROPIC: {
        "locate_model": LLMSettings.locate_model,
        "answer_model": LLMSettings.answer_model,
        "context_tokens": 200_000,
    },
    Provider.OPENAI: {
        "locate_model": "gpt-4o-mini",
        "answer_model": "gpt-4o-mini",
        "context_tokens": 128_000,
    },
}


def _label(field: str) -> str:
    """An LLM setting's on-screen label, from its SettingInfo (the CLI's help reads it too)."""
    return settings_info(f"llm.{field}").label


def llm_panel(
    container: Any = None,
    *,
    prefix: str = "llm_",
    env: Mapping[str, str] | None = None,
    base: LLMSettings | None = None,
) -> tuple[LLMSettings, str | None]:
    """Draw the LLM block (in the sidebar by default) and return (settings, typed key or None).

    The key lives in this browser session's memory only (st.session_state), never in the
    settings, a trace or on disk; None means "use the server's environment key, if any".
    `base` carries the fields the block does not show (time-out, retries). All widget keys
    start with `prefix`.
    """
    box = st.sidebar if container is None else container
    env = os.environ if env is None else env
    ss = st.session_state
    base = base or LLMSettings()
    start = settings_from_env(env)  # e.g. OPENAI_BASE_URL alone selects openai
    ss.setdefault(f"{prefix}provider", start.provider.value)
    box.subheader("LLM")
    # On by default only when the server has a key or an endpoint: with neither, a question
    # would run locally anyway, and an "on" toggle would claim otherwise.
    server_has_llm = llm_configured(start.with_(enabled=True), None, env)
    enabled = box.toggle(
        _label("enabled"), key=f"{prefix}enabled", value=server_has_llm, persist_state=KEEP
    )
    if not enabled and not server_has_llm:
        box.caption(
            f"Off: this server has no {KEY_ENV[start.provider]} and no LLM endpoint. Type a "
            "key (or an OpenAI-compatible endpoint) below to switch it on for this session."
        )
    provider = Provider.parse(
        box.selectbox(
            _label("provider"),
            Provider.values(),
            key=f"{prefix}provider",
            format_func=lambda value: LABELS[Provider.parse(value)],
            persist_state=KEEP,
        )
    )
    env_url = env.get(BASE_URL_ENV[provider], "").strip()
    base_url = box.text_input(
        _label("base_url"),
        key=f"{prefix}base_url_{provider}",
        placeholder=public_url(env_url or DEFAULT_BASE_URL[provider]),
        help=f"Empty: {BASE_URL_ENV[provider]} if set, else {DEFAULT_BASE_URL[provider]}. "
        "An endpoint typed here is sent only the key typed below, never the server's. "
        "Ollama: http://127.0.0.1:11434/v1 · vLLM: http://127.0.0.1:8000/v1",
        on_change=_switch_on,
        args=(f"{prefix}base_url_{provider}", f"{prefix}enabled"),
        persist_state=KEEP,
    )
    models = {}
    for field in ("locate_model", "answer_model"):
        widget = f"{prefix}{field}_{provider}"
        default = getattr(start, field) if provider == start.provider else None
        ss.setdefault(widget, default or DEFAULTS[provider][field])
        models[field] = box.text_input(
            _label(field), key=widget, disabled=not enabled, persist_state=KEEP
        ).strip()
    key_widget = f"{prefix}key_{provider}"
    typed = box.text_input(
        f"API key ({KEY_ENV[provider]})",
        key=key_widget,
        type="password",
        placeholder="this session only"
        + (" · empty for a local server" if provider == Provider.OPENAI else ""),
        help="Kept in this browser session's memory only: never written to disk, the audit "
        f"log or a trace. Empty: the server's {KEY_ENV[provider]}, if it has one, and only "
        "with the server's own endpoint (an endpoint typed above gets no server key).",
        on_change=_switch_on,
        args=(key_widget, f"{prefix}enabled"),
        persist_state=KEEP,
    )
    context_widget = f"{prefix}context_{provider}"
    ss.setdefault(context_widget, DEFAULTS[provider]["context_tokens"])
    context = box.number_input(
        _label("context_tokens"),
        key=context_widget,
        min_value=int(settings_info("llm.context_tokens").min or 1),
        step=1024,
        help="The model's context window. The locate prompt's tree is cut to fit it and the "
        "trace says what was cut (Ollama's default is 4096 unless num_ctx is raised).",
        disabled=not enabled,
        persist_state=KEEP,
    )
    key = (typed or "").strip() or None
    try:
        settings = base.with_(
            enabled=enabled,
            provider=provider,
            base_url=(base_url or "").strip(),
            locate_model=models["locate_model"] or DEFAULTS[provider]["locate_model"],
            answer_model=models["answer_model"] or DEFAULTS[provider]["answer_model"],
            context_tokens=int(context),
        )
    except ValueError as exc:
        box.error(str(exc))
        return base.with_(enabled=False), None
    needed = key_needed(settings, key, env) if settings.enabled else None
    if needed:  # said where the user looks, not left to a silent local fallback
        box.error(needed, icon=":material/key:")
    else:
        box.caption(_status(settings, key, env))
    _connection_test(box, settings, key, prefix)
    return settings, key


class SessionLLM(NamedTuple):
    """The LLM a panel is set to in this session: its settings and key, or why there is none."""

    settings: LLMSettings | None  # None: off, or no key or endpoint
    key: str | None  # typed, else the server's (for its own endpoint only)
    why_not: str = ""  # one line, when `settings` is None


def session_llm(prefix: str, env: Mapping[str, str] | None = None) -> SessionLLM:
    """The LLM the block with `prefix` is set to in this session, without drawing it.

    Before the block was ever drawn, the server's own configuration decides, as the
    block's default does (on only with a key or an endpoint).
    """
    env = os.environ if env is None else env
    ss = st.session_state
    start = settings_from_env(env)
    server_has_llm = llm_configured(start.with_(enabled=True), None, env)
    provider = Provider.parse(ss.get(f"{prefix}provider", start.provider.value))
    need = f"a key ({KEY_ENV[provider]})" + (
        " or an endpoint" if provider == Provider.OPENAI else ""
    )
    no_llm = f"no LLM is configured: type {need} in Ask's sidebar (LLM)."
    if not ss.get(f"{prefix}enabled", server_has_llm):
        why = "the LLM is switched off in Ask's sidebar (LLM)." if server_has_llm else no_llm
        return SessionLLM(None, None, why)
    llm = start.with_(
        enabled=True,
        provider=provider,
        base_url=str(ss.get(f"{prefix}base_url_{provider}") or "").strip(),
        locate_model=str(ss.get(f"{prefix}locate_model_{provider}") or "").strip()
        or DEFAULTS[provider]["locate_model"],
        answer_model=str(ss.get(f"{prefix}answer_model_{provider}") or "").strip()
        or DEFAULTS[provider]["answer_model"],
        context_tokens=int(
            ss.get(f"{prefix}context_{provider}") or DEFAULTS[provider]["context_tokens"]
        ),
    )
    typed = str(ss.get(f"{prefix}key_{provider}") or "").strip() or None
    if not llm_configured(llm, typed, env):
        return SessionLLM(None, None, no_llm)
    return SessionLLM(llm, resolve_key(llm, typed, env))


def session_client(prefix: str, env: Mapping[str, str] | None = None) -> tuple[Any, str]:
    """The LLM the block with `prefix` is set to in this session, without drawing it:
    (client, locate model), or (None, "") when it is off or has no key or endpoint."""
    llm, key, _ = session_llm(prefix, env)
    client = make_client(llm, key) if llm is not None else None
    return (client, llm.locate_model) if client is not None and llm else (None, "")


def _switch_on(field: str, toggle: str) -> None:
    """A key or endpoint typed in: the user means to use the LLM, so the toggle goes on."""
    if str(st.session_state.get(field) or "").strip():
        st.session_state[toggle] = True


def _status(settings: LLMSettings, key: str | None, env: Mapping[str, str]) -> str:
    """One line saying which LLM a question will use, or that none will."""
    if not settings.enabled:
        return "LLM off: local locator and an extractive answer."
    if not llm_configured(settings, key, env):
        need = KEY_ENV[settings.provider]
        if settings.provider == Provider.OPENAI:
            need += " or an endpoint"
        return f"Not configured (no {need}): the local locator and an extractive answer run."
    url = endpoint_of(settings, env)  # never a user:password part of the server's URL
    name = KEY_ENV[settings.provider]
    if key:
        source = "the key typed in this session"
    elif resolve_key(settings, None, env):
        source = f"the server's {name}"
    elif other_endpoint(settings, env) and api_key_for(settings.provider, env):
        own = public_url(server_endpoint(settings.provider, env))
        source = (
            f"no key (the server's {name} goes only to {own}: type a key if this endpoint "
            "needs one)"
        )
    else:
        source = "no key"
    return f"Using {url} with {source}."


def _connection_test(box: Any, settings: LLMSettings, key: str | None, prefix: str) -> None:
    """The "Test connection" button; its result stays shown until a setting or the key changes."""
    ss = st.session_state
    result_key = f"{prefix}test_result"
    # The key changes what a test says (e.g. "needs a key"): kept as a digest, not in clear.
    shown_for = (settings, hashlib.sha256((key or "").encode()).hexdigest())
    if box.button("Test connection", key=f"{prefix}test", disabled=not settings.enabled):
        try:
            ss[result_key] = (shown_for, True, test_connection(settings, key))
        except LLMError as exc:
            ss[result_key] = (shown_for, False, f"{exc.reason}: {exc}")
    shown = ss.get(result_key)
    if shown is not None and shown[0] == shown_for:
        _, ok, message = shown
        (box.success if ok else box.error)(message)
