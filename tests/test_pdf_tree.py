"""The author's structure first: a PDF's outline, else its contents, anchors the tree; cover,
contents and never-a-section lines are dropped with a note; levels by numbering first."""

from __future__ import annotations

import io

import pypdf
import pytest

from tests.pdf_factory import filing_pdf, make_pdf
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert import pdf as pdf_module
from treerag_core.ingest.convert.junk import line_reason, signer_office
from treerag_core.ingest.convert.levels import Candidate, structural_numbering
from treerag_core.ingest.convert.outline import _levels_in_order
from treerag_core.ingest.convert.skeleton import Entry, Placed, anchor, nest, title_matches
from treerag_core.ingest.convert.toc import _levels as toc_levels

MB = 1024 * 1024
BODY = [(f"Body text line {k} about revenue, costs and the year.", 10, False, 72, 600 - 13 * k)
        for k in range(4)]  # fmt: skip


def _outline(doc) -> list[tuple[int, int | None, str]]:
    return [(h.level, h.page, h.text) for h in doc.headings]


def test_contents_give_the_skeleton_and_junk_is_dropped_with_notes():
    doc = convert_bytes("f.pdf", filing_pdf(), 10 * MB)
    assert _outline(doc) == [
        (1, 1, "Cover page"),
        (1, 3, "PART I"),
        (2, 3, "Item 1. Business"),
        (3, 3, "Overview"),
        (2, 4, "Item 2. Properties"),
        (2, 5, "Item 3. Legal Proceedings"),
        (2, 5, "Signatures"),
    ]
    assert doc.headings[2].signals == ("table of contents",)
    # The cover page is made up, not a line the filing printed: "like this" never picks it.
    assert [h.synthetic for h in doc.headings] == [True] + [False] * 6
    notes = " ".join(doc.notes)
    assert "table of contents (page(s) 2) gives the skeleton" in notes
    assert "on the cover page" in notes and "UNITED STATES SECURITIES" in notes
    assert "parenthetical line" in notes and "label ending in a colon" in notes
    # The dropped lines stay in the text: nothing is lost.
    assert "(Unaudited)" in doc.text and "Total assets:" in doc.text


def test_contents_that_disagree_with_the_body_are_not_trusted():
    pages = [[("CONTENTS", 11, True, 72, 720)]]
    for k in range(6):
        pages[0] += [(f"Chapter title {k}", 10, False, 72, 690 - 16 * k),
                     (str(k + 2), 10, False, 520, 690 - 16 * k)]  # fmt: skip
    pages += [[(f"Another heading {k}", 14, True, 72, 720), *BODY] for k in range(6)]
    doc = convert_bytes("t.pdf", make_pdf(pages), 10 * MB)
    assert any("disagrees with the body" in n for n in doc.notes)
    assert [h.text for h in doc.headings] == [f"Another heading {k}" for k in range(6)]
    # Its entries are kept, none anchored, for the LLM check (convert/llm_skeleton.py).
    assert [(e.title, e.heading) for e in doc.contents] == [
        (f"Chapter title {k}", "") for k in range(6)
    ]


def _with_outline(data: bytes, items: list[tuple[str, int, int | None]]) -> bytes:
    """Add bookmarks (title, 0-based page, parent index) with pypdf."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    made = []
    for title, page, parent in items:
        above = made[parent] if parent is not None else None
        made.append(writer.add_outline_item(title=title, page_number=page, parent=above))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_outline_is_the_tree():
    pages = [
        [("Introduction", 10, False, 72, 720), *BODY, ("Bold aside", 14, True, 72, 450)],
        [("Methods", 10, False, 72, 720), *BODY],
        [*BODY, ("Data", 10, False, 72, 400)],
    ]
    items = [("Introduction", 0, None), ("Methods", 1, None), ("Data", 2, 1)]
    doc = convert_bytes("o.pdf", _with_outline(make_pdf(pages), items), 10 * MB)
    assert _outline(doc) == [(1, 1, "Introduction"), (1, 2, "Methods"), (2, 3, "Data")]
    assert doc.headings[0].signals == ("outline",)
    assert any("own outline (3 bookmarks) is the tree" in n for n in doc.notes)
    # "Data" is found low on its page: the text above it stays in Methods.
    assert doc.text.index("Data") > doc.text.index("Body text line 3", doc.headings[1].end)


def test_an_outline_title_not_in_the_text_opens_its_page():
    pages = [[*BODY], [*BODY], [*BODY]]
    items = [("Alpha", 0, None), ("Beta", 1, None), ("Gamma", 2, None)]
    doc = convert_bytes("o.pdf", _with_outline(make_pdf(pages), items), 10 * MB)
    assert _outline(doc) == [(1, 1, "Alpha"), (1, 2, "Beta"), (1, 3, "Gamma")]
    assert any("not found in the text" in n for n in doc.notes)


def test_outline_levels_never_jump():
    entries = [Entry("a", 1, 0), Entry("b", 3, 0), Entry("c", 2, 1)]
    assert [e.level for e in _levels_in_order(entries)] == [1, 2, 2]


def test_anchor_keeps_order_and_reports_missing():
    texts = [["Intro", "Item 1. Business"], ["text", "Item 2. Properties"], ["x"]]
    entries = [Entry("Item 1. Business", 2, 0), Entry("Item 9. Nothing", 2, 1),
               Entry("Item 2. Properties", 2, 1)]  # fmt: skip
    anchors, missing = anchor(entries, texts, 0, insert=False)
    assert [(a.page, a.block) for a in anchors] == [(0, 1), (1, 1)]
    assert [e.title for e in missing] == ["Item 9. Nothing"]


def test_title_match_allows_a_short_prefix_not_a_sentence():
    assert title_matches("Balance Sheets", "Acme plc and Subsidiaries Balance Sheets")
    assert title_matches("Item 5. Market for Registrant's Common Equity", "Item 5. Market for")
    assert not title_matches(
        "Risk Factors", "See Risk Factors in Part I for a discussion of the many risks we face"
    )


def test_numbering_first_note_closes_the_notes_heading_and_sits_under_its_item():
    def cand(text: str, style: int = 0) -> Candidate:
        return Candidate(text, style, structural_numbering(text))

    items = [
        Placed(cand("PART II", -1), 1),
        Placed(cand("Item 8. Financial Statements", -1), 2),
        Placed(cand("Notes to Financial Statements", -1), 3),
        Placed(cand("Note 1 — Accounting Policies")),
        Placed(cand("Revenue")),
        Placed(cand("Note 2 — Debt")),
        Placed(cand("Item 9. Changes", -1), 2),
    ]
    assert nest(items) == [1, 2, 3, 3, 4, 3, 2]


def test_cover_holds_nothing():
    items = [Placed(Candidate("Cover page", -1), 1, holds=False),
             Placed(Candidate("Forward-Looking Statements", 0))]  # fmt: skip
    assert nest(items) == [1, 1]


def test_never_a_section():
    assert line_reason("\u2612 No \u2610") == "check-box line"
    assert line_reason("(Unaudited)").startswith("parenthetical")
    assert line_reason("Non-current assets:").startswith("label")
    assert line_reason("SEGMENT COMMENTARY:") is None  # a capitals heading may end in ':'
    assert line_reason("(d) Exhibits") is None  # a numbered heading
    assert line_reason("Item 7. Management's Discussion") is None


def _broken_outline(data: bytes, n_items: int) -> bytes:
    """Bookmarks: one to a page that is not there, `n_items` ordinary ones, and a loop."""
    from pypdf.generic import ArrayObject, NameObject, NumberObject

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    ghost = writer.add_outline_item(title="Ghost", page_number=0).get_object()
    ghost[NameObject("/Dest")] = ArrayObject([NumberObject(99), NameObject("/Fit")])
    items = [writer.add_outline_item(title=f"Part {k}", page_number=k % 3) for k in range(n_items)]
    last = items[-1].get_object()
    last[NameObject("/Next")] = items[0]  # the last bookmark points back to the first
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_broken_outline_gives_notes_and_a_tree(monkeypatch):
    from treerag_core.ingest.convert import outline

    monkeypatch.setattr(outline, "MAX_ITEMS", 40)  # the limit, without 5,000 bookmarks
    data = _broken_outline(make_pdf([[*BODY], [*BODY], [*BODY]]), 60)
    doc = convert_bytes("b.pdf", data, 10 * MB)
    notes = " ".join(doc.notes)
    assert "read up to 40 bookmarks" in notes
    assert "pointing past page 3" in notes or "without a page" in notes
    assert doc.headings and all(h.signals == ("outline",) for h in doc.headings)
    assert "Ghost" not in [h.text for h in doc.headings]


def test_an_outline_loop_ends_the_walk():
    doc = convert_bytes("l.pdf", _broken_outline(make_pdf([[*BODY], [*BODY], [*BODY]]), 3), MB)
    # Read once each (the loop back to the first is not followed), the ghost left out.
    assert [h.text for h in doc.headings] == ["Part 0", "Part 1", "Part 2"]
    assert any("pointing past page 3" in n or "without a page" in n for n in doc.notes)


def test_table_heads_notes_signers_and_sentences_are_never_sections():
    for head in ("Year Ended December 31, 2019", "AS OF MAY 31, 2019", "February 2, 2019",
                 "Three Months Ending", "Quarter to Date"):  # fmt: skip
        assert line_reason(head).startswith("a period or date"), head
    for note in ("* Not meaningful", "Note: Columns may not add", "See footnotes at end",
                 "Refer to Note 4"):  # fmt: skip
        assert line_reason(note).startswith("a note or a pointer"), note
    assert line_reason("Page No.").startswith("a contents column head")
    for office in ("Chief Financial Officer", "President, Chief Executive Officer and Director",
                   "Jane Roe (Principal Accounting Officer)"):  # fmt: skip
        assert signer_office(office), office
    assert not signer_office("Certification of Chief Executive Officer")
    assert line_reason("Our stock price is volatile.").startswith("a sentence")
    for name in ("ACME HOLDINGS, INC.", "Acme Corp and Subsidiaries"):
        assert line_reason(name).startswith("a company's name alone"), name
    # Titles that look alike stay candidates.
    for title in ("Fiscal 2019 Compared to Fiscal 2018", "Notes to Financial Statements",
                  "NOTE TO INVESTORS CONCERNING FORWARD-LOOKING STATEMENTS:", "Directors",
                  "Director Nomination Process", "Certification of Chief Executive Officer",
                  "Item 1. Business.", "Acme Holdings Co.", "Cover page", "Fiscal Year",
                  "See others succeed", "Director", "Acme Media, Inc.",
                  "SUBSIDIARIES OF THE COMPANY", "Being a public company"):  # fmt: skip
        assert line_reason(title) is None, title


def _row(label: str, y: float, bold: bool = False) -> list[tuple[str, float, bool, float, float]]:
    """A table row: the label, then two figures in cells of their own."""
    return [(label, 10, bold, 72, y), ("1,234", 10, False, 400, y), ("5,678", 10, False, 480, y)]


def test_a_bold_line_between_table_rows_is_a_row_label():
    page = [("Balance Sheets", 12, True, 72, 720), *BODY,
            *_row("Year", 680, bold=True), ("ASSETS", 10, True, 72, 660),
            *_row("Cash", 640), *_row("Receivables", 626), ("LIABILITIES", 10, True, 72, 606),
            *_row("Debt", 586), ("Liquidity", 12, True, 72, 540),
            ("Body text after the table about cash.", 10, False, 72, 520)]  # fmt: skip
    doc = convert_bytes("t.pdf", make_pdf([page]), 10 * MB)
    assert [h.text for h in doc.headings] == ["Balance Sheets", "Liquidity"]
    assert "ASSETS" in doc.text.split("\n")  # the label stays, as text
    assert any("between table rows" in n for n in doc.notes)


def test_capitals_hold_mixed_case_headings_of_the_same_type():
    page: list[tuple[str, float, bool, float, float]] = []
    y = 720.0
    sections = [
        ("SEGMENT COMMENTARY", "The segments grew in the quarter."),
        ("MedTech", "Devices grew."),
        ("Consumer Health", "Brands grew."),
        ("GUIDANCE", "The outlook holds."),
    ]
    for title, body in sections:
        page += [(title, 10, True, 72, y), (body, 10, False, 72, y - 20)]
        y -= 50
    doc = convert_bytes("c.pdf", make_pdf([page]), 10 * MB)
    assert _outline(doc) == [(1, 1, "SEGMENT COMMENTARY"), (2, 1, "MedTech"),
                             (2, 1, "Consumer Health"), (1, 1, "GUIDANCE")]  # fmt: skip


def test_a_numbered_capitals_title_in_body_type_may_hold_a_comma():
    lines = [("NOTE 3 — OTHER INCOME (EXPENSE), NET", 10, False, 72, 720), *BODY,
             ("Note 4 — the amounts, as restated, follow", 10, False, 72, 520)]  # fmt: skip
    doc = convert_bytes("n.pdf", make_pdf([lines]), 10 * MB)
    assert [h.text for h in doc.headings] == ["NOTE 3 — OTHER INCOME (EXPENSE), NET"]


def test_a_signers_office_is_dropped_only_on_a_signed_page():
    def page(signed: bool) -> list[tuple[str, float, bool, float, float]]:
        sign = "/s/ Jane Roe" if signed else "Jane Roe leads the group."
        return [("SIGNATURES", 12, True, 72, 720), *BODY, (sign, 10, False, 72, 500),
                ("Chief Financial Officer", 10, True, 72, 480)]  # fmt: skip

    signed = convert_bytes("s.pdf", make_pdf([page(True)]), 10 * MB)
    assert [h.text for h in signed.headings] == ["SIGNATURES"]
    assert any("signer's office" in n for n in signed.notes)
    unsigned = convert_bytes("u.pdf", make_pdf([page(False)]), 10 * MB)
    assert [h.text for h in unsigned.headings] == ["SIGNATURES", "Chief Financial Officer"]


def test_capitals_rank_only_without_a_skeleton():
    from treerag_core.ingest.convert.pdf_tree import Found, plan_tree

    texts = [["Item 7. Discussion", "RESULTS", "text", "Liquidity", "text"]]
    found = [Found(0, 1, ("bold",), (-10.0, False, False)),
             Found(0, 3, ("bold",), (-10.0, False, True))]  # fmt: skip
    sparse = [Entry("Item 7. Discussion", 1, 0)]  # anchors the tree; type fills in below
    plan = plan_tree(texts, found, [[]], sparse)
    assert plan.levels == {(0, 0): 1, (0, 1): 2, (0, 3): 2}  # siblings under the anchor
    plan = plan_tree(texts, found, [[]], [])
    assert plan.levels == {(0, 1): 1, (0, 3): 2}  # no skeleton: capitals hold mixed case


def test_a_title_set_beside_an_item_line_is_its_own_heading():
    # A centred statement title right under a left-set Item line (same type, no gap) is a
    # title of its own; a wrapped Item title's next line lies under it and stays one heading.
    page = [("Item 1. Financial Statements (unaudited)", 10, True, 72, 720),
            ("Statements of Income", 10, True, 300, 708), *BODY,
            ("Item 2. Management's Discussion and Analysis of Financial", 10, True, 72, 520),
            ("Condition and Results of Operations", 10, True, 72, 508),
            ("Body text after the Item about the quarter.", 10, False, 72, 480)]  # fmt: skip
    doc = convert_bytes("q.pdf", make_pdf([page]), 10 * MB)
    assert [h.text for h in doc.headings] == [
        "Item 1. Financial Statements (unaudited)",
        "Statements of Income",
        "Item 2. Management's Discussion and Analysis of Financial Condition and Results of "
        "Operations",
    ]
    # Not under a PART / Item / Note line: lines set beside each other stay one block.
    head = [("Gain Recognized", 10, True, 72, 720), ("in Income", 10, True, 300, 708), *BODY]
    assert [h.text for h in convert_bytes("h.pdf", make_pdf([head]), MB).headings] == [
        "Gain Recognized in Income"
    ]


def test_a_heading_near_the_top_is_not_the_running_header_of_the_same_text():
    # The small "PART II" above every page is a running header; the bold "PART II" set just
    # under it, in the top margin too, opens the part.
    pages = []
    for p in range(4):
        page = [("PART II", 6, False, 290, 770), *BODY]
        if p == 2:
            page += [("PART II", 9, True, 285, 740), ("Item 5. Market", 10, True, 72, 650)]
        pages.append(page)
    doc = convert_bytes("r.pdf", make_pdf(pages), 10 * MB)
    assert _outline(doc) == [(1, 3, "PART II"), (2, 3, "Item 5. Market")]
    assert doc.text.count("PART II") == 1  # the running headers are removed


def test_an_underlined_title_in_body_type_is_a_heading():
    # "OVERVIEW" set in the body type, underlined end to end: a typewriter's heading. A link
    # underlined inside a line, or a rule across a table, makes nothing a heading.
    page = [("OVERVIEW", 10, False, 280, 720), *BODY,
            ("See the annual report for the details", 10, False, 72, 520),
            ("Revenue grew", 10, False, 72, 480)]  # fmt: skip
    rules = [[(279, 332, 718.5), (100, 150, 518.5), (60, 560, 478.5)]]
    doc = convert_bytes("u.pdf", make_pdf([page], rules=rules), 10 * MB)
    assert [(h.text, h.signals) for h in doc.headings] == [("OVERVIEW", ("underlined",))]


@pytest.mark.parametrize(
    ("bound", "value"),
    [
        ("UNDERLINE_MAX_RULES", 2),  # a ruled grid: more thin rules than this on the page
        ("UNDERLINE_MAX_PAGE_OBJECTS", 5),  # a drawing: more objects than this on the page
        ("UNDERLINE_MAX_DOC_OBJECTS", 5),  # the document's objects already looked at
    ],
)
def test_underlines_are_looked_for_within_bounds_only(monkeypatch, bound, value):
    # Past a bound the page is read without underlines (a small file drawing 100,000 rules
    # must not make the search cost minutes): the underlined title is then body text.
    page = [("OVERVIEW", 10, False, 280, 720), *BODY]
    rules = [[(279, 332, 718.5), (60, 560, 300), (60, 560, 250), (60, 560, 200)]]
    data = make_pdf([page], rules=rules)
    assert [h.text for h in convert_bytes("u.pdf", data, 10 * MB).headings] == ["OVERVIEW"]
    monkeypatch.setattr(pdf_module, bound, value)
    assert convert_bytes("u.pdf", data, 10 * MB).headings == ()


def test_halves_of_wrapped_lines_salutations_and_signatures_are_never_sections():
    for half in ("segment of business", "Sales to customers by", "Fair Value at", "For",
                 "AS OF MAY 31, 2019 BALANCES WITHOUT ADOPTION OF"):  # fmt: skip
        assert line_reason(half).startswith("half a wrapped line"), half
    for letter in ("Dear Sir or Madam", "/s/ PricewaterhouseCoopers LLP", "From: Acme Ltd",
                   "Attention: Ms Roe"):  # fmt: skip
        assert line_reason(letter).startswith("a letter's salutation"), letter
    for release in ("FOR IMMEDIATE RELEASE", "Embargoed until 8 a.m. ET"):
        assert line_reason(release).startswith("a press release's distribution line"), release
    # Titles that look alike stay candidates.
    for title in ("Mid-Year Check In", "Travel Dates - Days before and after", "eBay Listings",
                  "www-gitlab-com Tips", "questions.jsonl fields", "Item 1. Terms of",
                  "Notes to Financial Statements", "Forward-Looking Statements",
                  "Release Notes", "From Idea to Production", "Subject Experts"):  # fmt: skip
        assert line_reason(title) is None, title


def test_a_line_starting_past_the_middle_over_a_table_is_a_column_head():
    page = [("Derivatives", 12, True, 72, 720), *BODY,
            ("Notional Amount", 10, True, 420, 680), *_row("Swaps", 664), *_row("Hedges", 650),
            ("Text between the tables about the hedges.", 10, False, 72, 630),
            ("Hedging Summary", 10, True, 72, 610), *_row("Total", 594), *_row("Net", 580),
            ("Liquidity", 12, True, 72, 540),
            ("Body text after the table about cash.", 10, False, 72, 520)]  # fmt: skip
    doc = convert_bytes("c.pdf", make_pdf([page]), 10 * MB)
    # A title at the left margin over a table stays a heading.
    assert [h.text for h in doc.headings] == ["Derivatives", "Hedging Summary", "Liquidity"]
    assert any("a column head" in n and "Notional Amount" in n for n in doc.notes)


def test_a_running_footer_that_ends_each_page_above_the_margin_is_removed():
    # A filing printed from HTML ends each page right under its footer, at any height, and
    # alternates it: "2019 FORM 10-K 3" on odd pages, "4 ACME, INC." on even ones.
    pages = []
    for p in range(1, 9):
        body = BODY[: 1 + p % 4]
        foot = f"2019 FORM 10-K {p}" if p % 2 else f"{p} ACME, INC."
        pages.append([(f"Section {p}", 12, True, 72, 720), *body,
                      (foot, 8, False, 72, 600 - 13 * len(body))])  # fmt: skip
    doc = convert_bytes("f.pdf", make_pdf(pages), 10 * MB)
    assert "FORM 10-K" not in doc.text and "ACME, INC." not in doc.text
    assert "removed 8 running header" in " ".join(doc.notes)
    # The first lines differ from page to page: each stays a heading.
    assert [h.text for h in doc.headings] == [f"Section {p}" for p in range(1, 9)]


def test_signatures_and_exhibits_after_the_last_item_leave_it():
    # After the last Item, SIGNATURES stands beside it; an "Exhibit N" heading, or after the
    # signatures a heading opening its page, starts at the top level. A signer's name signed
    # on its page and a group label ("DIRECTORS:") are not sections.
    items = [
        ("PART IV", 14, True, 72, 720),
        ("Item 15. Exhibits", 12, True, 72, 690),
        *BODY,
        ("Item 16. Form 10-K Summary", 12, True, 72, 520),
        ("Transfer Agent", 10, True, 72, 490),
        ("Body text on the transfer agent and the registrar.", 10, False, 72, 470),
    ]
    signed = [
        ("SIGNATURES", 12, True, 72, 720),
        *BODY,
        ("By: /s/ JANE Q. ROE", 10, False, 72, 500),
        ("Jane Q. Roe", 10, True, 300, 480),
        ("DIRECTORS:", 10, True, 72, 440),
        ("/s/ JOHN DOE", 10, False, 72, 420),
    ]
    stock = [
        ("DESCRIPTION OF ACME CAPITAL STOCK", 12, True, 72, 720),
        *BODY,
        ("General", 10, True, 72, 520),
        ("Body text on the shares the company may issue.", 10, False, 72, 500),
    ]
    cert = [
        ("Exhibit 31.1", 10, True, 72, 720),
        ("Certification of Chief Executive Officer", 10, True, 72, 700),
        *BODY,
    ]
    doc = convert_bytes("e.pdf", make_pdf([items, signed, stock, cert]), 10 * MB)
    assert [(h.level, h.text) for h in doc.headings] == [
        (1, "PART IV"),
        (2, "Item 15. Exhibits"),
        (2, "Item 16. Form 10-K Summary"),
        (3, "Transfer Agent"),
        (2, "SIGNATURES"),
        (1, "DESCRIPTION OF ACME CAPITAL STOCK"),
        (2, "General"),
        (1, "Exhibit 31.1"),
        (2, "Certification of Chief Executive Officer"),
    ]  # fmt: skip
    notes = " ".join(doc.notes)
    assert "a signer's name" in notes and "Jane Q. Roe" in notes and "DIRECTORS:" in notes


def test_end_matter_before_the_first_item_or_anchored_keeps_its_place():
    def cand(text: str, style: int = 0) -> Candidate:
        return Candidate(text, style, structural_numbering(text))

    # No Item: "Exhibit A" and "Signatures" nest by type as before.
    assert nest([Placed(cand("Agreement")), Placed(cand("Exhibit 1 Form of Note", 1))]) == [1, 2]
    # An anchored "Signatures" the contents indented under the Item stands beside it, and so
    # does the power of attorney signed with it, though it opens a page.
    items = [Placed(cand("PART IV", -1), 1), Placed(cand("Item 16. Summary", -1), 2),
             Placed(cand("Signatures", -1), 3), Placed(cand("POWER OF ATTORNEY"), opens_page=True),
             Placed(cand("Exhibit 32", 0))]  # fmt: skip
    assert nest(items) == [1, 2, 2, 2, 1]
    # A contents' "Signatures" set in the Items' title column is their sibling.
    raw = [("PART IV", 87, 18.9, 10.0), ("ITEM 16. Form 10-K Summary", 90, 18.9, 7.5),
           ("Signatures", 92, 70.9, 7.5)]  # fmt: skip
    assert [e.level for e in toc_levels(raw)] == [1, 2, 2]


def test_quoted_clauses_definitions_dated_fields_and_name_lists_are_never_sections():
    # An amendment quotes the clause it replaces; an agreement defines its terms.
    assert line_reason("\u201c17.3 Leverage Ratio").startswith("quoted text")
    assert line_reason('"4.2 Interest Period').startswith("quoted text")
    assert line_reason("Final Maturity Date means 15 May 2026").startswith("a definition")
    assert line_reason("Facility Agent shall mean any bank").startswith("a definition")
    # A wrapped sentence's "This means that ..." is not a definition (it may be another junk).
    assert not (line_reason("This means that everyone who creates") or "").startswith("a defin")
    for field in ("Amendment Effective Date: 30 June 2023", "Date: May 5, 2023",
                  "Signed on: 12/31/2022"):  # fmt: skip
        assert line_reason(field).startswith("a form's field"), field
    names = "Hale, Jane Roe, John Doe, Mary Ann Poe, Rick Moe, and Acme"
    assert line_reason(names).startswith("a list of 5 or more names")
    # Titles that look alike stay candidates: lists of a few things, titles with 'Means'.
    for title in ("Cash, Cash Equivalents, Restricted Cash, and Marketable Securities",
                  "EUROPE, MIDDLE EAST & AFRICA", "What Our Brand Means",
                  "Consolidated Selling, General, And Administrative Expenses",
                  "Effective Date of the Merger", "Update: Fiscal 2023 Outlook"):  # fmt: skip
        assert line_reason(title) is None, title


def test_a_units_caption_under_running_text_is_not_a_section():
    prose = [(f"Running text line {k} about revenue and the table below it.", 10, False, 72,
              700 - 13 * k) for k in range(3)]  # fmt: skip
    caption = [("Liquidity", 12, True, 72, 740), *prose,
               ("Revenue (in thousands, except for percentages)", 10, True, 72, 640),
               *_row("Revenue", 620), *_row("Growth", 606)]  # fmt: skip
    # A statement's title carries its units too, but opens its page: it stays a heading.
    statement = [("ACME, INC.", 10, False, 72, 740),
                 ("CONSOLIDATED BALANCE SHEETS (in thousands)", 12, True, 72, 720),
                 *_row("Cash", 700), *_row("Receivables", 686), *BODY]  # fmt: skip
    doc = convert_bytes("u.pdf", make_pdf([caption, statement]), 10 * MB)
    assert [h.text for h in doc.headings] == [
        "Liquidity", "CONSOLIDATED BALANCE SHEETS (in thousands)"]  # fmt: skip
    assert any("a table's caption" in n and "Revenue (in thousands" in n for n in doc.notes)


def test_a_name_under_a_signature_line_is_the_signer():
    page = [("Your Offer", 12, True, 72, 720), *BODY, ("_____________________", 10, False, 72, 500),
            ("Jane Roe", 10, True, 72, 486), ("General Counsel", 10, False, 72, 472)]  # fmt: skip
    doc = convert_bytes("s.pdf", make_pdf([page]), 10 * MB)
    assert [h.text for h in doc.headings] == ["Your Offer"]
    assert any("under a signature line" in n and "Jane Roe" in n for n in doc.notes)
