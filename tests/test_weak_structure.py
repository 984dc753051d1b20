"""Weak structure: numbering-first headings in plain text and title-only Markdown; no structure
at all gives evenly sized sections cut at topic shifts, named by their first line, inferred."""

from __future__ import annotations

from itertools import pairwise

import pytest

from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.convert.plain import INFERRED
from treerag_core.ingest.convert.weak import TARGET_CHARS, section_starts, section_title

MB = 1024 * 1024

REPORT = """# 年度工作报告

一、总体情况

今年各项工作稳步推进，完成了年初确定的目标任务。

（一）经济运行

全年经济运行总体平稳，主要指标好于预期。

（二）社会事业

教育、医疗、养老等社会事业持续改善。

二、存在的问题

发展不平衡不充分的问题仍然突出。

（一）结构问题

产业结构调整任务仍然艰巨。
"""


def _outline(name: str, text: str) -> list[tuple[int, str]]:
    doc = convert_bytes(name, text.encode("utf-8"), MB)
    return [(h.level, h.text) for h in doc.headings]


def test_title_only_markdown_gets_its_numbering_as_the_tree():
    assert _outline("r.md", REPORT) == [
        (1, "年度工作报告"),
        (2, "一、总体情况"),
        (3, "（一）经济运行"),
        (3, "（二）社会事业"),
        (2, "二、存在的问题"),
        (3, "（一）结构问题"),
    ]


def test_plain_text_decimal_numbering_nests():
    text = (
        "1. Scope\n\nText.\n\n1.1 Terms\n\nText.\n\n1.1.1 Details\n\nText.\n\n2. Rules\n\nText.\n"
    )
    assert _outline("s.txt", text) == [(1, "1. Scope"), (2, "1.1 Terms"), (3, "1.1.1 Details"),
                                       (1, "2. Rules")]  # fmt: skip


def test_markdown_with_its_own_headings_is_kept_as_is():
    text = "# T\n\n## A\n\n一、not a heading here\n\n## B\n\ntext\n"
    assert _outline("m.md", text) == [(1, "T"), (2, "A"), (2, "B")]


def _topics(n_each: int = 12) -> list[str]:
    sea = "The ocean waves carry salt water, fish swim near coral reefs and tides rise."
    rail = "Railway engines pull freight wagons along steel tracks between busy stations."
    return [f"{sea} ({k})" for k in range(n_each)] + [f"{rail} ({k})" for k in range(n_each)]


def test_no_structure_is_cut_where_the_topic_shifts():
    paragraphs = _topics()
    target = sum(map(len, paragraphs)) // 2
    assert section_starts(paragraphs, target) == [0, 12]


def test_no_structure_gives_even_inferred_sections_named_by_their_first_line():
    paragraphs = [f"Paragraph {k}: " + "words about many things " * 12 for k in range(60)]
    text = "\n\n".join(paragraphs) + "\n"
    doc = convert_bytes("n.txt", text.encode(), MB)
    assert len(doc.headings) >= 3
    assert all(h.signals == (INFERRED,) for h in doc.headings)
    assert doc.headings[0].text.startswith("Paragraph 0: words about")
    assert any("no headings found" in n for n in doc.notes)
    # Nothing is lost: every paragraph is still in the text, and sections are near the target.
    assert all(p.strip() in doc.text for p in paragraphs)
    starts = [h.start for h in doc.headings] + [len(doc.text)]
    sizes = [b - a for a, b in pairwise(starts)]
    assert all(0.5 * TARGET_CHARS < s < 2 * TARGET_CHARS for s in sizes)


def test_short_unstructured_text_stays_one_section():
    assert _outline("s.txt", "just a few words\n\nand another paragraph\n") == []


def test_section_title_is_the_first_line_shortened():
    assert section_title("\nFirst line here\nsecond") == "First line here"
    assert len(section_title("x" * 200)) <= 60


def test_target_must_be_positive():
    with pytest.raises(ValueError, match="target must be > 0"):
        section_starts(["a"], 0)


def _unstructured(n: int = 40) -> bytes:
    paragraphs = [f"Paragraph {k}: " + "words about many things " * 12 for k in range(n)]
    return ("\n\n".join(paragraphs) + "\n").encode()


def test_inferred_sections_are_marked_on_the_index_nodes_and_kept_by_a_save_and_a_rebuild(
    tmp_path,
):
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import load_index, save_index
    from treerag_core.ingest.documents import sources_from

    notes: list[str] = []
    sources, _ = sources_from(
        [("n.txt", _unstructured()), ("m.md", b"# T\n\n## A\n\ntext\n")], MB, notes=notes
    )
    plain_text, markdown = sources
    assert plain_text.inferred_starts and not markdown.inferred_starts
    assert [n for n in notes if "n.txt: " in n and "sections inferred" in n]  # named by file
    settings, embedder = IndexSettings(embedder="hashing"), get_embedder("hashing")
    index = build_index(sources, settings, embedder)
    sections = [n for n in index.nodes.values() if n.doc_id == "n.txt" and not n.is_root]
    assert len(sections) == len(plain_text.inferred_starts) and all(n.inferred for n in sections)
    assert not any(n.inferred for n in index.nodes.values() if n.doc_id == "m.md")
    save_index(index, tmp_path / "ix")
    loaded = load_index(tmp_path / "ix")
    assert [n.inferred for n in loaded.nodes.values()] == [n.inferred for n in index.nodes.values()]
    # Adding a file rebuilds from the index's own sources: the marks stay.
    again = build_index(loaded.sources(), settings, embedder, previous=loaded)
    assert [n.inferred for n in again.nodes.values()] == [n.inferred for n in index.nodes.values()]


def test_an_index_saved_before_inferred_marks_still_loads(tmp_path):
    import json

    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import load_index, save_index
    from treerag_core.ingest.documents import sources_from

    sources, _ = sources_from([("n.txt", _unstructured())], MB)
    save_index(build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing")),
               tmp_path)  # fmt: skip
    nodes = tmp_path / "nodes.jsonl"
    rows = [json.loads(line) for line in nodes.read_text().splitlines() if line.strip()]
    nodes.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "inferred"}) + "\n"
                             for r in rows))  # fmt: skip
    manifest = tmp_path / "manifest.json"
    head = json.loads(manifest.read_text())
    for doc in head["documents"]:
        del doc["inferred_starts"]
    manifest.write_text(json.dumps(head))
    loaded = load_index(tmp_path)
    assert not any(n.inferred for n in loaded.nodes.values())
    assert loaded.sources()[0].inferred_starts == ()
