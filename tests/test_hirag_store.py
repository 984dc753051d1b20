"""Graph store and artifacts: NetworkX queries, JSON/npy round trip, clear errors, lazy build."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from hirag_fixtures import two_cliques

from tests.conftest import sample_sources
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import IndexBusyError, IndexFormatError
from treerag_core.index import store as store_module
from treerag_core.index.corpus import build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.index.store import load_index, save_index
from treerag_core.strategies.hirag import build as hirag_build
from treerag_core.strategies.hirag import store as hirag_store
from treerag_core.strategies.hirag.build import build_hirag, load_or_build
from treerag_core.strategies.hirag.reports import CommunityReport
from treerag_core.strategies.hirag.store import (
    NetworkXGraphStore,
    has_hirag,
    keep_aside,
    load_hirag,
    load_partial_reports,
    partial_reports_path,
    save_hirag,
    save_partial_reports,
)


def test_networkx_store_queries():
    store = NetworkXGraphStore(two_cliques())
    assert store.has_node("a0") and not store.has_node("zz")
    assert store.node_degree("a0") == 6 and store.node_degree("zz") == 0
    assert len(store.get_node_edges("a1")) == 5 and store.get_node_edges("zz") == []
    assert store.get_edge("b0", "a0").description == "the bridge"
    assert store.shortest_path("a1", "b1") == ["a1", "a0", "b0", "b1"]
    assert store.shortest_path("a1", "zz") is None
    assert len(store.subgraph_edges(["a0", "a1", "b0"])) == 2


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("idx") / "index"
    index = build_index(
        sample_sources(["test_paper.md"]),
        IndexSettings(embedder="hashing"),
        get_embedder("hashing"),
    )
    save_index(index, folder)
    return folder


def test_round_trip_and_errors(small_index):
    index = load_index(small_index)
    assert index.folder == str(small_index.resolve())
    with pytest.raises(IndexFormatError, match="no HiRAG graph"):
        load_hirag(small_index)
    built = build_hirag(index, get_embedder("hashing"))
    save_hirag(built, small_index)
    loaded = load_hirag(small_index)
    assert loaded.graph == built.graph and loaded.communities == built.communities
    assert loaded.reports == built.reports and loaded.meta["fingerprint"] == built.fingerprint
    assert (loaded.entity_vectors == built.entity_vectors).all()
    (small_index / "hirag" / "graph.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"graph\.json is corrupt"):
        load_hirag(small_index)
    manifest = small_index / "hirag" / "manifest.json"
    meta = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**meta, "schema_version": 99}), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="schema 99"):
        load_hirag(small_index)


def test_lazy_build_saves_into_the_index_folder(small_index):
    shutil.rmtree(small_index / "hirag", ignore_errors=True)
    hirag_build._CACHE.clear()  # another test may have built this same corpus in memory
    index = load_index(small_index)
    with pytest.raises(IndexFormatError, match="no HiRAG graph"):
        load_or_build(index, build_if_missing=False)
    hindex, built = load_or_build(index)
    assert built and has_hirag(small_index)
    hirag_build._CACHE.clear()  # the next call must read the folder, not memory
    again, built_again = load_or_build(load_index(small_index))
    assert not built_again and again.fingerprint == hindex.fingerprint
    assert hindex.meta["counts"]["entities"] == len(hindex.graph.entities) > 0
    assert hindex.meta["seconds"]["total"] > 0


def test_a_graph_of_other_documents_is_out_of_date_not_corrupt(tmp_path):
    """Re-indexed with other documents, the folder keeps its old hirag/ (a carried-over
    build): a query rebuilds it offline, and without building it is "out of date"; the old
    graph cites chunks the index no longer holds, which the full load calls corrupt."""
    folder = tmp_path / "index"
    settings, embedder = IndexSettings(embedder="hashing"), get_embedder("hashing")
    first = build_index(sample_sources(["test_paper.md", "zh_sample.md"]), settings, embedder)
    save_index(first, folder)
    load_or_build(load_index(folder))  # the build a query makes
    save_index(build_index(sample_sources(["test_paper.md"]), settings, embedder), folder)
    assert has_hirag(folder)  # carried over by the re-index
    hirag_build._CACHE.clear()
    index = load_index(folder)
    with pytest.raises(IndexFormatError, match="is out of date"):
        load_or_build(index, build_if_missing=False)
    hindex, rebuilt = load_or_build(index)
    assert rebuilt
    assert hindex.meta["corpus_fingerprint"] == hirag_build.corpus_fingerprint(index)
    assert load_hirag(folder).fingerprint == hindex.fingerprint


@pytest.fixture(scope="module")
def built(small_index):
    return build_hirag(load_index(small_index), get_embedder("hashing"))


def _tampered(folder, name: str, change) -> None:
    path = folder / "hirag" / name
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _first_with_chunks(rows):
    return next(r for r in rows if r["chunk_ids"])


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        (
            "graph.json",
            lambda g: g["entities"][0]["chunk_ids"].append("9999_chunk_0"),
            r"graph\.json is corrupt \(entity .* cites chunk '9999_chunk_0'",
        ),
        (
            "graph.json",
            lambda g: g["relations"][0]["chunk_ids"].append("9999_chunk_0"),
            r"graph\.json is corrupt \(relation .* cites chunk '9999_chunk_0'",
        ),
        (
            "graph.json",
            lambda g: g["entities"][0].update(chunk_ids=[5]),
            r"graph\.json: entities\[0\]: field 'chunk_ids' is \[5\] \(list\), expected tuple",
        ),
        (
            "communities.json",
            lambda cs: _first_with_chunks(cs)["chunk_ids"].append("9999_chunk_0"),
            r"communities\.json is corrupt \(community 'L0-\d+' cites chunk '9999_chunk_0'",
        ),
        (
            "communities.json",
            lambda cs: cs[0].update(chunk_ids="0_chunk_0"),
            r"communities\.json: row 1: field 'chunk_ids' is '0_chunk_0' \(str\)",
        ),
        (
            "communities.json",
            lambda cs: cs[0].update(children=[1, 2]),
            r"communities\.json: row 1: field 'children' is \[1, 2\]",
        ),
        (
            "communities.json",
            lambda cs: cs[0].update(level="0"),
            r"communities\.json: row 1: field 'level' is '0' \(str\), expected int",
        ),
        # Once coerced without a word (str(5), float("3"), tuple("abc")): now refused.
        (
            "graph.json",
            lambda g: g["entities"][0].update(name=5),
            r"graph\.json: entities\[0\]: field 'name' is 5 \(int\), expected str",
        ),
        (
            "graph.json",
            lambda g: g["relations"][0].update(weight="3"),
            r"graph\.json: relations\[0\]: field 'weight' is '3' \(str\), expected float",
        ),
        (
            "reports.json",
            lambda rs: rs[0].update(findings="abc"),
            r"reports\.json: row 1: field 'findings' is 'abc' \(str\)",
        ),
        (
            "communities.json",
            lambda cs: cs[-1].update(parent="L9-9"),
            r"communities\.json is corrupt \(community .* a missing parent",
        ),
    ],
)
def test_a_graph_citing_what_the_index_lacks_is_refused(small_index, built, name, change, message):
    save_hirag(built, small_index)
    assert load_hirag(small_index).graph == built.graph  # sound before the change
    _tampered(small_index, name, change)
    with pytest.raises(IndexFormatError, match=message):
        load_hirag(small_index)
    chunk_ids = {c.chunk_id for c in load_index(small_index).chunks}
    with pytest.raises(IndexFormatError, match=message):  # the ids given, as load_or_build does
        load_hirag(small_index, chunk_ids=chunk_ids)


def test_a_build_keeps_only_its_own_index_waiting(small_index, built, tmp_path, monkeypatch):
    other = tmp_path / "other"
    shutil.copytree(small_index, other)
    shutil.rmtree(other / "hirag", ignore_errors=True)
    save_hirag(built, small_index)
    hirag_build._CACHE.clear()
    cached_index = load_index(small_index)
    load_or_build(cached_index)  # now in memory
    started, release = threading.Event(), threading.Event()

    def slow_build(*args, **kwargs):
        started.set()
        assert release.wait(30)
        return built

    monkeypatch.setattr(hirag_build, "build_hirag", slow_build)
    results = {}
    builder = threading.Thread(target=lambda: results.update(new=load_or_build(load_index(other))))
    waiter = threading.Thread(target=lambda: results.update(again=load_or_build(load_index(other))))
    builder.start()
    try:
        assert started.wait(30)
        reader = threading.Thread(target=lambda: results.update(cached=load_or_build(cached_index)))
        reader.start()
        reader.join(10)
        assert not reader.is_alive() and results["cached"][1] is False  # did not wait
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive()  # the same index waits for its build
    finally:
        release.set()
        builder.join(30)
        if waiter.ident is not None:
            waiter.join(30)
    assert results["new"] == (built, True) and results["again"] == (built, False)
    assert has_hirag(other) and not hirag_build._INDEX_LOCKS._locks  # no lock left behind


def test_a_failed_swap_keeps_the_old_graph_loadable(small_index, built, monkeypatch):
    save_hirag(built, small_index)
    monkeypatch.setattr(store_module, "_exchange", lambda a, b: False)  # a file system without it
    rename = Path.rename

    def failing(self, target):
        if self.name.startswith(".hirag.tmp-"):  # the new graph moving in
            raise OSError("disk gone")
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError, match="disk gone"):
        save_hirag(built, small_index)
    monkeypatch.undo()
    assert load_hirag(small_index).graph == built.graph
    assert not [p for p in small_index.iterdir() if p.name.startswith((".hirag.tmp", ".hirag.old"))]


def test_a_save_killed_between_its_renames_is_repaired(small_index, built):
    save_hirag(built, small_index)
    (small_index / "hirag").rename(small_index / ".hirag.old-4242")  # the old copy, set aside
    (small_index / ".hirag.tmp-dead").mkdir()  # the new one, never moved in
    assert has_hirag(small_index)
    assert load_hirag(small_index).graph == built.graph
    assert not [p for p in small_index.iterdir() if p.name.startswith((".hirag.tmp", ".hirag.old"))]


def test_a_damaged_reports_checkpoint_is_refused_not_paid_again(tmp_path):
    report = CommunityReport("L0-0", "Title", "Summary", ("a finding",), "llm", "key-1")
    save_partial_reports(tmp_path, {"L0-0": report})
    assert load_partial_reports(tmp_path) == {"key-1": report}
    assert not list(tmp_path.glob("*.tmp"))  # written beside, renamed into place
    path = partial_reports_path(tmp_path)
    good = json.loads(path.read_text(encoding="utf-8"))[0]
    path.write_text(json.dumps([good, 5, {"title": "no id"}]), encoding="utf-8")
    assert load_partial_reports(tmp_path) == {"key-1": report}  # a bad entry is skipped
    for damage in ('[{"community_id": "L0-0", "tit', '{"not": "a list"}'):
        path.write_text(damage, encoding="utf-8")
        with pytest.raises(IndexFormatError, match=r"reports-partial\.json.*paid again"):
            load_partial_reports(tmp_path)


def test_a_graph_save_waits_for_a_reindex_of_its_folder(small_index, built, monkeypatch):
    # A re-index swaps the whole folder under the index's own writer lock; a graph saved
    # meanwhile would be renamed into the folder being replaced.
    import fcntl

    from treerag_core.base.errors import IndexBusyError
    from treerag_core.index.store import lock_path_of

    monkeypatch.setattr(store_module, "LOCK_TIMEOUT", 0.2)
    with open(lock_path_of(small_index.resolve()), "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as `index --output` holds it
        with pytest.raises(IndexBusyError):
            save_hirag(built, small_index)
    save_hirag(built, small_index)  # free again
    assert load_hirag(small_index).graph == built.graph


def report(n: int) -> CommunityReport:
    return CommunityReport(f"L0-{n}", f"T{n}", "S", (), "llm", f"key-{n}")


def test_checkpoint_writes_merge_and_keep_the_newest_within_the_cap(tmp_path, monkeypatch):
    save_partial_reports(tmp_path, {"L0-1": report(1)})
    save_partial_reports(tmp_path, {"L0-2": report(2)})  # a second writer adds, never replaces
    assert set(load_partial_reports(tmp_path)) == {"key-1", "key-2"}
    monkeypatch.setattr(hirag_store, "MAX_KEPT_REPORTS", 3)
    written = save_partial_reports(tmp_path, {"a": report(3), "b": report(4)})
    assert (written.kept, written.dropped) == (3, 1)  # the oldest went
    assert list(load_partial_reports(tmp_path)) == ["key-2", "key-3", "key-4"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_checkpoint_writes_take_the_folder_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "LOCK_TIMEOUT", 0.2)
    held, release = threading.Event(), threading.Event()

    def writer() -> None:  # another writer (a query's rebuild saving the graph) holds it
        with store_module.index_lock(tmp_path.resolve()):
            held.set()
            release.wait(5)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        held.wait(5)
        with pytest.raises(IndexBusyError):
            save_partial_reports(tmp_path, {"L0-1": report(1)})
    finally:
        release.set()
        thread.join()
    save_partial_reports(tmp_path, {"L0-1": report(1)})
    assert set(load_partial_reports(tmp_path)) == {"key-1"}


def test_keep_aside_refuses_symlinks_other_files_and_oversized_ones(tmp_path, monkeypatch):
    root, outside = tmp_path / "index", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    damaged = root / "reports.json"
    damaged.write_text("[{", encoding="utf-8")
    (root / ".hirag-unreadable").symlink_to(outside)  # would write outside the index
    with pytest.raises(IndexFormatError, match=r"\.hirag-unreadable in the index folder"):
        keep_aside(damaged, root)
    assert list(outside.iterdir()) == []
    (root / ".hirag-unreadable").unlink()
    (root / ".hirag-unreadable").write_text("a file", encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"\.hirag-unreadable in the index folder"):
        keep_aside(damaged, root)  # not a raw OSError
    (root / ".hirag-unreadable").unlink()
    secret = outside / "secret.txt"
    secret.write_text("a secret", encoding="utf-8")
    linked = root / "linked.json"
    linked.symlink_to(secret)
    with pytest.raises(IndexFormatError, match=r"linked\.json in the index folder .* symlink"):
        keep_aside(linked, root)
    assert not (root / ".hirag-unreadable").exists() or not any(
        (root / ".hirag-unreadable").iterdir()
    )
    monkeypatch.setattr(hirag_store.artifacts, "MAX_JSON_BYTES", 1)
    with pytest.raises(IndexFormatError, match=r"reports\.json in the index folder .*limit"):
        keep_aside(damaged, root)
    monkeypatch.undo()
    kept = keep_aside(damaged, root)
    assert (root / kept).read_text("utf-8") == "[{" and not (root / kept).is_symlink()
