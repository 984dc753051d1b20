"""Index build, persistence, incremental re-indexing and bad index folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import sample_sources
from treerag_core.config import IndexSettings
from treerag_core.embedders import get_embedder
from treerag_core.errors import IndexFormatError
from treerag_core.index import SourceDocument, build_index, corpus_stats
from treerag_core.store import SCHEMA_VERSION, load_index, save_index


class CountingEmbedder:
    """Wraps the hashing embedder and counts the texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = get_embedder("hashing")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.embedded = 0

    def embed(self, texts, batch_size=32, progress=None):
        self.embedded += len(texts)
        return self.inner.embed(texts, batch_size=batch_size, progress=progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_every_leaf_chunk_is_exact_and_ids_unique(hashing_index):
    index = hashing_index
    assert len(index.documents) >= 4
    ids = list(index.nodes)
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)  # document order across the corpus
    for chunk in index.chunks:
        assert index.texts[chunk.doc_id][chunk.start : chunk.end] == chunk.text
        assert index.nodes[chunk.source_node_id].is_leaf
    assert index.embeddings.shape == (len(index.chunks), index.dim)
    stats = corpus_stats(index)
    assert stats["chunks"] == len(index.chunks) and stats["leaves"] > stats["documents"]


def test_leaf_scores_cover_only_its_chunks(hashing_index):
    index = hashing_index
    leaf = next(n for n in index.leaves() if len(index.leaf_rows(n.node_id)) >= 2)
    text = index.chunks[int(index.leaf_rows(leaf.node_id)[0])].text
    from treerag_core.text import tokenize

    rows, dense, bm25 = index.score_leaf(
        leaf.node_id, index.embeddings[int(index.leaf_rows(leaf.node_id)[0])], tokenize(text)
    )
    assert list(rows) == list(index.leaf_rows(leaf.node_id))
    assert dense[0] == pytest.approx(1.0, abs=1e-4)  # a chunk is most similar to itself
    assert bm25[0] == bm25.max() and bm25[0] > 0


def test_save_load_gives_identical_search(tmp_path, hashing_index):
    folder = save_index(hashing_index, tmp_path / "idx")
    loaded = load_index(folder)
    assert loaded.nodes == hashing_index.nodes
    assert loaded.chunks == hashing_index.chunks
    assert np.array_equal(loaded.embeddings, hashing_index.embeddings)
    from treerag_core.text import tokenize

    query = "router accuracy EUR/USD"
    qvec = get_embedder("hashing").embed_query(query)
    for leaf in hashing_index.leaves()[:25]:
        a = hashing_index.score_leaf(leaf.node_id, qvec, tokenize(query))
        b = loaded.score_leaf(leaf.node_id, qvec, tokenize(query))
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["embedder"] == {"name": "hashing", "dim": hashing_index.dim}
    assert {d["sha256"] for d in manifest["documents"]} == {s.sha256 for s in sample_sources()}
    assert not list(tmp_path.glob(".idx.tmp-*"))  # the atomic write left nothing behind


def test_reindex_embeds_only_the_changed_document(tmp_path):
    settings = IndexSettings(embedder="hashing")
    embedder = CountingEmbedder()
    sources = sample_sources(["test_paper.md", "zh_sample.md"])
    first = build_index(sources, settings, embedder)
    # chunks, then the drill-down layers (one K-Type per document, one vector per section)
    assert embedder.embedded == len(first.chunks) + len(first.layers.texts)
    changed = [
        sources[0],
        SourceDocument(
            sources[1].name,
            sources[1].text
            + "\n\n## 附录\n\n新增的一段内容，用于测试增量索引是否只重算变化的文档。\n",
        ),
    ]
    embedder.embedded = 0
    second = build_index(changed, settings, embedder, previous=first)
    zh_chunks = [c for c in second.chunks if c.doc_id == "zh_sample.md"]
    new_layer_texts = set(second.layers.texts) - set(first.layers.texts)
    assert 0 < len(new_layer_texts) < len(second.layers.texts)
    assert embedder.embedded == len(zh_chunks) + len(new_layer_texts)
    paper_rows = [i for i, c in enumerate(second.chunks) if c.doc_id == "test_paper.md"]
    old_rows = [i for i, c in enumerate(first.chunks) if c.doc_id == "test_paper.md"]
    assert np.array_equal(second.embeddings[paper_rows], first.embeddings[old_rows])


def test_duplicate_names_stay_apart():
    settings = IndexSettings(embedder="hashing")
    docs = [
        SourceDocument("README.md", "# A\n\nfirst text here."),
        SourceDocument("README.md", "# B\n\nsecond text."),
    ]
    index = build_index(docs, settings, get_embedder("hashing"))
    assert [d.doc_id for d in index.documents] == ["README.md", "README.md#2"]


@pytest.fixture()
def saved(tmp_path, hashing_index) -> Path:
    return save_index(hashing_index, tmp_path / "idx")


def test_missing_folder_and_manifest(tmp_path):
    with pytest.raises(IndexFormatError, match="no index at"):
        load_index(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexFormatError, match="not a TreeRAG index"):
        load_index(tmp_path / "empty")


def test_old_schema_is_a_clear_error(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    manifest["schema_version"] = 0
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match=r"schema version 0.*rebuild"):
        load_index(saved)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: (p / "chunks.jsonl").unlink(),
        lambda p: (p / "chunks.jsonl").write_text("{not json\n"),
        lambda p: (p / "manifest.json").write_text("{"),
        lambda p: np.save(p / "embeddings.npy", np.zeros((3, 7), dtype=np.float32)),
        lambda p: (p / "embeddings.npy").write_bytes(b"garbage"),
        lambda p: (p / "tokens.json").write_text("[]"),
    ],
    ids=["missing-file", "bad-jsonl", "bad-manifest", "wrong-shape", "bad-npy", "tokens"],
)
def test_corrupt_index_is_a_clear_error(saved, damage):
    damage(saved)
    with pytest.raises(IndexFormatError) as info:
        load_index(saved)
    message = str(info.value)
    assert "\n" not in message and "rebuild" in message


def test_embedder_mismatch_is_an_error(saved):
    with pytest.raises(IndexFormatError, match="built with embedder 'hashing'"):
        load_index(saved, expect_embedder="minilm")


def test_pickled_embeddings_are_refused(saved):
    np.save(saved / "embeddings.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(IndexFormatError):
        load_index(saved)


def test_save_replaces_existing_index(tmp_path, hashing_index):
    target = tmp_path / "idx"
    save_index(hashing_index, target)
    save_index(hashing_index, target)
    assert load_index(target).chunks == hashing_index.chunks
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
