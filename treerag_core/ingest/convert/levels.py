"""Heading levels from numbering (PART / Item, 1.1, 第X章, 一、) and visual prominence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.text_rules import Numbering, han_count, heading_numbering, one_line

# Numberings that are a heading on their own ("PART II", "Chapter 3"); the others ("1.2",
# "A.1", "IV.", "1)") open a heading only when a title follows them.
_ALONE = ("zh", "filing", "chapter")


_OPENERS = "[(\"'“‘"


def structural_numbering(text: str) -> Numbering | None:
    """The numbering a line opens with (text_rules' grammar, the one the parser nests by),
    when the line reads as a heading: after a Latin numbering the title starts with a capital,
    a Han character or a bracket ("ITEM 6. [RESERVED]"), so "3 apples were eaten", "1) the
    first step" and a contents line "PART I 4" stay body text; a filing's Item ends in "." or
    ":" ("Item 1A" alone is a cross-reference); a section number is below 100."""
    line = one_line(text)
    num = heading_numbering(line)
    if num is None or num.family == "zh":
        return num
    if num.family == "filing" and num.rank == 2 and not num.label.endswith((".", ":")):
        return None
    if num.family == "decimal" and num.values[0] >= 100:
        return None  # "700 Anderson Hill Road": an address or an amount, not a section
    title = line[len(num.label) :].lstrip(" .:-—–")
    if not title:
        # "Note 4" alone is a cross-reference; "PART II" alone is a heading.
        return num if num.family in _ALONE and (num.family, num.rank) != ("filing", 3) else None
    first = title[0]
    return num if first.isupper() or han_count(first) or first in _OPENERS else None


@dataclass(frozen=True)
class Candidate:
    """A heading to place: `style_rank` 0 is the most prominent style in the document."""

    text: str
    style_rank: int
    numbering: Numbering | None = None


# List-like numberings: their depth against another family's is unknown, so across families
# they nest as an un-numbered heading would ("(3) Exhibits" inside "Item 15.").
_LIST_LIKE = ("paren", "alpha", "roman")


def list_like(num: Numbering) -> bool:
    """A list or initial's marker ("(1)", "A.", "IV."): a heading only with a style signal
    (bold, size), since alone it is as often a list item or a name ("W. Craig Jelinek")."""
    return num.family in _LIST_LIKE


def is_ancestor(open_: Candidate, new: Candidate, stack: Sequence[Candidate]) -> bool:
    """Whether the open heading `open_` holds `new` (`stack`: every open heading)."""
    a, b = open_.numbering, new.numbering
    if a is not None and b is not None and a.family == b.family:
        return a.rank < b.rank
    if b is not None and any(o.numbering and o.numbering.family == b.family for o in stack):
        return False  # its own family is open further up: close what lies between
    if a is not None and a.family in _LIST_LIKE:
        a = None
    if b is not None and b.family in _LIST_LIKE:
        b = None
    if a is not None and b is None:
        # An un-numbered heading no bigger than "Item 7." nests inside it.
        return open_.style_rank <= new.style_rank
    return open_.style_rank < new.style_rank


def assign_levels(candidates: Sequence[Candidate]) -> list[int]:
    """Levels (1-based) from a stack of open headings: a heading pops what cannot hold it.

    Same-family numbering decides first (PART over Item, 第一章 over 第一节, 1 over 1.1) and
    closes what lies between ("Item 2." closes "(3)" under "Item 1."); a numbered heading
    holds un-numbered (and list-numbered) ones of no larger style; otherwise the more
    prominent style is the ancestor. A level never jumps by more than one.
    """
    levels: list[int] = []
    stack: list[Candidate] = []
    for cand in candidates:
        while stack and not is_ancestor(stack[-1], cand, stack):
            stack.pop()
        stack.append(cand)
        levels.append(min(len(stack), 6))
    return levels
