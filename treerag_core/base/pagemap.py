"""Page numbers of character offsets in a converted PDF's text (1-based, from page starts)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def page_of(page_starts: Sequence[int], offset: int) -> int | None:
    """The 1-based page holding `offset`; None when the text has no page map."""
    if not page_starts:
        return None
    return max(1, bisect.bisect_right(page_starts, offset))


def page_span(page_starts: Sequence[int], start: int, end: int) -> tuple[int | None, int | None]:
    """First and last 1-based page of the span [start, end); (None, None) without a page map."""
    if not page_starts:
        return None, None
    return page_of(page_starts, start), page_of(page_starts, max(start, end - 1))


def chars_on_page(page_starts: Sequence[int], start: int, end: int, page: int) -> int:
    """How many characters of [start, end) lie on the 1-based `page`."""
    if not page_starts or not 1 <= page <= len(page_starts):
        return 0
    lo = page_starts[page - 1]
    hi = page_starts[page] if page < len(page_starts) else max(end, lo)
    return max(0, min(end, hi) - max(start, lo))


def format_pages(first: int | None, last: int | None) -> str:
    """`p. 3` or `pp. 3-4`; empty when the text has no pages."""
    if first is None:
        return ""
    return f"p. {first}" if last in (None, first) else f"pp. {first}-{last}"


def span_on_page(page_starts: Sequence[int], start: int, end: int, page: int) -> tuple[int, int]:
    """The part [lo, hi) of [start, end) that lies on the 1-based `page` (empty: lo == hi)."""
    if not page_starts or not 1 <= page <= len(page_starts):
        return start, start
    lo = max(start, page_starts[page - 1])
    hi = min(end, page_starts[page]) if page < len(page_starts) else end
    return lo, max(lo, hi)
