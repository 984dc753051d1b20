"""The explorer in real Chromium: cold and warm first render, question to first answer token,
and screenshots at 1600×1000 and 1280×720 (Ask, Compare, Documents, Evaluate)."""

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
from pathlib import Path

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
QUESTION = "What accuracy does AdaRouter reach on EUR/USD?"
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


def first_render(page, url: str) -> float:
    """Seconds from navigation to the tree drawn (the first screen a user can act on)."""
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('iframe[title="streamlit_agraph.agraph"]', timeout=300_000)
    frame = page.frame_locator('iframe[title="streamlit_agraph.agraph"]')
    frame.locator("canvas").first.wait_for(timeout=300_000)
    return time.perf_counter() - started


def ask(page, question: str) -> tuple[float, float]:
    """(seconds to the first answer token, seconds to the finished answer)."""
    page.get_by_label("Question", exact=True).fill(question)
    started = time.perf_counter()
    page.get_by_role("button", name="Ask", exact=True).click()
    first = None
    while time.perf_counter() - started < 120:
        body = page.inner_text("body")
        if first is None and ("Source:" in body or "do not seem" in body or "来源" in body):
            first = time.perf_counter() - started
        if first is not None and "Citations" in body:
            break
        time.sleep(0.03)
    return first or float("nan"), time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", type=Path, default=REPO, help="the checkout to serve")
    parser.add_argument("--embedder", default="", help="TREERAG_EMBEDDER (empty: the default)")
    parser.add_argument("--shots", type=Path, default=None, help="write screenshots here")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    data = Path(tempfile.mkdtemp(prefix="treerag-ui-"))
    proc, url, server_s = serve(args.app, data, args.embedder)
    result: dict[str, float] = {"server_start_s": round(server_s, 2)}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            result["cold_first_render_s"] = round(first_render(page, url), 2)
            warm = browser.new_page(viewport={"width": 1600, "height": 1000})  # a new session
            result["warm_first_render_s"] = round(first_render(warm, url), 2)
            first, done = ask(warm, QUESTION)
            result["first_answer_token_s"] = round(first, 2)
            result["answer_done_s"] = round(done, 2)
            first, done = ask(warm, "How many epochs was the model trained for?")
            result["second_question_first_token_s"] = round(first, 2)
            print(json.dumps(result), flush=True)
            if args.shots:
                shoot(warm, url, args.shots)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


def shoot(page, url: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        time.sleep(1.5)
        page.screenshot(path=str(folder / f"ask-{name}.png"))
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.get_by_text("Compare strategies side by side").click()
    page.get_by_role("button", name="Compare strategies").click()
    page.get_by_text("shared with").first.wait_for(timeout=120_000)
    page.get_by_text("shared with").first.scroll_into_view_if_needed()
    for name, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        time.sleep(1.0)
        page.get_by_text("shared with").first.scroll_into_view_if_needed()
        page.screenshot(path=str(folder / f"compare-{name}.png"))
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.get_by_role("link", name="Documents").click()
    page.get_by_text("Tree preview").wait_for()
    page.get_by_text("Tree preview").scroll_into_view_if_needed()
    time.sleep(2)
    for name, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        time.sleep(1.0)
        page.screenshot(path=str(folder / f"documents-{name}.png"))
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.get_by_role("link", name="Evaluate").click()
    page.get_by_role("button", name="Run evaluation").wait_for()
    page.get_by_role("button", name="Run evaluation").click()
    page.get_by_text("Curves over k").wait_for(timeout=600_000)
    for name, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        time.sleep(1.5)
        page.screenshot(path=str(folder / f"evaluate-{name}.png"))


if __name__ == "__main__":
    raise SystemExit(main())
