"""Converters per format, every bad-input case, and exact offsets with page spans."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from pdf_factory import cjk_pdf, make_pdf, report_pdf

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import (
    CorruptDocumentError,
    EncryptedDocumentError,
    InputDocumentError,
    NeedsOCRError,
    TooManyPagesError,
    UnsupportedFormatError,
)
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.ingest.convert import convert_bytes, detect_format
from treerag_core.ingest.documents import sources_from
from treerag_core.ingest.parsing import parse_document

MB = 1024 * 1024


def _levels(doc) -> list[tuple[int, str]]:
    return [(h.level, h.text) for h in doc.headings]


# ---- PDF ----------------------------------------------------------------------------------


def test_pdf_headings_tables_pages_and_running_lines() -> None:
    doc = convert_bytes("r.pdf", report_pdf(3), MB)
    assert doc.fmt == "pdf" and doc.n_pages == 3
    assert _levels(doc) == [
        (1, "Annual Report 2024"),
        (2, "PART I"),
        (3, "Item 1. Section 1"),
        (3, "Item 2. Section 2"),
        (3, "Item 3. Section 3"),
    ]
    assert "size 20 > body 10" in doc.headings[0].signals
    assert "numbering Item 1." in doc.headings[2].signals
    # Table rows stay rows; the running header and page numbers are gone.
    assert "Revenue | 1,234 | 5,678" in doc.text.split("\n")
    assert "ACME CORP" not in doc.text
    assert not any(line.strip().isdigit() for line in doc.text.split("\n"))
    # Page map: each page's text starts where page_starts says.
    assert len(doc.page_starts) == 3 and doc.page_starts[0] == 0
    for page, start in enumerate(doc.page_starts, start=1):
        first = "# Annual" if page == 1 else f"### Item {page}."
        assert doc.text[start:].startswith(first)
        assert doc.page_of(start) == page
    assert [h.page for h in doc.headings] == [1, 1, 1, 2, 3]


def test_pdf_chunks_get_page_spans_and_exact_offsets() -> None:
    sources, rejected = sources_from([("r.pdf", report_pdf(4))], MB)
    assert not rejected
    index = build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))
    text = index.texts["r.pdf"]
    assert index.documents[0].page_starts == sources[0].page_starts
    for chunk in index.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
    # Each page gives its body text, then its table, both on that page alone.
    assert [(c.page_start, c.page_end) for c in index.chunks] == [
        (p, p) for p in (1, 1, 2, 2, 3, 3, 4, 4)
    ]
    for body, table in zip(index.chunks[::2], index.chunks[1::2], strict=True):
        assert f"on page {body.page_start} about revenue" in body.text
        assert table.text == "Revenue | 1,234 | 5,678\nNet income | 321 | 876"


def test_pdf_joins_wrapped_chinese_lines_and_keeps_articles() -> None:
    # One line each 14 pt apart (one block), blocks 26 pt apart: as Chromium prints a law.
    lines = [
        ("第一章 总则", 14, 72, 760),
        ("第一条 为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验", 10.5, 72, 730),
        ("及实际情况，制定本法。", 10.5, 72, 716),
        ("第二条 有下列情形之一，数额特别巨大或者有其他特别严", 10.5, 72, 690),
        ("重情节的，处十年以上有期徒刑：", 10.5, 72, 676),
        ("（一）数额较大的；", 10.5, 72, 662),
        ("（二）有其他严重情节的。", 10.5, 72, 648),
        ("第三条 本法英文名称为 Criminal", 10.5, 72, 622),
        ("Law，依照本条", 10.5, 72, 608),
        ("第二款规定执行。", 10.5, 72, 594),
        ("The law applies to every crime committed", 10.5, 72, 568),
        ("within the territory.", 10.5, 72, 554),
    ]
    doc = convert_bytes("law.pdf", cjk_pdf([lines]), MB)
    assert _levels(doc) == [(1, "第一章 总则")]
    paragraphs = doc.text.split("\n\n")[1:]
    assert paragraphs == [
        "第一条 为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验"
        "及实际情况，制定本法。",
        "第二条 有下列情形之一，数额特别巨大或者有其他特别严重情节的，处十年以上有期徒刑："
        "\n（一）数额较大的；\n（二）有其他严重情节的。",
        "第三条 本法英文名称为 Criminal\nLaw，依照本条第二款规定执行。",  # Latin wraps keep "\n"
        "The law applies to every crime committed\nwithin the territory.\n",
    ]
    assert "statute: 3 articles (第X条) become the leaves of their chapters" in doc.notes
    nodes = parse_document(doc.text, "law", "law.pdf", article_leaves=True)
    # The only "#" heading is the title, so the articles are the root's leaves.
    assert [n.heading_path for n in nodes if not n.children] == ["第一条", "第二条", "第三条"]


def test_scanned_pdf_needs_ocr() -> None:
    with pytest.raises(NeedsOCRError, match="needs OCR"):
        convert_bytes("scan.pdf", make_pdf([[], []]), MB)


def test_encrypted_pdf() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(report_pdf(1))).pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(EncryptedDocumentError, match="encrypted"):
        convert_bytes("locked.pdf", out.getvalue(), MB)


def test_corrupt_and_mislabelled_files() -> None:
    with pytest.raises(CorruptDocumentError, match="not a readable PDF"):
        convert_bytes("bad.pdf", b"%PDF-1.7\n garbage without objects", MB)
    with pytest.raises(CorruptDocumentError, match="no %PDF header"):
        convert_bytes("fake.pdf", b"just some text", MB)
    with pytest.raises(CorruptDocumentError, match="not a readable DOCX"):
        convert_bytes("bad.docx", b"PK\x03\x04" + b"\x00" * 50, MB)
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("[Content_Types].xml", "<x/>")
        z.writestr("word/document.xml", "<bad")
    with pytest.raises(CorruptDocumentError, match="DOCX file is damaged"):
        convert_bytes("damaged.docx", damaged.getvalue(), MB)
    with pytest.raises(UnsupportedFormatError, match="legacy Office"):
        convert_bytes("old.doc", b"\xd0\xcf\x11\xe0" + b"\x00" * 50, MB)
    with pytest.raises(UnsupportedFormatError, match=r"unsupported file type '\.png'"):
        convert_bytes("img.png", b"not really an image", MB)


def test_a_page_that_cannot_load_names_the_file_and_page_and_loses_nothing_else() -> None:
    data = report_pdf(2)
    kids = re.search(rb"/Kids\[ (\d+) 0 R  (\d+) 0 R ]", data)
    font = re.search(rb"(\d+) 0 obj\s*<</BaseFont", data)
    assert kids and font
    # The page tree lists a font object as page 2 (same byte length: the xref stays valid).
    bad = data.replace(
        kids.group(2) + b" 0 R ]", font.group(1).rjust(len(kids.group(2))) + b" 0 R ]"
    )
    assert bad != data
    with pytest.raises(CorruptDocumentError, match=r"broken\.pdf: page 2 of 2 cannot be read"):
        convert_bytes("broken.pdf", bad, MB)
    sources, rejected = sources_from([("broken.pdf", bad), ("ok.pdf", data)], MB)
    assert [s.name for s in sources] == ["ok.pdf"]
    assert [r.name for r in rejected] == ["broken.pdf"]


def test_page_and_size_limits() -> None:
    data = report_pdf(3)
    with pytest.raises(TooManyPagesError, match="3 pages is more than the limit of 2"):
        convert_bytes("long.pdf", data, MB, max_pages=2)
    with pytest.raises(InputDocumentError, match="larger than the limit"):
        convert_bytes("big.pdf", data, 100)


def test_bad_inputs_lose_nothing_else_in_the_batch() -> None:
    uploads = [
        ("good.pdf", report_pdf(2)),
        ("scan.pdf", make_pdf([[]])),
        ("bad.pdf", b"%PDF-1.4 broken"),
        ("notes.md", b"# Notes\n\nSome text here.\n"),
    ]
    sources, rejected = sources_from(uploads, MB)
    assert [s.name for s in sources] == ["good.pdf", "notes.md"]
    assert [r.name for r in rejected] == ["scan.pdf", "bad.pdf"]
    assert all("\n" not in r.reason for r in rejected)


# ---- DOCX ---------------------------------------------------------------------------------


def _docx(build) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_heading_styles_and_tables() -> None:
    def build(d) -> None:
        d.add_heading("Handbook", level=1)
        d.add_paragraph("Intro text of the handbook.")
        d.add_heading("Travel", level=2)
        d.add_paragraph("Book trains when you can.")
        table = d.add_table(rows=2, cols=2)
        table.cell(0, 0).text, table.cell(0, 1).text = "City", "Budget"
        table.cell(1, 0).text, table.cell(1, 1).text = "Paris", "200"
        d.add_heading("Hotels", level=3)
        d.add_paragraph("Pick a hotel near the office.")

    doc = convert_bytes("h.docx", _docx(build), MB)
    assert doc.fmt == "docx"
    assert _levels(doc) == [(1, "Handbook"), (2, "Travel"), (3, "Hotels")]
    assert doc.headings[1].signals == ("style Heading 2",)
    assert "City | Budget\nParis | 200" in doc.text


def test_docx_without_styles_uses_bold_and_numbering() -> None:
    def build(d) -> None:
        for title, body in (("1 Scope", "What this covers."), ("1.1 Terms", "Words used.")):
            d.add_paragraph().add_run(title).bold = True
            d.add_paragraph(body)
        d.add_paragraph("第二章 附则")
        d.add_paragraph("本规定自公布之日起施行。")

    doc = convert_bytes("plain.docx", _docx(build), MB)
    assert [h.text for h in doc.headings] == ["1 Scope", "1.1 Terms", "第二章 附则"]
    assert doc.headings[1].level == doc.headings[0].level + 1
    assert "bold" in doc.headings[0].signals


# ---- HTML and text ------------------------------------------------------------------------


def test_html_headings_tables_and_skipped_markup() -> None:
    html = (
        "<html><head><title>T</title><style>h1{color:red}</style></head><body>"
        "<h1>Guide</h1><p>First   paragraph &amp; more.</p><script>var x = 1;</script>"
        "<h2>Costs</h2><table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>3</td></tr>"
        "</table><h3>Notes</h3><ul><li>one</li><li>two</li></ul><p># not a heading</p>"
        "</body></html>"
    )
    doc = convert_bytes("g.html", html.encode(), MB)
    assert _levels(doc) == [(1, "Guide"), (2, "Costs"), (3, "Notes")]
    assert "First paragraph & more." in doc.text
    assert "Item | Price\nTea | 3" in doc.text
    assert "var x" not in doc.text and "color:red" not in doc.text
    assert "- one" in doc.text
    # A body line that looks like Markdown markup is escaped, so it stays body text.
    nodes = parse_document(doc.text, "g.html", "g.html", max_depth=6)
    assert [n.heading for n in nodes if not n.synthetic][1:] == ["Costs", "Notes"]


def test_html_page_chrome_is_left_out_and_the_articles_header_kept() -> None:
    page = (
        "<html><head><title>Site - Post</title></head><body>"
        "<header><a href='/'>Logo</a><nav><a>Home</a> | <a>Blog</a></nav></header>"
        "<div role='navigation'><ul><li>Crumb</li></ul></div>"
        "<article><header><h1>The Post</h1><p>by Ann</p></header><p>Body text.</p>"
        "<h2>Part</h2><p>More.</p></article>"
        "<aside><p>Ads here</p></aside><form><button>Search</button></form>"
        "<footer>© 2024 Site</footer></body></html>"
    )
    doc = convert_bytes("post.html", page.encode(), MB)
    assert _levels(doc) == [(1, "The Post"), (2, "Part")]  # the article's own <header> stays
    assert doc.text == "# The Post\n\nby Ann\n\nBody text.\n\n## Part\n\nMore.\n"
    for chrome in ("Logo", "Home", "Crumb", "Ads", "Search", "©"):
        assert chrome not in doc.text
    assert doc.notes == (
        "left out the page's navigation, header, sidebar, forms and footer: 6 lines",
    )
    # Nothing is a Preamble: the tree starts at the title.
    nodes = parse_document(doc.text, "post.html", "post.html")
    assert [n.heading for n in nodes] == ["The Post", "Preamble", "Part"]
    assert nodes[1].content == "by Ann\n\nBody text."


def test_html_page_with_main_is_read_from_main() -> None:
    page = (
        "<!doctype html><html><head><title>A paper</title></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/papers'>Papers</a></nav>"
        "<div class='banner'>Site banner text</div><main><h1>A paper</h1><h2>Abstract</h2>"
        "<p>We study trees.</p><h2>Figures</h2><p>Table 1</p></main>"
        "<footer>© 2017 arXiv mirror</footer></body></html>"
    )
    doc = convert_bytes("paper.html", page.encode(), MB)
    assert doc.text.startswith("# A paper\n\n## Abstract")
    assert doc.text.endswith("Table 1\n")  # the footer is not part of the last section
    assert doc.notes == (
        "left out the page's navigation and footer: 2 lines",
        "read the page's <main> only: left out 1 line outside it",
    )
    nodes = parse_document(doc.text, "paper.html", "paper.html")
    assert [n.heading for n in nodes] == ["A paper", "Abstract", "Figures"]


def test_html_chrome_that_holds_the_page_is_kept() -> None:
    # A <form> around the whole page (ASP.NET) holds the <main>; a <nav> that never closes
    # and a body-level <header>'s heading are kept: better a little chrome than lost text.
    doc = convert_bytes(
        "f.html",
        b"<body><form><nav>Menu</nav><main><h1>A</h1><p>b</p></main></form></body>",
        MB,
    )
    assert doc.text == "# A\n\nb\n" and doc.notes == ("left out the page's navigation: 1 line",)
    doc = convert_bytes(
        "h.html", b"<body><header><h1>Title</h1><p>tagline</p></header><p>x</p><nav>tail", MB
    )
    assert doc.text == "# Title\n\nx\n\ntail\n"
    assert doc.notes == ("left out the page's header: 1 line",)
    doc = convert_bytes("r.html", b"<p>a</p><span role='contentinfo'>(c) me</span><p>b</p>", MB)
    assert doc.text == "a\n\nb\n"


def test_plain_text_numbering_and_title_lines() -> None:
    text = (
        "Employee Guide\n\nThis guide explains the rules.\n\n1 Leave\n\nYou get 25 days.\n\n"
        "1.1 Sick Leave\n\nTell your manager.\n\nthis is a short line.\n\nMore text here.\n"
    )
    doc = convert_bytes("g.txt", text.encode(), MB)
    assert _levels(doc) == [(1, "Employee Guide"), (1, "1 Leave"), (2, "1.1 Sick Leave")]
    assert "this is a short line." in doc.text


def test_chinese_text_numbering() -> None:
    text = (
        "第一章 总则\n\n第一条　为了规范管理，制定本办法。\n\n"
        "第二章 附则\n\n第二条　本办法自发布之日起施行。\n"
    )
    doc = convert_bytes("法.txt", text.encode(), MB)
    assert [h.text for h in doc.headings] == ["第一章 总则", "第二章 附则"]


@pytest.mark.parametrize(
    ("line", "family", "rank"),
    [
        ("第一款 适用范围", "zh", 5),
        ("第一部分 概述", "zh", 0),
        ("第一百万条 附则", "zh", 4),
        ("二十、附则", "zh", 7),
        ("A.1 Proof of the bound", "alpha", 2),
        ("IV. Results", "roman", 1),
        ("1) Setup", "paren", 1),
        ("Chapter 3 Methods", "chapter", 1),
        ("Chapter 3", "chapter", 1),
        ("PART II", "filing", 1),
        ("Item 7. Management", "filing", 2),
        ("2.3 Results", "decimal", 2),
    ],
)
def test_the_converter_reads_numbering_with_the_parsers_grammar(line, family, rank) -> None:
    from treerag_core.base.text_rules import heading_numbering
    from treerag_core.ingest.convert.levels import structural_numbering

    found = structural_numbering(line)
    assert found is not None and (found.family, found.rank) == (family, rank)
    assert found == heading_numbering(line)  # one grammar: the parser reads it the same


@pytest.mark.parametrize(
    "line",
    [
        "3 apples were eaten",
        "1) the first step",
        "2.3",
        "IV.",
        "PART I 4",  # a contents line with its page
        "Item 1A",  # a cross-reference: an Item heading ends in "." or ":"
        "700 Anderson Hill Road",  # an address
    ],
)
def test_a_numbered_line_that_is_not_a_heading_is_not_a_converter_heading(line) -> None:
    from treerag_core.ingest.convert.levels import structural_numbering

    assert structural_numbering(line) is None


def test_filing_items_and_a_bracketed_title() -> None:
    from treerag_core.ingest.convert.levels import structural_numbering

    eight_k = structural_numbering("Item 5.07. Submission of Matters to a Vote")
    assert eight_k is not None and eight_k.label == "Item 5.07."
    assert structural_numbering("Item 5.07.").values < structural_numbering("Item 8.01.").values
    reserved = structural_numbering("ITEM 6. [RESERVED]")
    assert reserved is not None and reserved.label == "ITEM 6." and reserved.family == "filing"
    assert reserved.values == structural_numbering("Item 6. Selected Data").values


def test_list_numbering_nests_inside_an_item_and_the_next_item_closes_it() -> None:
    from treerag_core.ingest.convert.levels import Candidate, assign_levels, structural_numbering

    lines = ["PART IV", "Item 15. Exhibits", "(1) Statements", "(2) Schedules", "Item 16. Summary"]
    cands = [Candidate(t, 0, structural_numbering(t)) for t in lines]
    assert assign_levels(cands) == [1, 2, 3, 3, 2]
    # An un-numbered heading after a list item of the same style is its sibling, not its child.
    cands = [Candidate(t, 0, structural_numbering(t)) for t in ["Item 1. A", "(1) B", "Notes"]]
    assert assign_levels(cands) == [1, 2, 2]


def test_plain_text_chapters_appendices_and_paren_numbering() -> None:
    text = (
        "Chapter 1 Basics\n\nThe basics.\n\n1) Setup\n\nInstall it.\n\n"
        "Chapter 2 Use\n\nUse it.\n\nAppendix A Data\n\nThe data.\n"
    )
    doc = convert_bytes("book.txt", text.encode(), MB)
    assert _levels(doc) == [
        (1, "Chapter 1 Basics"),
        (2, "1) Setup"),
        (1, "Chapter 2 Use"),
        (1, "Appendix A Data"),
    ]
    nodes = parse_document(doc.text, "book.txt", "book.txt", max_depth=6)
    top = [n.heading for n in nodes if n.level == 1 and not n.synthetic]
    assert top == ["Chapter 1 Basics", "Chapter 2 Use", "Appendix A Data"]


def test_markdown_passes_through_unchanged() -> None:
    text = "# A\n\nbody\n\n## B\n\nmore\n"
    doc = convert_bytes("a.md", text.encode(), MB)
    assert doc.text == text and _levels(doc) == [(1, "A"), (2, "B")]
    assert detect_format("x.markdown", b"# hi") == "markdown"


def test_small_dev_filings_convert_with_exact_offsets_and_pages(eval_dir) -> None:
    """The two short FinanceBench filings (4 and 5 pages): real PDFs end to end."""
    from treerag_core.base.pagemap import chars_on_page

    pdfs = eval_dir / "financebench_pdf" / "pdfs"
    names = ["FOOTLOCKER_2022_8K_dated-2022-05-20.pdf", "PEPSICO_2023_8K_dated-2023-05-05.pdf"]
    uploads = [(n, (pdfs / n).read_bytes()) for n in names]
    sources, rejected = sources_from(uploads, 50 * MB)
    assert not rejected
    index = build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))
    for doc in index.documents:
        assert doc.source_format == "pdf" and len(doc.page_starts) in (4, 5)
        text = index.texts[doc.doc_id]
        assert "Table of Contents" not in text.split("\n")  # running header removed
        chunks = [c for c in index.chunks if c.doc_id == doc.doc_id]
        assert chunks
        for c in chunks:
            assert text[c.start : c.end] == c.text
            on_pages = sum(
                chars_on_page(doc.page_starts, c.start, c.end, p)
                for p in range(c.page_start, c.page_end + 1)
            )
            assert on_pages == len(c.text)
