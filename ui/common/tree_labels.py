"""Tree-graph node labels broken into lines once, here: words whole, CJK at sensible points."""

from __future__ import annotations

import functools
import math
import re
import unicodedata

from treerag_core import zh_words
from treerag_core.base.text_rules import is_unspaced, one_line
from treerag_core.base.types import TreeNode

# A section the converter cut itself (`TreeNode.inferred`: a text with no headings, cut where the
# topic shifts) is named by its first line, not by a heading: every view says so the same way.
INFERRED = "inferred"
INFERRED_PREFIX = "~"  # before the name where space is short (the graph's boxes, chips)
# After a name, in its document's language (as "(intro)" / "（引言）" are).
INFERRED_SUFFIX = {"en": " (inferred)", "zh": "（推断）"}
INFERRED_HELP = (
    "An inferred section: the document has no heading here; it was cut where the topic shifts "
    "and is named by its first line."
)
LABEL_LINE_UNITS = 16  # a label line holds this many Latin characters (a CJK one counts 2)
LABEL_LINES = 3
# A Chinese numbering ("第三章", "第十二条", "一、", "（二）"): kept whole, a line may end after it.
_NUMBERING = re.compile(
    r"^(?:第[0-9０-９一二三四五六七八九十百千零〇两]+[编章节条款部篇卷]"
    r"|[一二三四五六七八九十]+、|[（(][一二三四五六七八九十0-9]+[）)])"
)
_CLOSING = set("，。、；：？！）》」』】〕,.;:?!)]}%")  # never starts a line
_OPENING = set("（《「『【〔([{")  # never ends a line
_LATIN_BREAK = re.compile(r"[^_\-/.]*[_\-/.]+|[^_\-/.]+")  # a long word breaks after _ - / .


def _units(text: str) -> int:
    return sum(2 if is_unspaced(c) else 1 for c in text)


def _cjk_atoms(word: str, width: int = LABEL_LINE_UNITS) -> list[str]:
    """A word holding CJK as its smallest unbreakable pieces: its jieba words (a word wider
    than a line: its characters), punctuation glued on (closing to the piece before,
    opening to the one after), so a line never breaks inside 中华人民共和国 or 部署."""
    pieces = [
        p for w in zh_words(word) for p in ([w] if _units(w) <= width else list(w)) if p.strip()
    ]
    atoms: list[str] = []
    for piece in pieces:
        glue = atoms and (piece[0] in _CLOSING or atoms[-1][-1] in _OPENING)
        if glue:
            atoms[-1] += piece
        else:
            atoms.append(piece)
    return atoms


def _single(atoms: list[str]) -> bool:
    """At most one character besides punctuation: alone on a line it is an orphan."""
    return sum(c not in _CLOSING and c not in _OPENING for a in atoms for c in a) <= 1


def _latin_parts(word: str, width: int) -> list[str]:
    """A Latin word as pieces of at most `width` (after _ - / . where it can, else anywhere)."""
    parts: list[str] = []
    for part in _LATIN_BREAK.findall(word):
        while len(part) > width:
            parts.append(part[:width])
            part = part[width:]
        parts.append(part)
    # Glue the pieces back as long as they fit: "2023-05-05" stays whole when it can.
    glued: list[str] = []
    for part in parts:
        if glued and len(glued[-1]) + len(part) <= width:
            glued[-1] += part
        else:
            glued.append(part)
    return glued


def _words(text: str) -> list[tuple[str, bool]]:
    """(word, is_cjk) in order; a leading Chinese numbering is its own word."""
    text = one_line(text)
    found = _NUMBERING.match(text)
    out: list[tuple[str, bool]] = []
    if found:
        out.append((found.group(0), False))  # unbreakable, like a Latin word
        text = text[found.end() :].lstrip()
    for word in text.split(" "):
        if word:
            out.append((word, any(is_unspaced(c) for c in word)))
    return out


def _split_cjk(atoms: list[str], room: int, width: int) -> tuple[list[str], list[str]]:
    """The atoms that go on a line with `room` units left (never one character alone on
    either side of the break)."""
    take, used = 0, 0
    while take < len(atoms) and used + _units(atoms[take]) <= room:
        used += _units(atoms[take])
        take += 1
    if take > 1 and take < len(atoms) and _single(atoms[take:]):
        take -= 1  # never leave one character alone on a line
    if take and take < len(atoms) and _single(atoms[:take]) and room < width:
        take = 0  # one character at a line's end is an orphan too: start a new line
    return atoms[:take], atoms[take:]


def _fill(atoms: list[str], target: int, width: int) -> list[list[str]]:
    """The atoms as lines, each filled up to `target` units."""
    rows: list[list[str]] = []
    while atoms:
        head, atoms = _split_cjk(atoms, target, width)
        if not head:  # an atom wider than the target
            head, atoms = atoms[:1], atoms[1:]
        rows.append(head)
    return rows


def _even_rows(atoms: list[str], width: int) -> list[list[str]]:
    """The atoms in as few lines as a full-width fill needs, as even as the words allow:
    the smallest line length from the even share up that needs no extra line."""
    fewest = len(_fill(atoms, width, width))
    even = math.ceil(sum(_units(a) for a in atoms) / fewest)
    for target in range(even, width):
        rows = _fill(atoms, target, width)
        if len(rows) <= fewest:
            return rows
    return _fill(atoms, width, width)


def wrap_lines(text: str, first_line_used: int = 0, width: int = LABEL_LINE_UNITS) -> list[str]:
    """`text` as lines of at most `width` units (the first has `first_line_used` taken).

    Latin breaks between words (a word longer than a line after _ - / .); a CJK word that fits
    on a line of its own is never split; a longer one is split into even lines, never leaving
    one character alone; a Chinese numbering ("第三章") is kept whole and the title after it
    starts a new line when it does not fit beside it.
    """
    lines: list[str] = []
    line, used = "", first_line_used

    def newline() -> None:
        nonlocal line, used
        if line.strip():
            lines.append(line.rstrip())
        line, used = "", 0

    def put(piece: str, joined: bool = False) -> None:
        nonlocal line, used
        gap = 1 if line and not joined else 0
        line += " " * gap + piece
        used += gap + _units(piece)

    for word, cjk in _words(text):
        size = _units(word)
        gap = 1 if line else 0
        if used + gap + size <= width:
            put(word)
            continue
        if not cjk:
            for n, part in enumerate(_latin_parts(word, width)):
                joined = n > 0  # the pieces of one word join without a space
                if used + (0 if joined or not line else 1) + len(part) > width:
                    newline()
                put(part, joined)
            continue
        if line and size <= width:  # a short title goes whole onto the next line
            newline()
            put(word)
            continue
        atoms = _cjk_atoms(word)
        if line:  # fill the rest of this line first (if at least two characters fit)
            head, atoms = _split_cjk(atoms, width - used - 1, width)
            if head:
                put("".join(head))
            newline()
        for n, row in enumerate(_even_rows(atoms, width)):
            if n:
                newline()
            put("".join(row))
    newline()
    return lines


@functools.lru_cache(maxsize=4096)  # headings do not change between reruns; jieba is slow
def wrap_label(text: str, first_line_used: int = 0) -> str:
    """A heading as at most LABEL_LINES lines of LABEL_LINE_UNITS units, cut with "…".

    The graph component is told never to wrap (no widthConstraint maximum): a second wrap at
    vis-network's own width broke lines mid-word and drew a one-character line over the next.
    """
    lines = wrap_lines(text, first_line_used)
    if len(lines) > LABEL_LINES:
        lines = [*lines[: LABEL_LINES - 1], lines[LABEL_LINES - 1][:-1].rstrip() + "…"]
    return "\n".join(lines)


def node_kind(node: TreeNode, root: str = "root") -> str:
    """root (or `root`), section or leaf, with "· inferred" for a section the converter cut."""
    kind = root if node.is_root else "leaf" if node.is_leaf else "section"
    return f"{kind} · {INFERRED}" if node.inferred else kind


INFERRED_CHIP_CHARS = 36  # a chip is cut at its width: the mark after the name must show


def inferred_name(name: str, language: str = "en") -> str:
    """An inferred section's name as a citation shows it: "~The work presented… (inferred)".
    The name (a first line, often long) is cut first, so the chip never cuts the mark."""
    base = name.rstrip("…").rstrip()
    kept, width = "", 0
    for ch in base:  # a Han character is as wide as two Latin ones
        width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if width > INFERRED_CHIP_CHARS:
            break
        kept += ch
    cut = base != name or kept != base
    name = kept.rstrip() + ("…" if cut else "")
    return f"{INFERRED_PREFIX}{name}{INFERRED_SUFFIX.get(language, INFERRED_SUFFIX['en'])}"
