"""Markdown text to a heading tree of TreeNodes with exact source spans (English and Chinese)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import PurePath

from treerag_core.base.text_rules import Numbering, detect_language, heading_numbering, join_path
from treerag_core.base.types import TreeNode
from treerag_core.ingest.statutes import scan_articles

# --- heading lines ----------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_ANCHOR = re.compile(r"[ \t]*\{:?[ \t]*#[^{}]*\}$")  # Hugo/kramdown `{#id}`: markup, not text
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(={3,}|-{3,})[ \t]*$")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
# Lines that cannot start a paragraph (so cannot become a setext heading's text) ...
_NO_PARA_START = re.compile(
    r"^(?: {4,}|\t| {0,3}(?:[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|[>|<]))"
)
# ... and lines that end a paragraph that was running (list items, quotes, tables, HTML).
_PARA_BREAK = re.compile(r"^ {0,3}(?:[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|[>|<])")
_YAML_KEY = re.compile(r"^[A-Za-z_][\w-]*[ \t]*:")


@dataclass(frozen=True)
class HeadingLine:
    """A heading as written: its line span (setext: paragraph + underline), # count and text."""

    start: int
    end: int  # just past the heading's last line, its newline included
    hashes: int  # ATX # count; setext: 1 for ===, 2 for ---
    text: str


def _clean_heading(raw: str) -> str:
    text = raw.strip()
    text = _ANCHOR.sub("", text).strip()
    return text


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after a leading YAML front-matter block, 0 when there is none."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for j in range(1, min(len(lines), 200)):
        if lines[j].rstrip() in ("---", "..."):
            return j + 1 if any(_YAML_KEY.match(line) for line in lines[1:j]) else 0
    return 0


def scan_headings(text: str) -> list[HeadingLine]:
    """Every ATX and setext heading outside fenced code and front matter, in document order.

    Empty headings (`##` alone) are not headings here: their line stays ordinary text.
    """
    lines = text.split("\n")
    starts: list[int] = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1

    def line_end(i: int) -> int:
        return min(starts[i] + len(lines[i]) + 1, len(text))

    headings: list[HeadingLine] = []
    fence: tuple[str, int] | None = None
    para_start: int | None = None
    blocked = False  # inside a non-paragraph block (list, quote, table...) until a blank line
    for i in range(_front_matter_end(lines), len(lines)):
        line = lines[i].rstrip("\r")
        if fence is not None:
            m = _FENCE_CLOSE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence = None
            continue
        if not line.strip():
            para_start, blocked = None, False
            continue
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            para_start, blocked = None, False
            continue
        m = _ATX.match(line)
        if m:
            raw = _ATX_CLOSING.sub("", m.group(2) or "")
            heading = _clean_heading(raw)
            if heading:
                headings.append(HeadingLine(starts[i], line_end(i), len(m.group(1)), heading))
            para_start, blocked = None, False
            continue
        m = _SETEXT.match(line)
        if m and para_start is not None:
            raw = " ".join(part.strip() for part in lines[para_start:i])
            heading = _clean_heading(raw)
            if heading:
                level = 1 if m.group(1)[0] == "=" else 2
                headings.append(HeadingLine(starts[para_start], line_end(i), level, heading))
            para_start, blocked = None, False
            continue
        if _THEMATIC.match(line):  # `---` after a blank line is a thematic break, not a heading
            para_start, blocked = None, False
            continue
        if para_start is None:
            if blocked or _NO_PARA_START.match(line):
                blocked = True
            else:
                para_start = i
        elif _PARA_BREAK.match(line):
            para_start, blocked = None, True
    return headings


# Bump when the same text parses into another tree: cached eval indexes are keyed by it.
TREE_VERSION = "2"  # 2: a statute's 第X条 articles are leaves (issue 24)

# An article (第X条 at a paragraph's start) nests below every `#` heading by count as well.
ARTICLE_HASHES = 7


# --- numbering (the grammar lives in text_rules) ----------------------------------------------


def _continues(before: Numbering, after: Numbering) -> bool:
    """Whether `after` (not deeper than `before`) reads as a later sibling or a later ancestor.

    `1.` after `1.` or `1.` after `4.1` do not: there a restart under more #s is a nested list.
    """
    if before.family in ("decimal", "alpha"):
        k = len(after.values)
        return (
            after.values[: k - 1] == before.values[: k - 1]
            and after.values[k - 1] > before.values[k - 1]
        )
    if after.rank == before.rank:
        return after.values[-1] > before.values[-1]
    return True


# --- tree building ----------------------------------------------------------------------------


@dataclass(eq=False)
class _Section:
    heading: HeadingLine
    numbering: Numbering | None
    level: int = 0
    parent: _Section | None = None


def _sibling(entry: _Section, heading: HeadingLine, num: Numbering) -> bool:
    """`heading` continues `entry`'s numbering at the same rank, with no more #s than it."""
    other = entry.numbering
    return (
        other is not None
        and other.family == num.family
        and other.rank == num.rank
        and _continues(other, num)
        and entry.heading.hashes <= heading.hashes
    )


def _pop_by_numbering(stack: list[_Section], heading: HeadingLine, num: Numbering) -> int:
    """Pop the open sections that `heading`'s numbering closes; return how many stay for sure.

    Walks down from the nearest section numbered in the same family: a deeper number nests
    under it, the same rank makes a sibling (it takes that section's place), a shallower rank
    pops it and goes on. A number that does not continue the other's sequence (`1.` after
    `4.1`) is a nested list when it has more #s, so there the # count decides.
    """
    for i in range(len(stack) - 1, -1, -1):
        other = stack[i].numbering
        if other is None or other.family != num.family:
            continue
        trusted = num.rank > other.rank or _continues(other, num)
        deeper = num.rank > other.rank if trusted else heading.hashes > stack[i].heading.hashes
        if deeper:
            return i + 1
        if trusted and num.rank == other.rank:
            cut = i
            if heading.hashes < stack[i].heading.hashes:
                # Fewer #s than that sibling: prefer an earlier sibling that agrees on both
                # (`## 3.` after `## 2.` > `### 4.1` > `#### 1.` is a sibling of `2.`).
                cut = next((j for j in range(i - 1, -1, -1) if _sibling(stack[j], heading, num)), i)
            del stack[cut:]
            return cut
        del stack[i:]
    return 0


def _place(sections: list[HeadingLine]) -> list[_Section]:
    """Give every heading a parent and a level: numbering first, # count as the fallback.

    A stack of open sections; a heading pops what it is not nested in. Two headings numbered
    in one family compare by numbering; any other pair compares by # count. A heading's level
    is its stack depth, so a level never jumps by more than one.
    """
    placed: list[_Section] = []
    stack: list[_Section] = []
    for heading in sections:
        # An article nests by # count alone (it is deeper than every heading), and its
        # number takes no part in nesting headings: "二、回避" after "第九条" is a chapter.
        article = heading.hashes == ARTICLE_HASHES
        num = None if article else heading_numbering(heading.text)
        floor = _pop_by_numbering(stack, heading, num) if num is not None else 0
        while len(stack) > floor and stack[-1].heading.hashes >= heading.hashes:
            stack.pop()
        section = _Section(heading, num, len(stack) + 1, stack[-1] if stack else None)
        stack.append(section)
        placed.append(section)
    return placed


def _within_depth(placed: list[_Section], max_depth: int, articles: set[int]) -> list[_Section]:
    """Sections down to `max_depth`; a statute's articles are leaves at any depth, under
    their nearest kept ancestor (a 节 below the cap hands its articles to its 章)."""
    kept: list[_Section] = []
    for section in placed:
        if section.level <= max_depth:
            kept.append(section)
        elif id(section.heading) in articles:
            parent = section.parent
            while parent is not None and parent.level > max_depth:
                parent = parent.parent
            section.parent = parent
            section.level = parent.level + 1 if parent is not None else 1
            kept.append(section)
    return kept


@dataclass(eq=False)
class _Proto:
    heading: str
    level: int
    start: int
    end: int
    parent: _Proto | None
    synthetic: bool = False
    inferred: bool = False
    children: list[_Proto] = field(default_factory=list)
    node_id: str = ""
    path: str = ""


def _strip_span(text: str, lo: int, hi: int) -> tuple[int, int]:
    """The span [lo, hi) without surrounding whitespace (an empty span at lo if blank)."""
    segment = text[lo:hi]
    left = len(segment) - len(segment.lstrip())
    if left == len(segment):
        return lo, lo
    return lo + left, lo + len(segment.rstrip())


def _title_of(name: str, doc_id: str) -> str:
    return PurePath(name).stem or name or doc_id or "document"


def _title_and_preamble(
    text: str, headings: list[HeadingLine]
) -> tuple[HeadingLine | None, list[HeadingLine], tuple[int, int]]:
    """The title line (a sole level-1 heading that comes first), the other headings, and the
    span of the text before the first section (the "Preamble" leaf when there are headings)."""
    title_line: HeadingLine | None = None
    if headings and headings[0].hashes == 1 and sum(h.hashes == 1 for h in headings) == 1:
        title_line, headings = headings[0], headings[1:]
    first_start = headings[0].start if headings else len(text)
    pre_lo = 0
    if title_line is not None and not text[: title_line.start].strip():
        pre_lo = title_line.end
    return title_line, headings, _strip_span(text, pre_lo, first_start)


def preamble_text(text: str) -> str:
    """The text `parse_document` makes a "Preamble" leaf of ("" when there is none), so a
    review of the headings can show it: it is a section the headings list does not name."""
    _title, headings, (start, end) = _title_and_preamble(text, scan_headings(text))
    return text[start:end] if headings else ""


def parse_document(
    text: str,
    doc_id: str,
    name: str,
    max_depth: int = 3,
    first_id: int = 1,
    article_leaves: bool = False,
    inferred_starts: Collection[int] = (),
) -> list[TreeNode]:
    """Parse Markdown into TreeNodes in document order; node 0 is the document root.

    Ids are `f"{n:04d}"` counting from `first_id`. `text[n.start:n.end] == n.content` for every
    node; every non-blank character outside heading lines lies in some leaf's span (text before
    the first section becomes a "Preamble" leaf, a parent's own text a synthetic intro leaf).
    Headings deeper than `max_depth` are not nodes: they stay in their ancestor's content.
    With `article_leaves`, a statute's 第X条 articles are leaves at any depth (an index
    passes its `IndexSettings.article_leaves`; off by default, as there).
    A section whose heading line starts at one of `inferred_starts` (the converter cut it
    itself, `SourceDocument.inferred_starts`) is marked `inferred`.
    """
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, but got {max_depth}")
    if first_id < 0:
        raise ValueError(f"first_id must be >= 0, but got {first_id}")
    zh = detect_language(text) == "zh"
    inferred = frozenset(inferred_starts)
    headings = scan_headings(text)
    spans = [(h.start, h.end) for h in headings]
    articles = [
        HeadingLine(a.start, a.end, ARTICLE_HASHES, a.title)
        for a in (scan_articles(text, spans, [h.text for h in headings]) if article_leaves else ())
    ]
    if articles:
        headings = sorted(headings + articles, key=lambda h: h.start)

    title_line, headings, (pre_start, pre_end) = _title_and_preamble(text, headings)
    title = title_line.text if title_line else _title_of(name, doc_id)

    root = _Proto(title, 0, 0, 0, None, path=title)
    protos = [root]

    if not headings:  # the whole text is one leaf named like the document
        protos.append(_Proto(title, 1, pre_start, pre_end, root, synthetic=True))
    elif pre_end > pre_start:
        protos.append(_Proto("前言" if zh else "Preamble", 1, pre_start, pre_end, root, True))

    nodes = _within_depth(_place(headings), max_depth, {id(a) for a in articles})
    proto_of: dict[int, _Proto] = {}
    for k, section in enumerate(nodes):
        region_end = nodes[k + 1].heading.start if k + 1 < len(nodes) else len(text)
        start, end = _strip_span(text, section.heading.end, region_end)
        parent = proto_of[id(section.parent)] if section.parent is not None else root
        proto = _Proto(section.heading.text, section.level, start, end, parent)
        proto.inferred = section.heading.start in inferred
        proto_of[id(section)] = proto
        protos.append(proto)
        has_children = k + 1 < len(nodes) and nodes[k + 1].parent is section
        if has_children and end > start:
            intro = f"{section.heading.text}（引言）" if zh else f"{section.heading.text} (intro)"
            protos.append(_Proto(intro, section.level + 1, start, end, proto, synthetic=True))

    for n, proto in enumerate(protos, start=first_id):
        proto.node_id = f"{n:04d}"
        if proto.parent is not None:
            proto.parent.children.append(proto)
            parent_path = proto.parent.path if proto.parent is not root else ""
            if proto.synthetic and parent_path:
                # An intro leaf holds its parent's own text, so it answers to the parent's
                # path: citations and gold section paths name the parent section.
                proto.path = parent_path
            else:
                proto.path = join_path(parent_path, proto.heading)

    return [
        TreeNode(
            node_id=p.node_id,
            doc_id=doc_id,
            heading=p.heading,
            level=p.level,
            content=text[p.start : p.end],
            start=p.start,
            end=p.end,
            heading_path=p.path,
            parent_id=p.parent.node_id if p.parent is not None else None,
            children=tuple(c.node_id for c in p.children),
            synthetic=p.synthetic,
            inferred=p.inferred,
        )
        for p in protos
    ]
