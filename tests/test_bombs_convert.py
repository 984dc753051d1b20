"""Issue 28, rows 1-5: hostile documents are refused or bounded while they are converted.

The inputs are made at test time (tests/bombs.py); costs are measured in
benchmarks/bench_bombs.py, not here.
"""

from __future__ import annotations

import pytest

from tests import bombs
from treerag_core.base import config
from treerag_core.base.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    InputDocumentError,
)
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert.budget import convert_bounded, convert_untrusted

BIG = 10**9  # no file-size cap in the way: the bounds under test come after it


def test_pdf_content_stream_past_its_bound_is_refused_before_pdfium_reads_it():
    data = bombs.pdf_bomb(config.PDF_MAX_CONTENT_BYTES + 100_000)
    assert len(data) < 50_000  # small on disk
    with pytest.raises(DocumentTooLargeError, match="inflated PDF page content stream"):
        convert_bytes("bomb.pdf", data, BIG)


def test_pdf_page_with_too_many_characters_is_refused_before_they_are_read():
    data = bombs.pdf_bomb(200_000)  # ~175,000 characters on one page
    with pytest.raises(DocumentTooLargeError, match="characters on one PDF page"):
        convert_bytes("bomb.pdf", data, BIG)


def test_pdf_under_the_bounds_converts(monkeypatch):
    data = bombs.pdf_bomb(20_000)
    doc = convert_bytes("small.pdf", data, BIG)
    assert "Lorem ipsum" in doc.text


def test_pdf_total_text_is_bounded_across_pages(monkeypatch):
    import treerag_core.ingest.convert.pdf as pdf

    monkeypatch.setattr(pdf, "CONVERT_MAX_CHARS", 5_000)
    with pytest.raises(DocumentTooLargeError, match="characters of text"):
        convert_bytes("long.pdf", bombs.pdf_bomb(20_000), BIG)


def test_docx_part_that_unzips_past_its_bound_is_refused_from_the_directory():
    data = bombs.docx_text_bomb(config.DOCX_MAX_PART_BYTES + 1)
    assert len(data) < 500_000  # small on disk, 32 MB unzipped
    with pytest.raises(DocumentTooLargeError, match=r"word/document\.xml"):
        convert_bytes("bomb.docx", data, BIG)


def test_docx_part_that_lies_about_its_size_is_corrupt_not_read_whole():
    data = bytearray(bombs.docx_text_bomb(5_000_000))
    # Declare 1,000 bytes for word/document.xml in the central directory: zipfile stops
    # inflating there and the CRC check fails.
    name = b"word/document.xml"
    central = data.rindex(b"PK\x01\x02", 0, data.rindex(name))
    data[central + 24 : central + 28] = (1000).to_bytes(4, "little")
    with pytest.raises(CorruptDocumentError):
        convert_bytes("liar.docx", bytes(data), BIG)


def test_docx_styles_are_looked_up_once_per_style(monkeypatch):
    from docx.styles.styles import Styles

    calls = []
    original = Styles._get_by_id

    def counted(self, style_id, style_type):
        calls.append(style_id)
        return original(self, style_id, style_type)

    monkeypatch.setattr(Styles, "_get_by_id", counted)
    doc = convert_bytes("many.docx", bombs.docx_paragraphs(300), BIG)
    assert doc.text.count("word") == 300
    assert len(calls) <= 2  # one style named by every paragraph: not ~5 lookups a paragraph


def test_docx_paragraph_bound(monkeypatch):
    import treerag_core.ingest.convert.docx as docx_convert

    monkeypatch.setattr(docx_convert, "DOCX_MAX_PARAGRAPHS", 100)
    convert_bytes("ok.docx", bombs.docx_paragraphs(100), BIG)
    with pytest.raises(DocumentTooLargeError, match="more than 100 paragraphs"):
        convert_bytes("many.docx", bombs.docx_paragraphs(101), BIG)


def test_html_unfinished_markup_is_refused_before_the_quadratic_rescan():
    data = bombs.html_unclosed(30_000)  # 10 s of CPU before the bound
    with pytest.raises(DocumentTooLargeError, match="unfinished markup"):
        convert_bytes("bomb.html", data, BIG)


def test_html_short_unfinished_end_and_unclosed_script_still_convert():
    short = b"<html><body><h1>Title</h1><p>Body text here.</p>" + b"<p " * 100
    assert "Body text here." in convert_bytes("short.html", short, BIG).text
    script = b"<html><body><h1>Title</h1><p>Body text.</p><script>" + b"if (a < b) {" * 2000
    assert "Body text." in convert_bytes("script.html", script, BIG).text


def test_markdown_heading_bound():
    count = config.CONVERT_MAX_HEADINGS
    assert len(convert_bytes("ok.md", bombs.markdown_headings(count), BIG).headings) == count
    with pytest.raises(DocumentTooLargeError, match="headings"):
        convert_bytes("bomb.md", bombs.markdown_headings(count + 1), BIG)


def test_writer_bounds_paragraphs(monkeypatch):
    import treerag_core.ingest.convert.base as base

    monkeypatch.setattr(base, "CONVERT_MAX_BLOCKS", 50)
    html = b"<html><body>" + b"<p>para</p>" * 51 + b"</body></html>"
    with pytest.raises(DocumentTooLargeError, match="paragraphs"):
        convert_bytes("many.html", html, BIG)


def test_budget_child_converts_like_the_parent():
    data = bombs.docx_paragraphs(20)
    assert convert_bounded("a.docx", data, BIG, 100) == convert_bytes("a.docx", data, BIG)


def test_budget_child_out_of_memory_is_refused_and_the_next_file_converts():
    with pytest.raises(DocumentTooLargeError, match="more than 50 MB of memory"):
        convert_bounded("big.html", bombs.html_unclosed(2_000_000), BIG, 100, 60, 50_000_000)
    ok = convert_untrusted("ok.html", b"<html><body><p>fine text</p></body></html>", BIG, 100)
    assert "fine text" in ok.text


def test_budget_child_out_of_cpu_is_refused():
    with pytest.raises(DocumentTooLargeError, match="more than 1 s of CPU"):
        convert_bounded("slow.docx", bombs.docx_paragraphs(15_000), BIG, 100, 1, 4_000_000_000)


def test_budget_child_passes_the_converters_errors_through():
    with pytest.raises(InputDocumentError, match="not a readable PDF"):
        convert_bounded("broken.pdf", b"%PDF-1.7\nnothing else", BIG, 100)
    with pytest.raises(DocumentTooLargeError, match="unfinished markup"):
        convert_untrusted("bomb.html", bombs.html_unclosed(30_000), BIG, 100)
