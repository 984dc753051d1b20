"""Optional LLM leaf summaries: batched, cached by content hash."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from treerag_core.base.types import Language, TreeNode
from treerag_core.ingest.node_summaries import content_key
from treerag_core.llm import LLMClient, summarize_batch

BATCH_SIZE = 20


def make_llm_summarizer(
    client: LLMClient, model: str, cache: Mapping[str, str], batch_size: int = BATCH_SIZE
) -> Callable[[Sequence[TreeNode], Language], dict[str, str]]:
    """A summarizer for `build_index`: {content_key: summary} for a document's leaves.

    Leaves already in `cache` (from the previous index) are not sent again. An LLMError
    propagates: the caller decides whether to fall back to the local summaries.
    """
    known = dict(cache)

    def summarize(nodes: Sequence[TreeNode], language: Language) -> dict[str, str]:
        todo = [n for n in nodes if n.is_leaf and n.content.strip() and content_key(n) not in known]
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            got = summarize_batch(
                client, [(content_key(n), n.content) for n in batch], language, model
            )
            known.update({k: v for k, v in got.items() if v.strip()})
        return {content_key(n): known[content_key(n)] for n in nodes if content_key(n) in known}

    return summarize
