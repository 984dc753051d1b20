"""A PDF page rendered as an image with a passage's text boxes marked (pypdfium2 + Pillow).

The index holds the converted text, not the PDF's own character order: a passage is found on
its page by its letters and digits alone (case-folded, no spaces, no Markdown marks), whole
when it can be, else window by window, so a re-joined line or a table row still lights up.
"""

from __future__ import annotations

import io
import unicodedata
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageDraw

from treerag_core.base.errors import CorruptDocumentError

WINDOW = 16  # characters a window must match when the passage is not found whole
MARK_FILL = (255, 214, 0, 90)  # translucent yellow over the passage's lines
MARK_EDGE = (220, 120, 0, 255)
Box = tuple[float, float, float, float]  # left, top, right, bottom in image pixels


@dataclass(frozen=True)
class PageImage:
    """A rendered page: PNG bytes, which page (1-based) of how many, and the marked boxes."""

    png: bytes
    page: int
    n_pages: int
    boxes: tuple[Box, ...]
    found: float  # share of the passage's letters found on the page (0 when none was asked)


def _key(ch: str) -> str:
    """What a character counts as when matching: letters and digits, case-folded."""
    if ch.isalnum():
        return unicodedata.normalize("NFKC", ch).casefold()
    return ""


def normalised(text: str) -> str:
    return "".join(_key(ch) for ch in text)


def _page_chars(textpage) -> tuple[str, list[int]]:
    """The page's matchable characters and, for each, its pdfium char index."""
    keys: list[str] = []
    where: list[int] = []
    for i in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, i)
        key = _key(chr(code)) if 0 < code < 0x110000 else ""
        for k in key:
            keys.append(k)
            where.append(i)
    return "".join(keys), where


def match_spans(page: str, passage: str, window: int = WINDOW) -> list[tuple[int, int]]:
    """[start, end) spans of `page` holding `passage` (both normalised): the whole passage when
    it is there, else each window found in order, extended while the letters agree."""
    if not passage or not page:
        return []
    whole = page.find(passage)
    if whole != -1:
        return [(whole, whole + len(passage))]
    spans: list[tuple[int, int]] = []
    i, floor = 0, 0
    while i + window <= len(passage):
        at = page.find(passage[i : i + window], floor)
        if at == -1:
            at = page.find(passage[i : i + window])  # out of order (columns): still mark it
        if at == -1:
            i += window // 2
            continue
        n = window
        while i + n < len(passage) and at + n < len(page) and passage[i + n] == page[at + n]:
            n += 1
        spans.append((at, at + n))
        i, floor = i + n, at + n
    return spans


def _line_boxes(textpage, indexes: list[int]) -> list[tuple[float, float, float, float]]:
    """Char boxes (PDF points: left, bottom, right, top) merged into one box per line."""
    lines: list[list[float]] = []
    for i in indexes:
        left, bottom, right, top = textpage.get_charbox(i)
        if right <= left or top <= bottom:
            continue
        last = lines[-1] if lines else None
        if last and abs(last[1] - bottom) < 0.6 * (top - bottom) and left >= last[0] - 2:
            last[0], last[1] = min(last[0], left), min(last[1], bottom)
            last[2], last[3] = max(last[2], right), max(last[3], top)
        else:
            lines.append([left, bottom, right, top])
    return [tuple(line) for line in lines]  # type: ignore[misc]


def page_count(data: bytes) -> int:
    pdf = _open(data)
    try:
        return len(pdf)
    finally:
        pdf.close()


def _open(data: bytes):
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise CorruptDocumentError(f"the PDF cannot be opened to render a page ({exc})") from exc


def render_page(data: bytes, page: int, passage: str = "", width_px: int = 1000) -> PageImage:
    """Page `page` (1-based) of the PDF `data` as a PNG about `width_px` wide, with the lines
    of `passage` (text of the index, e.g. a chunk's slice on this page) marked.

    Raises:
        CorruptDocumentError: the bytes are not a readable PDF.
        ValueError: the page is not in the document.
    """
    pdf = _open(data)
    try:
        n_pages = len(pdf)
        if not 1 <= page <= n_pages:
            raise ValueError(f"page {page} is not in this PDF (it has {n_pages} pages)")
        pdf_page = pdf[page - 1]
        width_pt, height_pt = pdf_page.get_size()
        scale = width_px / width_pt if width_pt else 1.0
        image = pdf_page.render(scale=scale).to_pil().convert("RGBA")
        boxes: list[Box] = []
        wanted = normalised(passage)
        found = 0.0
        if wanted:
            textpage = pdf_page.get_textpage()
            keys, where = _page_chars(textpage)
            spans = match_spans(keys, wanted)
            found = min(1.0, sum(e - s for s, e in spans) / len(wanted))
            indexes = sorted({where[k] for s, e in spans for k in range(s, e)})
            left0, bottom0, _, _ = pdf_page.get_cropbox()
            for left, bottom, right, top in _line_boxes(textpage, indexes):
                boxes.append(
                    (
                        (left - left0) * scale - 2,
                        (height_pt - (top - bottom0)) * scale - 2,
                        (right - left0) * scale + 2,
                        (height_pt - (bottom - bottom0)) * scale + 2,
                    )
                )
            textpage.close()
        if boxes:
            overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
            draw = ImageDraw.Draw(overlay)
            for box in boxes:
                draw.rectangle(box, fill=MARK_FILL, outline=MARK_EDGE, width=2)
            image = Image.alpha_composite(image, overlay)
        out = io.BytesIO()
        image.convert("RGB").save(out, format="PNG", optimize=False)
        pdf_page.close()
        return PageImage(out.getvalue(), page, n_pages, tuple(boxes), found)
    finally:
        pdf.close()
