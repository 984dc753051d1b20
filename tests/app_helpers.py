"""AppTest helpers every explorer page test shares: open the app, ask, read the page's text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT_KINDS = ("markdown", "caption", "warning", "error", "info")  # what a user reads


def _keep_pages_across_fragment_runs() -> None:
    """AppTest makes a new PagesManager for every run, so a fragment-only run (a keyed
    `st.rerun` from a widget callback: a step-2 move on Ask) knows none of the pages the
    app's `st.navigation` registered, and an `st.page_link` in the fragment fails. The
    server keeps one manager per session: here a fragment run reads the pages the last
    full run of the same script registered, as there."""
    registered: dict[str, dict] = {}
    set_pages, get_pages = PagesManager.set_pages_and_resolve, PagesManager.get_pages

    def keep(self, pages, fallback_page_hash=""):
        registered[str(self.main_script_path)] = dict(pages)
        return set_pages(self, pages, fallback_page_hash)

    def read(self):
        ctx = get_script_run_ctx()
        kept = registered.get(str(self.main_script_path))
        if self._pages is None and kept and ctx is not None and ctx.fragment_ids_this_run:
            return dict(kept)
        return get_pages(self)

    PagesManager.set_pages_and_resolve = keep  # type: ignore[method-assign]
    PagesManager.get_pages = read  # type: ignore[method-assign]


_keep_pages_across_fragment_runs()


def open_app(
    page: str | None = None, ws: str | None = None, timeout: float = 90, path: Path | str = APP
) -> AppTest:
    """The app run once (then switched to `page`, e.g. "pages/documents.py"), no exception;
    `ws`: the workspace id in the URL, as a reload or a shared link has it."""
    at = AppTest.from_file(str(path), default_timeout=timeout)
    if ws is not None:
        at.query_params["ws"] = ws
    at.run()
    assert not at.exception, at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def ask(at: AppTest, question: str) -> AppTest:
    """Type `question` on Ask and press Ask (the form's button comes first on the page)."""
    full_page(at)
    at.text_input(key="ask_question").input(question)
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    return at


def full_page(at: AppTest) -> AppTest:
    """After a fragment-only rerun (a click in the Ask story's retune part reruns the story
    alone) AppTest's tree holds that fragment's elements only, where the browser keeps the
    rest of the page: a full run draws the whole page again before it is used."""
    if not any(e.key == "ask_question" for e in at.text_input):  # Ask's question box
        at.run()
    return at


def unescape(text: str) -> str:
    """Page text without the Markdown escapes the app adds around document text."""
    return re.sub(r"\\(.)", r"\1", text)


def page_text(at: AppTest, *kinds: str, sep: str = "\n", plain: bool = False) -> str:
    """The values of the page's text elements of `kinds` (default: all a user reads), in
    that order; `plain`: without the Markdown escapes, as a user reads them."""
    text = sep.join(e.value for kind in kinds or TEXT_KINDS for e in getattr(at, kind))
    return unescape(text) if plain else text


def graph_data(element) -> dict:
    """The data a tree-graph component instance was handed (nodes, edges, ...)."""
    return json.loads(json.loads(element.proto.json_args)["data"])


def graph_nodes(at: AppTest, key: str | None = None) -> dict[str, dict]:
    """The node dicts of the page's one graph component, by id (`key`: the key it must have)."""
    [element] = at.get("component_instance")
    if key is not None:
        assert json.loads(element.proto.json_args)["key"] == key
    return {n["id"]: n for n in graph_data(element)["nodes"]}
