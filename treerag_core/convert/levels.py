"""Heading levels from numbering (PART / Item, 1.1, 第X章, 一、) and visual prominence."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_ZH_NUM = "零〇一二三四五六七八九十百千两"
_PATTERNS: tuple[tuple[re.Pattern[str], str, int], ...] = (
    (re.compile(r"^part\s+([ivx]+|\d+)\b\.?", re.I), "sec", 0),
    (re.compile(r"^item\s+\d+[a-z]?\s*[.:]", re.I), "sec", 1),
    (re.compile(r"^(chapter|appendix)\s+([ivx]+|\d+|[a-z])\b", re.I), "chapter", 0),
    (re.compile(rf"^第[{_ZH_NUM}\d]+编"), "zh", 0),
    (re.compile(rf"^第[{_ZH_NUM}\d]+分编"), "zh", 1),
    (re.compile(rf"^第[{_ZH_NUM}\d]+章"), "zh", 2),
    (re.compile(rf"^第[{_ZH_NUM}\d]+节"), "zh", 3),
    (re.compile(rf"^第[{_ZH_NUM}\d]+条"), "zh", 4),
    (re.compile(rf"^[{_ZH_NUM}]+、"), "zh", 5),
    (re.compile(rf"^[（(][{_ZH_NUM}]+[）)]"), "zh", 6),
)
# "1 Introduction", "2.3 Results": a number and a word, not a sentence starting with a number.
_DECIMAL = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+(?=[A-Z\u4e00-\u9fff])")


@dataclass(frozen=True)
class Numbering:
    """A structural numbering: its family and rank in it (a larger rank is deeper)."""

    family: str
    rank: int
    label: str


def structural_numbering(text: str) -> Numbering | None:
    """The heading-like numbering a line starts with, or None."""
    line = text.strip()
    for pattern, family, rank in _PATTERNS:
        if pattern.match(line):
            return Numbering(
                family, rank, {"sec": ("part", "item")[min(rank, 1)]}.get(family, family)
            )
    m = _DECIMAL.match(line)
    if m:
        depth = m.group(1).count(".") + 1
        return Numbering("decimal", depth - 1, "decimal")
    return None


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
