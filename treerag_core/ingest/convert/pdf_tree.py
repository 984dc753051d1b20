"""A PDF's tree: the author's outline, else its table of contents, anchors the headings found
by type; the cover, the contents pages and never-a-section lines are dropped, with notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from treerag_core.ingest.convert import junk
from treerag_core.ingest.convert.base import COVER_SIGNAL, ContentsEntry, clean_inline
from treerag_core.ingest.convert.levels import Candidate, structural_numbering
from treerag_core.ingest.convert.outline import is_rich
from treerag_core.ingest.convert.skeleton import ANCHOR_STYLE, Anchor, Entry, Placed, anchor, nest
from treerag_core.ingest.convert.toc import Toc, TocLine, find_toc, skeleton

COVER_TITLE = "Cover page"
MIN_ANCHORED = 0.5  # a contents whose entries are mostly not in the body is not trusted
MAX_COVER_PAGES = 3  # an SEC cover runs to the first PART or Item, at most this many pages

Key = tuple[int, int]


@dataclass(frozen=True)
class Found:
    """A block set like a heading: page, block index, why, and its look (sort key)."""

    page: int
    block: int
    signals: tuple[str, ...]
    style: tuple[float, bool, bool]
    # Why the page's layout says it is not a section (a row label between table rows), or "".
    layout: str = ""


@dataclass
class TreePlan:
    """Which blocks are headings at which level, headings to insert before a block (outline
    entries not found in the text, the cover page), and the review notes."""

    levels: dict[Key, int] = field(default_factory=dict)
    signals: dict[Key, tuple[str, ...]] = field(default_factory=dict)
    inserts: dict[Key, list[tuple[int, str, tuple[str, ...]]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    contents: list[ContentsEntry] = field(default_factory=list)


def _contents(texts, toc: Toc, entries: list[Entry], anchors: list[Anchor]) -> list[ContentsEntry]:
    """The contents entries as data: read (title, level, printed page, PDF page) and placed
    (the anchored heading's text and page; none when not found or the contents were not used)."""
    placed = {id(a.entry): a for a in anchors if a.found}
    out = []
    for read, entry in zip(toc.entries, entries, strict=True):
        a = placed.get(id(entry))
        out.append(
            ContentsEntry(
                read.title,
                read.level,
                read.printed,
                None if entry.page is None else entry.page + 1,
                clean_inline(texts[a.page][a.block]) if a is not None else "",
                None if a is None else a.page + 1,
            )
        )
    return out


def _skeleton(texts, pages, outline: list[Entry], contents: list[ContentsEntry]):
    """(anchors, source, toc pages, exclusive, notes) from the outline or the contents; the
    contents entries, read and placed, are added to `contents`."""
    notes: list[str] = []
    n = len(texts)
    if outline:
        anchors, missing = anchor(outline, texts, 0, insert=True)
        exclusive = is_rich(outline, n)
        how = "is the tree" if exclusive else "anchors the tree (sparse: type fills in below)"
        notes.append(f"the PDF's own outline ({len(outline)} bookmarks) {how}")
        located = sum(a.found for a in anchors)
        if located < len(anchors):
            notes.append(
                f"outline: {len(anchors) - located} bookmark title(s) not found in the text of "
                "their page; their headings open the section at the bookmark's place"
            )
        if missing:
            notes.append(f"outline: {len(missing)} bookmark(s) out of order were left out")
        return anchors, "outline", (), exclusive, notes
    toc = find_toc(pages)
    if toc is None:
        return [], None, (), False, notes
    entries = skeleton(toc, texts)
    anchors, missing = anchor(entries, texts, toc.pages[-1] + 1, insert=False)
    shown = ", ".join(str(p + 1) for p in toc.pages)
    if len(anchors) < MIN_ANCHORED * len(entries):
        notes.append(
            f"a table of contents on page(s) {shown} disagrees with the body ({len(anchors)} of "
            f"{len(entries)} entries found): headings come from the type instead"
        )
        contents.extend(_contents(texts, toc, entries, []))
        return [], None, toc.pages, False, notes
    notes.append(
        f"the table of contents (page(s) {shown}) gives the skeleton: {len(anchors)} of "
        f"{len(entries)} entries found on their pages"
    )
    if missing:
        names = "; ".join(f"'{e.title[:40]}'" for e in missing[:5])
        notes.append(f"contents entries not found in the body: {names}")
    contents.extend(_contents(texts, toc, entries, anchors))
    return anchors, "table of contents", toc.pages, False, notes


def _cover_end(texts, found: Sequence[Found], anchors: list[Anchor], toc_pages) -> int:
    """Pages [0, end) are the cover: before the contents, or an SEC form's first page(s)."""
    if toc_pages and toc_pages[0] > 0:
        return toc_pages[0]
    if not texts or not junk.is_sec_cover(" ".join(texts[0])):
        return 0
    starts = [a.page for a in anchors]
    starts += [
        f.page
        for f in found
        if (num := structural_numbering(texts[f.page][f.block])) and num.family == "filing"
    ]
    first = min((p for p in starts if p > 0), default=1)
    return max(1, min(first, MAX_COVER_PAGES))


def plan_tree(
    texts: Sequence[Sequence[str]],
    found: Sequence[Found],
    pages: Sequence[Sequence[TocLine]],
    outline: list[Entry],
) -> TreePlan:
    """Decide the headings and their levels for a PDF's blocks (`texts[page][block]`)."""
    plan = TreePlan()
    anchors, source, toc_pages, exclusive, notes = _skeleton(texts, pages, outline, plan.contents)
    plan.notes.extend(notes)
    anchor_at = {(a.page, a.block): a for a in anchors if a.found}
    cover_end = 0 if source == "outline" else _cover_end(texts, found, anchors, toc_pages)

    dropped: list[tuple[str, str]] = []
    # Row labels repeat from table to table: they do not make a prose heading a running title.
    repeated = junk.repeated([(f.page, texts[f.page][f.block]) for f in found if not f.layout])
    kept: list[Found] = []
    for f in found:
        text = texts[f.page][f.block]
        if (f.page, f.block) in anchor_at:
            continue
        if exclusive:
            continue  # the outline is the tree: type-set lines stay text
        if f.page < cover_end:
            dropped.append(("on the cover page", text))
        elif f.page in toc_pages:
            dropped.append(("on the table of contents", text))
        elif f.layout:
            dropped.append((f.layout, text))
        elif reason := junk.line_reason(text):
            dropped.append((reason, text))
        elif junk.key(text) in repeated:
            dropped.append((f"repeated on {junk.REPEATED_PAGES}+ pages: a running title", text))
        else:
            kept.append(f)
    plan.notes.extend(junk.summary(dropped))

    # Capitals over mixed case (the last part of the look) only without a skeleton: with one,
    # the author's levels are the upper tree, and a filing's capitals MD&A heading must not
    # swallow the mixed-case statements and sections after it.
    cut = 3 if source is None else 2
    styles = sorted({f.style[:cut] for f in kept})
    # Every heading in document order: (page, block, 0 = inserted before it | 1 = it, seq).
    items: dict[tuple[int, int, int, int], Placed] = {}
    for f in kept:
        text = texts[f.page][f.block]
        cand = Candidate(text, styles.index(f.style[:cut]), structural_numbering(text))
        items[(f.page, f.block, 1, 0)] = Placed(cand, opens_page=f.block == 0)
    for seq, a in enumerate(anchors):
        title = texts[a.page][a.block] if a.found else a.entry.title
        cand = Candidate(title, ANCHOR_STYLE, structural_numbering(title))
        items[(a.page, a.block, 1 if a.found else 0, seq)] = Placed(cand, a.entry.level)
    if cover_end and not any(a.page == 0 for a in anchors):
        items[(0, 0, 0, -1)] = Placed(Candidate(COVER_TITLE, ANCHOR_STYLE), 1, holds=False)
        plan.inserts[(0, 0)] = [(1, COVER_TITLE, (COVER_SIGNAL,))]
    order = sorted(items)
    levels = dict(zip(order, nest([items[k] for k in order]), strict=True))

    signals_of = {(f.page, f.block): f.signals for f in kept}
    why = ("outline",) if source == "outline" else ("table of contents",)
    for (p, b, real, seq), level in levels.items():
        if seq == -1:
            continue
        if real and (p, b) in anchor_at:
            plan.levels[(p, b)] = level
            plan.signals[(p, b)] = why
        elif real:
            plan.levels[(p, b)] = level
            plan.signals[(p, b)] = signals_of[(p, b)]
        else:
            plan.inserts.setdefault((p, b), []).append((level, anchors[seq].entry.title, why))
    return plan
