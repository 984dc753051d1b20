"""Many headings corrected in one action: select every line like one (same text, same look,
same pattern) or every line from one to another (shift-click), then promote, demote, remove or
merge them all."""

from __future__ import annotations

import re
from collections.abc import Sequence

from treerag_core.base.text_rules import heading_numbering
from treerag_core.ingest.convert.base import InferredHeading
from treerag_core.ingest.tree_edits import TreeEdit

# How "every line like this one" compares: the label the review step shows for each.
LIKE = {
    "text": "same text",
    "style": "same look (level and why it is a heading)",
    "pattern": "same pattern (numbering, or case and end punctuation)",
}
# What one action does to every selected heading (merge keeps the first selected heading).
BULK_OPS = {
    "demote": "Demote (one level down)",
    "promote": "Promote (one level up)",
    "remove": "Not headings (each joins the section before)",
    "merge": "Merge into one section (the first selected keeps its heading)",
}
_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def pattern(text: str) -> str:
    """A heading's shape: its numbering family and depth ("Note 4 — Leases" and "Note 12 —
    Debt" share one), else its case, a parenthesised whole and its closing punctuation
    ("(Unaudited)" and "(In millions)"; "Non-current assets:" and "Total liabilities:")."""
    num = heading_numbering(text.strip())
    if num is not None:
        head = _SPACES.split(num.label.strip())[0] if num.family in ("filing", "chapter") else ""
        return f"numbered {num.family} {num.rank} {head.casefold()}"
    stripped = text.strip()
    case = "upper" if stripped.isupper() else "lower" if stripped[:1].islower() else "mixed"
    wrapped = stripped.startswith("(") and stripped.endswith(")")
    end = stripped[-1] if stripped and not stripped[-1].isalnum() else ""
    return f"{case} wrapped={wrapped} end={end!r}"


def like(headings: Sequence[InferredHeading], index: int, by: str) -> list[int]:
    """Indices of the headings like `headings[index]` (itself included), in order."""
    if by not in LIKE:
        raise ValueError(f"by must be one of {', '.join(LIKE)}, but got {by!r}")
    if not 0 <= index < len(headings):
        raise ValueError(f"index must be in 0..{len(headings) - 1}, but got {index}")
    ref = headings[index]

    def key(h: InferredHeading) -> object:
        if by == "text":
            return _norm(h.text)
        if by == "style":
            return (h.level, h.signals)
        return pattern(h.text)

    want = key(ref)
    return [i for i, h in enumerate(headings) if key(h) == want]


def between(headings: Sequence[InferredHeading], first: int, last: int) -> list[int]:
    """Indices of the headings from `headings[first]` to `headings[last]`, both included, in
    document order (a shift-click's run: picked bottom-up, it is the same run)."""
    for name, at in (("first", first), ("last", last)):
        if not 0 <= at < len(headings):
            raise ValueError(f"{name} must be in 0..{len(headings) - 1}, but got {at}")
    return list(range(min(first, last), max(first, last) + 1))


def _occurrence(headings: Sequence[InferredHeading], index: int) -> int:
    return sum(1 for h in headings[:index] if h.text == headings[index].text)


def bulk_edits(
    headings: Sequence[InferredHeading], indices: Sequence[int], op: str
) -> list[TreeEdit]:
    """The edits that apply `op` to every selected heading, as one group.

    Edits address a heading by its text and occurrence, and a heading that stops being one
    shifts the occurrences after it: so they are listed last heading first.
    """
    if op not in BULK_OPS:
        raise ValueError(f"op must be one of {', '.join(BULK_OPS)}, but got {op!r}")
    chosen = sorted(set(indices))
    if any(not 0 <= i < len(headings) for i in chosen):
        raise ValueError(f"indices must be in 0..{len(headings) - 1}, but got {list(indices)}")
    if op == "merge":
        chosen, edit_op = chosen[1:], "merge"
    else:
        edit_op = "merge" if op == "remove" else op
    return [TreeEdit(edit_op, headings[i].text, _occurrence(headings, i)) for i in reversed(chosen)]
