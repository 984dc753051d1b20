"""A statute's articles (第X条 paragraphs) as the leaves of its tree, under chapter and section."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.text_rules import ARTICLE_OPENING, heading_numbering, is_article_heading

MIN_ARTICLES = 3  # fewer article openings are cross-references in prose, not a statute
_SHORT_TITLE = re.compile(r"[ \t\u3000]*【([^】\n]{1,30})】")  # 第一条 【立法目的】
_SPACE = re.compile(r"[ \t\u3000]*")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Article:
    """An article's heading: the span of its number (and short title) at its line's start."""

    start: int
    end: int  # where the article's own text begins
    title: str  # "第五十八条", or "第一条 立法目的" with a short title


def scan_articles(
    text: str, heading_spans: Sequence[tuple[int, int]], heading_texts: Sequence[str]
) -> list[Article]:
    """Lines that open with an article number, outside headings and fenced code.

    Nothing when the articles are headings already or there are fewer than `MIN_ARTICLES`
    (a document that only cites an article at a line's start is not a statute).
    """
    if any(is_article_heading(text) for text in heading_texts):
        return []
    spans = sorted(heading_spans)
    found: list[Article] = []
    pos = 0
    k = 0
    fence: str | None = None
    for line in text.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if m := _FENCE.match(line):
            fence = None if fence == m.group(1)[0] else (fence or m.group(1)[0])
            continue
        if fence is not None:
            continue
        while k < len(spans) and spans[k][1] <= start:
            k += 1
        if k < len(spans) and spans[k][0] <= start < spans[k][1]:
            continue  # a heading line (or a setext heading's text)
        m = ARTICLE_OPENING.match(line)
        if m is None:
            continue
        title, end = m.group(), m.end()
        if short := _SHORT_TITLE.match(line, end):
            title, end = f"{title} {short.group(1).strip()}", short.end()
        end = _SPACE.match(line, end).end()
        found.append(Article(start, start + end, title))
    return found if len(found) >= MIN_ARTICLES else []


def article_notes(articles: Sequence[Article], examples: int = 5) -> list[str]:
    """Review notes: how many articles become leaves, and numbers repeated or skipped (the
    tree keeps every article as written; the note says where the numbering is odd)."""
    if not articles:
        return []
    notes = [f"statute: {len(articles)} articles (第X条) become the leaves of their chapters"]
    seen: set[str] = set()
    repeated: list[str] = []
    skipped: list[str] = []
    prev = 0
    for a in articles:
        label = a.title.split(" ")[0]
        if label in seen:
            repeated.append(label)
        seen.add(label)
        num = heading_numbering(label)
        if num is None or "之" in label:
            continue
        value = num.values[0]
        if value > prev + 1 and prev:
            skipped.append(f"{prev + 1}-{value - 1}" if value - prev > 2 else str(prev + 1))
        prev = max(prev, value)
    if repeated:
        notes.append(f"statute: article numbers used twice: {', '.join(repeated[:examples])}")
    if skipped:
        notes.append(f"statute: article numbers skipped: {', '.join(skipped[:examples])}")
    return notes
