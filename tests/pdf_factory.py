"""Small real PDFs for tests, drawn with pdfium's standard fonts (no fixture files needed)."""

from __future__ import annotations

import ctypes
import io

import pypdfium2 as pdfium
import pypdfium2.raw as raw

# (text, font size, bold, x, y from the bottom) per line, one list per page.
Line = tuple[str, float, bool, float, float]
# A horizontal rule 0.5 pt thick: (x from, x to, y from the bottom).
Rule = tuple[float, float, float]


def make_pdf(
    pages: list[list[Line]],
    width: float = 612,
    height: float = 792,
    rules: list[list[Rule]] | None = None,
) -> bytes:
    """`rules[p]` are filled thin rectangles drawn on page p (underlines, table lines)."""
    pdf = pdfium.PdfDocument.new()
    fonts = {
        False: raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica"),
        True: raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica-Bold"),
    }
    for p, lines in enumerate(pages):
        page = pdf.new_page(width, height)
        for x0, x1, y in rules[p] if rules and p < len(rules) else []:
            rect = raw.FPDFPageObj_CreateNewRect(x0, y, x1 - x0, 0.5)
            raw.FPDFPageObj_SetFillColor(rect, 0, 0, 0, 255)
            raw.FPDFPath_SetDrawMode(rect, raw.FPDF_FILLMODE_WINDING, False)
            raw.FPDFPage_InsertObject(page.raw, rect)
        for text, size, bold, x, y in lines:
            obj = raw.FPDFPageObj_CreateTextObj(pdf.raw, fonts[bold], ctypes.c_float(size))
            encoded = (text + "\x00").encode("utf-16-le")
            buf = ctypes.create_string_buffer(encoded, len(encoded))
            raw.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(raw.FPDF_WCHAR)))
            raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
            raw.FPDFPage_InsertObject(page.raw, obj)
        raw.FPDFPage_GenerateContent(page.raw)
        page.close()
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue()


def report_pdf(n_pages: int = 3) -> bytes:
    """A filing-like PDF: a running header, page numbers, PART / Item headings, a table."""
    pages = []
    for p in range(n_pages):
        lines: list[Line] = [
            ("ACME CORP ANNUAL REPORT", 8, False, 72, 760),
            (str(p + 1), 8, False, 300, 30),
        ]
        y = 700
        if p == 0:
            lines.append(("Annual Report 2024", 20, True, 72, y))
            y -= 40
            lines.append(("PART I", 11, True, 72, y))
            y -= 24
        lines.append((f"Item {p + 1}. Section {p + 1}", 11, True, 72, y))
        y -= 24
        for k in range(3):
            lines.append(
                (f"Body text line {k} on page {p + 1} about revenue and costs.", 10, False, 72, y)
            )
            y -= 13
        y -= 20
        lines.append(("Revenue", 10, False, 72, y))
        lines.append(("1,234", 10, False, 300, y))
        lines.append(("5,678", 10, False, 400, y))
        y -= 13
        lines.append(("Net income", 10, False, 72, y))
        lines.append(("321", 10, False, 300, y))
        lines.append(("876", 10, False, 400, y))
        pages.append(lines)
    return make_pdf(pages)
