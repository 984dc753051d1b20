"""The LLM sidebar block (ui/common/llm_panel.py) through AppTest, against the fake servers."""

from __future__ import annotations

import socket

import pytest
from fake_anthropic import FakeAnthropicServer
from fake_openai import FakeOpenAIServer, reply
from streamlit.testing.v1 import AppTest

from treerag_core.base.settings import LLMSettings


def panel_app() -> None:
    import streamlit as st

    from ui.common.llm_panel import llm_panel

    st.session_state["out"] = llm_panel()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    names = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
    for name in (*names, "TREERAG_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def app() -> AppTest:
    at = AppTest.from_function(panel_app, default_timeout=30)
    return at.run()


def widget(at: AppTest, kind: str, key: str):
    return next(w for w in getattr(at, kind) if w.key == key)


def captions(at: AppTest) -> str:
    return " | ".join(c.value for c in at.sidebar.caption)


def test_defaults_are_anthropic_and_off_with_the_reason_shown_without_a_key() -> None:
    at = app()
    assert not at.exception
    settings, key = at.session_state["out"]
    assert settings == LLMSettings(context_tokens=200_000, enabled=False) and key is None
    assert widget(at, "toggle", "llm_enabled").value is False
    # The reason is on the page (not only on hover), and the key field stays usable.
    assert "Off: this server has no ANTHROPIC_API_KEY" in captions(at)
    assert not widget(at, "text_input", "llm_key_anthropic").disabled


def test_a_server_key_turns_it_on_by_default(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-server")
    at = app()
    settings, _ = at.session_state["out"]
    assert settings.enabled and "the server's ANTHROPIC_API_KEY" in captions(at)


def test_a_typed_key_stays_in_the_session_and_out_of_the_settings() -> None:
    at = app()
    widget(at, "text_input", "llm_key_anthropic").input("sk-ant-typed-secret").run()
    settings, key = at.session_state["out"]
    assert key == "sk-ant-typed-secret" and settings.enabled  # typing a key switches it on
    assert "sk-ant-typed-secret" not in repr(settings.to_dict())
    assert "the key typed in this session" in captions(at)


def test_local_openai_server_needs_no_key_and_the_test_says_what_answered() -> None:
    with FakeOpenAIServer(reply("ok")) as fake:
        url = fake.base_url
        at = app()
        widget(at, "selectbox", "llm_provider").set_value("openai").run()
        widget(at, "text_input", "llm_base_url_openai").input(url).run()
        widget(at, "text_input", "llm_locate_model_openai").input("llama3.2").run()
        widget(at, "number_input", "llm_context_openai").set_value(8192).run()
        settings, key = at.session_state["out"]
        assert settings.provider == "openai" and settings.base_url == url
        assert settings.locate_model == "llama3.2" and settings.context_tokens == 8192
        assert key is None and f"Using {url} with no key" in captions(at)
        widget(at, "button", "llm_test").click().run()
    [success] = at.sidebar.success
    assert success.value.startswith(f"openai at {url} · model llama3.2 · answered 'ok'")
    assert not at.sidebar.error


def test_a_failed_connection_test_shows_the_reason() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    at = app()
    widget(at, "selectbox", "llm_provider").set_value("openai").run()
    widget(at, "text_input", "llm_base_url_openai").input(f"http://127.0.0.1:{port}/v1").run()
    widget(at, "button", "llm_test").click().run()
    [error] = at.sidebar.error
    assert error.value.startswith("connection: Cannot reach") and str(port) in error.value
    # A changed setting hides the stale result.
    widget(at, "text_input", "llm_answer_model_openai").input("other").run()
    assert not at.sidebar.error


def test_llm_off_is_returned_and_said() -> None:
    at = app()
    widget(at, "toggle", "llm_enabled").set_value(False).run()
    settings, _ = at.session_state["out"]
    assert not settings.enabled and "LLM off" in captions(at)


def test_an_openai_endpoint_in_the_environment_preselects_it(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("TREERAG_LLM_MODEL", "qwen2.5:7b")
    at = app()
    settings, _ = at.session_state["out"]
    assert settings.provider == "openai" and settings.base_url == ""  # the env's is used
    assert settings.locate_model == settings.answer_model == "qwen2.5:7b"
    assert "Using http://127.0.0.1:11434/v1 with no key" in captions(at)


def session_client_app() -> None:
    import streamlit as st

    from ui.common.llm_panel import llm_panel, session_client

    if st.session_state.get("draw", True):
        llm_panel()
    client, model = session_client("llm_")
    st.session_state["client"] = (client.name if client else None, model)


def test_pages_without_the_block_use_what_the_block_is_set_to(monkeypatch) -> None:
    # Never drawn: the server's configuration decides (no key here: no client).
    at = AppTest.from_function(session_client_app, default_timeout=30)
    at.session_state["draw"] = False
    assert at.run().session_state["client"] == (None, "")
    # A key typed in the block: the Documents page's LLM work uses it.
    at = app_with(session_client_app)
    widget(at, "text_input", "llm_key_anthropic").input("sk-ant-typed").run()
    name, model = at.session_state["client"]
    assert name.startswith("anthropic at ") and model
    # Switched off in the block: nothing is called elsewhere either, even with a server key.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-server")
    widget(at, "toggle", "llm_enabled").set_value(False).run()
    assert at.session_state["client"] == (None, "")


def app_with(script) -> AppTest:
    return AppTest.from_function(script, default_timeout=30).run()


SECRET = "sk-ant-SERVER-SECRET"


def panel_and_client_app() -> None:
    import streamlit as st

    from ui.common.llm_panel import llm_panel, session_client

    st.session_state["out"] = llm_panel()
    client, model = session_client("llm_")
    st.session_state["client"] = (client.name if client else None, model)


def headers_seen(fake) -> str:
    """Every header value of every request the fake server received, joined."""
    return " ".join(v for r in fake.requests for v in r.headers.values())


def test_a_typed_endpoint_never_gets_the_servers_key_and_says_it_needs_one(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with FakeAnthropicServer(default=reply("ok")) as fake:
        at = app_with(panel_and_client_app)
        widget(at, "text_input", "llm_base_url_anthropic").input(fake.base_url).run()
        settings, key = at.session_state["out"]
        assert settings.enabled and settings.base_url == fake.base_url and key is None
        [error] = at.sidebar.error  # said in the block, not a silent local fallback
        assert f"{fake.base_url} needs a key typed with it" in error.value
        assert "ANTHROPIC_API_KEY" in error.value and SECRET not in error.value
        assert at.session_state["client"] == (None, "")  # the Documents page's LLM work
        widget(at, "button", "llm_test").click().run()
        assert any(e.value.startswith("key_needed: ") for e in at.sidebar.error)
        assert not at.sidebar.success
        assert fake.requests == [] and SECRET not in headers_seen(fake)
        # The key typed with it: the test reaches the endpoint with that key only.
        widget(at, "text_input", "llm_key_anthropic").input("sk-ant-typed").run()
        assert not at.sidebar.error and "the key typed in this session" in captions(at)
        assert at.session_state["client"][0] == f"anthropic at {fake.base_url}"
        widget(at, "button", "llm_test").click().run()
        [success] = at.sidebar.success
        assert success.value.startswith(f"anthropic at {fake.base_url} ")
        assert [r.api_key for r in fake.requests] == ["sk-ant-typed"]
        assert SECRET not in headers_seen(fake)


def test_the_servers_key_goes_to_the_servers_own_endpoint(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with FakeAnthropicServer(default=reply("ok")) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        at = app()
        assert f"Using {fake.base_url} with the server's ANTHROPIC_API_KEY" in captions(at)
        widget(at, "button", "llm_test").click().run()
        [success] = at.sidebar.success
        assert success.value.startswith(f"anthropic at {fake.base_url} ")
        assert [r.api_key for r in fake.requests] == [SECRET]


def test_a_typed_openai_endpoint_is_called_without_the_servers_key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(default=reply("ok")) as fake:
        at = app()
        widget(at, "selectbox", "llm_provider").set_value("openai").run()
        widget(at, "text_input", "llm_base_url_openai").input(fake.base_url).run()
        said = captions(at)
        assert f"Using {fake.base_url} with no key (the server's OPENAI_API_KEY goes only " in said
        widget(at, "button", "llm_test").click().run()
        assert at.sidebar.success and len(fake.requests) == 1
        assert SECRET not in headers_seen(fake)
