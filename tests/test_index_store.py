"""Index build, persistence, incremental re-indexing and bad index folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import sample_sources
from treerag_core.base import artifacts
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import EmbedderError, IndexBusyError, IndexFormatError
from treerag_core.index.corpus import SourceDocument, build_index, corpus_stats
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import (
    SCHEMA_VERSION,
    check_embedder,
    index_lock,
    load_index,
    recover_index,
    save_index,
)
from treerag_core.strategies.drilldown.layers import layers_of
from treerag_core.strategies.graph.part import graphs_of


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
    from treerag_core.index.tokens import tokenize

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
    from treerag_core.index.tokens import tokenize

    query = "router accuracy EUR/USD"
    qvec = get_embedder("hashing").embed_query(query)
    for leaf in hashing_index.leaves()[:25]:
        a = hashing_index.score_leaf(leaf.node_id, qvec, tokenize(query))
        b = loaded.score_leaf(leaf.node_id, qvec, tokenize(query))
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert {k: manifest["embedder"][k] for k in ("name", "dim")} == {
        "name": "hashing",
        "dim": hashing_index.dim,
    }
    assert len(manifest["embedder"]["fingerprint"]) == hashing_index.dim
    assert {d["sha256"] for d in manifest["documents"]} == {s.sha256 for s in sample_sources()}
    assert not list(tmp_path.glob(".idx.tmp-*"))  # the atomic write left nothing behind


def test_reindex_embeds_only_the_changed_document(tmp_path):
    settings = IndexSettings(embedder="hashing")
    embedder = CountingEmbedder()
    sources = sample_sources(["test_paper.md", "zh_sample.md"])
    first = build_index(sources, settings, embedder)
    # chunks, then the drill-down layers (one K-Type per document, one vector per section)
    assert embedder.embedded == len(first.chunks) + len(layers_of(first).texts)
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
    new_layer_texts = set(layers_of(second).texts) - set(layers_of(first).texts)
    assert 0 < len(new_layer_texts) < len(layers_of(second).texts)
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
    with pytest.raises(IndexFormatError, match=r"embeddings\.npy has shape \(1,\) object"):
        load_index(saved)


def test_save_replaces_existing_index(tmp_path, hashing_index):
    target = tmp_path / "idx"
    save_index(hashing_index, target)
    save_index(hashing_index, target)
    assert load_index(target).chunks == hashing_index.chunks
    assert sorted(p.name for p in tmp_path.iterdir()) == [".idx.lock", "idx"]


def _pdf_index():
    from tests.pdf_factory import report_pdf
    from treerag_core.ingest.documents import sources_from

    sources, _ = sources_from([("r.pdf", report_pdf(3))], 1024 * 1024)
    sources.append(SourceDocument("n.md", "# N\n\nplain markdown text, no pages at all.\n"))
    return build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))


def test_page_spans_and_page_map_survive_save_and_load(tmp_path):
    index = _pdf_index()
    loaded = load_index(save_index(index, tmp_path / "idx"))
    assert loaded.chunks == index.chunks
    assert loaded.documents == index.documents
    assert loaded.document("r.pdf").page_starts == index.document("r.pdf").page_starts != ()
    assert loaded.document("r.pdf").source_format == "pdf"
    assert all(c.page_start is None for c in loaded.chunks if c.doc_id == "n.md")


def test_sources_of_an_index_keep_page_maps():
    index = _pdf_index()
    again = build_index(index.sources(), index.settings, get_embedder("hashing"))
    assert again.chunks == index.chunks and again.documents == index.documents


def test_index_without_page_fields_still_loads(tmp_path):
    folder = save_index(_pdf_index(), tmp_path / "idx")
    # An index written before PDF support: no page fields on chunks or documents.
    rows = [json.loads(line) for line in (folder / "chunks.jsonl").read_text().splitlines()]
    for row in rows:
        del row["page_start"], row["page_end"]
    (folder / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = json.loads((folder / "manifest.json").read_text())
    for doc in manifest["documents"]:
        del doc["page_starts"], doc["source_format"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_index(folder)
    assert all(c.page_start is None for c in loaded.chunks)
    assert loaded.document("r.pdf").page_starts == ()


def test_save_keeps_the_tree_edits_sidecar(tmp_path):
    folder = save_index(_pdf_index(), tmp_path / "idx")
    (folder / "tree_edits.json").write_text('{"version": 1, "documents": {}}')
    save_index(_pdf_index(), folder)
    assert (folder / "tree_edits.json").read_text() == '{"version": 1, "documents": {}}'


def test_zero_byte_embeddings_npy_is_a_clear_error(saved):
    (saved / "embeddings.npy").write_bytes(b"")
    with pytest.raises(IndexFormatError, match=r"embeddings\.npy.*rebuild"):
        load_index(saved)


def test_chunk_pointing_to_a_missing_node_is_a_clear_error(saved):
    rows = [json.loads(line) for line in (saved / "chunks.jsonl").read_text().splitlines()]
    rows[3]["source_node_id"] = "9999"
    (saved / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IndexFormatError, match="points to node '9999'"):
        load_index(saved)


def test_npy_header_is_checked_before_the_body_is_read(saved, hashing_index):
    n, dim = hashing_index.embeddings.shape
    path = saved / "embeddings.npy"
    # A right header with a 1 GB body (sparse, so the test writes nothing): refused by size.
    with path.open("r+b") as fh:
        fh.truncate(1 << 30)
    with pytest.raises(IndexFormatError, match="expected"):
        load_index(saved)
    # A header claiming another shape is refused before its body is touched.
    np.save(path, np.zeros((n + 1, dim), dtype=np.float32))
    with pytest.raises(IndexFormatError, match="shape"):
        load_index(saved)


class OtherModel:
    """Another model under the same name and dimension (its vectors differ)."""

    def __init__(self, dim: int) -> None:
        self.name, self.dim = "hashing", dim
        self.inner = get_embedder("hashing")

    def embed_query(self, text):
        return self.inner.embed_query(text[::-1] + " other model")


def test_other_embedder_same_dimension_is_refused_by_fingerprint(saved, hashing_index):
    assert load_index(saved, embedder=get_embedder("hashing")).dim == hashing_index.dim
    with pytest.raises(EmbedderError, match="another model"):
        load_index(saved, embedder=OtherModel(hashing_index.dim))


def test_other_embedder_other_dimension_is_a_clear_error(hashing_index):
    with pytest.raises(EmbedderError, match="512-d"):
        check_embedder(hashing_index, get_embedder("hashing").__class__(dim=512))


def test_second_writer_gets_a_clear_busy_error(tmp_path, hashing_index):
    target = (tmp_path / "idx").resolve()
    with index_lock(target), pytest.raises(IndexBusyError, match="another process"):
        save_index(hashing_index, target, lock_timeout=0.2)
    save_index(hashing_index, target, lock_timeout=0.2)  # free again once the first is done
    assert load_index(target).chunks == hashing_index.chunks


def test_crash_between_the_two_renames_is_recovered_on_open(saved, hashing_index):
    # What the two-rename fallback leaves when killed between its renames.
    saved.rename(saved.with_name(".idx.old-4242"))
    (saved.parent / ".idx.tmp-abc").mkdir()  # a half-written new copy
    assert load_index(saved).chunks == hashing_index.chunks
    assert sorted(p.name for p in saved.parent.iterdir()) == [".idx.lock", "idx"]


def test_stale_tmp_folders_are_removed_on_write_and_open(saved, hashing_index):
    (saved.parent / ".idx.tmp-dead1").mkdir()
    save_index(hashing_index, saved)
    assert not list(saved.parent.glob(".idx.tmp-*"))
    (saved.parent / ".idx.tmp-dead2").mkdir()
    load_index(saved)
    assert not list(saved.parent.glob(".idx.tmp-*"))


def test_recovery_waits_for_a_running_writer(saved):
    (saved.parent / ".idx.tmp-live").mkdir()  # a writer still at work: not ours to delete
    with index_lock(saved.resolve()):
        assert recover_index(saved) is False
    assert (saved.parent / ".idx.tmp-live").is_dir()


INDEXER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from treerag_core.index.store import load_index, save_index
index = load_index(sys.argv[3])
print("ready", flush=True)
while True:
    save_index(index, Path(sys.argv[1]))
"""


def test_killed_indexer_always_leaves_a_loadable_index(tmp_path, hashing_index):
    """Kill a process saving in a loop at random points, 8 times: an index is always there."""
    import random
    import signal
    import subprocess
    import sys
    import time

    source = save_index(hashing_index, tmp_path / "source")
    target = tmp_path / "idx"
    save_index(hashing_index, target)
    rng = random.Random(15)
    repo = str(Path(__file__).resolve().parents[1])
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", INDEXER, str(target), repo, str(source)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.4))  # a few saves take ~0.1 s each
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        # The path itself holds a finished index, before any recovery runs.
        assert (target / "manifest.json").is_file()
        assert load_index(target).chunks == hashing_index.chunks
    assert recover_index(target)
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_scope_caches_are_bounded_lru(hashing_index):
    from treerag_core.index.corpus import MAX_SCOPE_CACHE
    from treerag_core.index.tokens import tokenize

    qvec = get_embedder("hashing").embed_query("router")
    docs = [d.doc_id for d in hashing_index.documents]
    scopes = [[docs[0]], None] + [[docs[i % len(docs)], f"ghost-{i}"] for i in range(20)]
    for scope in scopes:
        hashing_index.score_scope(scope, qvec, tokenize("router"))
        hashing_index.score_scope([docs[0]], qvec, tokenize("router"))  # kept: used often
    assert len(hashing_index._scopes) <= MAX_SCOPE_CACHE
    assert "*" + docs[0] in hashing_index._scopes


def test_chunk_rows_find_every_chunk_and_refuse_a_foreign_id(hashing_index, tmp_path):
    rows = [hashing_index.chunk_row(c.chunk_id) for c in hashing_index.chunks]
    assert rows == list(range(len(hashing_index.chunks)))
    with pytest.raises(KeyError):
        hashing_index.chunk_row("no-such-chunk")
    save_index(hashing_index, tmp_path / "idx")
    loaded = load_index(tmp_path / "idx")
    assert loaded.chunk_row(loaded.chunks[-1].chunk_id) == len(loaded.chunks) - 1


# ---- tampered folders: every malformed file is one IndexFormatError naming it --------------


@pytest.fixture(scope="module")
def full_folder(tmp_path_factory) -> Path:
    """A small index with every artifact: layers, leaf graphs and a HiRAG build."""
    from treerag_core.strategies.hirag.build import build_hirag
    from treerag_core.strategies.hirag.store import save_hirag

    embedder = get_embedder("hashing")
    settings = IndexSettings(embedder="hashing", graph_min_leaf_chars=300)
    index = build_index(sample_sources(["test_paper.md"]), settings, embedder)
    folder = save_index(index, tmp_path_factory.mktemp("full") / "idx")
    save_hirag(build_hirag(index, embedder), folder)
    return folder


def _rewrite(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))), "utf-8")


def _rewrite_rows(path: Path, change) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(rows)), "utf-8")


def _set(key, value):
    def change(data):
        data[key] = value
        return data

    return change


def _each(key, value):
    def change(rows):
        for row in rows:
            row[key] = value
        return rows

    return change


def _npy(path: Path, shape) -> None:
    np.save(path, np.zeros(shape, dtype=np.float32))


def _big_dim(text: str) -> str:
    return text.replace('"dim": ', '"dim": 1e999, "x": ', 1)


TAMPERED = {
    # name: (file it damages, how)
    "summary_cache_list": ("manifest.json", lambda p: _rewrite(p, _set("summary_cache", [1, 2]))),
    "settings_str": ("manifest.json", lambda p: _rewrite(p, _set("settings", "x"))),
    "settings_bad_value": (
        "manifest.json",
        lambda p: _rewrite(p, lambda m: {**m, "settings": {**m["settings"], "chunk_size": -1}}),
    ),
    "documents_not_list": ("manifest.json", lambda p: _rewrite(p, _set("documents", 5))),
    "dim_overflow": ("manifest.json", lambda p: p.write_text(_big_dim(p.read_text()))),
    "manifest_list": ("manifest.json", lambda p: p.write_text("[]")),
    "tokens_not_lists": ("tokens.json", lambda p: _rewrite(p, lambda t: [1] * len(t))),
    "texts_not_strings": ("texts.json", lambda p: _rewrite(p, lambda t: dict.fromkeys(t, 5))),
    "texts_list": ("texts.json", lambda p: p.write_text("[]")),
    "chunk_text_int": ("chunks.jsonl", lambda p: _rewrite_rows(p, _each("text", 123))),
    "chunk_row_list": ("chunks.jsonl", lambda p: p.write_text("[1, 2]\n")),
    "chunk_unknown_field": ("chunks.jsonl", lambda p: _rewrite_rows(p, _each("evil", 1))),
    "chunk_offsets": ("chunks.jsonl", lambda p: _rewrite_rows(p, _each("start", 10**9))),
    "node_children_str": ("nodes.jsonl", lambda p: _rewrite_rows(p, _each("children", "ab"))),
    "node_level_str": ("nodes.jsonl", lambda p: _rewrite_rows(p, _each("level", "1"))),
    "dup_node": ("nodes.jsonl", lambda p: _rewrite_rows(p, lambda r: [*r, r[-1]])),
    "layers_list": ("layers.json", lambda p: p.write_text("[1, 2]")),
    "layers_bad_json": ("layers.json", lambda p: p.write_text("{")),
    "layers_texts_ints": ("layers.json", lambda p: _rewrite(p, _set("texts", [1]))),
    "layers_npy_wrong_dim": ("layers.npy", lambda p: _npy(p, (3, 7))),
    "layers_npy_pickle": (
        "layers.npy",
        lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),
    ),
    "graphs_list": ("graphs.json", lambda p: p.write_text("[]")),
    "graph_vectors_wrong_dim": ("graph_vectors.npy", lambda p: _npy(p, (2, 7))),
    "hirag_manifest_list": ("hirag/manifest.json", lambda p: p.write_text("[]")),
    "hirag_graph_list": ("hirag/graph.json", lambda p: p.write_text("[]")),
    "hirag_vectors_wrong_dim": (
        "hirag/entity_vectors.npy",
        lambda p: _npy(p, (np.load(p).shape[0], 7)),
    ),
    "hirag_vectors_1d": ("hirag/entity_vectors.npy", lambda p: np.save(p, np.zeros(5, np.float32))),
    "hirag_tokens_ints": (
        "hirag/entity_tokens.json",
        lambda p: _rewrite(p, lambda t: [1] * len(t)),
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_index_folder_is_one_clear_error_naming_the_file(tmp_path, full_folder, case):
    from treerag_core.strategies.hirag.store import load_hirag

    name, damage = TAMPERED[case]
    folder = tmp_path / "idx"
    shutil.copytree(full_folder, folder)
    damage(folder / name)
    with pytest.raises(IndexFormatError) as info:
        load_index(folder)
        load_hirag(folder)
    message = str(info.value)
    assert str(folder / name) in message and "\n" not in message


def test_the_full_folder_loads_before_it_is_tampered(full_folder):
    from treerag_core.strategies.hirag.store import load_hirag

    index = load_index(full_folder)
    assert layers_of(index) is not None and graphs_of(index)
    assert load_hirag(full_folder).entity_vectors.shape[1] == index.dim


# ---- loops in the tree: refused on load (a walk up or down would never end) ----------------


def _child_lists_root(rows):
    root = next(r for r in rows if r["parent_id"] is None)
    kid = next(r for r in rows if r["node_id"] == root["children"][0])
    kid["children"] = [*kid["children"], root["node_id"]]
    return rows


def _self_child(rows):
    node = next(r for r in rows if r["children"])
    node["children"] = [*node["children"], node["node_id"]]
    return rows


def _own_parent(rows):
    for row in rows:
        if row["parent_id"] is not None:
            row["parent_id"] = row["node_id"]
    return rows


def _detached_loop(rows):
    """Two leaves made each other's parent and child, unlinked from their old parents: the
    links agree both ways, so only the walk from the roots finds them."""
    a, b = [r for r in rows if r["parent_id"] is not None and not r["children"]][:2]
    for row in rows:
        row["children"] = [c for c in row["children"] if c not in (a["node_id"], b["node_id"])]
    a["parent_id"], a["children"] = b["node_id"], [b["node_id"]]
    b["parent_id"], b["children"] = a["node_id"], [a["node_id"]]
    return rows


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_child_lists_root, "lists child"),
        (_self_child, "lists child"),
        (_own_parent, "lists child"),
        (_detached_loop, "not reached from any document's root"),
    ],
    ids=["node-cycle", "self-child", "parent-cycle", "detached-loop"],
)
def test_a_loop_in_the_tree_is_refused_on_load(saved, change, message):
    _rewrite_rows(saved / "nodes.jsonl", change)
    with pytest.raises(IndexFormatError, match=message) as info:
        load_index(saved)
    assert str(saved / "nodes.jsonl") in str(info.value)


def test_reindex_carries_only_the_index_folders_own_regular_files(
    saved, hashing_index, tmp_path, monkeypatch
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("a secret", encoding="utf-8")
    kept = saved / ".hirag-unreadable"
    kept.symlink_to(outside)  # followed, it would carry the secret into the new index
    with pytest.raises(IndexFormatError, match=r"\.hirag-unreadable in the index folder .*symlink"):
        save_index(hashing_index, saved)
    kept.unlink()
    kept.mkdir()
    (kept / "reports-1.json").symlink_to(outside / "secret.txt")
    with pytest.raises(IndexFormatError, match=r"reports-1\.json in the index folder .*symlink"):
        save_index(hashing_index, saved)
    (kept / "reports-1.json").unlink()
    (kept / "reports-2.json").write_text("[{", encoding="utf-8")
    (saved / "tree_edits.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(artifacts, "MAX_JSON_BYTES", 1)
    with pytest.raises(IndexFormatError, match=r"tree_edits\.json in the index folder .*more"):
        save_index(hashing_index, saved)
    monkeypatch.undo()
    save_index(hashing_index, saved)  # its own regular files are carried over
    assert (saved / ".hirag-unreadable" / "reports-2.json").read_text("utf-8") == "[{"
    assert list(outside.iterdir()) == [outside / "secret.txt"]
