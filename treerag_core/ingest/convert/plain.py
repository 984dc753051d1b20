"""Plain text and Markdown: Markdown headings are kept; otherwise numbering and title lines."""

from __future__ import annotations

import re

from treerag_core.ingest.convert.base import ConvertedDocument, InferredHeading, MarkdownWriter
from treerag_core.ingest.convert.levels import Candidate, assign_levels, structural_numbering
from treerag_core.ingest.parsing import scan_headings

_END_PUNCT = re.compile(r"[.,;:!?。，；：！？、)]$")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def markdown_document(name: str, text: str, fmt: str = "markdown") -> ConvertedDocument:
    """A Markdown text as it is: its own `#` headings are the tree."""
    headings = tuple(
        InferredHeading(h.hashes, h.text, h.start, h.end, None, ("markdown",))
        for h in scan_headings(text)
    )
    return ConvertedDocument(name, text, fmt, (), headings)


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
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    found: list[tuple[int, tuple[str, ...]]] = []
    for i, para in enumerate(paragraphs):
        if "\n" in para.strip():
            continue
        next_is_text = i + 1 < len(paragraphs) and len(paragraphs[i + 1].strip()) > 0
        signal = _heading_signal(para, next_is_text)
        if signal is not None:
            found.append((i, signal))
    cands = [
        Candidate(paragraphs[i].strip(), 0 if paragraphs[i].strip().isupper() else 1,
                  structural_numbering(paragraphs[i].strip()))
        for i, _ in found
    ]  # fmt: skip
    levels = dict(zip((i for i, _ in found), assign_levels(cands), strict=True))
    signals = dict(found)
    writer = MarkdownWriter()
    for i, para in enumerate(paragraphs):
        if i in levels:
            writer.heading(levels[i], para, signals[i])
        else:
            writer.paragraph(para.strip("\n"))
    return writer.result(name, "text")
