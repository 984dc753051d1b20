"""A PDF's own outline (bookmarks) as skeleton entries, with the damage it has noted."""

from __future__ import annotations

from treerag_core.ingest.convert.skeleton import Entry

MAX_ITEMS = 5000  # more bookmarks than this are read up to here (a note says so)
MAX_DEPTH = 6  # deeper bookmarks are left out: the tree holds six levels at most
# An outline with fewer entries than one per this many pages marks parts, not sections:
# it anchors the tree, and the type-set headings fill in below it.
PAGES_PER_ENTRY = 10


def read_outline(pdf, n_pages: int) -> tuple[list[Entry], list[str]]:
    """The bookmarks in order (0-based pages), and notes on the ones left out.

    pypdfium2 walks the tree depth-first, stops on a loop (it remembers the bookmarks it
    has seen) and skips bookmarks deeper than `MAX_DEPTH`; items without a destination or
    pointing past the last page are dropped.
    """
    import pypdfium2 as pdfium

    entries: list[Entry] = []
    no_page = past_end = 0
    truncated = False
    try:
        for k, bm in enumerate(pdf.get_toc(max_depth=MAX_DEPTH)):
            if k >= MAX_ITEMS:
                truncated = True
                break
            title = " ".join((bm.get_title() or "").split())
            dest = bm.get_dest()
            index = dest.get_index() if dest is not None else None
            if not title:
                continue
            if index is None:
                no_page += 1
            elif not 0 <= index < n_pages:
                past_end += 1
            else:
                entries.append(Entry(title, bm.level + 1, index))
    except pdfium.PdfiumError as exc:  # a broken outline is reported and the text decides
        return [], [f"the PDF's outline cannot be read ({type(exc).__name__}: {exc}); ignored"]
    notes = []
    if no_page:
        notes.append(f"outline: {no_page} bookmark(s) without a page were left out")
    if past_end:
        notes.append(f"outline: {past_end} bookmark(s) pointing past page {n_pages} left out")
    if truncated:
        notes.append(f"outline: read up to {MAX_ITEMS} bookmarks; the rest were left out")
    return _levels_in_order(entries), notes


def _levels_in_order(entries: list[Entry]) -> list[Entry]:
    """Levels that never jump by more than one (a child without its parent moves up)."""
    out: list[Entry] = []
    prev = 0
    for e in entries:
        level = min(e.level, prev + 1)
        out.append(Entry(e.title, level, e.page))
        prev = level
    return out


def is_rich(entries: list[Entry], n_pages: int) -> bool:
    """Whether the outline is the whole tree (else it anchors one and type fills in)."""
    return len(entries) >= max(3, n_pages / PAGES_PER_ENTRY)
