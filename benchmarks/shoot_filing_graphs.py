"""Screenshots of the Ask page's tree graph on indexed dev filings (issue 24, docs/ingest.md).

For each filing, in a session of its own (so its graph holds that filing alone): upload the
PDF on Documents, pass the review step as inferred (no corrections), index it, then ask the
first of its analysts' questions from the set's questions.jsonl with no LLM (the local
locator and an extractive answer), so the picked leaves are lit; shoot the page at 1600×1000,
scrolled to the top. The explorer is served as `benchmarks/bench_ui.py` serves it (the
default embedder unless --embedder), in real Chromium.

With --review, the review step is shot too, in the same session before indexing: the
inferred tree's title, notes and outline at the top of the view (documents-review-<name>.png),
and for AMCOR the "Several at once" area with a run of headings selected by the range pickers
(documents-review-bulk.png).

    nice -n 10 python benchmarks/shoot_filing_graphs.py --shots docs/screenshots [--review]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repo root on the path, as -m would
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_ui import ARGS, CHROMIUM, GRAPH, REPO, ask, drawn_nodes, serve, settled

# Shot name -> the filing's PDF in the set (the two of issue 24).
FILINGS = {"amcor-10q": "AMCOR_2023Q2_10Q.pdf", "costco-10k": "COSTCO_2021_10K.pdf"}
EVAL = REPO.parent / "shared" / "eval" / "financebench_pdf"
SIZE = {"width": 1600, "height": 1000}
# The tree component keeps its vis Network on window.__net: how many nodes are lit as picked
# (ui.common.tree_graph.PALETTE["picked"], as the browser reads it).
PICKED = """
() => window.__net ? window.__net.body.data.nodes.get().filter(
  n => n.color && n.color.background === '#EA580C').length : 0
"""
# The filing whose review also shows "Several at once", and the run its range pickers select
# (the statements under Item 1: labels are "<index>. <heading text>").
BULK = "amcor-10q"
RUN = ("4. Amcor", "8. Amcor")
TOP = "() => (document.querySelector('[data-testid=stMain]') || document.body).scrollTo(0, 0)"


def question_for(eval_dir: Path, pdf: str) -> str:
    """The first analysts' question the set asks on `pdf`."""
    with (eval_dir / "questions.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["doc"] == pdf:
                return row["question"]
    raise SystemExit(f"no question on {pdf} in {eval_dir / 'questions.jsonl'}")


def picked_count(page) -> int:
    """Nodes lit as picked in the tree graph on the page (0 while it is redrawn)."""
    from playwright.sync_api import Error as PlaywrightError

    for frame in page.frames:
        if "tree_graph" in (frame.url or ""):
            try:
                return int(frame.evaluate(PICKED))
            except PlaywrightError:  # the frame went away during a rerun
                return 0
    return 0


def _at_top(page, text: str) -> None:
    """Scroll the first element showing `text` to the top of the view; shoot when settled."""
    settled(page)
    page.get_by_text(text, exact=False).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(1.5)  # the data frame draws its canvas after the scroll


def _pick(page, end: str, prefix: str) -> str:
    """Choose the option starting with `prefix` in the review's range picker `end` (from/to):
    typed into the combo box, whose list then shows the labels that match it."""
    box = page.locator(f'[class*="st-key-te_"][class*="_{end}"]').first.get_by_role("combobox")
    box.click()
    box.press("ControlOrMeta+a")
    box.press_sequentially(prefix, delay=50)
    page.get_by_role("option").first.wait_for()
    for option in page.get_by_role("option").all():
        if (label := option.inner_text()).startswith(prefix):
            option.click()
            settled(page)
            return label
    shown = [o.inner_text() for o in page.get_by_role("option").all()[:5]]
    raise SystemExit(f"no heading {prefix!r} in the {end!r} picker (it shows {shown})")


def shoot_review(page, name: str, shots: Path) -> dict:
    """The review step of the uploaded filing; for BULK also "Several at once" with a run."""
    _at_top(page, "Inferred tree of")
    page.screenshot(path=str(shots / f"documents-review-{name}.png"))
    if name != BULK:
        return {}
    first, last = _pick(page, "from", RUN[0]), _pick(page, "to", RUN[1])
    page.get_by_role("button", name="Select every heading from … to …").click()
    page.get_by_role("button", name=re.compile(r"^Apply to [1-9]")).wait_for()  # selected
    _at_top(page, "Several at once")
    # The chips' row scrolls to its end as they are added: back to the run's first heading.
    page.locator('[class*="st-key-te_"][class*="_many"]').first.evaluate(
        "e => e.querySelectorAll('*').forEach(c => { c.scrollLeft = 0; })"
    )
    time.sleep(0.5)
    page.screenshot(path=str(shots / "documents-review-bulk.png"))
    return {"run": [first, last]}


def shoot(browser, url: str, pdf: Path, question: str, out: Path, review: str = "") -> dict:
    """Upload, review, index and ask in a fresh session; shoot the Ask page to `out` (and,
    with a `review` name, the review step beside it first)."""
    page = browser.new_page(viewport=SIZE)  # a new context: a workspace of its own
    page.set_default_timeout(120_000)
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(GRAPH, timeout=600_000)  # a fresh server indexes the samples first
    page.get_by_role("link", name="Documents").click()
    page.get_by_text("Add documents to your workspace").wait_for()
    page.locator('input[type="file"]').set_input_files([str(pdf)])
    page.get_by_text("Check the inferred trees").wait_for(timeout=300_000)  # the review step
    title = page.locator('[data-testid="stMarkdownContainer"]', has_text="Inferred tree of")
    headings = title.first.inner_text()  # "Inferred tree of X.pdf (N headings)"
    out.parent.mkdir(parents=True, exist_ok=True)
    reviewed = shoot_review(page, review, out.parent) if review else {}
    page.get_by_role("button", name="Index these files").click()
    page.get_by_text("added 1", exact=False).wait_for(timeout=900_000)
    page.get_by_role("link", name="Ask").click()
    uploads = page.get_by_text("My uploads", exact=True)
    if uploads.count():
        uploads.first.click()
    page.get_by_text("My uploads:", exact=False).first.wait_for()
    asked = time.perf_counter()
    ask(page, question)
    drawn = drawn_nodes(page, at_least=2)
    deadline = time.perf_counter() + 60
    while not (lit := picked_count(page)) and time.perf_counter() < deadline:
        time.sleep(0.5)
    settled(page)
    page.evaluate(TOP)
    time.sleep(4)  # the component re-fits after its box stops changing size
    settled(page)
    page.screenshot(path=str(out))
    page.close()
    return {
        "shot": str(out),
        "review": headings,
        **reviewed,
        "question": question,
        "drawn_nodes": drawn,
        "picked_nodes": lit,
        "answer_s": round(time.perf_counter() - asked, 1),
        "total_s": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", type=Path, default=REPO, help="the checkout to serve")
    parser.add_argument("--embedder", default="", help="TREERAG_EMBEDDER (empty: the default)")
    parser.add_argument("--eval", type=Path, default=EVAL, help="the financebench_pdf set")
    parser.add_argument("--shots", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--only", nargs="*", default=list(FILINGS), choices=list(FILINGS))
    parser.add_argument("--review", action="store_true", help="shoot the review step too")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    data = Path(tempfile.mkdtemp(prefix="treerag-shots-"))
    proc, url, _ = serve(args.app, data, args.embedder)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for name in args.only:
                pdf = args.eval / "pdfs" / FILINGS[name]
                out = args.shots / f"ask-graph-{name}.png"
                question = question_for(args.eval, pdf.name)
                found = shoot(browser, url, pdf, question, out, name if args.review else "")
                print(json.dumps(found), flush=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
