"""Generators of the hostile inputs of issue 28 ("Hardening III"), made at test time.

Each is small on disk (or made in memory) and expands or hits a slow path when read. Tests
assert that each is refused or bounded; `benchmarks/bench_bombs.py` measures CPU seconds and
peak memory of each, before and after the bounds.
"""

from __future__ import annotations

import io
import zipfile
import zlib


def pdf_bomb(text_op_bytes: int, pages: int = 1) -> bytes:
    """A PDF whose single Flate content stream inflates to ~`text_op_bytes` of text operators
    (row 1: 5 MB of ops from an 18 KB file), drawn on each of `pages` pages: they all name
    the same stream, so the file stays small however many pages read it."""
    op = b"(Lorem ipsum dolor sit amet) '\n"  # ': next line (12 pt lower), show the text
    body = b"BT /F1 10 Tf 12 TL 72 780 Td\n" + op * max(1, text_op_bytes // len(op)) + b"ET\n"
    return _pdf_with_content(zlib.compress(body, 9), pages)


def _pdf_with_content(stream: bytes, pages: int = 1) -> bytes:
    page_ids = range(6, 6 + pages)
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Type /Null >>",  # object 3: unused, keeps the numbering of the one-page form
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *([page] * pages),
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, obj in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref))  # fmt: skip
    return out.getvalue()


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _docx(document_chunks, level: int = 9) -> bytes:
    """A DOCX package whose word/document.xml is the concatenation of `document_chunks`,
    compressed as it is written (a multi-GB part never sits in memory)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _RELS)
        with zf.open("word/document.xml", "w", force_zip64=True) as part:
            for chunk in document_chunks:
                part.write(chunk)
    return out.getvalue()


def docx_text_bomb(text_bytes: int) -> bytes:
    """A DOCX whose word/document.xml holds one text node of `text_bytes` (row 2)."""
    head = f'<?xml version="1.0"?><w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>'.encode()
    block = b"A" * (1 << 20)

    def chunks():
        yield head
        left = text_bytes
        while left > 0:
            yield block[: min(left, len(block))]
            left -= len(block)
        yield b"</w:t></w:r></w:p></w:body></w:document>"

    # Level 1: ~230:1 instead of ~1000:1 (2 GB in a 9 MB file, not 2 MB), made 4x faster.
    return _docx(chunks(), level=1)


def docx_paragraphs(count: int, styled: bool = True) -> bytes:
    """A DOCX of `count` short paragraphs, each naming a paragraph style (row 3): python-docx
    resolves a style by scanning every style, so uncached lookups grow with the style sheet.
    Made with python-docx's own template (its ~160 styles), the body replaced."""
    import docx

    template = io.BytesIO()
    docx.Document().save(template)
    style = '<w:pPr><w:pStyle w:val="BodyText"/></w:pPr>' if styled else ""
    para = f"<w:p>{style}<w:r><w:t>word</w:t></w:r></w:p>".encode()
    document = (
        f'<?xml version="1.0"?><w:document xmlns:w="{_W}"><w:body>'.encode()
        + para * count
        + b"</w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = document if info.filename == "word/document.xml" else src.read(info)
            dst.writestr(info.filename, data)
    return out.getvalue()


def html_unclosed(size: int) -> bytes:
    """HTML of `<p ` repeated, never closed (row 4: html.parser's quadratic end-of-data)."""
    return b"<html><body>" + b"<p " * (size // 3)


def markdown_headings(count: int) -> bytes:
    """Markdown of `count` bare headings and no body text (row 5: 0 chunks, many nodes)."""
    return "".join(f"# h{i}\n" for i in range(count)).encode()


def nested_json(depth: int) -> bytes:
    """`[` nested `depth` deep (row 6): json raises RecursionError, not ValueError."""
    return b"[" * depth
