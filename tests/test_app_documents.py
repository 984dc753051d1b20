"""AppTest of the Documents page: uploads into a private workspace, bad files, preview, rebuild."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import APP, ask, graph_nodes, open_app, page_text, unescape
from tests.conftest import keyless_app
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import info_of
from treerag_core.strategies.drilldown.layers import layers_of
from ui.documents.upload import DROP_HINT, HIDE_CAP_CSS

REPO = Path(__file__).resolve().parents[1]
PAPER = (REPO / "sample_docs" / "test_paper.md").read_bytes()
HOSTILE = (
    "# Notes\n\n## <img src=x onerror=alert(1)> **bold** [link](http://evil.example)\n\n"
    "Text under a hostile heading: ![tracker](http://evil.example/t.png) <b>not bold</b>.\n\n"
    "## Plain section\n\nSomething ordinary about routers and epochs.\n"
)


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("docs_data")) as data:
        yield data


def documents_page() -> AppTest:
    return open_app("pages/documents.py")


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader[0].set_value([(name, data, "text/markdown") for name, data in files]).run()
    assert not at.exception, at.exception
    return at


def outline(at: AppTest):
    [frame] = [d.value for d in at.dataframe if "kind" in d.value.columns]
    return frame


def test_good_files_go_in_and_bad_files_are_reported(app_env):
    at = upload(
        documents_page(),
        ("paper.md", PAPER),
        ("empty.md", b"  \n"),
        ("binary.txt", b"\x00\x01\x02 not text"),
    )
    index = at.session_state["ws_index"]
    assert [d.doc_id for d in index.documents] == ["paper.md"]
    errors = page_text(at, "error", sep=" ", plain=True)
    assert "empty.md" in errors and "empty" in errors
    assert "binary.txt" in errors and "binary" in errors
    assert any("paper.md" in unescape(s.value) for s in at.success)
    # The finished tree is shown at once: the preview switched to the new document.
    assert at.session_state["doc_pick"] == "paper.md"
    nodes = graph_nodes(at)
    assert set(nodes) <= set(index.nodes)
    # Wider than the screen allows: the top level is drawn, deeper sections collapsed (+N).
    methods = next(n for n in nodes.values() if "3 Methods" in n["label"])
    assert "(+" in methods["label"]
    assert not any("Router Design" in n["label"] for n in nodes.values())
    frame = outline(at)
    paper_nodes = [n for n in index.nodes.values() if n.doc_id == "paper.md"]
    assert list(frame["node"]) == [n.node_id for n in paper_nodes]
    assert {"level", "summary", "chunks"} <= set(frame.columns)
    leaf = next(n for n in paper_nodes if "Training Procedure" in n.heading)
    assert frame.loc[frame["node"] == leaf.node_id, "chunks"].item() == len(
        index.leaf_rows(leaf.node_id)
    )
    # Saved in this session's own workspace folder.
    folder = app_env / "workspaces" / at.session_state["ws_id"] / "index"
    assert (folder / "manifest.json").is_file()


def test_workspaces_are_private_to_a_session():
    first = upload(documents_page(), ("mine.md", PAPER))
    second = documents_page()
    assert first.session_state["ws_id"] != second.session_state["ws_id"]
    assert second.session_state["ws_index"] is None
    assert not any("mine.md" in m.value for m in second.markdown)


def test_clicking_a_node_opens_the_inspector_with_offsets():
    at = upload(documents_page(), ("paper.md", PAPER))
    index = at.session_state["ws_index"]
    leaf = next(n for n in index.leaves() if "Training Procedure" in n.heading)
    at.session_state[at.session_state["doc_graph_key"]] = leaf.node_id
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["doc_inspect"] == leaf.node_id
    [chunks] = [d.value for d in at.dataframe if "start" in d.value.columns]
    text = index.texts["paper.md"]
    for row in chunks.itertuples():
        assert text[row.start : row.end] == row.text
    assert any(leaf.content == t.value for t in at.text)  # content shown as plain text


def test_remove_and_rebuild():
    at = upload(documents_page(), ("paper.md", PAPER), ("notes.md", HOSTILE.encode()))
    assert len(at.session_state["ws_index"].documents) == 2
    nodes_before = len(at.session_state["ws_index"].nodes)
    at.multiselect(key="ws_remove").set_value(["notes.md"]).run()
    at.button(key="ws_remove_go").click().run()
    assert not at.exception, at.exception
    # Nothing is removed before it is confirmed; Cancel keeps everything.
    assert len(at.session_state["ws_index"].documents) == 2
    assert "notes.md" in page_text(at, "warning", sep=" ", plain=True)
    at.button(key="ws_remove_no").click().run()
    assert len(at.session_state["ws_index"].documents) == 2
    assert "notes.md" not in page_text(at, "warning", sep=" ", plain=True)
    at.button(key="ws_remove_go").click().run()
    at.button(key="ws_remove_yes").click().run()
    assert not at.exception, at.exception
    assert "Removed notes.md (1 document left)." in [unescape(s.value) for s in at.success]
    index = at.session_state["ws_index"]
    assert [d.doc_id for d in index.documents] == ["paper.md"]
    assert len(index.nodes) < nodes_before
    # Rebuild with a depth cap of 1: the ## and ### sections fold into their # parents.
    depth = next(s for s in at.slider if s.label.startswith("Depth cap"))
    depth.set_value(1)
    next(b for b in at.button if b.label == "Rebuild").click().run()
    assert not at.exception, at.exception
    rebuilt = at.session_state["ws_index"]
    assert rebuilt.settings.max_depth == 1
    assert max(n.level for n in rebuilt.nodes.values()) == 1
    assert len(rebuilt.nodes) < len(index.nodes)
    # The form's labels are the settings' own, and it starts from the index's settings: a
    # second rebuild that turns article leaves on keeps the depth cap of 1.
    label = info_of(IndexSettings, "article_leaves").label
    next(c for c in at.checkbox if c.label == label).check()
    next(b for b in at.button if b.label == "Rebuild").click().run()
    assert not at.exception, at.exception
    again = at.session_state["ws_index"].settings
    assert again.article_leaves and again.max_depth == 1
    assert again == replace(rebuilt.settings, article_leaves=True)
    # The workspace line names the setting by its declared label, not only a toast.
    built = next(c.value for c in at.caption if c.value.startswith("Built with"))
    assert built.endswith(f", {label}."), built


def test_document_text_is_never_rendered_as_html_or_markdown():
    at = upload(documents_page(), ("notes.md", HOSTILE.encode()))
    index = at.session_state["ws_index"]
    hostile = next(n for n in index.nodes.values() if "onerror" in n.heading)
    at.session_state[at.session_state["doc_graph_key"]] = hostile.node_id
    at.run()
    assert not at.exception, at.exception
    header = next(m.value for m in at.markdown if f"`{hostile.node_id}`" in m.value)
    assert "\\<img" in header  # escaped, so Markdown shows it as text
    assert re.search(r"(?<!\\)[<\[]", header.split("`")[0]) is None  # no live tag or link
    assert "**bold**" not in header and "[link](" not in header
    assert any("![tracker]" in t.value for t in at.text)  # content is plain st.text
    for element in at.markdown:
        assert not element.proto.allow_html


def test_uploaded_corpus_is_queryable_on_the_ask_page():
    at = upload(documents_page(), ("paper.md", PAPER))
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    ask(at, "How many epochs was the model trained for?")
    trace = at.session_state["ask_trace"]
    index = at.session_state["ws_index"]
    assert all(leaf.node_id in index.nodes for leaf in trace.locate.leaves)
    assert at.session_state["ask_trace_corpus"].startswith("ws:")


def test_after_an_upload_ask_uses_my_uploads_unless_the_user_chose_otherwise():
    at = open_app()
    assert at.radio(key="qs_corpus").value == "samples"  # nothing uploaded yet
    at.switch_page("pages/documents.py").run()
    upload(at, ("paper.md", PAPER))
    at.switch_page("pages/ask.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="qs_corpus").value == "uploads"
    assert any(c.value.startswith("My uploads: 1 of 1 document(s)") for c in at.caption)
    # An explicit choice is kept across page switches.
    at.radio(key="qs_corpus").set_value("samples").run()
    at.switch_page("pages/documents.py").run()
    at.switch_page("pages/ask.py").run()
    assert at.radio(key="qs_corpus").value == "samples"
    assert link_corpus(at) == "samples"  # the link remembers the pick
    # A link with the workspace alone (shared, or from before the pick) opens its uploads.
    reloaded = open_app(ws=at.session_state["ws_id"])
    assert reloaded.radio(key="qs_corpus").value == "uploads"
    assert any(c.value.startswith("My uploads: 1 of 1") for c in reloaded.caption)


def link_corpus(at: AppTest) -> str | None:
    """The `?corpus=` of the page's URL (AppTest lists a value the app set)."""
    value = at.query_params.get("corpus")
    return value[0] if isinstance(value, list) else value


def test_a_reload_keeps_the_corpus_the_user_picked():
    at = open_app("pages/documents.py")
    upload(at, ("paper.md", PAPER))
    ws_id = at.session_state["ws_id"]

    def reload(corpus: str) -> AppTest:
        again = AppTest.from_file(APP, default_timeout=90)
        again.query_params["ws"], again.query_params["corpus"] = ws_id, corpus
        again.run()
        assert not again.exception, again.exception
        return again

    kept = reload("samples")
    assert kept.radio(key="qs_corpus").value == "samples"
    assert link_corpus(kept) == "samples"
    # Only a corpus every session can open is taken from a link; anything else is dropped.
    for bad in ("eval", "../uploads", "x" * 5000):
        other = reload(bad)
        assert other.radio(key="qs_corpus").value == "uploads"  # the default with uploads
        assert link_corpus(other) is None
    # "uploads" from a link whose workspace was not restored (here: none named) would pin
    # the session to an empty corpus: the samples open instead, and the link drops it.
    stray = AppTest.from_file(APP, default_timeout=90)
    stray.query_params["corpus"] = "uploads"
    stray.run()
    assert not stray.exception, stray.exception
    assert stray.radio(key="qs_corpus").value == "samples"
    assert link_corpus(stray) is None


def test_copy_the_samples_into_the_workspace():
    at = documents_page()
    next(b for b in at.button if b.label.startswith("Copy the sample")).click().run()
    assert not at.exception, at.exception
    index = at.session_state["ws_index"]
    assert index.documents[0].doc_id == "test_paper.md"
    assert len(index.documents) >= 4
    assert at.session_state["doc_corpus"] == "uploads"  # the preview shows the copies


def test_pdf_tree_review_edit_and_pages_with_a_corrupt_file_beside_it(app_env):
    from pdf_factory import make_pdf, report_pdf

    pdf = report_pdf(3)
    at = upload(
        documents_page(),
        ("report.pdf", pdf),
        ("broken.pdf", b"%PDF-1.7 garbage"),
        ("scan.pdf", make_pdf([[], []])),
        ("paper.md", PAPER),
    )
    lines = [unescape(e.value) for e in at.error]
    assert len(lines) == 2  # one line per bad file
    assert any("broken.pdf" in line for line in lines)
    assert any("scan.pdf" in line and "OCR" in line for line in lines)
    assert not any("report.pdf" in line for line in lines)
    # The Markdown file went in at once; the PDF waits for its tree review.
    assert [d.doc_id for d in at.session_state["ws_index"].documents] == ["paper.md"]
    [pending] = at.session_state["docs_pending"]
    assert pending.sha256 == hashlib.sha256(pdf).hexdigest()
    key = f"te_{pending.sha256[:16]}"
    [tree] = [d.value for d in at.dataframe if "why" in d.value.columns]
    assert "Item 2. Section 2" in " ".join(tree["heading"])
    assert not [b for b in at.button if b.key == f"{key}_suggest"]  # no LLM configured
    pick = next(i for i, h in enumerate(tree["heading"]) if "Item 2." in h)
    at.selectbox(key=f"{key}_pick").select_index(pick)  # options are the labels
    at.selectbox(key=f"{key}_action").set_value("rename")
    at.text_input(key=f"{key}_rename").input("Risk Factors")
    at.button(key=f"{key}_apply").click().run()
    assert not at.exception, at.exception
    at.button(key="review_go").click().run()
    assert not at.exception, at.exception
    index = at.session_state["ws_index"]
    assert [d.doc_id for d in index.documents] == ["paper.md", "report.pdf"]
    assert index.document("report.pdf").page_starts  # the page map went in
    headings = [n.heading for n in index.nodes.values() if n.doc_id == "report.pdf"]
    assert "Risk Factors" in headings and not any("Item 2." in h for h in headings)
    folder = app_env / "workspaces" / at.session_state["ws_id"]
    assert "Risk Factors" in (folder / "tree_edits.json").read_text(encoding="utf-8")
    # The chunk table of a PDF leaf names its pages.
    leaf = next(n for n in index.leaves("report.pdf") if n.heading == "Risk Factors")
    at.session_state[at.session_state["doc_graph_key"]] = leaf.node_id
    at.run()
    [chunks] = [d.value for d in at.dataframe if "start" in d.value.columns]
    assert list(chunks["pages"]) and all(p.startswith("p") for p in chunks["pages"])
    assert "p. 2" in set(chunks["pages"])
    # The section opened with no passage picked: its page says where it begins, never that
    # "the passage is not on this page" (there is none).
    labels = " ".join(m.value for m in at.markdown if "pdf-page-label" in m.value)
    assert "where the section begins" in labels and "not on this page" not in labels, labels
    # A rebuild keeps the page map (sources come from the index with their pages).
    depth = next(s for s in at.slider if s.label.startswith("Depth cap"))
    depth.set_value(2)
    next(b for b in at.button if b.label == "Rebuild").click().run()
    assert not at.exception, at.exception
    assert at.session_state["ws_index"].document("report.pdf").page_starts


def test_workspace_caps_are_refused_with_a_message(monkeypatch):
    monkeypatch.setenv("TREERAG_WS_MAX_FILES", "1")
    at = upload(documents_page(), ("a.md", PAPER), ("b.md", HOSTILE.encode()))
    assert at.session_state["ws_index"] is None
    assert "limit is 1" in page_text(at, "error", sep=" ", plain=True)
    monkeypatch.setenv("TREERAG_WS_MAX_FILES", "20")
    monkeypatch.setenv("TREERAG_WS_MAX_CHUNKS", "2")
    at = upload(documents_page(), ("paper.md", PAPER))
    assert at.session_state["ws_index"] is None
    assert "chunks" in page_text(at, "error", sep=" ", plain=True)


def test_a_reload_with_the_workspace_id_in_the_url_restores_it():
    first = upload(documents_page(), ("paper.md", PAPER))
    ws_id = first.session_state["ws_id"]
    assert first.query_params["ws"] == ws_id
    again = open_app("pages/documents.py", ws=ws_id)
    assert again.session_state["ws_id"] == ws_id
    assert [d.doc_id for d in again.session_state["ws_index"].documents] == ["paper.md"]
    # A malformed id starts a fresh, empty workspace with a note.
    other = open_app("pages/documents.py", ws="not-a-workspace")
    assert other.session_state["ws_id"] != "not-a-workspace"
    assert other.session_state["ws_index"] is None
    assert any("not a valid one" in i.value for i in other.info)
    assert other.query_params["ws"] == other.session_state["ws_id"]


def test_a_link_naming_a_workspace_with_nothing_saved_is_not_adopted():
    # A made-up link (or a reload of a session that saved nothing) names no folder. Adopting
    # it would let whoever sent the link read what is uploaded under it later.
    made_up = "f" * 32
    at = open_app("pages/documents.py", ws=made_up)
    assert at.session_state["ws_id"] != made_up and at.query_params["ws"] != made_up
    assert at.session_state["ws_index"] is None
    said = " ".join(m.value for m in at.info)
    assert "Nothing was saved under the link" in said and "expired" not in said, said


def test_a_reload_naming_an_expired_workspace_says_so(app_env):
    from treerag_core.index.workspaces import STAMP

    ws_id = "e" * 32
    (app_env / "workspaces" / ws_id / "index").mkdir(parents=True)
    stamp = app_env / "workspaces" / ws_id / STAMP
    stamp.touch()
    old = 1_000_000_000  # 2001: idle far longer than any limit
    os.utime(stamp, (old, old))
    at = open_app("pages/documents.py", ws=ws_id)
    assert any("expired" in i.value for i in at.info)
    assert not (app_env / "workspaces" / ws_id).exists()
    assert at.session_state["ws_id"] != ws_id  # a fresh id, not the expired one


def test_a_reload_naming_an_unreadable_workspace_shows_why_and_keeps_it(app_env):
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.workspaces import Workspaces, new_workspace_id

    spaces = Workspaces(app_env / "workspaces")
    ws_id = new_workspace_id()
    index = build_index(
        sample_sources(["test_paper.md"]),
        IndexSettings(embedder="hashing"),
        get_embedder("hashing"),
    )
    spaces.save(ws_id, index)
    (app_env / "workspaces" / ws_id / "index" / "embeddings.npy").write_bytes(b"")
    at = open_app("pages/documents.py", ws=ws_id)
    shown = page_text(at, "error", sep=" ", plain=True)
    assert "could not be opened" in shown and "embeddings.npy" in shown and ws_id in shown
    assert at.session_state["ws_id"] != ws_id and at.session_state["ws_index"] is None
    assert not any("expired" in i.value for i in at.info)
    assert (app_env / "workspaces" / ws_id / "index" / "manifest.json").is_file()


def test_idle_workspaces_expire_when_a_session_starts(app_env):
    from treerag_core.index.workspaces import STAMP

    stale, fresh = (app_env / "workspaces" / (c * 32) for c in "ab")
    for folder in (stale, fresh):
        (folder / "index").mkdir(parents=True)
        (folder / STAMP).touch()  # used now
    old = 1_000_000_000  # 2001: far beyond the idle limit
    os.utime(stale / STAMP, (old, old))
    documents_page()
    assert not stale.exists()
    # Only the idle one goes: a workspace used just now keeps its folder.
    assert (fresh / "index").is_dir() and (fresh / STAMP).is_file()


def test_html_waits_for_its_tree_review_then_goes_in():
    page = (
        b"<html><body><h1>Guide</h1><p>Intro text.</p><h2>Costs</h2><p>Tea costs 3.</p>"
        b"<h2>Notes</h2><p>Two notes.</p></body></html>"
    )
    at = upload(documents_page(), ("guide.html", page))
    assert at.session_state["ws_index"] is None
    assert [p.document.name for p in at.session_state["docs_pending"]] == ["guide.html"]
    at.button(key="review_go").click().run()
    assert not at.exception, at.exception
    index = at.session_state["ws_index"]
    assert [d.doc_id for d in index.documents] == ["guide.html"]
    assert {"Guide", "Costs", "Notes"} <= {n.heading for n in index.nodes.values()}
    assert at.session_state["docs_pending"] == []


def _ktype_text(at: AppTest) -> str:
    return page_text(at, "markdown", "caption", sep=" ", plain=True)


def test_each_document_shows_its_extractive_ktype_card_without_a_key():
    at = upload(documents_page(), ("paper.md", PAPER))
    summary = layers_of(at.session_state["ws_index"]).summaries["paper.md"]
    assert summary.method == "extractive"
    assert any(e.label.startswith("K-Type summary") for e in at.expander)
    shown = _ktype_text(at)
    assert "K-Type summary · extractive" in shown
    assert "Core modules:" in shown and summary.modules[0] in shown
    assert [m.label for m in at.metric] == [kind for kind, _ in summary.types]


def _ktype_responder(body):
    """Every document key in the K-Type prompt gets a Procedure-led summary."""
    from fake_anthropic import reply

    prompt = json.dumps(body, ensure_ascii=False)
    keys = sorted(set(re.findall(r"\b[0-9a-f]{32}\b", prompt)))
    entry = {
        "types": {"Procedure": 0.75, "Concept": 0.25},
        "modules": ["Router training", "Evaluation"],
        "use": "a recipe for training the router",
    }
    return reply(json.dumps({key: entry for key in keys}))


def test_with_an_llm_configured_the_ktype_is_written_by_it_once(monkeypatch):
    from fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(responder=_ktype_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        at = upload(documents_page(), ("paper.md", PAPER))
        summary = layers_of(at.session_state["ws_index"]).summaries["paper.md"]
        assert summary.method == "llm" and summary.modules == ("Router training", "Evaluation")
        shown = _ktype_text(at)
        assert "written by the LLM" in shown and "a recipe for training the router" in shown
        assert [(m.label, m.value) for m in at.metric] == [("Procedure", "75%"), ("Concept", "25%")]
        calls = len(server.requests)
        assert calls == 1  # one batch of up to five documents
        # Another document: only the new one is sent; the paper's summary comes from the cache.
        from treerag_core.strategies.drilldown.ktype import document_key

        paper_key = document_key(at.session_state["ws_index"].documents[0])
        upload(at, ("notes.md", HOSTILE.encode()))
        assert len(server.requests) == calls + 1
        assert paper_key not in json.dumps(server.requests[-1].body, ensure_ascii=False)
        assert layers_of(at.session_state["ws_index"]).summaries["paper.md"].method == "llm"


def test_the_no_graphs_note_says_how_to_add_graphs_to_this_corpus_under_any_document():
    """Samples: copy them into the workspace first; uploads: rebuild them (no copy step);
    each note reads right on its own, also after the first document is removed."""
    from ui.common.graph_guidance import documents_note

    at = documents_page()
    first = at.session_state["doc_pick"]
    other = "zh_sample.md" if first != "zh_sample.md" else "test_paper.md"  # both samples
    for doc in (first, other):
        at.selectbox(key="doc_pick").set_value(doc).run()
        assert documents_note("samples") in [c.value for c in at.caption]
    upload(at, ("paper.md", PAPER), ("notes.md", HOSTILE.encode()))
    captions = [c.value for c in at.caption]
    assert documents_note("uploads") in captions and documents_note("samples") not in captions
    at.multiselect(key="ws_remove").set_value(["paper.md"]).run()
    at.button(key="ws_remove_go").click().run()
    at.button(key="ws_remove_yes").click().run()
    assert not at.exception, at.exception
    assert at.session_state["doc_pick"] == "notes.md"
    assert documents_note("uploads") in [c.value for c in at.caption]
    # The samples' note names a button that is there with a full workspace too.
    at.radio(key="doc_corpus").set_value("samples").run()
    assert documents_note("samples") in [c.value for c in at.caption]
    at.button(key="ws_copy_more").click().run()
    assert not at.exception, at.exception
    names = [d.doc_id for d in at.session_state["ws_index"].documents]
    assert "notes.md" in names and "test_paper.md" in names


def test_an_over_limit_file_gets_its_own_message_and_the_last_drops_go(monkeypatch):
    """The uploader lets a file over the per-file limit through to the app (its own cap is
    the server's), so the page names the file and the limit; the messages are the latest
    drop's only."""
    monkeypatch.setenv("TREERAG_MAX_FILE_MB", "0.01")  # 10,000 bytes
    at = upload(documents_page(), ("program.md", b"# P\n\x00\x01 binary"))
    assert "program.md" in page_text(at, "error", sep=" ", plain=True)
    [widget] = at.get("file_uploader")
    assert "up to 0.01 MB each" in widget.proto.label
    # The drop zone shows only an Upload button until a file is dragged over it: the label
    # says dragging works (issue 25), and the CSS hides only the zone's own size line.
    assert widget.proto.label.startswith(DROP_HINT) and "Drag and drop" in DROP_HINT
    assert "stFileUploaderDropzoneInstructions" in HIDE_CAP_CSS
    assert widget.proto.max_upload_size_mb * 1024 * 1024 > 10_000
    upload(at, ("big.md", b"# Big\n\n" + b"word " * 4000))
    errors = page_text(at, "error", sep=" ", plain=True)
    assert "big.md" in errors and "larger than the limit of 10,000 bytes" in errors
    assert "program.md" not in errors
    # A web user cannot pass a CLI flag: the page says who sets the limit, and the setting.
    assert "set by whoever runs this server (the TREERAG_MAX_FILE_MB setting)" in errors
    assert "--max-file-mb" not in errors and "raise it" not in errors


def test_the_stated_limit_is_one_every_side_enforces(monkeypatch):
    """An app limit above the uploader's: the page states the uploader's, in config.MB
    (10^6 bytes, what Linux and macOS browsers refuse above), and ingest enforces that."""
    from treerag_core.base.config import MB
    from ui.documents.upload import upload_limits

    assert upload_limits(250 * MB, 100) == (100 * MB, 100)
    assert upload_limits(20 * MB, 100) == (20 * MB, 100)
    monkeypatch.setenv("TREERAG_MAX_FILE_MB", "100000")
    at = documents_page().run()
    [widget] = at.get("file_uploader")
    server_mb = widget.proto.max_upload_size_mb
    assert f"up to {server_mb} MB each" in widget.proto.label


def test_switching_corpus_closes_the_inspected_node_of_the_other_one():
    """Node ids are per corpus: "0012" of an upload must not reopen the samples' "0012"."""
    at = upload(documents_page(), ("mine.md", PAPER.replace(b"Router Design", b"Gate Design")))
    at.switch_page("pages/ask.py").run()
    assert at.radio(key="qs_corpus").value == "uploads"
    at.session_state[at.session_state["ask_graph_key"]] = "0012"  # the component's click
    at.run()
    assert at.session_state["ask_inspect"] == "0012"
    assert "**3.2.2 Gate Design** `0012`" in page_text(at, "markdown", plain=True)
    at.session_state["ask_expanded"] = {"0012"}  # a section opened in the uploads' tree
    at.radio(key="qs_corpus").set_value("samples").run()
    assert not at.exception, at.exception
    assert at.session_state["ask_inspect"] is None and at.session_state["ask_highlight"] is None
    assert at.session_state["ask_expanded"] == set()
    shown = page_text(at, "markdown", plain=True)
    assert "`0012`" not in shown  # neither node is open in the inspector


def _flat_text() -> bytes:
    """A text with no headings: two topics, about 12,000 characters (several sections)."""
    sea = "The ocean waves carry salt water, fish swim near coral reefs and the tides rise. "
    rail = "Railway engines pull freight wagons along steel tracks between busy stations. "
    paragraphs = [f"{sea * 3}({k})" for k in range(25)] + [f"{rail * 3}({k})" for k in range(25)]
    return "\n\n".join(paragraphs).encode()


def test_a_text_with_no_headings_says_its_sections_are_inferred_everywhere():
    at = upload(documents_page(), ("flat.txt", _flat_text()))
    index = at.session_state["ws_index"]
    sections = [n for n in index.nodes.values() if n.doc_id == "flat.txt" and not n.is_root]
    assert len(sections) > 1 and all(n.inferred for n in sections)
    # The upload's result says what the converter did.
    infos = page_text(at, "info", plain=True)
    assert f"flat.txt: {len(sections)} sections inferred: no headings found" in infos
    # The outline's kind column, the graph's labels and border, and its legend.
    kinds = dict(zip(outline(at)["node"], outline(at)["kind"], strict=True))
    assert {kinds[n.node_id] for n in sections} == {"leaf · inferred"}
    nodes = graph_nodes(at)
    drawn = [nodes[n.node_id] for n in sections if n.node_id in nodes]
    assert drawn and all(" · ~" in d["label"] for d in drawn)
    assert all(d["shapeProperties"]["borderDashes"] == [2, 3] for d in drawn)
    assert "~ dotted: an inferred section" in page_text(at, "caption", plain=True)
    assert "inferred sections (no headings" in page_text(at, "caption", plain=True)
    # The inspector.
    at.session_state[at.session_state["doc_graph_key"]] = sections[1].node_id
    at.run()
    assert not at.exception, at.exception
    assert any(f"`{sections[1].node_id}` · leaf · inferred" in m.value for m in at.markdown)
    assert "An inferred section: the document has no heading here" in page_text(at, "caption")
    from ui.common.inspector import node_option  # the select box's entries carry the mark too

    assert node_option(index, sections[1].node_id).startswith(f"{sections[1].node_id} · ~")
    # An answer's citation chip of an inferred section says so, in label and tooltip.
    at.switch_page("pages/ask.py").run()
    at.radio(key="qs_corpus").set_value("uploads").run()
    ask(at, "What do railway engines pull along steel tracks?")
    chips = [b for b in at.button if (b.key or "").startswith("cite_")]
    assert chips, "the answer cites a section"
    labels = [unescape(c.label) for c in chips]  # "~Railway engines pull… (inferred) · 0004"
    assert all(" ~" in label and "… (inferred) · " in label for label in labels), labels
    assert all("An inferred section" in c.help for c in chips)


def test_a_markdown_file_with_its_own_headings_has_no_inferred_marks():
    at = upload(documents_page(), ("paper.md", PAPER))
    assert not any("inferred" in k for k in outline(at)["kind"])
    assert "sections inferred" not in page_text(at, "info")
    assert not any("~" in n["label"] for n in graph_nodes(at).values())
