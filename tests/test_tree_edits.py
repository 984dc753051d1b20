"""Tree edits: each operation, page starts moved with their lines, the sidecar, re-index."""

from __future__ import annotations

import pytest
from pdf_factory import report_pdf

from treerag_core.base.errors import InputDocumentError
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.documents import convert_upload, sources_from, to_source
from treerag_core.ingest.parsing import parse_document
from treerag_core.ingest.tree_edits import TreeEdit, apply_edits, load_edits, save_edits

MB = 1024 * 1024
TEXT = (
    b"# Guide\n\n## Leave\n\nDays off.\n\nSick Leave\n\nTell your manager.\n\n## Pay\n\nMonthly.\n"
)


def _doc():
    return convert_bytes("g.md", TEXT, MB)


def _tree(text: str) -> list[tuple[int, str]]:
    return [(n.level, n.heading) for n in parse_document(text, "g", "g", 6) if not n.synthetic]


def test_each_operation() -> None:
    doc, problems = apply_edits(
        _doc(),
        [
            TreeEdit("mark", "Sick Leave", level=3),
            TreeEdit("rename", "Pay", value="Salary"),
            TreeEdit("demote", "Salary"),
        ],
    )
    assert not problems
    # "### Salary" now sits under Leave, beside Sick Leave.
    assert _tree(doc.text) == [(0, "Guide"), (1, "Leave"), (2, "Sick Leave"), (2, "Salary")]
    doc, _ = apply_edits(
        doc, [TreeEdit("promote", "Salary"), TreeEdit("set_level", "Sick Leave", level=2)]
    )
    assert [(h.level, h.text) for h in doc.headings][2:] == [(2, "Sick Leave"), (2, "Salary")]
    merged, _ = apply_edits(doc, [TreeEdit("merge", "Salary")])
    assert "Salary\n\nMonthly." in merged.text  # the words stay; only the heading goes
    assert [h.text for h in merged.headings] == ["Guide", "Leave", "Sick Leave"]


def test_missing_targets_are_reported_not_raised() -> None:
    doc, problems = apply_edits(
        _doc(), [TreeEdit("demote", "Nope"), TreeEdit("mark", "Pay", level=2)]
    )
    assert doc.text == TEXT.decode()
    assert problems == [
        "demote: no heading 'Nope' (occurrence 0)",
        "mark: no line 'Pay' (occurrence 0)",  # "## Pay" is a heading, not a body line
    ]


def test_bad_edits_are_value_errors() -> None:
    with pytest.raises(ValueError, match="op must be one of"):
        TreeEdit("delete", "x")
    with pytest.raises(ValueError, match=r"level in 1\.\.6"):
        TreeEdit("mark", "x", level=9)


def test_page_starts_follow_their_lines() -> None:
    doc = convert_bytes("r.pdf", report_pdf(3), MB)
    edited, problems = apply_edits(
        doc,
        [TreeEdit("mark", "Body text line 0 on page 2 about revenue and costs.", level=4)],
    )
    assert not problems
    for page, start in enumerate(edited.page_starts[1:], start=2):
        assert edited.text[start:].startswith(f"### Item {page}.")
    assert [h.page for h in edited.headings if h.level == 4] == [2]


def test_sidecar_round_trip_and_reindex_keeps_edits(tmp_path) -> None:
    converted = convert_upload("g.md", TEXT, MB)
    save_edits(tmp_path, converted.sha256, "g.md", [TreeEdit("mark", "Sick Leave", level=3)])
    edits = load_edits(tmp_path)
    assert edits == {converted.sha256: (TreeEdit("mark", "Sick Leave", level=3),)}
    sources, rejected = sources_from([("g.md", TEXT)], MB, edits)
    assert not rejected and "### Sick Leave" in sources[0].text
    _source, notes = to_source(converted, {converted.sha256: (TreeEdit("demote", "Gone"),)})
    assert notes == ["g.md: tree edit not applied (demote: no heading 'Gone' (occurrence 0))"]
    save_edits(tmp_path, converted.sha256, "g.md", [])
    assert load_edits(tmp_path) == {}
    (tmp_path / "tree_edits.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputDocumentError, match="not a valid tree edits file"):
        load_edits(tmp_path)


@pytest.mark.parametrize(
    "content",
    [
        '{"version": 1, "documents": {"abc": {"edits": [{"op": "mark", "line": 5}]}}}',
        '{"version": 1, "documents": {"abc": {"edits": [{"op": "mark", "line": "x", "evil": 1}]}}}',
        '{"version": 1, "documents": ["abc"]}',
        "[]",
    ],
    ids=["line-int", "unknown-field", "documents-list", "not-object"],
)
def test_a_tampered_edits_file_is_refused_and_never_extended(tmp_path, content) -> None:
    path = tmp_path / "tree_edits.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputDocumentError, match=r"tree_edits\.json: not a valid tree edits file"):
        load_edits(tmp_path)
    with pytest.raises(InputDocumentError, match="not a valid tree edits file"):
        save_edits(tmp_path, "abc", "g.md", [TreeEdit("demote", "Gone")])
    assert path.read_text(encoding="utf-8") == content
