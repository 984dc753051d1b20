"""Compare names the index parts its strategies miss before it runs: a button builds the
HiRAG graph there (offline, a progress bar), and missing leaf graphs point to Documents."""

from __future__ import annotations

import shutil

import pytest

from tests.app_helpers import ask, open_app, page_text
from tests.conftest import keyless_app
from treerag_core import HIRAG_FAMILY
from treerag_core.strategies.hirag import build as hirag_build
from ui.ask.compare_view import BUILD_GRAPH, INCLUDE_GRAPH
from ui.common.resources import _sample_corpus

QUESTION = "How many epochs was the model trained for?"
NOTE = "need the HiRAG corpus graph"


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    # A data dir of its own and no graph in memory: another module's sample index (kept by
    # st.cache_resource for the process) may hold a HiRAG build already.
    with keyless_app(tmp_path_factory.mktemp("compare_build_data")) as data:
        _sample_corpus.clear()
        hirag_build._CACHE.clear()
        yield data
        _sample_corpus.clear()  # the next module indexes into its own data dir


def test_leaving_hirag_out_with_the_toggle_still_works():
    """First: it builds nothing, so the next test still finds the graph missing."""
    at = ask(open_app(timeout=180), QUESTION)
    assert NOTE in page_text(at, "info")
    at.toggle(key=INCLUDE_GRAPH).set_value(False).run()
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    names = {r.strategy for r in at.session_state["ask_compare"]["results"]}
    assert names and not names & set(HIRAG_FAMILY.strategies)
    assert NOTE in page_text(at, "info")  # still missing: left out, not built


def test_including_hirag_builds_the_graph_first_timed_apart_and_the_note_goes(app_env):
    """The toggle on: Compare builds the graph first (a progress bar, its own time, not in
    the strategies' ms) and, once it ran, no longer names the graph as missing."""
    at = ask(open_app(timeout=180), QUESTION)
    assert NOTE in page_text(at, "info")
    assert "about" in page_text(at, "info") and "passages" in page_text(at, "info")
    at.toggle(key=INCLUDE_GRAPH).set_value(True).run()
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    compared = at.session_state["ask_compare"]
    ran = {r.strategy for r in compared["results"] if r.trace is not None}
    assert set(HIRAG_FAMILY.strategies) <= ran
    assert compared["graph_seconds"] > 0
    assert NOTE not in page_text(at, "info")  # drawn after the build: never stale
    assert not [b for b in at.button if b.key == BUILD_GRAPH]
    said = page_text(at, "caption")
    assert "Built the HiRAG corpus graph first in" in said and "not counted in the ms" in said
    # The next test builds it with the button: the graph goes again.
    for folder in app_env.rglob("hirag"):
        if (folder / "manifest.json").is_file():
            shutil.rmtree(folder)
    hirag_build._CACHE.clear()


def test_the_build_button_builds_the_graph_then_hirag_runs_in_the_comparison():
    at = ask(open_app(timeout=180), QUESTION)
    assert NOTE in page_text(at, "info")
    # The toggle is still offered beside it, off: the build takes minutes on a large corpus.
    assert not at.toggle(key=INCLUDE_GRAPH).value
    assert "passages on a quiet 2-core machine" in at.toggle(key=INCLUDE_GRAPH).help  # estimate
    # Leaf graphs are missing too (the samples have none): named, with where to add them.
    info = page_text(at, "info", plain=True)
    assert "no leaf knowledge graphs" in info and "Rebuild with other settings" in info
    at.button(key=BUILD_GRAPH).click().run()
    assert not at.exception, at.exception
    assert NOTE not in page_text(at, "info")  # built: the note and its button are gone
    assert not [b for b in at.button if b.key == BUILD_GRAPH]
    assert not [t for t in at.toggle if t.key == INCLUDE_GRAPH]
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    ran = {r.strategy for r in at.session_state["ask_compare"]["results"] if r.trace is not None}
    assert set(HIRAG_FAMILY.strategies) <= ran


def test_the_build_estimate_grows_faster_than_the_passages():
    from types import SimpleNamespace

    from ui.ask.compare_view import build_estimate

    def said(n: int) -> str:
        return build_estimate(SimpleNamespace(index=SimpleNamespace(chunks=[None] * n)))

    # The measured 10-Q (1,054 passages, 13 s) and 10-K (3,041, 97 s), then 3x the 10-K.
    assert said(1054).startswith("about 13 s for 1,054 passages")
    assert said(3041).startswith("about 2 min for 3,041 passages")  # 97 s, said in minutes
    assert said(9123).startswith("about 13 min")  # a tripled corpus costs ~8x, not 3x
