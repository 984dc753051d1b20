"""Extractive answers quote documents: their Markdown links must never become live links."""

from __future__ import annotations

import numpy as np
from markdown_it import MarkdownIt

from treerag_core.synthesis import extractive_answer, inert_links
from treerag_core.types import Chunk, RetrievedChunk

EVIL = (
    "The router is described [here](http://evil.example/x) with ![pixel](https://t.example/p)"
    " and <a href='http://x.example'>this</a>, <http://auto.example> and www.bare.example."
)


def test_inert_links_render_as_plain_text():
    html = MarkdownIt("commonmark").render(inert_links(EVIL))
    assert "<a " not in html and "<img" not in html
    assert "[here](http:" in html  # the text is still all there, shown literally


def test_extractive_answer_never_renders_document_links_as_live_links():
    chunk = Chunk("c1", EVIL, "0002", "Paper > Router", "paper.md", 0, len(EVIL))
    hit = RetrievedChunk(chunk, 0.9, 1.0, 1.0, 1.0, 1.0, 1)
    answer = extractive_answer(
        np.ones(4, dtype=np.float32), [hit], "en", lambda texts: np.ones((len(texts), 4))
    )
    html = MarkdownIt("commonmark").render(answer)
    assert "<a " not in html and "<img" not in html
    assert "[Source: Paper > Router]" in answer  # the citation marker itself stays parseable
