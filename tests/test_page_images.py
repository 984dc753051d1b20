"""A PDF page rendered with a passage's lines marked (ingest/page_images), and the originals
kept beside a workspace (index/originals)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.pdf_factory import make_pdf
from treerag_core.base.errors import CorruptDocumentError
from treerag_core.base.pagemap import span_on_page
from treerag_core.index.originals import load_original, original_path, save_original
from treerag_core.ingest.page_images import match_spans, normalised, render_page

PAGES = [
    [("Annual report", 18, True, 72, 700), ("Revenue grew by ten percent.", 11, False, 72, 660)],
    [
        ("Restructuring", 14, True, 72, 700),
        ("The plan closed two plants in 2022.", 11, False, 72, 660),
        ("Severance costs were 40 million.", 11, False, 72, 640),
        ("Other matters follow here.", 11, False, 72, 600),
    ],
]


def test_a_passage_is_marked_on_its_page_line_by_line():
    pdf = make_pdf(PAGES)
    # The index's text of the passage: joined lines, Markdown marks, other spacing.
    image = render_page(pdf, 2, "## The plan closed two plants in 2022. Severance costs", 600)
    assert (image.page, image.n_pages) == (2, 2)
    assert image.found == pytest.approx(1.0)
    assert len(image.boxes) == 2  # one box per line the passage spans
    top, bottom = sorted(b[1] for b in image.boxes)
    assert top < bottom  # the first line above the second, in image pixels
    png = Image.open(io.BytesIO(image.png))
    assert png.size[0] == 600
    # Marked pixels are yellowish; the page elsewhere stays white.
    box = png.convert("RGB").crop(tuple(int(v) for v in image.boxes[0]))
    rgb = np.asarray(box)  # not Image.getdata: deprecated in Pillow 12
    yellow = (rgb[..., 0] > 200) & (rgb[..., 1] > 180) & (rgb[..., 2] < 200)
    assert yellow.sum() > 0.5 * box.size[0] * box.size[1]
    assert png.convert("RGB").getpixel((5, 5)) == (255, 255, 255)


def test_a_passage_not_on_the_page_marks_nothing_and_bad_input_is_named():
    pdf = make_pdf(PAGES)
    assert render_page(pdf, 1, "Severance costs were 40 million.").boxes == ()
    with pytest.raises(ValueError, match="page 3 is not in this PDF"):
        render_page(pdf, 3)
    with pytest.raises(CorruptDocumentError):
        render_page(b"not a pdf", 1)


def test_a_reworded_passage_is_found_window_by_window():
    page = normalised("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
    passage = normalised("alpha beta gamma delta [table] epsilon zeta eta theta iota kappa")
    spans = match_spans(page, passage, window=8)
    assert spans and sum(e - s for s, e in spans) >= len(passage) - len("table") - 8


def test_the_part_of_a_span_on_a_page():
    starts = (0, 100, 250)
    assert span_on_page(starts, 90, 120, 1) == (90, 100)
    assert span_on_page(starts, 90, 120, 2) == (100, 120)
    assert span_on_page(starts, 90, 120, 3) == (250, 250)  # empty


def test_originals_are_kept_by_a_hashed_name(tmp_path):
    save_original(tmp_path, "../../etc/report.pdf", b"%PDF-1.7 data")
    path = original_path(tmp_path, "../../etc/report.pdf")
    assert path.parent == tmp_path / "originals" and path.suffix == ".pdf"
    assert load_original(tmp_path, "../../etc/report.pdf", 1000) == b"%PDF-1.7 data"
    assert load_original(tmp_path, "../../etc/report.pdf", 5) is None  # over the cap
    assert load_original(tmp_path, "other.pdf", 1000) is None
