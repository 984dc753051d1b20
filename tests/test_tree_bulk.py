"""Bulk tree corrections: every heading like one, every heading from one to another, and one
action's edits."""

from __future__ import annotations

import pytest

from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert.base import InferredHeading
from treerag_core.ingest.tree_bulk import between, bulk_edits, like, pattern
from treerag_core.ingest.tree_edits import TreeEdit, apply_edits


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
