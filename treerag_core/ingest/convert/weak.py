"""A text with no structure at all: evenly sized sections, each cut where the vocabulary shifts
most near its target length, named by its first line (the tree marks them inferred)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from treerag_core.base.text_rules import HAN_CHAR, one_line, truncate

# About a printed page: a section the locator can tell apart from its neighbours, small
# enough that a pick narrows the search, large enough to hold a topic.
TARGET_CHARS = 3000
# A cut may move this share of the target either way to land on a topic shift.
WINDOW = 0.3
CONTEXT_PARAGRAPHS = 3  # paragraphs on each side compared at a candidate cut
TITLE_CHARS = 60
_WORD = re.compile(r"[^\W\d_]{3,}")


def _terms(text: str) -> Counter[str]:
    """Words of 3+ letters, or Han character bigrams (Chinese has no spaces)."""
    lowered = text.lower()
    terms = Counter(_WORD.findall(lowered))
    han = "".join(HAN_CHAR.findall(lowered))
    terms.update(han[i : i + 2] for i in range(len(han) - 1))
    return terms


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def section_starts(paragraphs: Sequence[str], target: int = TARGET_CHARS) -> list[int]:
    """Indices of the paragraphs that open a section (always 0 first).

    Walks the text in steps of about `target` characters; at each step, among the paragraph
    boundaries within `WINDOW` of it, cuts where the paragraphs before and after share the
    fewest terms (TextTiling's idea, on the bag of words of a few paragraphs each side).
    """
    if target <= 0:
        raise ValueError(f"target must be > 0, but got {target}")
    ends: list[int] = []  # character offset where each paragraph ends
    total = 0
    for p in paragraphs:
        total += len(p)
        ends.append(total)
    if total < 2 * target:
        return [0]
    terms = [_terms(p) for p in paragraphs]
    starts = [0]
    while True:
        base = ends[starts[-1] - 1] if starts[-1] else 0
        if total - base < 1.5 * target:
            return starts
        lo, hi = base + (1 - WINDOW) * target, base + (1 + WINDOW) * target
        cands = [i + 1 for i in range(starts[-1], len(paragraphs) - 1) if lo <= ends[i] <= hi]
        if not cands:  # one long paragraph spans the window: cut after the first one past it
            later = range(starts[-1], len(paragraphs) - 1)
            nxt = next((i + 1 for i in later if ends[i] > lo), None)
            if nxt is None:
                return starts
            starts.append(nxt)
            continue
        first = starts[-1]
        starts.append(
            min(cands, key=lambda i: (_shift(terms, first, i), abs(ends[i - 1] - base - target)))
        )


def _shift(terms: Sequence[Counter[str]], first: int, i: int) -> float:
    """Similarity of the paragraphs just before and just after boundary `i` (low: a shift)."""
    before: Counter[str] = Counter()
    for j in range(max(first, i - CONTEXT_PARAGRAPHS), i):
        before.update(terms[j])
    after: Counter[str] = Counter()
    for j in range(i, min(len(terms), i + CONTEXT_PARAGRAPHS)):
        after.update(terms[j])
    return _cosine(before, after)


def section_title(paragraph: str) -> str:
    """A section's name: its first line, shortened."""
    first = next((line for line in paragraph.split("\n") if line.strip()), paragraph)
    return truncate(one_line(first), TITLE_CHARS)
