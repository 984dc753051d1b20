"""Shared text rules: scripts, language, sentences, heading numbers and paths, truncation."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from treerag_core.base.types import Language

# ---- scripts --------------------------------------------------------------------------------
# One definition of "CJK", in named parts, because the modules need different unions:
# - HAN: the ideographs (URO, Extension A, compatibility ideographs, and planes 2-3, which hold
#   only ideographs: Extensions B-H and the compatibility supplement). These decide the
#   language and go to jieba. Kana and Hangul are not Han: jieba would tokenize them as words.
# - UNSPACED: scripts written without spaces between words (Han, kana) plus CJK punctuation
#   and full-width forms; a text may be cut next to any of them without splitting a word.
# - TOKEN_DENSE: UNSPACED plus Hangul syllables; each is about one LLM token.
HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
KANA_RANGES = "\u3040-\u30ff"
HANGUL_RANGES = "\uac00-\ud7af"
CJK_PUNCT_RANGES = "\u3000-\u303f\uff00-\uffef"  # CJK symbols/punctuation, full-width forms
UNSPACED_RANGES = HAN_RANGES + KANA_RANGES + CJK_PUNCT_RANGES
TOKEN_DENSE_RANGES = UNSPACED_RANGES + HANGUL_RANGES

HAN_CHAR = re.compile(f"[{HAN_RANGES}]")
HAN_RUNS = re.compile(f"([{HAN_RANGES}]+)")  # a capture group: re.split keeps the runs
_UNSPACED_CHAR = re.compile(f"[{UNSPACED_RANGES}]")
_TOKEN_DENSE_CHAR = re.compile(f"[{TOKEN_DENSE_RANGES}]")


def han_count(text: str) -> int:
    """How many Han ideographs `text` holds."""
    return len(HAN_CHAR.findall(text))


def is_unspaced(ch: str) -> bool:
    """Whether `ch` belongs to a script written without spaces (a cut beside it splits no word)."""
    return bool(_UNSPACED_CHAR.match(ch))


def token_dense_count(text: str) -> int:
    """Characters of `text` that cost about one LLM token each (Han, kana, Hangul, CJK marks)."""
    return len(_TOKEN_DENSE_CHAR.findall(text))


# ---- language -------------------------------------------------------------------------------
# ONE rule for questions and documents. There used to be two: questions were "zh" when Han
# made up >= 20% of the letters, documents when Han characters >= Latin words. They agreed
# on every dev question and document (441 questions, 110 documents, 5 samples), but the
# letter rule calls a Chinese question full of English terms English ("如何配置 Kubernetes
# Ingress Controller 的 TLS？" is 14% Han letters), so the word rule is kept: one Han
# character weighs about one word. Words are runs of letters of any other script (accents,
# Greek and Cyrillic count too, not only A-Z), so "naïve" is one word, not two.
_OTHER_WORD = re.compile(rf"(?:(?![{HAN_RANGES}])[^\W\d_])+")


def detect_language(text: str) -> Language:
    """ "zh" when Han characters are at least as many as words in other scripts, else "en"."""
    han = han_count(text)
    if han == 0:
        return "en"
    return "zh" if han >= len(_OTHER_WORD.findall(text)) else "en"


# ---- sentences ------------------------------------------------------------------------------
# An English end mark followed by optional closing quotes/brackets and then whitespace; a
# Chinese end mark (with optional closing quotes) needs no space after it.
_EN_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
_ZH_END = re.compile(r"[。！？；]+[\"'”’」』)）]*")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# "e.g. the", "Fig. 3", "et al. 2019": a period after these does not end a sentence.
ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "al", "fig", "figs", "eq", "eqs", "no", "nos", "vs", "cf", "sec"}
    | {"ref", "refs", "mr", "mrs", "ms", "dr", "prof", "st", "approx", "resp", "incl"}
)
_TOKEN_OPENERS = '([{"“‘'


def sentence_end_positions(text: str) -> list[int]:
    """Sorted offsets just past each sentence end (".!?" + space, "。！？；") in `text`.

    A period does not end a sentence after an abbreviation ("e.g.", "Fig.") or a single
    letter ("J. Smith"), nor when the next word starts in lower case ("approx. five").
    Decimals ("3.5") never end one: an English end mark needs whitespace after it.
    """
    ends: set[int] = set()
    for match in _EN_END.finditer(text):
        if match.group()[0] == "." and _is_abbreviation(text, match.start()):
            continue
        rest = text[match.end() :].lstrip()
        if rest[:1].islower():
            continue
        ends.add(match.end())
    ends.update(match.end() for match in _ZH_END.finditer(text))
    return sorted(ends)


def _is_abbreviation(text: str, dot: int) -> bool:
    """Whether the word before `dot` is a known abbreviation or a single-letter initial.

    The word must be a whole token: the "t" of "don't.", the "a" of "4a." and the "A" of
    "M&A." are not initials.
    """
    start = dot
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    if start > 0 and not (text[start - 1].isspace() or text[start - 1] in _TOKEN_OPENERS):
        return False
    word = text[start:dot].lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, whitespace trimmed, empty spans dropped.

    Sentences end where `sentence_end_positions` says and at paragraph breaks (blank lines).
    """
    cuts = set(sentence_end_positions(text))
    for match in _PARAGRAPH.finditer(text):
        cuts.add(match.start())
        cuts.add(match.end())
    cuts.add(len(text))
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in sorted(cuts):
        s, e = start, cut
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            spans.append((s, e))
        start = cut
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of `text` as strings (see `sentence_spans`)."""
    return [text[s:e] for s, e in sentence_spans(text)]


# ---- heading numbers ------------------------------------------------------------------------
# One grammar for the numbering that opens a heading. The parser nests headings by it; the
# citation matcher uses its label to match "Router Design" with "3.2.2 Router Design".
_ZH_NUMERALS = "零〇一二三四五六七八九十百千万两"
_ZH_KIND = re.compile(rf"^第([{_ZH_NUMERALS}]+|\d+)(部分|分编|编|部|篇|卷|章|节|条|款|项)")
_ZH_ITEM = re.compile(rf"^([{_ZH_NUMERALS}]+)[、.](?!\d)")
_ZH_PAREN = re.compile(rf"^[（(]([{_ZH_NUMERALS}]+)[）)]")
# A book (编, or 部分/部/篇/卷 in other texts) holds parts, chapters, sections, articles ...
_ZH_RANK = {"编": 0, "部分": 0, "部": 0, "篇": 0, "卷": 0, "分编": 1, "章": 2, "节": 3}
_ZH_RANK |= {"条": 4, "款": 5, "项": 6, "item": 7, "paren": 8}
# A statute's article opening its paragraph: "第十七条之一 " (the number, then a space).
ARTICLE_OPENING = re.compile(
    rf"^第(?:[{_ZH_NUMERALS}]+|\d+)条(?:之[{_ZH_NUMERALS}]+)?(?=[ \t\u3000])"
)
_DECIMAL = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\.?(?=\s|$)")
_ALPHA = re.compile(r"^([A-Z])(?:((?:\.\d{1,3})+)\.?|\.)(?=\s|$)")  # A.1.2 or A.
_ROMAN = re.compile(r"^([IVXLCDM]{1,7})\.(?=\s|$)")
_PAREN = re.compile(r"^(?:(\d{1,3})\)|[（(](\d{1,3})[）)])(?=\s|$)")  # 1) or (1)
# SEC filings: "PART II" above "Item 7." / "Item 1A." ("Item 1A" sorts between 1 and 2).
_PART = re.compile(r"^PART\s+([IVX]{1,4}|\d{1,2})[.:]?(?=\s|$)", re.IGNORECASE)
# 8-K items carry a two-digit part: "Item 5.07.".
_ITEM = re.compile(r"^ITEM\s+(\d{1,2})(?:\.(\d{2}))?([A-Z])?[.:]?(?=\s|$)", re.IGNORECASE)
# A note to the financial statements, inside its Item: "Note 4 — Leases", "NOTE 12. Debt".
_NOTE = re.compile(r"^NOTE\s+(\d{1,2})[.:]?(?=\s|$)", re.IGNORECASE)
# Books and reports: "Chapter 3", "Chapter IV", "Appendix B" (appendices follow the chapters).
_CHAPTER = re.compile(
    r"^(CHAPTER|APPENDIX)\s+(\d{1,3}|[IVXLC]{1,7}|[A-Z])[.:]?(?=\s|$)", re.IGNORECASE
)
_APPENDIX_BASE = 1000
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


@dataclass(frozen=True)
class Numbering:
    """A heading's numbering: comparable only within one family; a larger rank is deeper."""

    family: str  # decimal | alpha | roman | paren | zh | filing | chapter
    rank: int
    values: tuple[int, ...]  # decimal/alpha: every part; others: the one number
    label: str  # the numbering as written, e.g. "3.2.", "第五十条", "（一）"


def zh_int(numeral: str) -> int:
    """A Chinese (or Arabic) numeral as an int: "一百零五" -> 105, "两万" -> 20000."""
    if numeral.isdigit():
        return int(numeral)
    digits = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4}
    digits.update({"五": 5, "六": 6, "七": 7, "八": 8, "九": 9})
    units = {"十": 10, "百": 100, "千": 1000}
    total = section = current = 0
    for ch in numeral:
        if ch == "万":
            total += (section + current or 1) * 10000
            section = current = 0
        elif ch in units:
            section += (current or 1) * units[ch]
            current = 0
        else:
            current = digits[ch]
    return total + section + current


def _roman_int(numeral: str) -> int | None:
    values = [_ROMAN_VALUES[ch] for ch in numeral]
    total = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    # Reject non-canonical strings such as "IIII" or "VX" (likely words, not numbers).
    return total if _to_roman(total) == numeral else None


def _to_roman(value: int) -> str:
    out = []
    for number, symbol in (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ):  # fmt: skip
        while value >= number:
            out.append(symbol)
            value -= number
    return "".join(out)


def heading_numbering(heading: str) -> Numbering | None:
    """A heading's leading numbering, or None.

    Forms: `第一编/分编/章/节/条/款/项` (and 部分/部/篇/卷; Chinese or Arabic numerals),
    `一、`, `一.`, `（一）`, `1.2.3`, `A.1.2`, `A.`, `III.` (canonical roman only), `1)`,
    `(1)`, `PART II`, `Part 2`, `Item 1A.`, `Item 5.07.`, `Note 4`, `Chapter 3`, `Chapter IV`,
    `Appendix B`. Decimal parts have at most 3 digits, so a year ("2019 Results") is not a
    number. The parser nests headings by it and the converters (`convert.levels`) find
    headings in plain lines by it.
    """
    if m := _ZH_KIND.match(heading):
        return Numbering("zh", _ZH_RANK[m.group(2)], (zh_int(m.group(1)),), m.group())
    if m := _ZH_ITEM.match(heading):
        return Numbering("zh", _ZH_RANK["item"], (zh_int(m.group(1)),), m.group())
    if m := _ZH_PAREN.match(heading):
        return Numbering("zh", _ZH_RANK["paren"], (zh_int(m.group(1)),), m.group())
    if m := _DECIMAL.match(heading):
        parts = tuple(int(p) for p in m.group(1).split("."))
        return Numbering("decimal", len(parts), parts, m.group())
    # Roman before alpha: "I." and "C." are read as roman numerals, "A." and "B." as letters.
    if (m := _ROMAN.match(heading)) and (value := _roman_int(m.group(1))) is not None:
        return Numbering("roman", 1, (value,), m.group())
    if m := _ALPHA.match(heading):
        numbers = m.group(2)[1:].split(".") if m.group(2) else []
        parts = (ord(m.group(1)) - ord("A") + 1, *(int(p) for p in numbers))
        return Numbering("alpha", len(parts), parts, m.group())
    if m := _PAREN.match(heading):
        return Numbering("paren", 1, (int(m.group(1) or m.group(2)),), m.group())
    if (m := _PART.match(heading)) and (value := _number(m.group(1))) is not None:
        return Numbering("filing", 1, (value,), m.group())
    if m := _ITEM.match(heading):
        letter = ord(m.group(3).upper()) - ord("A") + 1 if m.group(3) else 0
        value = int(m.group(1)) * 10_000 + int(m.group(2) or 0) * 100 + letter
        return Numbering("filing", 2, (value,), m.group())
    if m := _NOTE.match(heading):
        return Numbering("filing", 3, (int(m.group(1)),), m.group())
    if m := _CHAPTER.match(heading):
        return _chapter(m)
    return None


ARTICLE_RANK = _ZH_RANK["条"]


def is_article_heading(heading: str) -> bool:
    """Whether a heading opens a statute's article (`第五十八条`, `第一条 立法目的`): a
    passage-sized unit whose structural context is its chapter (or 节), not itself."""
    num = heading_numbering(heading)
    return num is not None and num.family == "zh" and num.rank == ARTICLE_RANK


def _number(numeral: str) -> int | None:
    """An Arabic or a canonical roman numeral as an int (None: neither)."""
    if numeral.isdigit():
        return int(numeral)
    upper = numeral.upper()
    return _roman_int(upper) if all(ch in _ROMAN_VALUES for ch in upper) else None


def _chapter(m: re.Match[str]) -> Numbering | None:
    kind, numeral = m.group(1).lower(), m.group(2).upper()
    if kind == "appendix":  # "Appendix C" is the third appendix, not the hundredth
        value = int(numeral) if numeral.isdigit() else ord(numeral[0]) - ord("A") + 1
        if not numeral.isdigit() and len(numeral) > 1:
            return None
        return Numbering("chapter", 1, (_APPENDIX_BASE + value,), m.group())
    # One letter is a lettered chapter ("Chapter C" is the third, not the hundredth), except
    # I, V and X, which open roman sequences far more often ("Chapter I", "Chapter II").
    if len(numeral) == 1 and numeral.isalpha() and numeral not in "IVX":
        return Numbering("chapter", 1, (ord(numeral) - ord("A") + 1,), m.group())
    value = _number(numeral)
    if value is None:
        return None
    return Numbering("chapter", 1, (value,), m.group())


# What opens a list item inside a paragraph (not a heading): 第…款, 第…项, 一、, （一）, (1), 1),
# and a bracketed Arabic number without the space a heading needs ("（1）未按照…").
_LIST_ITEM_RANKS = {("zh", _ZH_RANK[kind]) for kind in ("款", "项", "item", "paren")}
_LIST_ITEM_RANKS.add(("paren", 1))
_BRACKETED_NUMBER = re.compile(r"^[（(]\d{1,3}[）)]")


def opens_list_item(text: str) -> bool:
    """Whether `text` opens with a list item's numbering."""
    line = text.lstrip()
    num = heading_numbering(line)
    if num is not None and (num.family, num.rank) in _LIST_ITEM_RANKS:
        return True
    return bool(_BRACKETED_NUMBER.match(line))


def split_heading_number(heading: str) -> tuple[str, str]:
    """(number label, title) of one heading: "3.2.2 Router Design" -> ("3.2.2", "Router Design").

    The heading is NFKC-normalised and its spaces collapsed first. The label loses its
    trailing dot or "、", so "4." equals "4"; a heading that is only a label has an empty title.
    """
    text = one_line(unicodedata.normalize("NFKC", heading))
    num = heading_numbering(text)
    if num is None:
        return "", text
    return num.label.rstrip(".、"), text[len(num.label) :].lstrip(" .、:-")


# ---- wrapped lines --------------------------------------------------------------------------
# A reader that rebuilds paragraphs from visual lines (the PDF reader) keeps each wrap as a
# "\n", which every later step reads as a space: right for English, which wraps at spaces,
# but a Chinese sentence wraps anywhere, so "特别严\n重情节的" became "特别严 重情节的" in the
# chunks, answers started mid-sentence at "重情节的", and jieba split the word. A wrap between
# two unspaced characters is therefore joined with nothing. Not before an article (第X条 and
# a space) or a list item opening after a clause's end ("：" "；" "。"), which opens a line
# of its own: the statute scan and the answer's lead-ins read those line by line.
_CLAUSE_END = "：；。！？:;"


def wrap_joins_unspaced(before: str, after: str) -> bool:
    """Whether the visual line `before` wraps into `after` inside an unspaced text (Han,
    kana, CJK punctuation on both sides), so the two join with no separator."""
    before, after = before.rstrip(), after.lstrip()
    if not before or not after or not (is_unspaced(before[-1]) and is_unspaced(after[0])):
        return False
    if ARTICLE_OPENING.match(after):
        return False
    return not (before[-1] in _CLAUSE_END and opens_list_item(after))


def join_wrapped(lines: Iterable[str], sep: str = "\n") -> str:
    """A paragraph's visual lines as its text: `sep` between them, nothing where a line
    wraps inside an unspaced text (`wrap_joins_unspaced`)."""
    out: list[str] = []
    for line in lines:
        if out:
            out.append("" if wrap_joins_unspaced(out[-1], line) else sep)
        out.append(line)
    return "".join(out)


# ---- heading paths --------------------------------------------------------------------------
# A heading path joins headings from the document root's first child down, with PATH_SEP.
# Splitting needs whitespace around ">" (a bare ">" can be part of a heading, as in the
# handbook's `<i class="..."></i> Contacting Marketing`). Paths written by an LLM are split
# leniently: after NFKC ("＞" is ">"), any spacing, and the arrows › and ».
PATH_SEP = " > "
PATH_SPLIT = re.compile(r"\s+>\s+")
_LENIENT_PATH_SPLIT = re.compile(r"\s*[>›»]\s*")


def join_path(parent: str, heading: str) -> str:
    """`heading` under the path `parent` ("" for a top-level heading)."""
    return f"{parent}{PATH_SEP}{heading}" if parent else heading


def split_path(path: str, *, lenient: bool = False) -> list[str]:
    """A heading path's components, whitespace-collapsed, empty ones dropped.

    Strict (the default): only " > " with whitespace around it separates. Lenient: for
    paths written by a model (NFKC first; ">", "›", "»" with any spacing).
    """
    if lenient:
        text = one_line(unicodedata.normalize("NFKC", path))
        return [c for c in _LENIENT_PATH_SPLIT.split(text) if c.strip()]
    return [one_line(c) for c in PATH_SPLIT.split(path) if c.strip()]


def path_leaf(path: str) -> str:
    """The last heading of a path ("" for an empty path)."""
    parts = split_path(path)
    return parts[-1] if parts else ""


# ---- truncation -----------------------------------------------------------------------------

ELLIPSIS = "…"
_TRAILING_PUNCT = " ,;:，、；："


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines, Unicode spaces) made one space, stripped."""
    return " ".join(text.split())


def truncate(text: str, max_chars: int, *, ellipsis: str = ELLIPSIS) -> str:
    """`text` cut to at most `max_chars` characters, the `ellipsis` included, when longer.

    A cut inside a spaced word (Latin, digits) moves back to the last space if that keeps
    more than half; text in unspaced scripts (Han, kana) is cut anywhere. A cut never
    separates a combining mark from its letter, and punctuation left dangling at the cut
    (",;:，、；：") is dropped. `ellipsis=""` cuts without a mark.
    """
    if max_chars < len(ellipsis) + 1:
        raise ValueError(f"max_chars must be > len(ellipsis), but got {max_chars}")
    if len(text) <= max_chars:
        return text
    cut = max_chars - len(ellipsis)
    while cut > 1 and unicodedata.combining(text[cut]):
        cut -= 1
    before, after = text[cut - 1], text[cut]
    mid_word = (
        before.isalnum() and after.isalnum() and not is_unspaced(before) and not is_unspaced(after)
    )
    space = text.rfind(" ", 0, cut)
    if mid_word and space > max_chars // 2:
        cut = space
    return text[:cut].rstrip(_TRAILING_PUNCT) + ellipsis


def preview(text: str, max_chars: int) -> str:
    """`text` on one line, truncated with an ellipsis: for labels, tables and messages."""
    return truncate(one_line(text), max_chars)
