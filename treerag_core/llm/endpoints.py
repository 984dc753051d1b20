"""Where each provider lives: its key and endpoint variables and its public endpoint (the one
table the factory and the providers read)."""

from __future__ import annotations

from treerag_core.base.names import Provider

KEY_ENV = {Provider.ANTHROPIC: "ANTHROPIC_API_KEY", Provider.OPENAI: "OPENAI_API_KEY"}
BASE_URL_ENV = {Provider.ANTHROPIC: "ANTHROPIC_BASE_URL", Provider.OPENAI: "OPENAI_BASE_URL"}


def url_source(given: str | None, env_name: str, env: str | None) -> str:
    """Where the endpoint a client uses was set, for its "check ..." messages: the variable
    when the URL is the variable's, else the base URL setting (--base-url; the explorer's
    endpoint field sets the same)."""
    given, env = (given or "").strip(), (env or "").strip()
    if given and given != env:
        return BASE_URL_SETTING
    return env_name


# Both places one sets it, since the message is read in a terminal or in the browser.
BASE_URL_SETTING = "--base-url, or Endpoint in the explorer's LLM panel"


DEFAULT_BASE_URL = {
    Provider.ANTHROPIC: "https://api.anthropic.com",
    Provider.OPENAI: "https://api.openai.com/v1",
}
