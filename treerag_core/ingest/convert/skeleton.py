"""The author's skeleton (a PDF outline or a table of contents) anchored on the page text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from treerag_core.ingest.convert.levels import Candidate, is_ancestor

_WORD = re.compile(r"\w+")
# A block is a sentence that mentions the title, not the heading, when it has this many more
# words than the title (a heading line carries at most a short prefix: "Amcor plc and ...").
EXTRA_WORDS = 6
SLACK = 1  # an author's page can be off by one (a heading at a page's foot, a blank page)


@dataclass(frozen=True)
class Entry:
    """One item of the author's skeleton; `page` is 0-based, None when the author gave none."""

    title: str
    level: int
    page: int | None


@dataclass(frozen=True)
class Anchor:
    """Where an entry's heading stands: block `block` of page `page`.

    `found` False: the title was not located in the text; the heading is inserted before
    that block (the outline still says the section starts there).
    """

    entry: Entry
    page: int
    block: int
    found: bool


@lru_cache(maxsize=65536)  # every block is compared with every entry while pages are placed
def words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def title_matches(title: str, block: str) -> bool:
    """Whether a block of text is the heading `title` (or the first line of it, wrapped)."""
    t, w = words(title), words(block)
    if not t or not w or len(w) > len(t) + EXTRA_WORDS:
        return False
    ts, ws = set(t), set(w)
    if ts <= ws:
        return True
    if ws <= ts and w[0] == t[0] and 2 * len(ws) >= len(ts):
        return True  # the first line of a title that wraps onto a second block
    return len(ts & ws) / len(ts | ws) >= 0.75


def _search_pages(entry: Entry, lo: int, hi: int) -> list[int]:
    """Pages to look on, the author's page first."""
    if entry.page is None:
        return list(range(lo, hi + 1))
    near = [entry.page, entry.page + 1, entry.page - 1]
    return [p for p in near if lo <= p <= hi] + [p for p in range(lo, hi + 1) if p not in near]


def anchor(
    entries: Sequence[Entry], texts: Sequence[Sequence[str]], first_page: int, insert: bool
) -> tuple[list[Anchor], list[Entry]]:
    """Locate each entry's heading, in order, from `first_page` on.

    An entry is looked for on its page +-1 (between its neighbours' pages when it has none),
    after the previous entry's heading. `insert`: an entry not found still opens its page
    (an outline's destination is exact); otherwise it is returned as missing.
    """
    n = len(texts)
    anchors: list[Anchor] = []
    missing: list[Entry] = []
    pos = (first_page, -1)
    for i, entry in enumerate(entries):
        if entry.page is not None and not 0 <= entry.page < n:
            missing.append(entry)
            continue
        nxt = next((e.page for e in entries[i + 1 :] if e.page is not None), None)
        lo = max(pos[0], entry.page - SLACK) if entry.page is not None else pos[0]
        hi = entry.page + SLACK if entry.page is not None else (nxt + SLACK if nxt else lo + 2)
        hi = min(hi, n - 1)
        hit = None
        for p in _search_pages(entry, lo, hi):
            start = pos[1] + 1 if p == pos[0] else 0
            blocks = range(start, len(texts[p]))
            b = next((b for b in blocks if title_matches(entry.title, texts[p][b])), None)
            if b is not None and (p, b) > pos:
                hit = (p, b)
                break
        if hit is not None:
            anchors.append(Anchor(entry, hit[0], hit[1], True))
            pos = hit
        elif insert and entry.page is not None and entry.page >= pos[0]:
            block = pos[1] + 1 if entry.page == pos[0] else 0
            anchors.append(Anchor(entry, entry.page, block, False))
            pos = (entry.page, block - 1)
        else:
            missing.append(entry)
    return anchors, missing


# An anchor holds every heading found by type after it, unless numbering closes it.
ANCHOR_STYLE = -1


@dataclass(frozen=True)
class Placed:
    """A heading in document order: anchored ones carry the author's level (`fixed`);
    `holds` False for a section that holds nothing (the cover page); `opens_page` for the
    first block of its page."""

    candidate: Candidate
    fixed: int | None = None
    holds: bool = True
    opens_page: bool = False


# A form's end matter, after its last Item. The signatures (with the power of attorney signed
# with them) and the exhibit index sit beside the Items (filers' contents list them there);
# each appended exhibit ("Exhibit 31.1", "EXHIBIT 32 Section 1350 Certifications") is a
# document of its own, at the top level.
_BESIDE_ITEMS = re.compile(
    r"^(?:signatures?|power\s+of\s+attorney|exhibit\s+index|index\s+to\s+exhibits)[.:]?$", re.I
)
_EXHIBIT = re.compile(r"^exhibit\s+\d{1,3}(?:\.\d{1,3})*[a-z]?(?![\w.])(?!\s+(?:to|of)\b)", re.I)


def beside_items(title: str) -> bool:
    """Whether a title is end matter that stands beside a form's Items ("SIGNATURES")."""
    return bool(_BESIDE_ITEMS.match(" ".join(title.split())))


def _is_item(candidate: Candidate) -> bool:
    num = candidate.numbering
    return num is not None and num.family == "filing" and num.rank == 2


def _end_matter(items: Sequence[Placed]) -> tuple[list[Placed], set[int]]:
    """The items with a form's end matter placed by the numbering grammar, and which of them
    stand beside the last Item. After the last Item, "SIGNATURES" (and the exhibit index)
    closes the Item and stands beside it; an "Exhibit N" heading, or after the signatures an
    un-numbered heading that opens its page (an appended exhibit starts on a page of its own:
    "SUBSIDIARIES OF THE REGISTRANT") while no exhibit has been labelled, starts at the top
    level and holds what follows as an anchor does.
    Without it they nested under the last Item's sub-headings (Nike's Exhibit 31.1 at level 5
    under "Transfer Agents and Registrar")."""
    out = list(items)
    last = max((i for i, item in enumerate(items) if _is_item(item.candidate)), default=None)
    if last is None:
        return out, set()
    beside: set[int] = set()
    labelled = False  # an "Exhibit N" label seen: from there the labels mark the exhibits
    for i in range(last + 1, len(items)):
        item = items[i]
        text = " ".join(item.candidate.text.split())
        # A numbered heading opening a page continues its exhibit ("4 REPRESENTATIONS").
        opens = item.opens_page and item.fixed is None and item.candidate.numbering is None
        if beside_items(text):
            beside.add(i)
        elif _EXHIBIT.match(text) or (beside and not labelled and opens):
            labelled = labelled or bool(_EXHIBIT.match(text))
            top = replace(item.candidate, style_rank=ANCHOR_STYLE)
            out[i] = replace(item, candidate=top, fixed=1)
    return out, beside


def nest(items: Sequence[Placed]) -> list[int]:
    """Levels in document order: an anchor takes the author's level and closes what is not
    above it; a heading found by type nests by numbering first, then style (`is_ancestor`),
    among the open headings, anchors included (`Note 4` closes the anchored 'Notes to
    Financial Statements' and sits under the anchored 'Item 8.'). A form's end matter is
    placed by `_end_matter`."""
    stack: list[tuple[Candidate, int]] = []
    levels: list[int] = []
    placed, beside = _end_matter(items)
    item_level = 1  # the level of the last Item placed
    for i, item in enumerate(placed):
        if i in beside:  # closes the Item, stands beside it, whatever the contents' indent
            item = replace(item, fixed=min(item.fixed or item_level, item_level))
        level = _place(item, stack, levels)
        if _is_item(item.candidate):
            item_level = level
    return levels


def _place(item: Placed, stack: list[tuple[Candidate, int]], levels: list[int]) -> int:
    """Place one heading among the open headings (`stack`, changed); append and return its level."""
    if item.fixed is not None:
        while stack and stack[-1][1] >= item.fixed:
            stack.pop()
        level = min(item.fixed, stack[-1][1] + 1 if stack else 1)
        levels.append(level)
        if item.holds:
            stack.append((item.candidate, level))
        return level
    cands = [c for c, _ in stack]
    while stack and not is_ancestor(stack[-1][0], item.candidate, cands):
        stack.pop()
        cands.pop()
    level = min(stack[-1][1] + 1 if stack else 1, 6)
    levels.append(level)
    stack.append((item.candidate, level))
    return level
