"""Plain text and Markdown: Markdown headings are kept; otherwise numbering and title lines."""

from __future__ import annotations

import re

from treerag_core.ingest.convert.base import (
    INFERRED,
    ConvertedDocument,
    InferredHeading,
    MarkdownWriter,
    check_headings,
)
from treerag_core.ingest.convert.levels import Candidate, assign_levels, structural_numbering
from treerag_core.ingest.convert.weak import TARGET_CHARS, section_starts, section_title
from treerag_core.ingest.parsing import scan_headings
from treerag_core.ingest.statutes import scan_articles

_END_PUNCT = re.compile(r"[.,;:!?。，；：！？、)]$")
_CJK = re.compile(r"[\u4e00-\u9fff]")


# A Markdown text with at most this many `#` headings (a title) has no tree of its own: its
# numbered lines (一、, （一）, 1.1, 第X章) and title lines are read as in plain text.
FEW_HEADINGS = 1


def markdown_document(name: str, text: str, fmt: str = "markdown") -> ConvertedDocument:
    """A Markdown text as it is: its own `#` headings are the tree; with a title at most,
    the numbering-first rules of plain text give it one."""
    found = scan_headings(text)
    check_headings(name, len(found))  # DocumentTooLargeError past CONVERT_MAX_HEADINGS
    if len(found) <= FEW_HEADINGS and statute_free(text):
        return _inferred(name, text, fmt)
    headings = tuple(
        InferredHeading(h.hashes, h.text, h.start, h.end, None, ("markdown",)) for h in found
    )
    return ConvertedDocument(name, text, fmt, (), headings)


def statute_free(text: str) -> bool:
    """A statute's articles are its structure already (the parser makes them leaves)."""
    return not scan_articles(text, [], [])


def _title_like(line: str) -> bool:
    words = [w for w in re.findall(r"[A-Za-z][\w'-]*", line)]
    if not words or len(words) > 12:
        return False
    if line.isupper():
        return True
    small = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"}
    return all(w[0].isupper() or w.lower() in small for w in words) and words[0][0].isupper()


def _heading_signal(line: str, next_is_text: bool) -> tuple[str, ...] | None:
    """Why a one-line paragraph reads as a heading, or None when it does not."""
    stripped = line.strip()
    limit = 40 if _CJK.search(stripped) else 100
    if not stripped or len(stripped) > limit or stripped.startswith(("-", "*", "|", ">")):
        return None
    num = structural_numbering(stripped)
    if num is not None:
        if num.family == "zh" and (len(stripped) > 30 or (num.rank == 4 and len(stripped) > 12)):
            return None  # 第一条 followed by the article's text is body, not a heading
        return (f"numbering {num.label}",)
    if _END_PUNCT.search(stripped) or not next_is_text:
        return None
    if _title_like(stripped):
        return ("short title line",)
    return None


def text_document(name: str, text: str) -> ConvertedDocument:
    """Plain text: a Markdown text stays as is; else one-line paragraphs that look like
    headings (numbering, or a short Title Case line before a paragraph) become `#` lines."""
    if scan_headings(text):
        return markdown_document(name, text, "text")
    return _inferred(name, text, "text")


def _inferred(name: str, text: str, fmt: str) -> ConvertedDocument:
    """Headings from numbering and title lines (a Markdown `#` line keeps its level); with
    none, and text enough for several sections, evenly sized sections cut at topic shifts."""
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    # A Markdown heading alone on its line keeps its place (a title over numbered lines).
    marked = {
        i: h
        for i, p in enumerate(paragraphs)
        if "\n" not in p.strip() and (h := scan_headings(p.strip() + "\n"))
    }
    found: list[tuple[int, tuple[str, ...]]] = []
    for i, para in enumerate(paragraphs):
        if i in marked:
            found.append((i, ("markdown",)))
            continue
        if "\n" in para.strip():
            continue
        next_is_text = i + 1 < len(paragraphs) and len(paragraphs[i + 1].strip()) > 0
        signal = _heading_signal(para, next_is_text)
        if signal is not None:
            found.append((i, signal))
    check_headings(name, len(found))
    titles = {i: marked[i][0].text if i in marked else paragraphs[i].strip() for i, _ in found}
    cands = [
        Candidate(titles[i], -1 if i in marked else 0 if titles[i].isupper() else 1,
                  structural_numbering(titles[i]))
        for i, _ in found
    ]  # fmt: skip
    levels = dict(zip((i for i, _ in found), assign_levels(cands), strict=True))
    signals = dict(found)
    notes: list[str] = []
    inserted: set[int] = set()  # sections named by their first paragraph, which stays text
    if len(found) <= len(marked):  # nothing but a title: cut evenly, at topic shifts
        body = [i for i in range(len(paragraphs)) if i not in marked]
        starts = section_starts([paragraphs[i] for i in body])
        if len(starts) > 1:
            base = 1 + (max(levels.values()) if levels else 0)
            for k in starts:
                i = body[k]
                titles[i], levels[i], signals[i] = section_title(paragraphs[i]), base, (INFERRED,)
                inserted.add(i)
            notes.append(
                f"{len(starts)} sections inferred: no headings found, so the text was cut about "
                f"every {TARGET_CHARS} characters where the vocabulary shifts; each section is "
                "named by its first line"
            )
    writer = MarkdownWriter(name)
    for i, para in enumerate(paragraphs):
        if i in levels:
            writer.heading(levels[i], titles[i], signals[i])
        if i not in levels or i in inserted:
            writer.paragraph(para.strip("\n"))
    return writer.result(name, fmt, notes=notes)
