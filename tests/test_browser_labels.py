"""A real browser through issue 26's loop: upload, ask three questions, mark evidence (by a
row, and by selecting a span in the inspector), see "My labelled questions" on Evaluate,
run a tune and apply its settings to the sidebar."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from app_server import serve_app

from benchmarks.bench_ui import ARGS
from tests.test_browser import CHROMIUM, _free_port, _require_chromium
from tests.test_eval_tune import QUESTIONS, TOPICS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Select `text` inside the inspector's section text, as a mouse drag would, then release.
SELECT = """
(text) => {
  const box = document.querySelector(".st-key-ask_inspector_box");
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const at = n.textContent.indexOf(text);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(n, at);
    range.setEnd(n, at + text.length);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    n.parentElement.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
    return true;
  }
  return false;
}
"""
HELD = (
    "(t) => { const a = document.querySelector('.st-key-lab_span textarea'); "
    "return !!a && a.value === t; }"
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    _require_chromium()
    from playwright.sync_api import sync_playwright

    data = tmp_path_factory.mktemp("browser_labels")
    port = _free_port()
    env = {**os.environ, "TREERAG_EMBEDDER": "hashing", "TREERAG_DATA_DIR": str(data),
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    with serve_app(port, env, data), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1150})
        page.set_default_timeout(90_000)
        page.base = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        yield page
        browser.close()


def _ask(page, question: str) -> None:
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()
    page.get_by_text("Mark the evidence: which passages answer the question?").wait_for()
    page.wait_for_timeout(500)


def _row(page, text: str):
    """The mark row (a horizontal block) whose passage holds `text`."""
    rows = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text=text)
    return rows.filter(has=page.get_by_role("button", name="Answers the question")).last


def test_mark_evaluate_tune_apply(page, tmp_path: Path) -> None:
    doc = tmp_path / "report.md"
    doc.write_text("# Report\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in TOPICS))
    page.goto(f"{page.base}/documents")
    page.get_by_text("Add documents to your workspace").wait_for()
    page.locator('input[type="file"]').first.set_input_files([str(doc)])
    page.get_by_text("added 1").wait_for(timeout=120_000)

    page.get_by_role("link", name="Ask").click()
    page.get_by_text("My uploads: 1 of 1 document(s)", exact=False).wait_for()
    page.get_by_text("Rerank (cross-encoder)", exact=True).click()  # off: a tune of seconds
    page.wait_for_timeout(1000)

    # 1. A row: the first question's passage "answers the question".
    (q1, s1), (q2, s2), (q3, s3) = QUESTIONS[:3]
    _ask(page, q1)
    _row(page, s1).get_by_role("button", name="Answers the question").click()
    page.get_by_text("Marked: the passage answers the question.").wait_for()

    # 2. A span: open the leaf in the inspector, select the sentence's words, mark them.
    _ask(page, q2)
    page.wait_for_timeout(1500)  # the page's last rerun draws the picker again
    page.get_by_role("combobox", name="Inspect a node").first.click()
    page.get_by_role("option", name="Training", exact=False).first.click()
    page.get_by_text("Mark evidence in this section").wait_for()
    # A rerun may redraw the box under the selection: select again until the span box holds it.
    for _ in range(20):
        assert page.evaluate(SELECT, s2), "the span is not in the inspector's text"
        page.wait_for_timeout(1500)
        if page.evaluate(HELD, s2):
            break
    else:
        raise AssertionError("the selection never reached the span box")
    page.wait_for_timeout(1500)  # the script's blur commits the box: one rerun
    page.get_by_role("button", name="Mark the selected text as evidence").click()
    page.get_by_text(f"Marked {len(s2)} characters as evidence.").wait_for()

    # 3. A third question, by a row again.
    _ask(page, q3)
    _row(page, s3).get_by_role("button", name="Answers the question").click()
    page.get_by_text("Marked: the passage answers the question.").wait_for()

    # History tags them; Evaluate lists them.
    page.get_by_role("link", name="History").click()
    # The page draws in one pass after the link's rerun: wait for its three tags, not its first.
    page.wait_for_function(
        "() => document.body.innerText.split('🏷 labelled').length - 1 === 3", timeout=60_000
    )
    page.get_by_role("link", name="Evaluate").click()
    # The labelled set is an entry of the dataset menu, beside the dev sets.
    page.get_by_role("combobox", name="Dataset").first.click()
    page.get_by_role("option", name="My labelled questions").click()
    page.get_by_text("My labelled questions").first.wait_for()
    page.get_by_text("3 labelled question(s)", exact=False).wait_for()

    # More questions, imported, so a tune may run (8 at least); then tune and apply.
    rows = [{"id": f"q{i}", "doc": "report.md", "question": q, "evidence": [s]}
            for i, (q, s) in enumerate(QUESTIONS)]  # fmt: skip
    upload = tmp_path / "more.jsonl"
    upload.write_text("".join(json.dumps(r) + "\n" for r in rows))
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Import a")
    uploader.locator('input[type="file"]').set_input_files([str(upload)])
    page.get_by_text(f"{len(QUESTIONS)} labelled question(s)", exact=False).wait_for()
    started = time.perf_counter()
    page.get_by_role("button", name="Run the tune").click()
    # A tie keeps the current settings: then there is nothing to apply, and the page says so.
    apply = page.get_by_role("button", name="Apply these settings to the sidebar")
    apply.or_(page.get_by_text("already the best found", exact=False)).wait_for(timeout=300_000)
    seconds = time.perf_counter() - started
    assert "fold cross-validation" in page.inner_text("body")  # the tables are canvases
    if apply.count():
        apply.click()
        page.get_by_text("Applied: Ask now runs with the tuned settings").wait_for()
        page.get_by_role("link", name="Ask").click()
        page.get_by_text("Tuned settings applied", exact=False).wait_for()
    print(f"tune in the browser: {seconds:.1f} s, load average {os.getloadavg()[0]:.1f}")
