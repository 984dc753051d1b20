"""Heading levels from numbering (PART / Item, 1.1, 第X章, 一、) and visual prominence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.text_rules import Numbering, han_count, heading_numbering, one_line

# Numberings that are a heading on their own ("PART II", "Chapter 3"); the others ("1.2",
# "A.1", "IV.", "1)") open a heading only when a title follows them.
_ALONE = ("zh", "filing", "chapter")


def structural_numbering(text: str) -> Numbering | None:
    """The numbering a line opens with (text_rules' grammar, the one the parser nests by),
    when the line reads as a heading: after a Latin numbering the title starts with a capital
    or a Han character, so "3 apples were eaten" or "1) the first step" stay body text."""
    line = one_line(text)
    num = heading_numbering(line)
    if num is None or num.family == "zh":
        return num
    title = line[len(num.label) :].lstrip(" .:-")
    if not title:
        return num if num.family in _ALONE else None
    return num if title[0].isupper() or han_count(title[0]) else None


@dataclass(frozen=True)
class Candidate:
    """A heading to place: `style_rank` 0 is the most prominent style in the document."""

    text: str
    style_rank: int
    numbering: Numbering | None = None


def _is_ancestor(open_: Candidate, new: Candidate) -> bool:
    a, b = open_.numbering, new.numbering
    if a is not None and b is not None and a.family == b.family:
        return a.rank < b.rank
    if a is not None and b is None:
        # An un-numbered heading no bigger than "Item 7." nests inside it.
        return open_.style_rank <= new.style_rank
    return open_.style_rank < new.style_rank


def assign_levels(candidates: Sequence[Candidate]) -> list[int]:
    """Levels (1-based) from a stack of open headings: a heading pops what cannot hold it.

    Same-family numbering decides first (PART over Item, 第一章 over 第一节, 1 over 1.1),
    a numbered heading holds un-numbered ones of no larger style, and otherwise the more
    prominent style is the ancestor. A level never jumps by more than one.
    """
    levels: list[int] = []
    stack: list[Candidate] = []
    for cand in candidates:
        while stack and not _is_ancestor(stack[-1], cand):
            stack.pop()
        stack.append(cand)
        levels.append(min(len(stack), 6))
    return levels
