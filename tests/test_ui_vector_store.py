"""The explorer's Milvus switch (Documents → Vector store) against a real Milvus Lite file.

No mock of Milvus: the workspace index is pushed into a Lite file in the test's data folder,
a question on Ask is served by the engine and ranks as in process; then the refusals (a
path outside the data folder, an unreachable server, input too long, another embedder, a
half-written collection) each leave the in-process index answering.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import ask, open_app, page_text
from tests.conftest import keyless_app
from treerag_core import build_index, push_to_milvus, store_serving
from treerag_core.base.config import IndexSettings
from treerag_core.index.corpus import SourceDocument
from treerag_core.index.embedders import HashingEmbedder
from treerag_core.index.vectors.milvus_store import MilvusStore
from ui.common import vector_store
from ui.common.vector_store import MAX_URI_CHARS

REPO = Path(__file__).resolve().parents[1]
PAPER = (REPO / "sample_docs" / "test_paper.md").read_bytes()
QUESTION = "How many epochs was the model trained for?"


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with (
        keyless_app(tmp_path_factory.mktemp("vs_data")) as data,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("TREERAG_MILVUS_TIMEOUT", "2")  # the unreachable server fails fast
        mp.delenv("MILVUS_URI", raising=False)
        yield data


def with_upload() -> AppTest:
    at = open_app("pages/documents.py")
    at.file_uploader[0].set_value([("paper.md", PAPER, "text/markdown")]).run()
    assert not at.exception, at.exception
    return at


def apply(at: AppTest, kind: str, uri: str = "milvus.db", collection: str = "treerag",
          replace: bool = False) -> AppTest:  # fmt: skip
    """On Documents: pick the vector store, fill the fields, press Apply."""
    if at.session_state["nav_page"] != "pages/documents.py":
        at.switch_page("pages/documents.py").run()
    at.radio(key="vs_kind").set_value(kind).run()
    if kind == "milvus":
        at.text_input(key="vs_uri").input(uri)
        at.text_input(key="vs_collection").input(collection)
        at.checkbox(key="vs_replace").set_value(replace)
    at.button(key="vs_apply").click().run()
    assert not at.exception, at.exception
    return at


def served(at: AppTest) -> dict | None:
    return store_serving(at.session_state["ws_index"])


def ask_uploads(at: AppTest) -> AppTest:
    at.switch_page("pages/ask.py").run()
    assert at.radio(key="qs_corpus").value == "uploads"
    return ask(at, QUESTION)


def ranked(at: AppTest) -> list[str]:
    return [h.chunk.chunk_id for h in at.session_state["ask_trace"].reranked]


def tables(at: AppTest) -> list[list[str]]:
    return [list(d.value.columns) for d in at.dataframe]


def compared(at: AppTest) -> dict[str, tuple[list[str], str]]:
    """Compare (Ask's "Compare strategies"): each strategy's ranked chunks, or its error."""
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    results = at.session_state["ask_compare"]["results"]
    return {
        c.strategy: ([h.chunk.chunk_id for h in c.trace.reranked] if c.trace else [], c.error)
        for c in results
    }


def test_milvus_serves_ask_as_in_process_and_switching_back_detaches(app_env):
    at = with_upload()
    in_process = ask_uploads(at)
    ranks, columns = ranked(in_process), tables(in_process)
    strategies = compared(in_process)
    assert sum(1 for ids, _ in strategies.values() if ids) >= 4
    assert not any("Served by Milvus" in c.value for c in at.caption)

    apply(at, "milvus")
    assert any("pushed (" in s.value for s in at.success), page_text(at)
    assert served(at) == {
        "store": "milvus",
        "uri": str((app_env / "milvus.db").resolve()),
        "collection": "treerag",
    }
    assert (app_env / "milvus.db").exists()

    on_milvus = ask_uploads(at)
    assert any(c.value.startswith("Served by Milvus at `milvus.db`") for c in on_milvus.caption)
    assert ranked(on_milvus) == ranks  # one document: the collection's BM25 is the scope's
    assert tables(on_milvus) == columns  # the score tables show the same columns
    assert compared(on_milvus) == strategies  # Compare is served by the engine too

    # The choice survives navigation; applying again finds the collection unchanged.
    apply(at, "milvus")
    assert any("already held this index" in s.value for s in at.success)
    assert at.radio(key="vs_kind").value == "milvus"

    apply(at, "process")
    assert served(at) is None
    assert any("in process again" in s.value for s in at.success)
    back = ask_uploads(at)
    assert not any("Served by Milvus" in c.value for c in back.caption)
    assert ranked(back) == ranks


def test_a_rebuilt_workspace_is_pushed_again(app_env):
    at = with_upload()
    apply(at, "milvus", collection="rebuilt")
    first = at.session_state["ws_index"]
    at.file_uploader[0].set_value(
        [("notes.md", b"# Notes\n\n## Epochs\n\nFifty.\n", "text/markdown")]
    ).run()
    assert not at.exception, at.exception
    assert at.session_state["ws_index"] is not first
    assert served(at) is not None and served(at)["collection"] == "rebuilt"
    assert len(at.session_state["ws_index"].documents) == 2
    ask_uploads(at)
    assert any(c.value.startswith("Served by Milvus") for c in at.caption)


def test_bad_input_is_refused_with_a_message_and_nothing_is_lost(app_env, tmp_path, monkeypatch):
    at = with_upload()
    apply(at, "milvus", collection="kept")
    assert served(at) is not None
    outside = tmp_path / "outside.db"
    (app_env / "out").symlink_to(tmp_path, target_is_directory=True)  # a way out, resolved
    for uri, words in (
        ("out/outside.db", "must lie inside the app's data folder"),
        (str(outside), "must lie inside the app's data folder"),
        ("../" * 12 + str(outside).lstrip("/"), "must lie inside the app's data folder"),
        ("x" * 5000 + ".db", f"at most {MAX_URI_CHARS}"),
        ("unix:/tmp/milvus.sock", "http:// or https://"),
        ("notes.txt", "ends in .db"),
    ):
        apply(at, "milvus", uri=uri, collection="other")
        errors = page_text(at, "error", plain=True)
        assert words in errors, errors
        assert "Nothing changed" in errors
        assert served(at)["collection"] == "kept"  # what served before still serves
    assert not outside.exists()
    # Each Lite file is an engine process: past the cap a browser reuses an open one.
    monkeypatch.setattr(vector_store, "MAX_LITE_FILES", 1)
    apply(at, "milvus", uri="second.db", collection="other")
    assert "use one that is open already" in page_text(at, "error", plain=True)
    assert not (app_env / "second.db").exists()
    monkeypatch.undo()
    apply(at, "milvus", collection="x" * 300)
    assert "at most 100" in page_text(at, "error", plain=True)

    started = time.perf_counter()
    apply(at, "milvus", uri="http://127.0.0.1:9")
    assert time.perf_counter() - started < 60
    assert "could not connect to http://127.0.0.1:9" in page_text(at, "error", plain=True)
    assert served(at)["collection"] == "kept"
    assert ranked(ask_uploads(at))  # still answers, on the collection that served it


def test_another_embedder_and_a_half_written_collection(app_env):
    at = with_upload()
    uri = str(app_env / "milvus.db")
    narrow = HashingEmbedder(dim=64)
    other = build_index(
        [SourceDocument("a.md", "# A\n\n## B\n\nThe router picks an expert.\n")],
        IndexSettings(embedder=narrow.name),
        narrow,
    )
    push_to_milvus(other, uri, "narrow")
    apply(at, "milvus", collection="narrow")
    errors = page_text(at, "error", plain=True)
    assert "serves another index (it holds 64-d vectors" in errors, errors
    assert "name another collection, or tick “Replace" in errors
    assert served(at) is None
    assert ranked(ask_uploads(at))  # in process, as before

    apply(at, "milvus", collection="narrow", replace=True)
    assert not at.error and served(at)["collection"] == "narrow"

    index = at.session_state["ws_index"]
    MilvusStore.open(uri, index.dim, "half").create()  # collections, no manifest
    apply(at, "milvus", collection="half")
    said = page_text(at, "success", plain=True)
    assert "pushed again" in said and "the collection was half-written" in said, said
    assert served(at)["collection"] == "half"
