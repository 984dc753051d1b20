"""A document's table of contents: find its page(s), read its entries, levels by numbering."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from treerag_core.base.text_rules import heading_numbering
from treerag_core.ingest.convert.skeleton import Entry, beside_items, title_matches

# An entry line ends in its page number, in a cell of its own or after a dotted leader.
_CELL_PAGE = re.compile(r"^(.*?)\s*\|\s*(\d{1,4})$")
_LEADER_PAGE = re.compile(r"^(.*?)\s*(?:\.\s?){3,}\s*(\d{1,4})$")
MIN_ENTRIES = 5  # fewer page-numbered lines are a short list, not a table of contents
ENTRY_SHARE = 0.3  # at least this share of a contents page's lines are entries
IN_ORDER = 0.8  # page numbers that go up (a price table's last column does not)
SEARCH_PAGES = (6, 0.15)  # look in the first max(6, 15% of pages): contents come first
MAX_SHIFT = (10, 60)  # PDF page minus printed page lies in [-10, 60] (roman front matter)
INDENT = 1.5  # an entry this many type sizes right of the numbered ones is their child


class TocLine(Protocol):
    text: str
    left: float
    size: float


@dataclass(frozen=True)
class TocEntry:
    title: str
    printed: int | None  # the page number printed beside it
    level: int


@dataclass(frozen=True)
class Toc:
    pages: tuple[int, ...]  # 0-based pages that hold the contents
    entries: tuple[TocEntry, ...]


def _page_ref(text: str) -> tuple[str, int] | None:
    m = _CELL_PAGE.match(text) or _LEADER_PAGE.match(text)
    if m is None or sum(ch.isalpha() for ch in m.group(1)) < 3:
        return None
    return m.group(1).replace(" | ", " ").strip(), int(m.group(2))


def _is_toc_page(lines: Sequence[TocLine], n_pages: int) -> bool:
    refs = [r[1] for r in (_page_ref(li.text) for li in lines) if r is not None]
    if len(refs) < MIN_ENTRIES or len(refs) < ENTRY_SHARE * len(lines):
        return False
    rising = sum(b >= a for a, b in pairwise(refs))
    return rising >= IN_ORDER * (len(refs) - 1) and max(refs) <= n_pages + 50


def find_toc(pages: Sequence[Sequence[TocLine]]) -> Toc | None:
    """The first run of contents pages near the start, with its entries, or None."""
    limit = max(SEARCH_PAGES[0], int(SEARCH_PAGES[1] * len(pages)))
    found: list[int] = []
    for p in range(min(limit, len(pages))):
        if _is_toc_page(pages[p], len(pages)):
            found.append(p)
        elif found:
            break
    if not found:
        return None
    entries = _entries([li for p in found for li in pages[p]])
    return Toc(tuple(found), tuple(entries)) if entries else None


def _entries(lines: Sequence[TocLine]) -> list[TocEntry]:
    """Entries in order: page-numbered lines, PART lines, and wrapped titles joined."""
    raw: list[tuple[str, int | None, float, float]] = []  # title, printed page, left, size
    pending: TocLine | None = None  # a numbered title whose page number is on the next line
    started = False
    for line in lines:
        text = line.text.strip()
        ref = _page_ref(text)
        num = heading_numbering(text)
        if ref is not None:
            title = ref[0]
            left = line.left
            if pending is not None:
                title = f"{pending.text.replace(' | ', ' ')} {title}"
                left = pending.left
            raw.append((title, ref[1], left, line.size))
            pending, started = None, True
        elif num is not None and num.family == "filing" and num.rank == 1:
            raw.append((text.replace(" | ", " "), None, line.left, line.size))
            pending, started = None, True
        elif num is not None and started:
            pending = line  # "Item 5. | Market for ... Equity" wraps: "Securities | 20"
    return _levels(raw)


def _levels(raw: list[tuple[str, int | None, float, float]]) -> list[TocEntry]:
    """PART > Item > Note by numbering; an un-numbered entry is a child of the numbered one
    above it when indented past the numbered entries, else its sibling (top level before).
    "Signatures" and the exhibit index are the Items' siblings however indented."""
    numbered_left = [left for title, _, left, _ in raw if heading_numbering(title)]
    margin = min(numbered_left) if numbered_left else min((r[2] for r in raw), default=0.0)
    has_part = any(
        (n := heading_numbering(r[0])) is not None and n.family == "filing" and n.rank == 1
        for r in raw
    )
    out: list[TocEntry] = []
    base = 0  # level of the last numbered entry
    base_is_part = False
    for title, printed, left, size in raw:
        num = heading_numbering(title)
        # "Signatures" set in the Items' title column reads as indented; it is their sibling.
        end = base > 0 and beside_items(title)
        if num is not None and num.family == "filing":
            level = num.rank - (0 if has_part else 1)
            level = max(level, 1)
            base, base_is_part = level, num.rank == 1
        elif num is not None or base_is_part or (left > margin + INDENT * size and not end):
            level = base + 1
        else:
            level = max(base, 1)
        out.append(TocEntry(title, printed, level))
    return out


def page_offset(
    entries: Sequence[TocEntry], texts: Sequence[Sequence[str]], after: int
) -> int | None:
    """PDF page index minus printed page number: the one most entries' headings agree on."""
    deltas: Counter[int] = Counter()
    for entry in entries:
        if entry.printed is None:
            continue
        # Front matter shifts printed pages by a few dozen at most; looking only there keeps
        # a 3,000-page document's contents from scanning every page for every entry.
        lo = max(after, entry.printed - MAX_SHIFT[0])
        for p in range(lo, min(len(texts), entry.printed + MAX_SHIFT[1] + 1)):
            if any(title_matches(entry.title, t) for t in texts[p]):
                deltas[p - entry.printed] += 1
    if not deltas:
        return None
    return deltas.most_common(1)[0][0]


def skeleton(toc: Toc, texts: Sequence[Sequence[str]]) -> list[Entry]:
    """The contents as skeleton entries with 0-based PDF pages (None when not placed)."""
    after = toc.pages[-1] + 1
    offset = page_offset(toc.entries, texts, after)
    out = []
    for e in toc.entries:
        page = e.printed + offset if e.printed is not None and offset is not None else None
        out.append(Entry(e.title, e.level, page))
    return out
