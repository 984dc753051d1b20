"""LLM access behind one interface (`LLMClient`): Anthropic or any OpenAI-compatible server.

Callers import from here; only `anthropic_provider` imports anthropic and only
`openai_provider` imports openai (each loaded when first needed).
"""

from __future__ import annotations

from treerag_core.base.errors import LLMError
from treerag_core.base.lazy import lazy_exports
from treerag_core.llm.base import REASONS, LLMClient, TextStream, structured_output_note
from treerag_core.llm.factory import (
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    KEY_ENV,
    MODEL_ENV,
    OPENAI_DEFAULT_MODEL,
    api_key_for,
    base_url_for,
    endpoint_of,
    key_needed,
    llm_configured,
    llm_settings_of,
    make_client,
    needs,
    other_endpoint,
    resolve_key,
    server_endpoint,
    settings_from_env,
    test_connection,
)
from treerag_core.llm.prices import (
    PRICES,
    Price,
    estimate_cost,
    format_cost,
    is_local_endpoint,
    price_for,
    priced,
)
from treerag_core.llm.summaries import SUMMARY_INPUT_CHARS, summarize_batch

__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "KEY_ENV",
    "MODEL_ENV",
    "OPENAI_DEFAULT_MODEL",
    "PRICES",
    "REASONS",
    "SUMMARY_INPUT_CHARS",
    "AnthropicClient",
    "LLMClient",
    "LLMError",
    "OpenAIClient",
    "Price",
    "TextStream",
    "api_key_for",
    "base_url_for",
    "endpoint_of",
    "estimate_cost",
    "format_cost",
    "is_local_endpoint",
    "key_needed",
    "llm_configured",
    "llm_settings_of",
    "make_client",
    "needs",
    "other_endpoint",
    "price_for",
    "priced",
    "resolve_key",
    "server_endpoint",
    "settings_from_env",
    "structured_output_note",
    "summarize_batch",
    "test_connection",
]


# The provider classes load their SDK on first mention only.
__getattr__ = lazy_exports(
    __name__,
    {
        "AnthropicClient": "treerag_core.llm.anthropic_provider",
        "OpenAIClient": "treerag_core.llm.openai_provider",
    },
)
