"""Start the explorer with `streamlit run` on 127.0.0.1 for the real-browser tests; one copy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def serve_app(port: int, env: Mapping[str, str], log_dir: Path) -> Iterator[subprocess.Popen]:
    """The app on `http://127.0.0.1:<port>`, healthy before yielding, stopped afterwards."""
    log_path = log_dir / "streamlit.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                url = f"http://127.0.0.1:{port}/_stcore/health"
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def openai_app_env(data: Path, base_url: str) -> dict[str, str]:
    """The environment of an explorer whose LLM is a local OpenAI-compatible server at
    `base_url`: the machine's LLM keys and endpoints left out, the hashing embedder (speed),
    `data` as its data folder, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        TREERAG_EMBEDDER="hashing",
        TREERAG_DATA_DIR=str(data),
        OPENAI_BASE_URL=base_url,
        TREERAG_LLM_MODEL="llama3.2",
        HF_HUB_OFFLINE="1",
    )
    return env
