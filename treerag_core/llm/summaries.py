"""One LLM call summarising a batch of sections in one sentence each, as JSON."""

from __future__ import annotations

from collections.abc import Sequence

from treerag_core.base.types import Language
from treerag_core.llm.base import LLMClient
from treerag_core.llm.prompts import build_summary_prompt, parse_summary_response

SUMMARY_INPUT_CHARS = 1200  # per section: enough for one sentence, bounds the cost


def summarize_batch(
    client: LLMClient,
    items: Sequence[tuple[str, str]],
    language: Language,
    model: str,
) -> dict[str, str]:
    """One call summarising each (key, text) section in one sentence: {key: summary}.

    Keys the model skipped are absent (callers keep their local summary for those).
    Section texts are clipped to SUMMARY_INPUT_CHARS.

    Raises:
        LLMError: an API failure, a reply cut short, or reason "invalid_json" when the reply
        has no JSON object.
    """
    if not items:
        return {}
    clipped = [(key, text.strip()[:SUMMARY_INPUT_CHARS]) for key, text in items]
    prompt = build_summary_prompt(clipped, language)
    max_tokens = min(8192, 200 + 120 * len(items))
    text, _usage = client.complete("", prompt, model, max_tokens, json_mode=True)
    return parse_summary_response(text, [key for key, _ in items])
