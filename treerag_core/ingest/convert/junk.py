"""Lines set like headings that are never sections, each with the reason the review shows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from treerag_core.base.text_rules import heading_numbering

_CHECK_BOXES = frozenset("☒☐☑□■✓✔✗✘")
REPEATED_PAGES = 3  # the same heading on this many pages is a running title, not a section
_SEC_COVER = re.compile(r"SECURITIES\s+AND\s+EXCHANGE\s+COMMISSION", re.I)
_SPACES = re.compile(r"\s+")


def line_reason(text: str) -> str | None:
    """Why a heading-like line is not a section, from its text alone (None: it may be one)."""
    if any(ch in _CHECK_BOXES for ch in text):
        return "check-box line"
    stripped = text.strip()
    if stripped.startswith("(") and stripped.endswith(")") and heading_numbering(stripped) is None:
        return "parenthetical line (units, 'Unaudited')"
    if stripped.endswith((":", "：")) and not stripped.isupper():
        return "label ending in a colon (a table or list label)"
    return None


def key(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def repeated(texts_by_page: Sequence[tuple[int, str]]) -> set[str]:
    """Keys of heading texts found on `REPEATED_PAGES` or more pages (company-name lines above
    every statement, '(continued)' titles): a running title, not a section."""
    pages: dict[str, set[int]] = {}
    for page, text in texts_by_page:
        pages.setdefault(key(text), set()).add(page)
    return {k for k, ps in pages.items() if len(ps) >= REPEATED_PAGES}


def is_sec_cover(first_page_text: str) -> bool:
    """An SEC form's cover page (10-K, 10-Q, 8-K): it names the Commission."""
    return bool(_SEC_COVER.search(first_page_text))


def summary(reasons: Sequence[tuple[str, str]], examples: int = 3) -> list[str]:
    """One review note per reason: how many lines were dropped, and a few of them."""
    by_reason: dict[str, list[str]] = {}
    for reason, text in reasons:
        by_reason.setdefault(reason, []).append(text)
    notes = []
    for reason, n in Counter(r for r, _ in reasons).most_common():
        shown = "; ".join(f"'{t[:50]}'" for t in by_reason[reason][:examples])
        more = " ..." if n > examples else ""
        notes.append(f"not a section ({reason}): {n} line(s), e.g. {shown}{more}")
    return notes
