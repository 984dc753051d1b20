"""The explorer in real Chromium against an OpenAI-compatible server (a local fake), no Anthropic.

With only `OPENAI_BASE_URL` and a model name set (what pointing the explorer at Ollama or
vLLM looks like), the sidebar's provider is openai, the answer streams in from that server,
and a locate reply that is not JSON falls back to the local locator and says so.
"""

from __future__ import annotations

import time

import pytest
from app_server import openai_app_env, serve_app
from fake_openai import FakeOpenAIServer, reply

from tests.test_browser import ARGS, CHROMIUM, _free_port, _require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ANSWER = "Fifty epochs, from the local model [Source: 3 Methods > 3.3 Training Procedure]."


@pytest.fixture(scope="module")
def openai_app(tmp_path_factory):
    _require_chromium()
    data = tmp_path_factory.mktemp("browser_openai")
    with FakeOpenAIServer(default=reply(ANSWER, pause=0.1)) as server:
        port = _free_port()
        with serve_app(port, openai_app_env(data, server.base_url), data):
            yield f"http://127.0.0.1:{port}", server


def test_ask_streams_the_answer_from_an_openai_compatible_server(openai_app):
    from playwright.sync_api import sync_playwright

    url, server = openai_app
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(url)
        page.get_by_label("Question", exact=True).fill("How many epochs was the model trained for?")
        page.get_by_role("button", name="Ask", exact=True).click()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            body = page.inner_text("body")
            if "from the local model" in body and "Citations" in body:
                break  # the whole answer is in, with its citation chips
            time.sleep(0.1)
        else:
            raise AssertionError("the OpenAI-compatible server's answer never appeared")
        body = page.inner_text("body")
        browser.close()
    paths = [r.path for r in server.requests]
    assert paths and all(p.endswith("/chat/completions") for p in paths)
    # The locate call, then the answer, both streamed from the named local model.
    locate, answer = [r.body for r in server.requests]
    assert locate["model"] == answer["model"] == "llama3.2"
    assert locate["stream"] is True and answer["stream"] is True
    assert "document retrieval expert" in locate["messages"][0]["content"]
    assert "Fifty epochs, from the local model" in body
    # The fake's locate reply is prose, not JSON: the local locator took over, and says why.
    assert "local locator" in body, body[:3000]
