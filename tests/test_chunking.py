"""Tests for chunk_leaf: exact offsets on real documents, window sizes, word and sentence cuts."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from treerag_core.base.types import Chunk, TreeNode
from treerag_core.ingest.chunking import chunk_leaf, paragraph_spans, paragraph_units
from treerag_core.ingest.parsing import parse_document

CHUNK_SIZE, OVERLAP, MIN_CHARS = 200, 50, 20
SLACK = min(MIN_CHARS, CHUNK_SIZE // 10)  # the last window of a paragraph may absorb a tail


def doc_leaves(text: str, doc_id: str) -> list[TreeNode]:
    """The real parser's leaves of a document."""
    return [n for n in parse_document(text, doc_id=doc_id, name=doc_id) if n.is_leaf]


def leaf(text: str, node_id: str = "0007") -> TreeNode:
    return TreeNode(
        node_id=node_id,
        doc_id="doc.md",
        heading="Router Design",
        level=2,
        content=text,
        start=0,
        end=len(text),
        heading_path="Methods > Router Design",
    )


@pytest.fixture(scope="module")
def eval_chunks(eval_dir: Path) -> list[tuple[str, TreeNode, list[Chunk]]]:
    """(doc text, leaf, its chunks) for every leaf of every evaluation document."""
    out = []
    for path in sorted(eval_dir.glob("*/docs/*.md")):
        text = path.read_text(encoding="utf-8")
        for node in doc_leaves(text, f"{path.parent.parent.name}/{path.name}"):
            out.append((text, node, chunk_leaf(node, text, CHUNK_SIZE, OVERLAP, MIN_CHARS)))
    assert len(out) > 1000, "expected the three evaluation sets"
    return out


def test_offsets_are_exact_on_every_eval_document(eval_chunks) -> None:
    n = 0
    for text, node, chunks in eval_chunks:
        for i, chunk in enumerate(chunks):
            assert text[chunk.start : chunk.end] == chunk.text
            assert node.start <= chunk.start < chunk.end <= node.end
            assert chunk.chunk_id == f"{node.node_id}_chunk_{i:02d}"
            assert (chunk.source_node_id, chunk.doc_id) == (node.node_id, node.doc_id)
            assert chunk.heading_path == node.heading_path
            n += 1
    assert n > 20000


def test_chunks_are_trimmed_and_sized(eval_chunks) -> None:
    short = []
    for _, node, chunks in eval_chunks:
        for chunk in chunks:
            assert chunk.text == chunk.text.strip()
            assert len(chunk.text) <= CHUNK_SIZE + SLACK, chunk
            # A statute's one-sentence article is a whole leaf (issue 24): short, not cut short.
            if len(chunk.text) < MIN_CHARS and chunk.text != node.content.strip():
                short.append(chunk.text)
    # A window over whitespace-padded Markdown table rows can trim below min_chars; it is
    # kept only if it holds words, and that stays rare.
    assert all(any(ch.isalnum() for ch in text) for text in short), short
    assert len(short) <= 5, short


def test_every_word_of_every_paragraph_is_covered(eval_chunks) -> None:
    for text, node, chunks in eval_chunks:
        covered = bytearray(len(text))
        for chunk in chunks:
            covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        for start, end in paragraph_spans(text, node.start, node.end):
            # Letters and digits must all be kept; a lone table border "|" may be dropped.
            missing = [i for i in range(start, end) if not covered[i] and text[i].isalnum()]
            assert not missing, (node.doc_id, node.node_id, text[missing[0] : missing[0] + 40])


def _enclosing_token(text: str, i: int) -> str:
    start, end = i, i
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def test_words_are_only_split_inside_giant_tokens(eval_chunks) -> None:
    splits = 0
    for text, _, chunks in eval_chunks:
        for chunk in chunks:
            for cut in (chunk.start, chunk.end):
                before, after = text[cut - 1 : cut], text[cut : cut + 1]
                if before.isascii() and after.isascii() and before.isalnum() and after.isalnum():
                    # Only a token longer than the overlap (URLs, base64 blobs) can force it.
                    assert len(_enclosing_token(text, cut)) > OVERLAP, _enclosing_token(text, cut)
                    splits += 1
    assert splits < 100  # a handful of URLs and blobs in the GitLab handbook


def test_short_paragraphs_join_their_neighbour_instead_of_being_dropped() -> None:
    text = "  Tiny.\n\nThe router uses a contextual bandit.  \n \nok\n\n"
    chunks = chunk_leaf(leaf(text), text)
    # "Tiny." joins the paragraph after it; "ok", last, joins the unit before it.
    assert [c.text for c in chunks] == ["Tiny.\n\nThe router uses a contextual bandit.  \n \nok"]
    assert chunks[0].chunk_id == "0007_chunk_00"
    # A leaf holding only a short paragraph keeps it: no text is unreachable.
    assert [c.text for c in chunk_leaf(leaf("ok"), "ok")] == ["ok"]


def test_a_statutes_short_list_items_are_chunked_with_their_neighbours() -> None:
    items = [
        "第十七条 劳动合同应当具备以下条款：",
        "（一）用人单位的名称、住所和法定代表人或者主要负责人；",
    ]
    items += ["（三）劳动合同期限；", "（四）工作内容和工作地点；", "（五）工作时间和休息休假；"]
    text = "\n\n".join(items)
    units = paragraph_units(text, 0, len(text), 20)
    # The last item, short and with nothing after it, joins the unit before it.
    assert [text[s:e].split("\n\n") for s, e in units] == [items[:2], items[2:]]
    chunks = chunk_leaf(leaf(text), text, chunk_size=60, overlap=10)
    covered = "".join(c.text for c in chunks)
    assert all(item in covered for item in items)


def test_windows_end_at_sentences_and_never_split_words() -> None:
    sentence = "The contextual bandit router picks a venue for each EUR/USD order. "
    text = "Intro line.\n\n" + sentence * 12
    chunks = chunk_leaf(leaf(text), text)
    assert len(chunks) >= 6
    body = chunks[1:]  # chunks[0] is the intro paragraph
    for chunk in body[:-1]:
        assert chunk.text.endswith("order."), chunk.text
        assert len(chunk.text) <= CHUNK_SIZE
    for prev, nxt in itertools.pairwise(body):
        overlap = prev.end - nxt.start
        assert 0 < overlap <= OVERLAP, overlap  # starts ~overlap before, moved to a word start
        assert text[nxt.start - 1] == " "


def test_falls_back_to_word_boundaries_without_sentences() -> None:
    words = " ".join(f"word{i:03d}" for i in range(300))  # 2,399 chars, no punctuation
    chunks = chunk_leaf(leaf(words), words)
    for chunk in chunks:
        assert re.fullmatch(r"word\d{3}( word\d{3})*", chunk.text), chunk.text
        assert len(chunk.text) <= CHUNK_SIZE + SLACK
    assert chunks[-1].text.endswith("word299")


@pytest.mark.parametrize(
    "text",
    [
        "x" * 5000,
        "中" * 3000,
        ("a" * 700 + " ") * 6,
        "https://example.com/" + "a/b" * 900 + " and then words.",
    ],
    ids=["5000-char word", "cjk without punctuation", "long words", "url"],
)
def test_pathological_input_makes_progress(text: str) -> None:
    chunks = chunk_leaf(leaf(text), text)
    starts = [c.start for c in chunks]
    assert starts == sorted(set(starts))  # strictly increasing
    assert all(len(c.text) <= CHUNK_SIZE + SLACK for c in chunks)
    assert chunks[0].start == 0 and chunks[-1].end == len(text.rstrip())
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start <= prev.end + 1  # no gap (at most the space between two words)


def test_big_overlap_still_terminates() -> None:
    text = "Routing decisions depend on spreads and latency. " * 40
    chunks = chunk_leaf(leaf(text), text, chunk_size=60, overlap=59, min_chars=5)
    assert 20 < len(chunks) < len(text)
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_zero_overlap_tiles_the_paragraph() -> None:
    text = "Routing decisions depend on spreads and latency. " * 20
    chunks = chunk_leaf(leaf(text), text, overlap=0)
    joined = " ".join(c.text for c in chunks)
    assert joined == text.strip()


def test_chinese_windows_cut_at_sentence_marks() -> None:
    article = (
        "第十三条 用人单位应当依法建立和完善劳动规章制度，保障劳动者享有劳动权利、履行劳动义务。"
    )
    text = article * 8  # one 344-char paragraph, no spaces at all
    chunks = chunk_leaf(leaf(text), text)
    assert len(chunks) >= 3
    for chunk in chunks[:-1]:
        assert chunk.text[-1] in "。；，", chunk.text
        assert len(chunk.text) <= CHUNK_SIZE
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start < prev.end  # overlapping windows
    assert chunks[-1].end == len(text)


def test_offsets_point_into_the_whole_document() -> None:
    doc = "# Title\n\n## Router Design\n\nThe router uses a contextual bandit over venues.\n"
    start = doc.index("The router")
    node = TreeNode("0002", "doc.md", "Router Design", 2, doc[start:], start, len(doc), "RD")
    (chunk,) = chunk_leaf(node, doc)
    assert (chunk.start, chunk.end) == (start, len(doc) - 1)
    assert doc[chunk.start : chunk.end] == chunk.text


def test_empty_leaf_has_no_chunks() -> None:
    assert chunk_leaf(leaf(""), "") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "chunk_size"),
        ({"overlap": 200}, "overlap"),
        ({"overlap": -1}, "overlap"),
        ({"min_chars": -1}, "min_chars"),
    ],
)
def test_bad_settings_are_rejected(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_leaf(leaf("some text here"), "some text here", **kwargs)


def test_wrong_document_text_is_rejected() -> None:
    with pytest.raises(ValueError, match="0007"):
        chunk_leaf(leaf("The router uses a bandit."), "Another document entirely.")


def iter_windows(text: str) -> Iterator[str]:  # keeps the sample below readable
    yield from (c.text for c in chunk_leaf(leaf(text), text))


def test_sample_paper_reads_naturally() -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_docs" / "test_paper.md"
    text = sample.read_text(encoding="utf-8")
    chunks = [c for node in doc_leaves(text, "test_paper.md") for c in chunk_leaf(node, text)]
    assert chunks
    assert all(text[c.start : c.end] == c.text for c in chunks)
    # Every chunk starts at a word start.
    assert all(c.start == 0 or not text[c.start - 1].isalnum() for c in chunks)
