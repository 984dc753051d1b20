"""Bulk tree corrections: every heading like one, every heading from one to another, and one
action's edits."""

from __future__ import annotations

import pytest

from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert.base import COVER_SIGNAL, InferredHeading
from treerag_core.ingest.tree_bulk import between, bulk_edits, like, pattern, unchanged
from treerag_core.ingest.tree_edits import TreeEdit, apply_edits, no_change


def _h(text: str, level: int = 2, signals: tuple[str, ...] = ("bold",)) -> InferredHeading:
    return InferredHeading(level, text, 0, 0, None, signals)


HEADINGS = [
    _h("Item 1. Financial Statements", 2, ("table of contents",)),
    _h("(Unaudited)", 3),
    _h("Note 1 — Basis", 3, ("bold", "numbering Note 1")),
    _h("(In millions)", 3),
    _h("Note 2 — Debt", 3, ("bold", "numbering Note 2")),
    _h("(Unaudited)", 3),
    _h("Total assets:", 4),
    _h("Non-current liabilities:", 4),
]


def test_like_by_text_style_and_pattern():
    assert like(HEADINGS, 1, "text") == [1, 5]
    assert like(HEADINGS, 1, "style") == [1, 3, 5]
    assert like(HEADINGS, 1, "pattern") == [1, 3, 5]
    assert like(HEADINGS, 2, "pattern") == [2, 4]
    assert like(HEADINGS, 6, "pattern") == [6, 7]
    assert pattern("Item 7. MD&A") == pattern("ITEM 1A. Risk Factors") != pattern("Note 3 X")


# A 10-K's end, as a FinanceBench PDF reads: "same pattern" on Exhibit 31.1 took the cover
# and every mixed-case heading without end punctuation.
EXHIBITS = [
    _h("Cover page", 1, (COVER_SIGNAL,)),
    _h("PART I", 1),
    _h("Foreign Exchange Risk", 2),
    _h("Exhibit 31.1", 2),
    _h("Market Listing", 2),
    _h("EXHIBIT 32 Certification", 2),
    _h("General", 2),
    _h("Exhibit 101.INS", 2),
    _h("1.1 Scope", 2),
    _h("2.3 Terms", 2),
    _h("Item 7. MD&A", 2),
    _h("Fiscal 2023 Highlights", 2),
]


def test_same_pattern_is_the_numbering_and_never_the_made_up_cover():
    assert like(EXHIBITS, 3, "pattern") == [3, 5, 7]  # Exhibit N, whatever its depth or case
    assert like(EXHIBITS, 8, "pattern") == [8, 9]  # 1.1, 2.3
    assert like(EXHIBITS, 10, "pattern") == [10]
    # Unnumbered headings keep case and end punctuation, without the cover or numbered ones.
    assert like(EXHIBITS, 2, "pattern") == [2, 4, 6, 11]
    assert like(EXHIBITS, 2, "style") == list(range(2, 12))
    # The cover page is no line of the document: like nothing, and never like anything.
    assert like(EXHIBITS, 0, "text") == like(EXHIBITS, 0, "pattern") == []
    assert like([*EXHIBITS, _h("Cover page", 1)], 12, "text") == [12]
    assert pattern("Schedule II") == pattern("SCHEDULE IV") != pattern("Exhibit 4")


def test_edits_that_change_nothing_are_not_made():
    assert (
        no_change(1, "Cover page", TreeEdit("promote", "Cover page")) == "already at the top level"
    )
    assert no_change(6, "x", TreeEdit("demote", "x")) == "already at the deepest level (6)"
    assert no_change(2, "x", TreeEdit("set_level", "x", level=2)) == "already at level 2"
    assert no_change(2, "Pay", TreeEdit("rename", "Pay", value=" Pay ")) == "already called that"
    assert not no_change(2, "x", TreeEdit("promote", "x"))
    assert not no_change(1, "x", TreeEdit("merge", "x"))
    # A bulk promote over level-1 and level-2 headings promotes only the level-2 ones.
    assert bulk_edits(EXHIBITS, [0, 1, 2, 3], "promote") == [
        TreeEdit("promote", "Exhibit 31.1"),
        TreeEdit("promote", "Foreign Exchange Risk"),
    ]
    assert unchanged(EXHIBITS, [0, 1, 2, 3], "promote") == {"already at the top level": 2}
    assert unchanged(EXHIBITS, [0, 1, 2, 3], "remove") == {}


def test_between_is_the_run_from_one_heading_to_another_both_included():
    assert between(HEADINGS, 1, 3) == [1, 2, 3]
    assert between(HEADINGS, 3, 1) == [1, 2, 3]  # picked bottom-up: the same run
    assert between(HEADINGS, 4, 4) == [4]
    assert between(HEADINGS, 0, len(HEADINGS) - 1) == list(range(len(HEADINGS)))
    # Combined with "every line like": a set union, in document order.
    assert sorted({*between(HEADINGS, 5, 7), *like(HEADINGS, 1, "text")}) == [1, 5, 6, 7]


def test_removing_a_run_applies_cleanly():
    text = "# A\n\n## (Unaudited)\n\nx\n\n## Total:\n\ny\n\n## (In millions)\n\nz\n\n## B\n\nw\n"
    doc = convert_bytes("a.md", text.encode(), 1 << 20)
    edits = bulk_edits(doc.headings, between(doc.headings, 3, 1), "remove")
    edited, problems = apply_edits(doc, edits)
    assert problems == []
    assert [h.text for h in edited.headings] == ["A", "B"]
    assert "Total:\n\ny" in edited.text


def test_bulk_edits_list_the_last_heading_first():
    assert bulk_edits(HEADINGS, [1, 5], "remove") == [
        TreeEdit("merge", "(Unaudited)", 1),
        TreeEdit("merge", "(Unaudited)", 0),
    ]
    assert bulk_edits(HEADINGS, [2, 4], "demote") == [
        TreeEdit("demote", "Note 2 — Debt", 0),
        TreeEdit("demote", "Note 1 — Basis", 0),
    ]
    assert bulk_edits(HEADINGS, [4, 2, 3], "merge") == [
        TreeEdit("merge", "Note 2 — Debt", 0),
        TreeEdit("merge", "(In millions)", 0),
    ]


def test_removing_every_repeat_applies_cleanly():
    text = "# A\n\n## (Unaudited)\n\nx\n\n## B\n\ny\n\n## (Unaudited)\n\nz\n"
    doc = convert_bytes("a.md", text.encode(), 1 << 20)
    edits = bulk_edits(doc.headings, like(doc.headings, 1, "text"), "remove")
    edited, problems = apply_edits(doc, edits)
    assert problems == []
    assert [h.text for h in edited.headings] == ["A", "B"]
    assert "(Unaudited)\n\nx" in edited.text  # the lines stay, as body text


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="by must be one of"):
        like(HEADINGS, 0, "colour")
    with pytest.raises(ValueError, match="op must be one of"):
        bulk_edits(HEADINGS, [0], "explode")
    with pytest.raises(ValueError, match="first must be in"):
        between(HEADINGS, -1, 2)
    with pytest.raises(ValueError, match="last must be in"):
        between(HEADINGS, 0, len(HEADINGS))
    with pytest.raises(ValueError, match="indices must be in"):
        bulk_edits(HEADINGS, [99], "demote")
