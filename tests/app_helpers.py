"""AppTest helpers every explorer page test shares: open the app, ask, read the page's text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"
TEXT_KINDS = ("markdown", "caption", "warning", "error", "info")  # what a user reads


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
    at.text_input(key="ask_question").input(question)
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    return at


def include_hirag(at: AppTest) -> AppTest:
    """Opt Compare into the hirag-* strategies (off by default: their graph build takes
    minutes on a large corpus); no toggle when the graph is built already."""
    for toggle in at.toggle:
        if toggle.key == "compare_build_hirag":
            toggle.set_value(True).run()
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
