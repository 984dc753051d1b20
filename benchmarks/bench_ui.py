"""The explorer in real Chromium: cold first render (and its parts: imports, model load, sample
indexing, timed alone), warm first render, question to first answer token and to the finished
answer, the whole tree of two uploads (300+ nodes) drawn and collapsed again, with the load
average; screenshots at 1600×1000 and 1280×720.

`--slider APP [APP ...]`: only the slider figure (issue 25), for each checkout in turn on the
same machine at the same time (e.g. main's and a branch's): a "Final top-k" arrow-key move to
the evidence table redrawn, several moves each, with the server's part of it (to the rerun's
last message received) and the load average; `--floor` adds a minimal Streamlit app (one
slider, one table: benchmarks/slider_floor) measured the same way, Streamlit's own floor."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("TREERAG_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTIONS = (
    "What accuracy does AdaRouter reach on EUR/USD?",
    "How many epochs was the model trained for?",
)
GOLD_QUESTION = "What is the source of the crosslingual word embeddings?"  # ui/common/examples.py
SIZES = {"1600x1000": (1600, 1000), "1280x720": (1280, 720)}


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(app_dir: Path, data: Path, embedder: str) -> tuple[subprocess.Popen, str, float]:
    port = _port()
    env = {**os.environ, "TREERAG_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    env.pop("ANTHROPIC_API_KEY", None)
    if embedder:
        env["TREERAG_EMBEDDER"] = embedder
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
           "--server.port", str(port), "--server.headless", "true",
           "--browser.gatherUsageStats", "false"]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=app_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            time.sleep(0.2)
    return proc, url, time.perf_counter() - started


GRAPH = 'iframe[title="ui.common.tree_graph.tree_graph"], iframe[title="streamlit_agraph.agraph"]'
# Characters of answer under the caption "Q: <question>" of step ③ (0 before it is drawn).
ANSWER_CHARS = """
(q) => {
  const want = 'Q: ' + q;
  const cap = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .find(e => e.innerText.trim() === want);
  if (!cap) return 0;
  const block = cap.closest('[data-testid="stVerticalBlock"]');
  const text = block.innerText;
  return text.slice(text.indexOf(want) + want.length).trim().length;
}
"""


def first_render(page, url: str) -> float:
    """Seconds from navigation to the tree drawn (the first screen a user can act on)."""
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(GRAPH, timeout=300_000)
    page.frame_locator(GRAPH).first.locator("canvas").first.wait_for(timeout=300_000)
    return time.perf_counter() - started


def ask(page, question: str) -> tuple[float, float]:
    """(seconds to the first answer token, seconds to the finished answer with its citations)."""
    page.get_by_label("Question", exact=True).fill(question)
    started = time.perf_counter()
    page.get_by_role("button", name="Ask", exact=True).click()
    first = None
    while time.perf_counter() - started < 120:
        chars = page.evaluate(ANSWER_CHARS, question)
        if first is None and chars > 0:
            first = time.perf_counter() - started
        # Finished: the citation chips are drawn under this question's answer.
        drawn = first is not None and "Citations" in page.inner_text("body")
        if drawn and not page.locator('[data-stale="true"]').count():
            break
        time.sleep(0.03)
    return first or float("nan"), time.perf_counter() - started


# The tree component keeps its vis Network on window.__net: how many nodes it has positioned.
DRAWN_NODES = "() => window.__net ? Object.keys(window.__net.getPositions()).length : 0"


def handbook_markdown(chapters: int = 12, sections: int = 6, items: int = 3) -> str:
    """A handbook of 300+ heading nodes (the same shape as tests/test_browser.py uploads)."""
    parts = ["# Handbook\n"]
    for c in range(1, chapters + 1):
        parts.append(f"## Chapter {c}\n\nChapter {c} covers policy area {c}.\n")
        for s in range(1, sections + 1):
            parts.append(f"### Section {c}.{s}\n\nSection {c}.{s} explains rule {c}-{s}.\n")
            for i in range(1, items + 1):
                parts.append(f"#### Item {c}.{s}.{i}\n\nItem {c}.{s}.{i}: one more detail.\n")
    return "\n".join(parts)


def drawn_nodes(page, at_least: int = 0, at_most: int | None = None, timeout: float = 120) -> int:
    """The tree's positioned node count, once it is within [at_least, at_most]."""
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for frame in page.frames:
            if "tree_graph" not in (frame.url or ""):
                continue
            try:
                count = frame.evaluate(DRAWN_NODES)
            except PlaywrightError:  # the frame went away during a rerun: look again
                continue
            if count >= at_least and (at_most is None or count <= at_most):
                return count
        time.sleep(0.05)
    raise TimeoutError(f"no tree with {at_least}..{at_most} nodes within {timeout} s")


def whole_tree(page, url: str, folder: Path) -> dict[str, float]:
    """Upload the test paper and a 300-node handbook, ask on them, then time the "Whole tree"
    toggle to every node drawn, and back to the collapsed view (as tests/test_browser.py does)."""
    handbook = folder / "handbook.md"
    handbook.write_text(handbook_markdown(), encoding="utf-8")
    page.goto(f"{url}/documents")
    page.get_by_text("Add documents to your workspace").wait_for()
    paper = REPO / "sample_docs" / "test_paper.md"
    page.locator('input[type="file"]').set_input_files([str(paper), str(handbook)])
    page.get_by_text("added 2").wait_for(timeout=600_000)
    page.get_by_role("link", name="Ask").click()
    page.get_by_text("My uploads: 2 of 2 document(s)", exact=False).wait_for()
    ask(page, QUESTIONS[1])
    page.get_by_text("All documents").click()
    drawn_nodes(page, at_least=10)
    started = time.perf_counter()
    page.get_by_text("Whole tree").click()
    whole = drawn_nodes(page, at_least=300)
    whole_s = time.perf_counter() - started
    started = time.perf_counter()
    page.get_by_text("Whole tree").click()
    collapsed = drawn_nodes(page, at_least=3, at_most=299)
    collapsed_s = time.perf_counter() - started
    return {
        "whole_tree_nodes": whole,
        "whole_tree_render_s": round(whole_s, 2),
        "collapsed_nodes": collapsed,
        "collapsed_render_s": round(collapsed_s, 2),
    }


# The final-passages table as the page holds it: glide-data-grid draws on a canvas and keeps
# the drawn cells' text in a hidden accessible table (textContent, not innerText); "" before.
TABLE_TEXT = """
() => {
  const t = document.querySelector('.st-key-rerank_table');
  return t ? t.textContent : '';
}
"""
# Nothing stale on the page and the app's "Running…" icon gone: the rerun has been drawn.
SETTLED = """() => !document.querySelector('[data-stale="true"]') && !document.querySelector(
  '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]')"""


def settled(page, timeout: float = 120) -> None:
    """Until no element is stale and the app is not running (polled, no fixed sleep)."""
    deadline = time.perf_counter() + timeout
    quiet = 0
    while time.perf_counter() < deadline:
        quiet = quiet + 1 if page.evaluate(SETTLED) else 0
        if quiet >= 5:  # settled across five polls (a rerun may start a moment later)
            return
        time.sleep(0.05)
    raise TimeoutError("the page never settled")


def recorded_frames(page) -> list[tuple[float, int]]:
    """(arrival, bytes) of the app's websocket messages, appended as they come."""
    frames: list[tuple[float, int]] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda data: frames.append((time.perf_counter(), len(data or "")))
        ),
    )
    return frames


def slider_move(page, url: str, moves: int = 6) -> dict[str, Any]:
    """Seconds from an arrow-key move of the "Final top-k" slider to the final-passages table
    drawn with its new ranks and nothing stale on the page, per move (5 → 4 → 3 → 2 → 3 →
    4 …), and of that the server's part: to the last message of the rerun received (the
    rest is the browser drawing it). Rerank off, no LLM: what is timed is the page."""
    frames = recorded_frames(page)
    page.goto(url)
    page.wait_for_selector(GRAPH, timeout=300_000)
    settled(page)
    page.get_by_text("Rerank (cross-encoder)", exact=True).click()
    settled(page)
    ask(page, QUESTIONS[1])
    settled(page)
    return time_moves(page, frames, moves)


def time_moves(page, frames: list[tuple[float, int]], moves: int) -> dict[str, Any]:
    """Arrow-key moves of the "Final top-k" slider on a drawn page, each timed to its table
    redrawn and nothing stale (`frames`: the websocket's messages, for the server's part)."""
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Final top-k")
    slider = slider.get_by_role("slider")
    slider.scroll_into_view_if_needed()
    seconds, server, sent = [], [], []
    for i in range(moves):
        key = "ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight"
        before = page.evaluate(TABLE_TEXT)
        slider.focus()
        frames.clear()
        started = time.perf_counter()
        slider.press(key)
        deadline = started + 60
        while time.perf_counter() < deadline:
            if page.evaluate(TABLE_TEXT) not in (before, "") and page.evaluate(SETTLED):
                break
            time.sleep(0.01)
        done = time.perf_counter()
        seconds.append(round(done - started, 3))
        got = [(t, n) for t, n in frames if t <= done]
        server.append(round(got[-1][0] - started, 3) if got else float("nan"))
        sent.append(sum(n for _, n in got))
        settled(page)
    ordered = sorted(seconds)
    return {
        "moves_s": seconds, "median_s": ordered[len(ordered) // 2], "max_s": ordered[-1],
        "server_s": server, "server_median_s": sorted(server)[len(server) // 2],
        "bytes": sent,
    }  # fmt: skip


FLOOR_APP = REPO / "benchmarks" / "slider_floor"


def floor_move(page, url: str, moves: int = 6) -> dict[str, Any]:
    """The same moves on the floor app (one slider, one table): Streamlit's own cost."""
    frames = recorded_frames(page)
    page.goto(url)
    page.wait_for_selector(".st-key-rerank_table", timeout=120_000)
    settled(page)
    return time_moves(page, frames, moves)


def slider_bench(apps: Sequence[Path], embedder: str, moves: int, rounds: int) -> dict:
    """The slider figure for each checkout, served side by side and measured in turn, round
    after round, so both see the same machine load."""
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {"load_before": os.getloadavg(), "apps": {}}
    servers = []
    try:
        for app in apps:
            data = Path(tempfile.mkdtemp(prefix="treerag-ui-"))
            servers.append((app, *serve(app, data, embedder)))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _ in range(rounds):
                for app, _, url, _ in servers:
                    page = browser.new_page(viewport={"width": 1600, "height": 1000})
                    move = floor_move if app == FLOOR_APP else slider_move
                    figure = move(page, url, moves)
                    figure["load"] = os.getloadavg()[0]
                    result["apps"].setdefault(str(app), []).append(figure)
                    page.close()
                    print(json.dumps({str(app): figure}), flush=True)
            browser.close()
    finally:
        for _, proc, _, _ in servers:
            proc.terminate()
            proc.wait(timeout=20)
    for app, figures in result["apps"].items():
        every = sorted(s for f in figures for s in f["moves_s"])
        served = sorted(s for f in figures for s in f["server_s"])
        result.setdefault("summary", {})[app] = {
            "moves": len(every), "median_s": every[len(every) // 2], "max_s": every[-1],
            "server_median_s": served[len(served) // 2],
        }  # fmt: skip
    result["load_after"] = os.getloadavg()
    return result


PARTS = """
import json, sys, time
QUESTIONS = sys.argv[1:]
t = time.perf_counter()
from treerag_core.base.config import IndexSettings
from treerag_core import get_embedder
from treerag_core import build_index
from treerag_core.ingest.documents import sources_from
from ui.common.resources import default_embedder, sample_paths
imported = time.perf_counter() - t
name = default_embedder()
t = time.perf_counter(); embedder = get_embedder(name); embedder.embed(["warm up"])
model = time.perf_counter() - t
settings = IndexSettings(embedder=name)
sources, _ = sources_from(sample_paths(), settings.max_file_bytes)
t = time.perf_counter(); index = build_index(sources, settings, embedder)
indexing = time.perf_counter() - t
from treerag_core import Engine
from treerag_core.pipeline import run_stream
from treerag_core import get_reranker
from treerag_core.base.settings import QuerySettings
settings = QuerySettings().set("llm.enabled", False)
get_reranker(settings.rerank.model).score("warm up", ["warm up"])  # as the app warms it
engine = Engine(index=index, embedder=embedder)
firsts = []
for question in QUESTIONS:
    t = time.perf_counter()
    for event in run_stream(engine, question, settings):
        if event.kind in ("delta", "done"):
            break
    firsts.append(round(time.perf_counter() - t, 2))
print(json.dumps({"embedder": name, "import_s": round(imported, 2), "model_load_s":
    round(model, 2), "sample_indexing_s": round(indexing, 2), "chunks": len(index.chunks),
    "engine_first_token_s": firsts}))
"""


def cold_parts(app_dir: Path, embedder: str) -> dict:
    """The cold first render's parts, timed alone in a fresh process (no index on disk), and
    the engine's own time to the first answer token for the benchmark's questions (warm)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if embedder:
        env["TREERAG_EMBEDDER"] = embedder
    out = subprocess.run(
        [sys.executable, "-c", PARTS, *QUESTIONS], cwd=app_dir, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", type=Path, default=REPO, help="the checkout to serve")
    parser.add_argument("--embedder", default="", help="TREERAG_EMBEDDER (empty: the default)")
    parser.add_argument("--shots", type=Path, default=None, help="write screenshots here")
    parser.add_argument(
        "--pages", nargs="*", default=list(PAGES), choices=PAGES, help="which pages to shoot"
    )
    parser.add_argument(
        "--upload", nargs=3, action="append", default=[], metavar=("NAME", "FILE", "QUESTION"),
        help="also upload FILE, ask QUESTION on it and shoot ask-NAME-<size>.png (repeatable)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--slider", type=Path, nargs="+", default=None, metavar="APP",
        help="only the slider figure, for each of these checkouts (e.g. main and a branch)",
    )  # fmt: skip
    parser.add_argument(
        "--floor", action="store_true",
        help="with --slider: also a minimal app (one slider, one table): Streamlit's own floor",
    )  # fmt: skip
    parser.add_argument("--moves", type=int, default=6, help="slider moves per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the checkouts")
    args = parser.parse_args()
    if args.slider:
        apps = [*args.slider, FLOOR_APP] if args.floor else args.slider
        found = slider_bench(apps, args.embedder, args.moves, args.rounds)
        print(json.dumps(found, indent=2))
        if args.out:
            args.out.write_text(json.dumps(found, indent=2) + "\n")
        return 0
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    result["cold_parts"] = cold_parts(args.app, args.embedder)
    data = Path(tempfile.mkdtemp(prefix="treerag-ui-"))
    proc, url, server_s = serve(args.app, data, args.embedder)
    result["server_start_s"] = round(server_s, 2)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            result["cold_first_render_s"] = round(first_render(page, url), 2)
            warm = browser.new_page(viewport={"width": 1600, "height": 1000})  # a new session
            result["warm_first_render_s"] = round(first_render(warm, url), 2)
            first, done = ask(warm, QUESTIONS[0])
            result["first_answer_token_s"] = round(first, 2)
            result["answer_done_s"] = round(done, 2)
            first, done = ask(warm, QUESTIONS[1])
            result["second_question_first_token_s"] = round(first, 2)
            result["second_question_done_s"] = round(done, 2)
            uploads = browser.new_page(viewport={"width": 1600, "height": 1000})  # own session
            result["whole_tree"] = whole_tree(uploads, url, data)
            uploads.close()
            result["load_after"] = os.getloadavg()[0]
            print(json.dumps(result), flush=True)
            if args.shots:
                shoot(warm, url, args.shots, args.pages)
                for name, file, question in args.upload:
                    shoot_upload(warm, url, args.shots, name, Path(file), question)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


PAGES = ("ask", "compare", "documents", "evaluate")


def shoot(page, url: str, folder: Path, pages: Sequence[str] = PAGES) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if "ask" in pages:
        for name, (w, h) in SIZES.items():
            page.set_viewport_size({"width": w, "height": h})
            time.sleep(1.5)
            page.screenshot(path=str(folder / f"ask-{name}.png"))
    if "compare" in pages:
        page.set_viewport_size({"width": 1600, "height": 1000})
        ask(page, GOLD_QUESTION)  # a dev-set question: Compare scores it against the gold
        page.get_by_text("Compare strategies side by side").click()
        page.get_by_role("button", name="Compare strategies").click()
        page.get_by_text("Against the gold evidence").first.wait_for(timeout=300_000)
        for name, (w, h) in SIZES.items():
            page.set_viewport_size({"width": w, "height": h})
            time.sleep(1.0)
            page.get_by_text("Against the gold evidence").first.evaluate(
                "e => e.scrollIntoView({block: 'start'})"
            )
            time.sleep(0.5)
            page.screenshot(path=str(folder / f"compare-{name}.png"))
    if "documents" in pages:
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.get_by_role("link", name="Documents").click()
        page.get_by_text("Tree preview").wait_for()
        page.get_by_text("Tree preview").scroll_into_view_if_needed()
        time.sleep(2)
        for name, (w, h) in SIZES.items():
            page.set_viewport_size({"width": w, "height": h})
            time.sleep(1.0)
            # The tree preview at the top of the view, so the graph is on the screenshot.
            page.get_by_text("Tree preview").evaluate("e => e.scrollIntoView({block: 'start'})")
            time.sleep(0.5)
            page.screenshot(path=str(folder / f"documents-{name}.png"))
    if "evaluate" in pages:
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.get_by_role("link", name="Evaluate").click()
        page.get_by_role("button", name="Run evaluation").wait_for()
        page.get_by_role("button", name="Run evaluation").click()
        page.get_by_text("Curves over k").wait_for(timeout=600_000)
        chart = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'
        page.wait_for_selector(chart, timeout=120_000)
        for name, (w, h) in SIZES.items():
            page.set_viewport_size({"width": w, "height": h})
            time.sleep(3)
            page.screenshot(path=str(folder / f"evaluate-{name}.png"))


def shoot_upload(page, url: str, folder: Path, name: str, file: Path, question: str) -> None:
    """Upload a document into the session's workspace, ask about it, shoot the Ask page."""
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.get_by_role("link", name="Documents").click()
    page.get_by_text("Add documents to your workspace").wait_for()
    page.locator('input[type="file"]').set_input_files([str(file)])
    page.get_by_text(f"added 1: {file.name}").wait_for(timeout=600_000)
    page.get_by_role("link", name="Ask").click()
    page.get_by_text("My uploads", exact=True).click()
    page.get_by_text("My uploads:", exact=False).first.wait_for()
    ask(page, question)
    page.evaluate("window.scrollTo(0, 0)")
    for size, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        time.sleep(1.5)
        page.screenshot(path=str(folder / f"ask-{name}-{size}.png"))


if __name__ == "__main__":
    raise SystemExit(main())
