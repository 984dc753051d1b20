"""Cut a leaf's text into chunks: paragraphs first, then sentence- and word-aware windows."""

from __future__ import annotations

import bisect
import re

from treerag_core.base.text_rules import is_unspaced, sentence_end_positions
from treerag_core.base.types import Chunk, TreeNode

# Bumped when the same text and settings would chunk differently: cached eval indexes are
# keyed by it (2: short paragraphs join their neighbour instead of being dropped).
CHUNKER_VERSION = "2"

# A window prefers to end at a sentence (then line, then clause) end lying in its last third:
# earlier cuts would make chunks much shorter than chunk_size for little gain.
END_ZONE = 1 / 3

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_CLAUSE_END = re.compile(r"[,:;][\"'”’)\]]*(?=\s)|[，、：]")


def chunk_leaf(
    node: TreeNode,
    doc_text: str,
    chunk_size: int = 200,
    overlap: int = 50,
    min_chars: int = 20,
) -> list[Chunk]:
    """Chunks of one leaf, with `doc_text[chunk.start:chunk.end] == chunk.text` exactly.

    The leaf's text (`doc_text[node.start:node.end]`) is split at blank lines into units
    (`paragraph_units`: a paragraph shorter than `min_chars` joins the next, so no text is
    unreachable). A unit of at most `chunk_size` characters is one chunk; a longer one is cut
    into windows of at most `chunk_size` characters, each ending at a
    sentence, line or clause end in its last third if there is one, else at the last word
    boundary (any point between Han characters counts). The next window starts about
    `overlap` characters before the previous end, at a word start. Only a single word longer
    than a window is ever cut inside. The last window of a paragraph may run up to
    `min(min_chars, chunk_size // 10)` characters over, rather than leave a tiny tail.

    Raises:
        ValueError: bad sizes, or `doc_text` is not the text `node` was parsed from.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, but got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise ValueError(f"overlap must be in [0, chunk_size), but got {overlap}")
    if min_chars < 0:
        raise ValueError(f"min_chars must be >= 0, but got {min_chars}")
    if doc_text[node.start : node.end] != node.content:
        raise ValueError(
            f"node {node.node_id} of {node.doc_id!r}: doc_text[{node.start}:{node.end}] is not "
            "the node's content; pass the text the tree was parsed from"
        )
    spans: list[tuple[int, int]] = []
    for start, end in paragraph_units(doc_text, node.start, node.end, min_chars):
        if end - start <= chunk_size:
            spans.append((start, end))
        else:
            spans.extend(_windows(doc_text, start, end, chunk_size, overlap, min_chars))
    return [
        Chunk(
            chunk_id=f"{node.node_id}_chunk_{i:02d}",
            text=doc_text[start:end],
            source_node_id=node.node_id,
            heading_path=node.heading_path,
            doc_id=node.doc_id,
            start=start,
            end=end,
        )
        for i, (start, end) in enumerate(spans)
    ]


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans of the blank-line separated paragraphs of `text[start:end]`, whitespace trimmed."""
    end = len(text) if end is None else end
    cuts = [(m.start(), m.end()) for m in _BLANK_LINE.finditer(text, start, end)]
    bounds = [start, *(c for cut in cuts for c in cut), end]
    spans = []
    for s, e in zip(bounds[::2], bounds[1::2], strict=True):
        s, e = _trim(text, s, e)
        if e > s:
            spans.append((s, e))
    return spans


def paragraph_units(text: str, start: int, end: int, min_chars: int) -> list[tuple[int, int]]:
    """The paragraphs of `text[start:end]`, each shorter than `min_chars` joined to the next.

    Short paragraphs are real text: a statute's list items ("（三）劳动合同期限；"), the line
    that introduces them, a one-line answer. Alone they are too short to score, dropped they
    could never be found; joined to their neighbour they are read with it. A short run at
    the end of the span joins the unit before it, or stands alone if there is none.
    """
    units: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None  # a run of short paragraphs not yet min_chars long
    for s, e in paragraph_spans(text, start, end):
        s = s if run is None else run[0]
        if e - s < min_chars:
            run = (s, e)
            continue
        units.append((s, e))
        run = None
    if run is not None:
        units[-1:] = [(units[-1][0], run[1])] if units else [run]
    return units


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _is_boundary(text: str, i: int) -> bool:
    """Whether cutting between text[i-1] and text[i] keeps every word whole."""
    before, after = text[i - 1], text[i]
    return (
        before.isspace()
        or after.isspace()
        or is_unspaced(before)  # Han, kana, CJK punctuation: no spaces between words
        or is_unspaced(after)
    )


def _last_in(positions: list[int], low: int, high: int) -> int | None:
    """The largest position in [low, high], or None."""
    i = bisect.bisect_right(positions, high)
    if i and positions[i - 1] >= low:
        return positions[i - 1]
    return None


def _windows(
    text: str, start: int, end: int, size: int, overlap: int, min_chars: int
) -> list[tuple[int, int]]:
    """Sliding windows over the paragraph text[start:end] (already trimmed, longer than size)."""
    para = text[start:end]
    sentence_ends = [start + p for p in sentence_end_positions(para)]
    clause_ends = [start + m.end() for m in _CLAUSE_END.finditer(para)]
    line_ends = [start + m.start() for m in re.finditer(r"\n", para)]
    absorb = min(min_chars, size // 10)
    zone = max(min_chars, int(size * (1 - END_ZONE)))

    out: list[tuple[int, int]] = []
    pos = start
    while True:
        if end - pos <= size + absorb:
            if _solid(text, pos, end) < min_chars:  # a tiny tail: reach back for a real chunk
                pos = _tail_start(text, start, end, min_chars, size + absorb)
            if _has_words(text, pos, end, min_chars):
                out.append((pos, end))
            return out
        limit = pos + size
        cut = None
        for candidates in (sentence_ends, line_ends, clause_ends):
            cut = _last_in(candidates, pos + zone, limit)
            if cut is not None:
                break
        if cut is None:
            low = pos + max(min_chars, 1)
            cut = next((i for i in range(limit, low - 1, -1) if _is_boundary(text, i)), limit)
        s, e = _trim(text, pos, cut)
        if _has_words(text, s, e, min_chars):
            out.append((s, e))
        pos = _next_start(text, pos, cut, overlap)


def _next_start(text: str, pos: int, cut: int, overlap: int) -> int:
    """About `overlap` chars before `cut`, moved forward to a word start; always > pos."""
    target = max(cut - overlap, pos + 1)
    start = next((i for i in range(target, cut + 1) if _is_boundary(text, i)), target)
    while text[start].isspace():  # the paragraph ends in a non-space, so this stops
        start += 1
    return start


def _has_words(text: str, start: int, end: int, min_chars: int) -> bool:
    """Keep a window unless it is short AND pure markup (a lone "|" of a padded table row).

    Short windows with words in them are kept: dropping them would lose text.
    """
    return end - start >= max(min_chars, 1) or any(ch.isalnum() for ch in text[start:end])


def _solid(text: str, start: int, end: int) -> int:
    """Non-whitespace characters in text[start:end]."""
    return sum(not ch.isspace() for ch in text[start:end])


def _tail_start(text: str, floor: int, end: int, min_chars: int, max_len: int) -> int:
    """A start for the last window holding >= min_chars non-space chars, at a word start."""
    i, seen = end, 0
    while i > floor and seen < min_chars:
        i -= 1
        seen += not text[i].isspace()
    while i > floor and not _is_boundary(text, i):
        i -= 1
    i = max(i, end - max_len)  # padded tables: never exceed the size cap
    while text[i].isspace():
        i += 1
    return i
