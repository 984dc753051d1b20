"""Many headings corrected in one action: select every line like one (same text, same look,
same pattern) or every line from one to another (shift-click), then promote, demote, remove or
merge them all. A heading the converter made up (the cover page) is never "like" another, and an
edit that would change nothing is not made."""

from __future__ import annotations

import re
from collections.abc import Sequence

from treerag_core.base.text_rules import heading_numbering
from treerag_core.ingest.convert.base import InferredHeading
from treerag_core.ingest.tree_edits import TreeEdit, no_change

# How "every line like this one" compares: the label the review step shows for each.
LIKE = {
    "text": "same text",
    "style": "same look (level and why it is a heading)",
    "pattern": "same pattern (numbering: Item N, Exhibit N, 1.1 …; else case and end punctuation)",
}
# What one action does to every selected heading (merge keeps the first selected heading).
BULK_OPS = {
    "demote": "Demote (one level down)",
    "promote": "Promote (one level up)",
    "remove": "Not headings (each joins the section before)",
    "merge": "Merge into one section (the first selected keeps its heading)",
}
_SPACES = re.compile(r"\s+")
# A labelled number the parser does not nest by: "Exhibit 31.1", "Exhibit 101.INS", "Schedule
# II", "Table 4:" (at most 3 digits a part, so "Fiscal 2023 Highlights" is not one).
_LABELLED = re.compile(
    r"^([^\W\d_][\w&-]*)\s+(?:\d{1,3}(?:\.(?:\d{1,3}|[A-Z]{1,4}))*[A-Za-z]?|[IVXLC]{1,7})"
    r"[.:)]?(?=\s|$)"
)


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def pattern(text: str) -> str:
    """A heading's shape: its numbering family and depth ("Note 4 — Leases" and "Note 12 —
    Debt" share one; "1.1 Scope" and "2.3 Terms"), else its label word before a number
    ("Exhibit 31.1" and "EXHIBIT 32"), else its case, a parenthesised whole and its closing
    punctuation ("(Unaudited)" and "(In millions)"; "Non-current assets:" and "Total
    liabilities:"). A numbered heading is never like an unnumbered one."""
    stripped = text.strip()
    num = heading_numbering(stripped)
    if num is not None:
        head = _SPACES.split(num.label.strip())[0] if num.family in ("filing", "chapter") else ""
        return f"numbered {num.family} {num.rank} {head.casefold()}"
    if m := _LABELLED.match(stripped):
        return f"labelled {m.group(1).casefold()}"
    case = "upper" if stripped.isupper() else "lower" if stripped[:1].islower() else "mixed"
    wrapped = stripped.startswith("(") and stripped.endswith(")")
    end = stripped[-1] if stripped and not stripped[-1].isalnum() else ""
    return f"{case} wrapped={wrapped} end={end!r}"


def like(headings: Sequence[InferredHeading], index: int, by: str) -> list[int]:
    """Indices of the headings like `headings[index]` (itself included), in order; a heading
    the converter made up (the cover page) is never among them, nor like anything."""
    if by not in LIKE:
        raise ValueError(f"by must be one of {', '.join(LIKE)}, but got {by!r}")
    if not 0 <= index < len(headings):
        raise ValueError(f"index must be in 0..{len(headings) - 1}, but got {index}")
    ref = headings[index]
    if ref.synthetic:
        return []

    def key(h: InferredHeading) -> object:
        if by == "text":
            return _norm(h.text)
        if by == "style":
            return (h.level, h.signals)
        return pattern(h.text)

    want = key(ref)
    return [i for i, h in enumerate(headings) if not h.synthetic and key(h) == want]


def between(headings: Sequence[InferredHeading], first: int, last: int) -> list[int]:
    """Indices of the headings from `headings[first]` to `headings[last]`, both included, in
    document order (a shift-click's run: picked bottom-up, it is the same run)."""
    for name, at in (("first", first), ("last", last)):
        if not 0 <= at < len(headings):
            raise ValueError(f"{name} must be in 0..{len(headings) - 1}, but got {at}")
    return list(range(min(first, last), max(first, last) + 1))


def _occurrence(headings: Sequence[InferredHeading], index: int) -> int:
    return sum(1 for h in headings[:index] if h.text == headings[index].text)


def _planned(
    headings: Sequence[InferredHeading], indices: Sequence[int], op: str
) -> list[tuple[TreeEdit, str]]:
    """Each edit `op` makes of the selection, last heading first, with why it would change
    nothing ("" when it changes its heading)."""
    if op not in BULK_OPS:
        raise ValueError(f"op must be one of {', '.join(BULK_OPS)}, but got {op!r}")
    chosen = sorted(set(indices))
    if any(not 0 <= i < len(headings) for i in chosen):
        raise ValueError(f"indices must be in 0..{len(headings) - 1}, but got {list(indices)}")
    if op == "merge":
        chosen, edit_op = chosen[1:], "merge"
    else:
        edit_op = "merge" if op == "remove" else op
    planned = []
    for i in reversed(chosen):
        edit = TreeEdit(edit_op, headings[i].text, _occurrence(headings, i))
        planned.append((edit, no_change(headings[i].level, headings[i].text, edit)))
    return planned


def unchanged(
    headings: Sequence[InferredHeading], indices: Sequence[int], op: str
) -> dict[str, int]:
    """How many selected headings `op` would leave as they are, by why ({"already at the top
    level": 3} for a promote), so the review step can say so."""
    counts: dict[str, int] = {}
    for _, why in _planned(headings, indices, op):
        if why:
            counts[why] = counts.get(why, 0) + 1
    return counts


def bulk_edits(
    headings: Sequence[InferredHeading], indices: Sequence[int], op: str
) -> list[TreeEdit]:
    """The edits that apply `op` to every selected heading, as one group; a heading it would
    leave as it is (a promote at level 1) gets none (`unchanged` counts them).

    Edits address a heading by its text and occurrence, and a heading that stops being one
    shifts the occurrences after it: so they are listed last heading first.
    """
    return [edit for edit, why in _planned(headings, indices, op) if not why]
