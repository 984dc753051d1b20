"""Optional LLM pass over inferred headings: proposed level fixes, batched, as a reviewable diff."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.errors import LLMError
from treerag_core.base.types import Usage
from treerag_core.ingest.convert.base import InferredHeading
from treerag_core.ingest.tree_edits import TreeEdit
from treerag_core.llm import LLMClient
from treerag_core.llm.prompts import first_json_object

BATCH_SIZE = 80
CONTEXT = 5  # headings of the previous batch shown again, so levels stay consistent
_PROMPT = "\n".join(
    [
        "Below are the headings a converter inferred from one document, in order, as",
        "`index. [level] text (page, why)`. Levels run from 1 (top) to 6. Correct levels",
        "that are wrong: a numbered part (PART I, 第一章, 1.) holds its sub-items (Item 1,",
        "第一节, 1.1); a level never jumps more than one below its parent.",
        "Reply with one JSON object mapping the index (as a string) of each heading whose",
        'level should change to its new level, e.g. {"4": 2, "9": 3}; {} if all are right.',
        "Only the indexes marked for review may change.",
    ]
)


@dataclass(frozen=True)
class LevelFix:
    """A proposed change: heading number `index` (0-based in the document) from old to new."""

    index: int
    text: str
    old: int
    new: int

    def edit(self, headings: Sequence[InferredHeading]) -> TreeEdit:
        """The TreeEdit that applies this fix (occurrence counts equal texts before it)."""
        occurrence = sum(1 for h in headings[: self.index] if h.text == self.text)
        return TreeEdit("set_level", self.text, occurrence, level=self.new)


def build_level_prompt(headings: Sequence[InferredHeading], lo: int, hi: int) -> str:
    """The prompt for headings[lo:hi], with up to CONTEXT earlier headings as context."""
    lines = [_PROMPT, ""]
    for i in range(max(0, lo - CONTEXT), hi):
        h = headings[i]
        page = f"p. {h.page}, " if h.page is not None else ""
        mark = "" if i >= lo else " (context, do not change)"
        why = ", ".join(h.signals) or "-"
        lines.append(f"{i}. [{h.level}] {' '.join(h.text.split())} ({page}{why}){mark}")
    return "\n".join(lines)


def parse_level_response(
    text: str, headings: Sequence[InferredHeading], lo: int, hi: int
) -> list[LevelFix]:
    """The valid fixes in a reply: known indexes in [lo, hi), levels 1..6, actual changes.

    Raises:
        LLMError: reason "invalid_json" when the reply holds no JSON object.
    """
    obj = first_json_object(text, accept=lambda o: isinstance(o, dict))
    if obj is None:
        raise LLMError(f"level reply has no JSON object: {text[:120]!r}", reason="invalid_json")
    fixes = []
    for key, level in obj.items():
        try:
            i = int(str(key).strip())
        except ValueError:
            continue
        # Only a JSON integer is a level: 2.9 is not 2, and 1e400 or Infinity is not a number
        # int() can take (OverflowError); bool is an int subclass, so true is not 1 either.
        if not isinstance(level, int) or isinstance(level, bool):
            continue
        if lo <= i < hi and 1 <= level <= 6 and level != headings[i].level:
            fixes.append(LevelFix(i, headings[i].text, headings[i].level, level))
    return sorted(fixes, key=lambda f: f.index)


def propose_level_fixes(
    client: LLMClient, model: str, headings: Sequence[InferredHeading], batch_size: int = BATCH_SIZE
) -> tuple[list[LevelFix], Usage]:
    """Ask the LLM, one call per batch of headings; the user accepts or rejects each fix.

    Raises:
        LLMError: from the client, or a reply without JSON.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, but got {batch_size}")
    fixes: list[LevelFix] = []
    usage = Usage()
    for lo in range(0, len(headings), batch_size):
        hi = min(lo + batch_size, len(headings))
        prompt = build_level_prompt(headings, lo, hi)
        text, used = client.complete("", prompt, model, min(4096, 64 + 12 * (hi - lo)))
        usage = usage + used
        fixes.extend(parse_level_response(text, headings, lo, hi))
    return fixes, usage
