"""benchmarks/short_paragraphs.py: the short paragraphs chunker 1 dropped, counted."""

from __future__ import annotations

from benchmarks.short_paragraphs import short_paragraphs
from treerag_core.base.config import IndexSettings
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder

DOC = "# Law\n\n## Article 1\n\nThe employer shall state:\n\n（一）工作内容；\n\n（二）劳动报酬；\n"


def test_counts_the_leaves_paragraphs_under_the_threshold():
    index = build_index(
        [SourceDocument("law.md", DOC)], IndexSettings(embedder="hashing"), get_embedder("hashing")
    )
    count, short_chars, all_chars = short_paragraphs(index)
    # "（一）工作内容；" and "（二）劳动报酬；" (8 characters each); the lead-in has 25.
    assert (count, short_chars) == (2, 16)
    assert all_chars == 16 + len("The employer shall state:")
