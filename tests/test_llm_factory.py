"""Tests for treerag_core.llm.factory: which client, which key and endpoint, the connection test."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fake_anthropic import FakeAnthropicServer
from fake_openai import FakeOpenAIServer, reply, status

from treerag_core.base.errors import LLMError
from treerag_core.base.settings import LLMSettings, QuerySettings
from treerag_core.llm import (
    api_key_for,
    base_url_for,
    endpoint_of,
    key_needed,
    llm_configured,
    llm_settings_of,
    make_client,
    other_endpoint,
    resolve_key,
    settings_from_env,
    test_connection,
)

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
        # A typed endpoint never gets the server's key, so it is not configured by it.
        (ANTHROPIC.with_(base_url="http://127.0.0.1:9/"), None, {"ANTHROPIC_API_KEY": "k"}, False),
        (
            ANTHROPIC.with_(base_url="http://127.0.0.1:9/"),
            "typed",
            {"ANTHROPIC_API_KEY": "k"},
            True,
        ),
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
        "from treerag_core.base.settings import LLMSettings\n"
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


SECRET = "sk-ant-SERVER-SECRET"


def saw_secret(fake, secret: str = SECRET) -> bool:
    """Whether any request the fake server received carried `secret` in any header."""
    return any(secret in value for r in fake.requests for value in r.headers.values())


@pytest.mark.parametrize(
    ("base_url", "env", "other"),
    [
        ("", {}, False),
        ("https://api.anthropic.com", {}, False),  # the default endpoint, typed out
        ("HTTPS://API.anthropic.com/", {}, False),
        ("https://api.anthropic.com", {"ANTHROPIC_BASE_URL": "http://proxy:8/"}, True),
        ("http://proxy:8", {"ANTHROPIC_BASE_URL": "http://proxy:8/"}, False),
        ("http://proxy:9", {"ANTHROPIC_BASE_URL": "http://proxy:8/"}, True),
        ("http://proxy:8/other", {"ANTHROPIC_BASE_URL": "http://proxy:8/"}, True),
        ("http://user@proxy:8", {"ANTHROPIC_BASE_URL": "http://proxy:8/"}, True),
        ("http://127.0.0.1:9", {}, True),
    ],
)
def test_other_endpoint_is_any_but_the_servers_own(base_url, env, other) -> None:
    llm = ANTHROPIC.with_(base_url=base_url)
    assert (other_endpoint(llm, env) is not None) is other
    assert (resolve_key(llm, None, {**env, "ANTHROPIC_API_KEY": "s"}) is None) is other


def test_a_typed_endpoint_without_a_typed_key_never_gets_the_servers_key(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeAnthropicServer(reply("ok")) as fake:
        llm = ANTHROPIC.with_(base_url=fake.base_url, max_retries=0)
        assert resolve_key(llm, None) is None and resolve_key(llm, "  ") is None
        assert make_client(llm, resolve_key(llm, None)) is None  # the review's reproduction
        assert not llm_configured(llm, None)
        with pytest.raises(LLMError, match="needs a key typed with it") as info:
            test_connection(llm, None)
        assert info.value.reason == "key_needed" and fake.base_url in str(info.value)
        assert SECRET not in str(info.value)
        assert fake.requests == []
    # An OpenAI-compatible endpoint may need no key (a local server): it is called, keyless.
    with FakeOpenAIServer(reply("ok")) as fake:
        llm = OPENAI.with_(base_url=fake.base_url, max_retries=0)
        assert key_needed(llm, None) is None and resolve_key(llm, None) is None
        test_connection(llm, None)
        assert len(fake.requests) == 1 and not saw_secret(fake)


def test_a_typed_endpoint_with_a_typed_key_gets_that_key(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with FakeAnthropicServer(reply("ok")) as fake:
        llm = ANTHROPIC.with_(base_url=fake.base_url, max_retries=0)
        assert key_needed(llm, "sk-ant-typed") is None
        said = test_connection(llm, "sk-ant-typed")
        assert said.startswith(f"anthropic at {fake.base_url} ")
        [request] = fake.requests
        assert request.api_key == "sk-ant-typed" and not saw_secret(fake)


def test_the_servers_key_goes_to_the_servers_endpoint(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with FakeAnthropicServer(reply("ok"), reply("ok")) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        test_connection(ANTHROPIC.with_(max_retries=0), None)  # no endpoint typed
        # The server's own endpoint typed out is still the server's endpoint.
        test_connection(ANTHROPIC.with_(base_url=fake.base_url + "/", max_retries=0), None)
        assert [r.api_key for r in fake.requests] == [SECRET, SECRET]
