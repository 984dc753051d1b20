"""Small real PDFs for tests, drawn with pdfium's standard fonts (no fixture files needed)."""

from __future__ import annotations

import ctypes
import io
import json
import re

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


BODY = [(f"Body text line {k} about revenue, costs and the year.", 10, False, 72, 600 - 13 * k)
        for k in range(4)]  # fmt: skip
ITEMS = ["Item 1. Business", "Item 2. Properties", "Item 3. Legal Proceedings",
         "Item 4. Mine Safety", "Item 5. Market"]  # fmt: skip
# Item 2's heading in contents_pdf: in body type, with none of its title's words
UNSEEN = "Where we own and lease land"


def contents_pdf() -> bytes:
    """A contents page (p1) with five Items on printed pages 1-5 (PDF pages 2-6); Item 2's
    heading is a body line with none of its title's words, so it is not found offline."""
    toc = [("CONTENTS", 11, True, 72, 720)]
    for k, title in enumerate(ITEMS):
        toc += [(title, 10, False, 72, 690 - 16 * k), (str(k + 1), 10, False, 520, 690 - 16 * k)]
    pages = [toc]
    for k, title in enumerate(ITEMS):
        head = (UNSEEN, 10, False, 72, 640) if k == 1 else (title, 12, True, 72, 720)
        pages.append([head, *BODY, (str(k + 1), 9, False, 300, 30)])
    return make_pdf(pages)


def contents_answer(prompt: str) -> str:
    """What a model would answer to the contents check of `contents_pdf`: each anchor is
    right, and Item 2 (not found offline) opens at the line UNSEEN."""
    answer: dict[str, int | None] = {}
    for block in re.split(r"(?m)^Entry ", prompt)[1:]:
        index = int(block.split(":", 1)[0])
        found = re.search(r"anchored to line (\d+)", block)
        hit = re.search(rf"(?m)^(\d+): {UNSEEN}$", block)
        answer[str(index)] = int(found.group(1)) if found else int(hit.group(1)) if hit else None
    return json.dumps(answer)


def filing_pdf() -> bytes:
    """Cover (p1), contents (p2), printed pages 1-3 on PDF pages 3-5."""
    cover = [
        ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 16, True, 72, 720),
        ("Washington, D.C. 20549", 11, True, 72, 690),
        ("\u2612 ANNUAL REPORT PURSUANT TO SECTION 13", 11, True, 72, 660),
        ("ACME CORP", 18, True, 72, 620),
    ]
    toc = [("TABLE OF CONTENTS", 11, True, 72, 720), ("PART I", 10, True, 72, 690)]
    rows = [("Item 1.", "Business", "1", 72), ("", "Overview", "1", 130),
            ("Item 2.", "Properties", "2", 72), ("Item 3.", "Legal Proceedings", "3", 72),
            ("", "Signatures", "3", 72)]  # fmt: skip
    y = 670
    for num, title, page, x in rows:
        if num:
            toc.append((num, 10, False, 72, y))
        toc += [(title, 10, False, 130 if num else x, y), (page, 10, False, 520, y)]
        y -= 16
    p1 = [("PART I", 11, True, 72, 720), ("Item 1. Business", 11, True, 72, 700),
          ("Overview", 10, True, 72, 660), *BODY, ("(Unaudited)", 10, True, 72, 500),
          ("Total assets:", 10, True, 72, 480), ("1", 9, False, 300, 30)]  # fmt: skip
    p2 = [("Item 2. Properties", 11, True, 72, 720), *BODY, ("2", 9, False, 300, 30)]
    p3 = [("Item 3. Legal Proceedings", 11, True, 72, 720), *BODY,
          ("Signatures", 11, True, 72, 400), ("3", 9, False, 300, 30)]  # fmt: skip
    return make_pdf([cover, toc, p1, p2, p3])


# (text, font size, x, y from the bottom) per line, one list per page.
CjkLine = tuple[str, float, float, float]


def cjk_pdf(pages: list[list[CjkLine]], width: int = 595, height: int = 842) -> bytes:
    """A PDF whose text is Chinese (any BMP text), written by hand: pdfium's standard fonts
    hold no Han glyphs and the machine may have no CJK font file. The font is STSong-Light,
    one of the CID fonts every reader knows by name, not embedded: Identity-H codes are the
    code points, a ToUnicode map gives the text back and every glyph is 1 em wide."""
    used = sorted({ord(ch) for page in pages for text, *_ in page for ch in text})
    cmap = [
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def",
        "1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    for i in range(0, len(used), 100):  # at most 100 entries per bfchar block
        block = used[i : i + 100]
        cmap += [f"{len(block)} beginbfchar", *(f"<{c:04X}> <{c:04X}>" for c in block), "endbfchar"]
    cmap.append("endcmap CMapName currentdict /CMap defineresource pop end end")
    song = "/BaseFont /STSong-Light"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "",  # the page tree, filled in below
        f"<< /Type /Font /Subtype /Type0 {song} /Encoding /Identity-H "
        "/DescendantFonts [4 0 R] /ToUnicode 6 0 R >>",
        f"<< /Type /Font /Subtype /CIDFontType0 {song} /CIDSystemInfo << /Registry (Adobe) "
        "/Ordering (Identity) /Supplement 0 >> /FontDescriptor 5 0 R /DW 1000 >>",
        "<< /Type /FontDescriptor /FontName /STSong-Light /Flags 4 /FontBBox [0 -200 1000 900] "
        "/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 80 >>",
        _stream("\n".join(cmap)),
    ]
    kids = []
    for page in pages:
        shows = [
            f"BT /F1 {size} Tf {x} {y} Td <{''.join(f'{ord(ch):04X}' for ch in text)}> Tj ET"
            for text, size, x, y in page
        ]
        kids.append(len(objects) + 1)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {len(objects) + 2} 0 R >>"
        )
        objects.append(_stream("\n".join(shows)))
    refs = " ".join(f"{k} 0 R" for k in kids)
    objects[1] = f"<< /Type /Pages /Kids [{refs}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("ascii")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode("ascii")
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode("ascii")
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return bytes(out + trailer.encode("ascii"))


def _stream(data: str) -> str:
    return f"<< /Length {len(data.encode('ascii'))} >>\nstream\n{data}\nendstream"
