"""The server's Python of a step-2 slider move on Ask (issue 25), without a browser: the app
under streamlit.testing's AppTest (hashing embedder, rerank off as in `bench_ui.py --slider`),
one question, then "Final top-k" moved 5 → 4 → 3 → 2 → 3 → 4 → 5 …; per move the story
fragment's wall time (what a fragment rerun runs in the browser) and the whole AppTest run
(which reruns the page around it too), and the story's parts. For each checkout in turn, in
a fresh process, round after round, so both see the same machine load.

    python benchmarks/bench_slider.py CHECKOUT [CHECKOUT ...] [--moves 6] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUESTION = "How many epochs was the model trained for?"
# (module, attribute) of the story's parts; a part a checkout lacks is left out.
PARTS = (
    ("ui.ask.story", "locate_step"), ("ui.ask.story", "answer_step"),
    ("ui.ask.story", "inspector_panel"), ("ui.common.query_controls", "step2_controls"),
    ("ui.ask.story", "evidence_step"), ("ui.ask.trace_panels", "rerank"),
    ("ui.ask.trace_panels", "step2"), ("ui.ask.trace_panels", "step1"),
    ("ui.ask.story", "details"), ("ui.ask.story", "compare_panel"), ("ui.ask.story", "examples"),
    ("treerag_core", "rerun"),
    ("streamlit.elements.lib.mutable_status_container", "StatusContainer._create"),
)  # fmt: skip

CHILD = """
import functools, importlib, json, os, sys, time
from collections import defaultdict
sys.path.insert(0, os.getcwd())
import streamlit as st
from streamlit.testing.v1 import AppTest
moves, parts, question = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
spent = defaultdict(float)
def timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started
    return wrapper
fragment = st.fragment
st.fragment = lambda fn=None, **kw: (lambda f: st.fragment(f, **kw)) if fn is None else (
    fragment(timed("fragment", fn), **kw))
for module, attr in parts:
    owner, _, name = attr.rpartition(".")
    holder = importlib.import_module(module)
    holder = getattr(holder, owner) if owner else holder
    found = vars(holder).get(name) if owner else getattr(holder, name, None)
    if found is None:
        continue
    if isinstance(found, staticmethod):
        setattr(holder, name, staticmethod(timed(attr, found.__func__)))
    else:
        setattr(holder, name, timed(attr, found))
at = AppTest.from_file("app.py", default_timeout=120).run()
at.toggle(key="qs_rerank").set_value(False).run()
at.text_input(key="ask_question").input(question)
at.button[0].click()
at.run()
assert not at.exception, at.exception
values, runs, per = [4, 3, 2, 3, 4, 5], [], defaultdict(list)
for i in range(moves):
    at.slider(key="qs_final_top_k").set_value(values[i % len(values)])
    spent.clear()
    started = time.perf_counter()
    at.run()
    runs.append(time.perf_counter() - started)
    assert not at.exception, at.exception
    for name, seconds in spent.items():
        per[name].append(seconds)
print(json.dumps({"run_s": runs, "parts_s": per}))
"""


def measure(app: Path, moves: int) -> dict[str, Any]:
    """One fresh process on `app`: the run and part times of `moves` slider moves."""
    env = {**os.environ, "TREERAG_EMBEDDER": "hashing", "HF_HUB_OFFLINE": "1"}
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="treerag-slider-") as data:  # removed after
        env["TREERAG_DATA_DIR"] = data
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(moves), json.dumps(PARTS), QUESTION],
            cwd=app, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def ms(values: Sequence[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def slider_server(apps: Sequence[Path], moves: int, rounds: int) -> dict[str, Any]:
    """Medians (ms) per checkout over every move of every round, with the load average."""
    result: dict[str, Any] = {"load_before": os.getloadavg(), "apps": {}}
    runs: dict[str, dict[str, list[float]]] = {str(a): {} for a in apps}
    for _ in range(rounds):
        for app in apps:
            found = measure(app, moves)
            got = runs[str(app)]
            got.setdefault("whole AppTest run", []).extend(found["run_s"])
            for name, seconds in found["parts_s"].items():
                got.setdefault(name, []).extend(seconds)
    for app, got in runs.items():
        ordered = sorted(got.items(), key=lambda kv: -statistics.median(kv[1]))
        result["apps"][app] = {name: ms(seconds) for name, seconds in ordered}
    result["load_after"] = os.getloadavg()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("apps", type=Path, nargs="*", default=[REPO], metavar="CHECKOUT")
    parser.add_argument("--moves", type=int, default=6, help="slider moves per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the checkouts")
    args = parser.parse_args()
    print(json.dumps(slider_server(args.apps, args.moves, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
