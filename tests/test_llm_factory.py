"""Tests for treerag_core.llm.factory: which client, which key and endpoint, the connection test."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fake_anthropic import FakeAnthropicServer
from fake_openai import FakeOpenAIServer, reply, status

from treerag_core.errors import LLMError
from treerag_core.llm import (
    api_key_for,
    base_url_for,
    endpoint_of,
    llm_configured,
    llm_settings_of,
    make_client,
    resolve_key,
    settings_from_env,
    test_connection,
)
from treerag_core.settings import LLMSettings, QuerySettings

ANTHROPIC = LLMSettings()
OPENAI = LLMSettings(provider="openai", locate_model="llama3.2", answer_model="llama3.2")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    names = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
    for name in (*names, "TREERAG_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("settings", "key", "env", "expected"),
    [
        (ANTHROPIC, None, {}, False),
        (ANTHROPIC, "sk-ant", {}, True),
        (ANTHROPIC, None, {"ANTHROPIC_API_KEY": "sk-ant"}, True),
        (ANTHROPIC, None, {"OPENAI_API_KEY": "sk-oa"}, False),  # the other provider's key
        (ANTHROPIC.with_(enabled=False), "sk-ant", {}, False),
        (OPENAI, None, {}, False),  # OpenAI's own API needs a key
        (OPENAI, None, {"OPENAI_API_KEY": "sk-oa"}, True),
        (OPENAI, None, {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, True),  # local, no key
        (OPENAI.with_(base_url="http://127.0.0.1:8000/v1"), None, {}, True),
        (ANTHROPIC.with_(base_url="http://127.0.0.1:9/"), None, {}, False),  # Anthropic: key
    ],
)
def test_llm_configured(settings, key, env, expected) -> None:
    assert llm_configured(settings, key, env) is expected


def test_keys_and_endpoints_come_from_the_provider_variables() -> None:
    env = {"ANTHROPIC_API_KEY": " a ", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "http://h:1/v1"}
    assert api_key_for("anthropic", env) == "a" and api_key_for("openai", env) is None
    assert base_url_for(OPENAI, env) == "http://h:1/v1"
    assert base_url_for(OPENAI.with_(base_url="http://x/v1"), env) == "http://x/v1"
    assert base_url_for(ANTHROPIC, env) is None


def test_make_client_uses_the_key_it_is_given_not_the_environments(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert make_client(ANTHROPIC, None) is None  # an engine without a key stays local
    assert resolve_key(ANTHROPIC, None) == "sk-env" and resolve_key(ANTHROPIC, " t ") == "t"
    assert make_client(ANTHROPIC, resolve_key(ANTHROPIC, None)).provider == "anthropic"


def test_make_client_picks_the_provider(monkeypatch) -> None:
    assert make_client(ANTHROPIC, None) is None
    anthropic_client = make_client(ANTHROPIC.with_(timeout=7.5, max_retries=1), "sk-ant")
    assert anthropic_client.provider == "anthropic" and anthropic_client.timeout == 7.5
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    local = make_client(OPENAI, None)
    assert local.provider == "openai" and local.name == "openai at http://127.0.0.1:11434/v1"
    assert make_client(OPENAI.with_(enabled=False), None) is None


def test_make_client_reads_llm_or_query_settings() -> None:
    nested = QuerySettings().set("llm.provider", "openai").set("llm.base_url", "http://h/v1")
    assert make_client(nested, None).provider == "openai"
    assert llm_settings_of(nested) is nested.llm
    with pytest.raises(TypeError, match="LLMSettings"):
        llm_settings_of({"provider": "openai"})


def test_connection_says_what_answered() -> None:
    with FakeOpenAIServer(reply("ok")) as fake:
        url = fake.base_url
        said = test_connection(OPENAI.with_(base_url=url, max_retries=0), None)
    assert said.startswith(f"openai at {url} · model llama3.2 · answered 'ok' in ")
    assert "tokens" in said


def test_connection_accepts_a_reply_cut_by_its_tiny_limit() -> None:
    with FakeAnthropicServer(reply("ok then", stop_reason="max_tokens")) as fake:
        url = fake.base_url
        said = test_connection(ANTHROPIC.with_(base_url=url, max_retries=0), "sk-ant")
    assert said.startswith(f"anthropic at {url} · model claude-haiku-4-5 · answered 'ok then'")


def test_connection_failures_are_llm_errors() -> None:
    with FakeOpenAIServer(status(404)) as fake, pytest.raises(LLMError) as info:
        test_connection(OPENAI.with_(base_url=fake.base_url, max_retries=0), None)
    assert info.value.reason == "model_not_found"
    with pytest.raises(LLMError, match="no key") as info:
        test_connection(OPENAI, None)
    assert info.value.reason == "not_configured"


def test_each_sdk_is_imported_only_by_its_provider() -> None:
    code = (
        "import sys\n"
        "from treerag_core.llm import make_client\n"
        "from treerag_core.settings import LLMSettings\n"
        "assert 'anthropic' not in sys.modules and 'openai' not in sys.modules\n"
        "make_client(LLMSettings(), 'k')\n"
        "assert 'anthropic' in sys.modules and 'openai' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("env", "provider", "model"),
    [
        ({}, "anthropic", "claude-haiku-4-5"),
        ({"OPENAI_API_KEY": "k"}, "openai", "gpt-4o-mini"),
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "TREERAG_LLM_MODEL": "llama3.2"},
            "openai",
            "llama3.2",
        ),
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "a"}, "anthropic", "claude-haiku-4-5"),
    ],
)
def test_settings_from_env(env, provider, model) -> None:
    settings = settings_from_env(env)
    assert settings.provider == provider and settings.locate_model == model


def test_an_endpoint_password_is_never_shown() -> None:
    url = "http://user:s3cret@127.0.0.1:9/v1"
    assert endpoint_of(OPENAI.with_(base_url=url)) == "http://127.0.0.1:9/v1"
    assert endpoint_of(ANTHROPIC) == "https://api.anthropic.com"
    client = make_client(OPENAI.with_(base_url=url, max_retries=0, timeout=1.0), None)
    assert "s3cret" not in client.name and "s3cret" not in repr(client)
    with pytest.raises(LLMError) as info:
        client.complete("", "q", "llama3.2", 5)
    assert info.value.reason == "connection" and "s3cret" not in str(info.value)
