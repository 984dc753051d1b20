"""The explorer's own wording of an engine error whose message gives the CLI's steps."""

from __future__ import annotations

from collections.abc import Callable

from treerag_core.base.errors import TreeRAGError
from ui.common.graph_guidance import missing_graphs_message

# An error's `remedy` -> the explorer's whole message (what is wrong and what to do here),
# for the corpus kind asked on (None: steps for any kind).
REMEDIES: dict[str, Callable[[str | None], str]] = {
    "leaf-graphs": missing_graphs_message,
}


def explorer_message(exc: BaseException, kind: str | None = None) -> str | None:
    """Markdown the explorer shows instead of the error's own message, or None to show that
    (also for a remedy the explorer has no wording of yet: the error's own text, never a
    traceback)."""
    remedy = exc.remedy if isinstance(exc, TreeRAGError) else None
    words = REMEDIES.get(remedy) if remedy is not None else None
    return words(kind) if words is not None else None
