"""Issue 28, row 10: corrections stored for a file whose bytes changed (re-saved) are not lost
silently: offered again by heading text (engine, CLI note and --carry-edits, explorer)."""

from __future__ import annotations

from pathlib import Path

from pdf_factory import report_pdf
from streamlit.testing.v1 import AppTest

from treerag_core.cli import main
from treerag_core.ingest.documents import EditCarry, convert_upload, sources_from
from treerag_core.ingest.tree_edits import TreeEdit, load_edit_entries, offer_for, save_edits

MB = 1024 * 1024
TEXT = (
    b"# Guide\n\n## Leave\n\nDays off.\n\nSick Leave\n\nTell your manager.\n\n## Pay\n\nMonthly.\n"
)
EDITS = [TreeEdit("mark", "Sick Leave", level=3), TreeEdit("demote", "Gone")]


def test_changed_bytes_offer_the_old_corrections_by_text(tmp_path):
    old = convert_upload("g.md", TEXT, MB)
    save_edits(tmp_path, old.sha256, "g.md", EDITS)
    new = convert_upload("g.md", TEXT + b"\nA line added.\n", MB)
    offer = offer_for(load_edit_entries(tmp_path), new.document, new.sha256)
    assert offer is not None and offer.old_sha256 == old.sha256
    assert offer.applies == (EDITS[0],) and len(offer.fails) == 1
    assert "2 stored tree correction(s)" in offer.note() and "1 still apply" in offer.note()
    assert offer_for(load_edit_entries(tmp_path), old.document, old.sha256) is None
    carry = EditCarry(load_edit_entries(tmp_path), apply=True)
    sources, _ = sources_from([("g.md", TEXT + b"\nx\n")], MB, {}, carry=carry)
    assert "### Sick Leave" in sources[0].text and len(carry.offers) == 1


def test_cli_notes_a_resaved_pdf_and_carries_its_corrections(tmp_path, capsys):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(report_pdf())
    out = tmp_path / "ix"
    assert main(["index", "--input", str(pdf), "--output", str(out), "--mock"]) == 0
    converted = convert_upload("report.pdf", pdf.read_bytes(), 20 * MB)
    heading = converted.document.headings[-1].text
    save_edits(out, converted.sha256, "report.pdf", [TreeEdit("demote", heading)])
    pdf.write_bytes(pdf.read_bytes() + b"% re-saved\n")  # same text, other bytes
    capsys.readouterr()
    assert main(["index", "--input", str(pdf), "--output", str(out), "--mock"]) == 0
    err = capsys.readouterr().err
    assert "report.pdf: 1 stored tree correction(s)" in err and "--carry-edits" in err
    assert (
        main(["index", "--input", str(pdf), "--output", str(out), "--mock", "--carry-edits"]) == 0
    )
    assert "applied the 1" in capsys.readouterr().err
    new_sha = convert_upload("report.pdf", pdf.read_bytes(), 20 * MB).sha256
    assert load_edit_entries(out)[new_sha] == ("report.pdf", (TreeEdit("demote", heading),))


def test_explorer_review_offers_them(tmp_path, monkeypatch):
    from treerag_core.ingest.documents import convert_upload as convert

    older = convert("guide.md", TEXT.replace(b"Monthly.", b"Every month."), MB)
    save_edits(tmp_path, older.sha256, "guide.md", [TreeEdit("demote", "Pay")])
    monkeypatch.setenv("TREE_EDITOR_DIR", str(tmp_path))
    app = Path(__file__).parent / "apps" / "tree_editor_app.py"
    at = AppTest.from_file(str(app), default_timeout=30).run()
    assert not at.exception
    assert any("1 stored tree correction(s)" in info.value for info in at.info)
    at.button(key="te_carry").click().run()
    frame = at.dataframe[0].value
    assert (3, "Pay") in [(int(r.level), r.heading.strip("\u2003")) for r in frame.itertuples()]
