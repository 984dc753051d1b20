"""PDF with pypdfium2: lines from glyph positions, running headers and page numbers removed,
table rows kept as rows, headings inferred from size, weight, isolation and numbering."""

from __future__ import annotations

import bisect
import ctypes
import re
from collections import Counter
from dataclasses import dataclass, replace

from treerag_core.base.config import CONVERT_MAX_CHARS, PDF_MAX_PAGE_CHARS
from treerag_core.base.errors import (
    CorruptDocumentError,
    EncryptedDocumentError,
    NeedsOCRError,
    TooManyPagesError,
)
from treerag_core.base.text_rules import ARTICLE_OPENING, join_wrapped
from treerag_core.ingest.convert import junk
from treerag_core.ingest.convert.base import ConvertedDocument, MarkdownWriter, over_bound
from treerag_core.ingest.convert.levels import list_like, structural_numbering
from treerag_core.ingest.convert.outline import read_outline
from treerag_core.ingest.convert.pdf_streams import check_streams
from treerag_core.ingest.convert.pdf_tree import Found, plan_tree

CELL_GAP = 1.6  # a horizontal gap wider than this many font sizes separates table cells
MARGIN = 0.09  # running headers and footers live in the top and bottom 9% of a page
HEADING_MAX_CHARS = 150
RULE_MAX_HEIGHT = 2.0  # a path this thin (points) is a rule: an underline or a table's line
# Underlines are looked for on ordinary pages only, so a small file cannot make the search
# cost minutes: a page with more objects (the dev filings' densest has ~6,200) or more thin
# rules (a ruled table page ~1,000) than this is a drawing or a grid, read without them.
UNDERLINE_MAX_PAGE_OBJECTS = 20_000
UNDERLINE_MAX_RULES = 2_000
# Objects looked at for underlines in one document (the dev filings' most: ~362,000 in 116
# pages); the pages past it are read without underlines.
UNDERLINE_MAX_DOC_OBJECTS = 1_000_000
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_MONO_NAME = re.compile(r"mono|courier|code|consol", re.I)
SIZE_RATIO = 1.1  # a line this much larger than the body type is set as a heading
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.I
)
# A table-of-contents line: "Item 7. Management's Discussion ..... 23" or "... | 23".
_SENTENCE = re.compile(r"[。；，;]|, ")
_TRAILING_PAGE_REF = re.compile(r"(?:\.{2,}|\|)\s*\d{1,4}$")


@dataclass(frozen=True)
class _Line:
    text: str
    top: float
    bottom: float
    size: float
    bold: bool
    font: str  # the line's main font: its name, or an id when the PDF gives none
    cells: int  # how many table cells the line was cut into (1: running text)
    chars: int
    left: float = 0.0  # x of the first glyph (a contents entry's indent)
    right: float = 0.0  # x where the last glyph ends
    underlined: bool = False  # a rule drawn under the whole line, and only under it


def _font_style(textpage, index: int, cache: dict[int, tuple[bool, float, str]], raw):
    """(bold, effective size in points, font key) of the char's text object, cached.

    pdfium's per-char font size ignores the object's matrix (some filings draw 416-pt text
    scaled by 0.021), so the size is the object's font size times the matrix scale.
    """
    obj = raw.FPDFText_GetTextObject(textpage, index)
    key = ctypes.cast(obj, ctypes.c_void_p).value or 0
    style = cache.get(key)
    if style is None:
        bold, size, font_key = False, 0.0, ""
        if obj:
            font = raw.FPDFTextObj_GetFont(obj)
            if font:
                buf = ctypes.create_string_buffer(256)
                raw.FPDFFont_GetBaseFontName(font, buf, 256)
                name = buf.value.decode("latin-1", "replace").split("+")[-1]
                bold = bool(_BOLD_NAME.search(name)) or raw.FPDFFont_GetWeight(font) >= 600
                # Chromium embeds synthetic-bold faces with no name: the font's id tells
                # them apart from the body font.
                font_key = name or f"#{ctypes.cast(font, ctypes.c_void_p).value}"
            points = ctypes.c_float()
            matrix = raw.FS_MATRIX()
            if raw.FPDFTextObj_GetFontSize(obj, points) and raw.FPDFPageObj_GetMatrix(obj, matrix):
                size = points.value * abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
        bold = bold or raw.FPDFText_GetFontWeight(textpage, index) >= 600
        style = cache[key] = (bold, size, font_key)
    return style


def _page_lines(page, raw, name: str = "", room: int = CONVERT_MAX_CHARS) -> list[_Line]:
    """The page's text lines, top to bottom, each sorted left to right.

    Raises:
        DocumentTooLargeError: the page has more than PDF_MAX_PAGE_CHARS characters, or more
            than `room` (what is left of CONVERT_MAX_CHARS), counted before they are read.
    """
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        if count > PDF_MAX_PAGE_CHARS:
            raise over_bound(name, "characters on one PDF page", PDF_MAX_PAGE_CHARS)
        if count > room:
            raise over_bound(name, "characters of text", CONVERT_MAX_CHARS)
        box = raw.FS_RECTF()  # the loose box spans the glyph's advance: no false gaps
        ox, oy = ctypes.c_double(), ctypes.c_double()
        fonts: dict[int, tuple[bool, float, str]] = {}
        chars: list[tuple[float, float, float, float, str, bool, bool]] = []
        space = False
        for i in range(count):
            code = raw.FPDFText_GetUnicode(textpage, i)
            ch = chr(code) if 0 < code < 0x110000 else ""
            if ch.isspace() or not ch or code in (0xFFFE, 0xFFFF):
                space = True
                continue
            if ch == "\x02":  # pdfium's mark for a hyphen at a line end
                ch = "-"
            raw.FPDFText_GetLooseCharBox(textpage, i, box)
            raw.FPDFText_GetCharOrigin(textpage, i, ox, oy)
            bold, size, font = _font_style(textpage, i, fonts, raw)
            if size <= 0:
                size = max(box.top - box.bottom, 1.0)
            chars.append((oy.value, box.left, box.right, size, ch, bold, space, font))
            space = False
    finally:
        textpage.close()
    return _group_lines(chars)


def _rules(page, raw, objects_left: int) -> tuple[list[tuple[float, float, float, float]], int]:
    """Thin horizontal paths drawn on the page (left, bottom, right, top): underlines and
    table rules, sorted by top, and the document's object budget left after this page. Only
    the page's own objects: a form's bounds are in its own space. None on a page past the
    bounds above (its lines are read without underlines)."""
    count = raw.FPDFPage_CountObjects(page.raw)
    if count > min(UNDERLINE_MAX_PAGE_OBJECTS, objects_left):
        return [], objects_left
    rules: list[tuple[float, float, float, float]] = []
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    for i in range(count):
        obj = raw.FPDFPage_GetObject(page.raw, i)
        if raw.FPDFPageObj_GetType(obj) != raw.FPDF_PAGEOBJ_PATH:
            continue
        if not raw.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            continue
        if (
            top.value - bottom.value <= RULE_MAX_HEIGHT
            and right.value - left.value >= 2 * RULE_MAX_HEIGHT
        ):
            rules.append((left.value, bottom.value, right.value, top.value))
            if len(rules) > UNDERLINE_MAX_RULES:
                return [], objects_left - count
    return sorted(rules, key=lambda rule: rule[3]), objects_left - count


def _underline(lines: list[_Line], rules) -> list[_Line]:
    """Mark the lines a rule underlines end to end: from the line's first glyph to its last
    (half a type size of slack) and just under its baseline. A link inside a sentence, a
    rule across a table or one under a bullet's text only is no underline of the line.
    `rules` are sorted by top, so each line looks only at the rules near its baseline."""
    if not rules:
        return lines
    tops = [rule[3] for rule in rules]
    out = []
    for line in lines:
        slack = 0.5 * line.size
        lo = bisect.bisect_left(tops, line.bottom - 0.4 * line.size)
        hi = bisect.bisect_right(tops, line.bottom + 0.15 * line.size)
        under = any(
            abs(left - line.left) <= slack and abs(right - line.right) <= slack
            for left, _, right, _ in rules[lo:hi]
        )
        out.append(replace(line, underlined=True) if under else line)
    return out


def _group_lines(chars) -> list[_Line]:
    chars.sort(key=lambda c: -c[0])
    groups: list[list] = []
    for c in chars:
        if groups and abs(groups[-1][0][0] - c[0]) <= 0.4 * max(c[3], groups[-1][0][3], 1.0):
            groups[-1].append(c)
        else:
            groups.append([c])
    lines = []
    for group in groups:
        group.sort(key=lambda c: c[1])
        parts: list[str] = []
        cells = 1
        prev = None
        for c in group:
            if prev is not None:
                if c[4] == prev[4] and abs(c[1] - prev[1]) < 0.3:
                    continue  # the same glyph drawn twice (fake bold)
                gap = c[1] - prev[2]
                size = max(c[3], 1.0)
                if gap > CELL_GAP * size:
                    parts.append(" | ")
                    cells += 1
                elif c[6] or gap > 0.18 * size:
                    parts.append(" ")
            parts.append(c[4])
            prev = c
        text = "".join(parts).strip()
        if not text:
            continue
        sizes = Counter(round(c[3] * 4) / 4 for c in group)
        size = sizes.most_common(1)[0][0]
        font = Counter(c[7] for c in group).most_common(1)[0][0]
        bold = all(c[5] for c in group if c[4].isalnum()) and any(c[4].isalpha() for c in group)
        baseline = group[0][0]
        left, right = group[0][1], max(c[2] for c in group)
        top = baseline + size
        lines.append(_Line(text, top, baseline, size, bold, font, cells, len(group), left, right))
    return lines


def _open(name: str, data: bytes):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise EncryptedDocumentError(
                f"{name}: the PDF is encrypted (password-protected); save an unprotected copy"
            ) from exc
        raise CorruptDocumentError(f"{name}: not a readable PDF ({message})") from exc


def _running_keys(pages: list[tuple[float, list[_Line]]]) -> set[tuple[str, float, bool]]:
    """Normalised texts and looks of running lines (`_may_run`) that repeat on many pages."""
    counts: Counter[tuple[str, float, bool]] = Counter()
    for height, lines in pages:
        keys = {_key(line) for i, line in enumerate(lines) if _may_run(lines, i, height)}
        counts.update(keys)
    need = max(3, int(0.3 * len(pages)))
    return {key for key, n in counts.items() if n >= need}


def _key(line: _Line) -> tuple[str, float, bool]:
    """A margin line's text (digits as '#') and its look: a heading set near the top in
    its own type ("PART I" in bold, 7.75 pt) is not the small running "PART I" above it."""
    text = re.sub(r"\d+", "#", " ".join(line.text.lower().split()))
    return text, round(line.size * 2) / 2, line.bold


def _in_margin(line: _Line, height: float) -> bool:
    return line.bottom > height * (1 - MARGIN) or line.top < height * MARGIN


def _may_run(lines: list[_Line], i: int, height: float) -> bool:
    """Whether line `i` (the page's lines, top to bottom) stands where a running header or
    footer does: in the top or bottom margin, or as the page's last line wherever it stands.
    A filing printed from HTML ends each page right under its footer, at any height (Nike's
    "2019 FORM 10-K 13" stands a third of the way up a page); only a text that repeats on
    many pages is removed there. Not the first line: a page's text starts at its top margin,
    and a chapter opening each page ("Chapter 3") is no running header."""
    return i == len(lines) - 1 or _in_margin(lines[i], height)


def _blocks(lines: list[_Line]) -> list[list[_Line]]:
    """Consecutive lines of one style and no wide vertical gap form a block."""
    blocks: list[list[_Line]] = []
    for line in lines:
        if blocks:
            prev = blocks[-1][-1]
            gap = prev.bottom - line.top  # space between the previous baseline and this top
            same_style = (
                prev.bold == line.bold
                and prev.font == line.font
                and abs(prev.size - line.size) < 0.75
            )
            if (
                gap < 0.8 * max(line.size, prev.size)
                and same_style
                and not _opens_part(line)
                and (_overlap(prev, line) or not _opens_part(blocks[-1][0]))
            ):
                blocks[-1].append(line)
                continue
        blocks.append([line])
    return blocks


def _overlap(prev: _Line, line: _Line) -> bool:
    """A wrapped title's next line lies under the one before it (left-set, centred or
    hanging, it shares some width); a line set wholly beside it starts a title of its own: a
    centred statement title right under a left-set "Item 1. Financial Statements". Asked only
    under a PART / Item / Note line: table heads and letterheads set beside each other stay
    one block, as they were."""
    slack = 0.5 * max(line.size, prev.size)
    return line.left <= prev.right + slack and line.right >= prev.left - slack


def _opens_part(line: _Line) -> bool:
    """A line opening a PART, an Item, a Note, a 编/章/节 or an article starts a block of its
    own, even right under another heading in the same type ("PART I" above "Item 1.")."""
    text = line.text.replace(" | ", " ")
    if ARTICLE_OPENING.match(text):
        return True  # a statute's article: its own paragraph, so its own leaf
    num = structural_numbering(text)
    return num is not None and (num.family == "filing" or (num.family == "zh" and num.rank <= 3))


def _table_row(block: list[_Line]) -> bool:
    """A table's row: three cells or more, or two with a figure in them."""
    return any(
        li.cells >= 3 or (li.cells == 2 and any(ch.isdigit() for ch in li.text)) for li in block
    )


def _between_rows(blocks: list[list[_Line]], b: int) -> bool:
    """A bold line with table rows right above and right below is a row label inside the
    table ("ASSETS", "Cash flows from investing activities"), not a section."""
    return 0 < b < len(blocks) - 1 and _table_row(blocks[b - 1]) and _table_row(blocks[b + 1])


def _column_head(blocks: list[list[_Line]], b: int) -> bool:
    """A line that starts past the middle of the page's text with a table row right under it
    heads a figures column ("Notional Amount", "Fair Value at"): a section's title starts at
    the left margin or is centred, so it starts left of the middle."""
    if b + 1 >= len(blocks) or not _table_row(blocks[b + 1]):
        return False
    lines = [li for block in blocks for li in block]
    middle = (min(li.left for li in lines) + max(li.right for li in lines)) / 2
    return blocks[b][0].left > middle


def _prose_above(blocks: list[list[_Line]], b: int) -> bool:
    """Some block above `b` on its page is running text (two lines or more, or a long line)."""
    return any(len(block) >= 2 or len(heading_text(block)) > 100 for block in blocks[:b])


def _under_signature_rule(blocks: list[list[_Line]], b: int) -> bool:
    """A short name right under a blank signature line ("____") is whoever signs there."""
    if b == 0 or len(blocks[b - 1]) != 1 or not junk.signature_rule(blocks[b - 1][0].text):
        return False
    text = heading_text(blocks[b])
    return len(text.split()) <= 4 and not any(ch.isdigit() for ch in text)


def _layout_reason(
    blocks: list[list[_Line]], b: int, signed: bool, names: frozenset[str] = frozenset()
) -> str:
    """Why block `b` is not a section, from where it stands ("": nothing against it)."""
    if _between_rows(blocks, b):
        return "between table rows: a row label"
    if _column_head(blocks, b):
        return "over a table's figures: a column head"
    # "Revenue (in thousands, except for percentages)" under prose captions the table below;
    # a statement's title carries its units too, but opens its page (a letterhead above).
    if junk.units_caption(heading_text(blocks[b])) and _prose_above(blocks, b):
        return "a table's caption (ends in its units, under running text)"
    if _under_signature_rule(blocks, b):
        return "a signer's name, under a signature line ('____')"
    if signed and junk.signer_office(heading_text(blocks[b])):
        return "a signer's office on a signed page ('/s/')"
    if junk.signer_name(heading_text(blocks[b]), names):
        return "a signer's name, signed on its page ('/s/')"
    return ""


def heading_text(block: list[_Line]) -> str:
    return " ".join(line.text.replace(" | ", " ") for line in block)


def _other_font(block: list[_Line], body_font: str) -> bool:
    return block[0].font != body_font and not _MONO_NAME.search(block[0].font)


def _title_shape(text: str) -> bool:
    """Short, no sentence punctuation inside, no punctuation at the end."""
    return len(text) <= 80 and not _SENTENCE.search(text) and text[-1] not in ".:：,，;；。"


def _bare_title(text: str, num) -> bool:
    """A numbered line in body type reads as a heading only when it is a short title:
    no sentence punctuation, and not an article or list item (第二条 …。, （一）…；, (1), A.)."""
    # A comma in capitals is a title's ("NOTE 3 — OTHER INCOME (EXPENSE), NET"), not a sentence's.
    if len(text) > 60 or (_SENTENCE.search(text) and not text.isupper()) or text[-1] in ".:：":
        return False
    return not (num.family == "zh" and num.rank >= 4) and not list_like(num)


def _heading_signals(block: list[_Line], body: float, body_font: str) -> tuple[str, ...] | None:
    text = heading_text(block)
    numbered = structural_numbering(text) is not None
    # "Item 1. | Business": a numbered heading set in two columns is still one heading.
    cells_ok = all(li.cells == 1 or (numbered and li.cells == 2) for li in block)
    if len(block) > 3 or len(text) > HEADING_MAX_CHARS or not cells_ok:
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 2 or letters < 0.5 * len(text.replace(" ", "")) or text[-1] in ",;":
        return None
    why = []
    size = block[0].size
    if size >= body * SIZE_RATIO:
        why.append(f"size {size:g} > body {body:g}")
    if block[0].bold:
        why.append("bold")
    elif _other_font(block, body_font) and len(block) == 1 and _title_shape(text):
        # Only another font (often a CJK or symbol subset without a name): titles only.
        why.append("font")
    elif block[0].underlined and len(block) == 1 and _title_shape(text):
        # Underlined alone on its line in body type: a typewriter's heading ("OVERVIEW").
        why.append("underlined")
    num = structural_numbering(text)
    toc_line = _TRAILING_PAGE_REF.search(block[0].text)
    if num is not None and len(block) == 1 and not toc_line and (why or _bare_title(text, num)):
        why.append(f"numbering {num.label}")
    if why and text[-1] == "." and not why[-1].startswith("numbering") and len(text) > 60:
        return None  # a bold sentence ending in a period reads as body text
    return tuple(why) or None


def _style(block: list[_Line], body_font: str) -> tuple[float, bool, bool]:
    """Sort key of a heading's look: larger first, then emphasised (bold or another font),
    then capitals: in one type, "SEGMENT COMMENTARY" heads the "MedTech" under it (used
    only when no outline or contents gives the upper levels)."""
    line = block[0]
    text = heading_text(block)
    caps = text.isupper() and sum(ch.isalpha() for ch in text) >= 3
    emphasised = line.bold or line.font != body_font or line.underlined
    return -line.size, not emphasised, not caps


def convert_pdf(name: str, data: bytes, max_pages: int) -> ConvertedDocument:
    """Convert a PDF's text layer. Pages start new blocks; `page_starts` maps offsets to pages.

    Raises:
        EncryptedDocumentError, CorruptDocumentError, TooManyPagesError, NeedsOCRError,
        DocumentTooLargeError (a stream, page or the whole text past its bound).
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    check_streams(name, data)
    pdf = _open(name, data)
    chars = 0
    try:
        n_pages = len(pdf)
        if n_pages > max_pages:
            raise TooManyPagesError(
                f"{name}: {n_pages} pages is more than the limit of {max_pages}; raise it with "
                "the max_pages setting (--max-pages)"
            )
        if n_pages == 0:
            raise CorruptDocumentError(f"{name}: the PDF has no pages")
        pages = []
        objects_left = UNDERLINE_MAX_DOC_OBJECTS
        for i in range(n_pages):
            try:
                page = pdf[i]
            except pdfium.PdfiumError as exc:  # e.g. the page tree lists a font as a page
                raise CorruptDocumentError(
                    f"{name}: page {i + 1} of {n_pages} cannot be read ({exc})"
                ) from exc
            try:
                lines = _page_lines(page, raw, name, CONVERT_MAX_CHARS - chars)
                rules, objects_left = _rules(page, raw, objects_left)
                lines = _underline(lines, rules)
                chars += sum(line.chars for line in lines)
                pages.append((page.get_height(), lines))
            except pdfium.PdfiumError as exc:
                raise CorruptDocumentError(
                    f"{name}: the text of page {i + 1} of {n_pages} cannot be read ({exc})"
                ) from exc
            finally:
                page.close()
        outline, outline_notes = read_outline(pdf, n_pages)
    finally:
        pdf.close()

    solid = sum(line.chars for _, lines in pages for line in lines)
    if solid < 20:
        raise NeedsOCRError(
            f"{name}: no text layer ({n_pages} page(s), {solid} characters): it looks scanned "
            "and needs OCR first"
        )
    running = _running_keys(pages) if n_pages >= 3 else set()
    removed = 0
    kept_pages: list[list[_Line]] = []
    for height, lines in pages:
        kept = []
        for i, line in enumerate(lines):
            margin = _in_margin(line, height)
            running_line = _may_run(lines, i, height) and _key(line) in running
            if running_line or (margin and _PAGE_NUMBER.match(line.text)):
                removed += 1
                continue
            kept.append(line)
        kept_pages.append(kept)

    sizes: Counter[float] = Counter()
    for lines in kept_pages:
        for line in lines:
            sizes[line.size] += line.chars
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    fonts: Counter[str] = Counter()
    for lines in kept_pages:
        for line in lines:
            fonts[line.font] += line.chars
    body_font = fonts.most_common(1)[0][0] if fonts else ""

    page_blocks = [_blocks(lines) for lines in kept_pages]
    texts = [[heading_text(block) for block in blocks] for blocks in page_blocks]
    found: list[Found] = []
    for p, blocks in enumerate(page_blocks):
        signed = any("/s/" in line.text.lower() for line in kept_pages[p])
        names = junk.signers(line.text for line in kept_pages[p])
        for b, block in enumerate(blocks):
            signals = _heading_signals(block, body, body_font)
            if signals is not None:
                layout = _layout_reason(blocks, b, signed, names)
                found.append(Found(p, b, signals, _style(block, body_font), layout))
    plan = plan_tree(texts, found, kept_pages, outline)
    writer = MarkdownWriter(name)
    empty = []
    for p, blocks in enumerate(page_blocks):
        writer.start_page()
        if not blocks:
            empty.append(p + 1)
        for b in range(len(blocks) + 1):
            for level, title, why in plan.inserts.get((p, b), ()):
                writer.heading(level, title, why)
            if b == len(blocks):
                break
            block = blocks[b]
            if (p, b) in plan.levels:
                writer.heading(plan.levels[(p, b)], heading_text(block), plan.signals[(p, b)])
            else:
                # A Chinese line wraps mid-word: such wraps join with nothing, others keep "\n".
                writer.paragraph(join_wrapped(line.text for line in block))
    notes = [*outline_notes, *plan.notes]
    notes.append(f"removed {removed} running header, footer and page-number lines")
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
        notes.append(f"{len(empty)} page(s) without text (scanned or blank): {shown}")
    return writer.result(name, "pdf", n_pages, notes, plan.contents)
