"""Where each provider lives: its key and endpoint variables and its public endpoint (the one
table the factory and the providers read)."""

from __future__ import annotations

from treerag_core.names import Provider

KEY_ENV = {Provider.ANTHROPIC: "ANTHROPIC_API_KEY", Provider.OPENAI: "OPENAI_API_KEY"}
BASE_URL_ENV = {Provider.ANTHROPIC: "ANTHROPIC_BASE_URL", Provider.OPENAI: "OPENAI_BASE_URL"}
DEFAULT_BASE_URL = {
    Provider.ANTHROPIC: "https://api.anthropic.com",
    Provider.OPENAI: "https://api.openai.com/v1",
}
