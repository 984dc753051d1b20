"""Local, deterministic node summaries: one extracted sentence per leaf, composed bottom-up."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from treerag_core.base.text_rules import detect_language, han_count, one_line, sentences, truncate
from treerag_core.base.types import Language, TreeNode

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SKIP_LINE = re.compile(
    r"^\s*(?:#{1,6}(?:\s|$)|(?:[-*_=]\s*){3,}$|\{\{[<%].*[%>]\}\}$|<!--|-->|</?[A-Za-z][^>]*>$)"
)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_MARK = re.compile(r"^\s*(?:[-+*]|\d{1,9}[.)])\s+")
_INLINE = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), ""),  # images
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),  # reference links
    (re.compile(r"\[\^[^\]]*\]"), ""),  # footnote marks
    (re.compile(r"\{\{[<%].*?[%>]\}\}"), ""),  # Hugo shortcodes
    (re.compile(r"<[^>\n]+>"), ""),  # HTML tags
    (re.compile(r"`([^`]+)`"), r"\1"),  # inline code
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # bold
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"), r"\1"),  # _emphasis_
)
_WORD = re.compile(r"[A-Za-z0-9]+")


def content_key(node: TreeNode) -> str:
    """A cache key for a node's summary: sha256 of its heading and content."""
    return hashlib.sha256(f"{node.heading}\n{node.content}".encode()).hexdigest()


def _clean_inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return one_line(text)


def _text_units(content: str) -> tuple[list[str], list[str]]:
    """Prose units (paragraphs and list items) and table rows, with Markdown removed."""
    prose: list[str] = []
    table: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if current:
            unit = _clean_inline(" ".join(current))
            if unit:
                prose.append(unit)
            current.clear()

    for line in content.split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            flush()
            fence = m.group(1)
            continue
        stripped = line.strip()
        if not stripped or _SKIP_LINE.match(line) or _TABLE_RULE.match(line):
            flush()
            continue
        if stripped.startswith("|"):
            flush()
            cells = [_clean_inline(c) for c in stripped.strip("|").split("|")]
            row = "; ".join(c for c in cells if c)
            if row:
                table.append(row)
            continue
        if _LIST_MARK.match(line):
            flush()
            line = _LIST_MARK.sub("", line, count=1)
        current.append(line.lstrip(" >").strip())
    flush()
    return prose, table


def _informative(sentence: str) -> bool:
    return han_count(sentence) >= 8 or (len(sentence) >= 20 and len(_WORD.findall(sentence)) >= 4)


def first_sentence(content: str) -> str:
    """The first informative sentence of `content` (Markdown removed), or "" if it has none."""
    prose, table = _text_units(content)
    for units in (prose, table):
        found = [s for unit in units for s in sentences(unit)]
        for sentence in found:
            if _informative(sentence):
                return sentence
        if found:
            return found[0]
    return ""


def _empty_summary(heading: str, language: Language) -> str:
    return f"{heading}（仅标题）" if language == "zh" else f"{heading} (heading only)"


def _parent_summary(headings: list[str], lead: str, language: Language, max_chars: int) -> str:
    """Children's headings (up to half the budget) plus the first child's lead sentence."""
    zh = language == "zh"
    sep = "、" if zh else ", "
    shown: list[str] = []
    more = False
    for heading in (_clean_inline(h) for h in headings):
        if shown and len(sep.join([*shown, heading])) > max_chars // 2:
            more = True
            break
        shown.append(heading)
    listed = sep.join(shown)
    if zh:
        prefix = f"包括{listed}{'等' if more else ''}。" if shown else ""
    else:
        prefix = f"Covers {listed}{' and more' if more else ''}. " if shown else ""
    return truncate(f"{prefix}{lead}".strip(), max_chars)


def summarize_tree(
    nodes: Sequence[TreeNode],
    max_chars: int = 160,
    overrides: Mapping[str, str] | None = None,
) -> list[TreeNode]:
    """Return copies of `nodes` with `summary` filled, leaves first, then parents, then roots.

    Leaves get their first informative sentence; a parent gets its children's headings plus
    the lead sentence of its first child; a root gets its title plus the summary of its
    abstract (or first non-empty leaf). `overrides` maps `content_key(node)` to a summary
    (e.g. a cached LLM summary) that replaces the local one and feeds the parents above it.
    """
    if max_chars < 20:
        raise ValueError(f"max_chars must be >= 20, but got {max_chars}")
    overrides = overrides or {}
    by_id = {n.node_id: n for n in nodes}
    languages: dict[str, Language] = {}
    for doc_id in dict.fromkeys(n.doc_id for n in nodes):
        sample = "\n".join(f"{n.heading}\n{n.content}" for n in nodes if n.doc_id == doc_id)
        languages[doc_id] = detect_language(sample)

    summary: dict[str, str] = {}
    lead: dict[str, str] = {}  # the sentence a parent quotes from its first child
    for node in reversed(nodes):  # document order: children come after their parent
        language = languages[node.doc_id]
        override = overrides.get(content_key(node))
        if override is not None:
            summary[node.node_id] = truncate(one_line(override), max_chars)
            lead[node.node_id] = summary[node.node_id]
        elif node.is_leaf:
            sentence = first_sentence(node.content)
            text = sentence or _empty_summary(node.heading, language)
            summary[node.node_id] = truncate(text, max_chars)
            lead[node.node_id] = summary[node.node_id]
        elif not node.is_root:
            headings = [by_id[c].heading for c in node.children if not by_id[c].synthetic]
            first = lead.get(node.children[0], "")
            summary[node.node_id] = _parent_summary(headings, first, language, max_chars)
            lead[node.node_id] = first
    for node in nodes:
        if node.is_root and content_key(node) not in overrides:
            summary[node.node_id] = _root_summary(node, by_id, summary, languages, max_chars)
    return [replace(n, summary=summary.get(n.node_id, "")) for n in nodes]


def _root_summary(
    root: TreeNode,
    by_id: Mapping[str, TreeNode],
    summary: Mapping[str, str],
    languages: Mapping[str, Language],
    max_chars: int,
) -> str:
    doc_leaves = [n for n in by_id.values() if n.doc_id == root.doc_id and n.is_leaf]
    abstract = next((n for n in doc_leaves if re.search(r"abstract|摘要", n.heading, re.I)), None)
    pick = abstract or next((n for n in doc_leaves if n.content.strip()), None)
    if pick is None:
        return truncate(root.heading, max_chars)
    sep = "：" if languages[root.doc_id] == "zh" else ": "
    return truncate(f"{root.heading}{sep}{summary[pick.node_id]}", max_chars)
