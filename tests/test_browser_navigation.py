"""Nothing is lost on navigation (issue 25), in real Chromium: leave Ask while an answer is
still streaming, come back, and the typed question, the document scope and the last result
are all there (ui/ask/kept.py keeps them; AppTest cannot stop a run midway, a browser can)."""

from __future__ import annotations

import time

import pytest
from app_server import openai_app_env, serve_app
from fake_openai import FakeOpenAIServer, reply

from tests.test_browser import ARGS, CHROMIUM, _free_port, _require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# Slow deltas (8 characters each): the answer takes seconds to stream, time to leave midway.
PAUSE = 0.35
ANSWER = (
    "Fifty epochs, with early stopping on the validation loss, as the paper reports in its "
    "methods [Source: 3 Methods > 3.3 Training Procedure]."
)
FIRST = "How many epochs was the model trained for?"
SECOND = "What learning rate did the training use?"
# The question box, the scope's chips and the story's question caption, read in one script.
SEEN = """
() => {
  const box = document.querySelector('input[aria-label="Question"]');
  const scope = document.querySelector('[data-testid="stSidebar"] [data-testid="stMultiSelect"]');
  const captions = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .map((c) => c.innerText.trim()).filter((t) => t.startsWith('Q: '));
  const chips = document.querySelector('.st-key-citation_chips');
  return { question: box ? box.value : null, scope: scope ? scope.innerText : '',
           shown: captions, chips: !!chips && !chips.closest('[data-stale="true"]') };
}
"""


@pytest.fixture(scope="module")
def slow_app(tmp_path_factory):
    _require_chromium()
    data = tmp_path_factory.mktemp("browser_navigation")
    with FakeOpenAIServer(default=reply(ANSWER, pause=PAUSE)) as server:
        port = _free_port()
        with serve_app(port, openai_app_env(data, server.base_url), data):
            yield f"http://127.0.0.1:{port}", server


def _until(page, check, what: str, timeout: float = 90) -> dict:
    """Poll the page (SEEN) until `check` holds; fail naming `what` and the last reading."""
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        seen = page.evaluate(SEEN)
        if check(seen):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"{what}: {seen}")


def test_leaving_ask_mid_answer_keeps_question_scope_and_last_result(slow_app):
    from playwright.sync_api import sync_playwright

    url, server = slow_app
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.set_default_timeout(90_000)
        page.goto(url)
        page.get_by_label("Question", exact=True).wait_for(timeout=240_000)
        # The scope: one document of the samples.
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.locator('[data-testid="stMultiSelect"]').first.click()
        chip = "test_paper"  # the sample's name (it has no title heading)
        page.get_by_role("option", name=chip, exact=True).click()
        page.keyboard.press("Escape")
        _until(page, lambda s: chip in s["scope"], "the scope was not set")

        # A finished result first: the one that must still be there after the visit.
        page.get_by_label("Question", exact=True).fill(FIRST)
        page.get_by_role("button", name="Ask", exact=True).click()
        _until(page, lambda s: f"Q: {FIRST}" in s["shown"] and s["chips"],
               "the first answer never finished")  # fmt: skip
        asked = len(server.requests)  # its locate call and its answer call

        # The second question: leave while its answer streams (some of it drawn, not all).
        page.get_by_label("Question", exact=True).fill(SECOND)
        page.get_by_role("button", name="Ask", exact=True).click()
        # Its answer call has arrived at the server and the answer step is drawn: leave
        # before the reply's last delta can have been sent (seconds of slow deltas).
        deadline = time.monotonic() + 90
        while len(server.requests) < asked + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) >= asked + 2, "the second answer was never asked for"
        streaming = time.monotonic()
        _until(page, lambda s: f"Q: {SECOND}" in s["shown"], "the second answer never showed")
        page.get_by_role("link", name="History").click()
        left_after = time.monotonic() - streaming
        stream_s = PAUSE * (len(ANSWER) // 8)
        assert left_after < stream_s, f"left {left_after:.1f} s into a {stream_s:.1f} s stream"
        page.get_by_role("heading", name="History").wait_for()

        # Back on Ask: the typed question, the scope and the last result are there.
        page.get_by_role("link", name="Ask").click()
        back = _until(
            page,
            lambda s: s["question"] == SECOND and chip in s["scope"] and s["shown"],
            "after the visit the question, the scope or the result was lost",
        )
        assert back["shown"][0] in (f"Q: {FIRST}", f"Q: {SECOND}"), back["shown"]
        _until(page, lambda s: s["chips"], "the last result's answer (its citations) is gone")
        assert "q=" in page.url, page.url  # the link keeps the question for a reload too
        browser.close()
