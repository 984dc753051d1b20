"""HiRAG with the LLM, counted without a key: the real SDK and build code against the fake
Anthropic server (tests/fake_anthropic.py). It measures what a build sends: calls, input
tokens (the prompts, CJK-aware estimate), batches, communities, and that a second build sends
nothing. Output tokens are the fake's replies, shaped like an extraction (up to 15 entities
and 10 relations per call, 3 findings per report): an estimate, not a model's count.

    python benchmarks/bench_hirag_llm.py --index IDX [IDX ...] [--embedder hashing]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_anthropic import FakeAnthropicServer, reply
from treerag_core import HiragBuildSettings, index_embedder, load_index
from treerag_core.base.text_rules import detect_language
from treerag_core.llm import AnthropicClient
from treerag_core.llm.prompts import estimate_tokens
from treerag_core.strategies.graph.extract import terms_of
from treerag_core.strategies.hirag.build import build_hirag
from treerag_core.strategies.hirag.store import FOLDER, save_hirag

KEY = "sk-ant-bench"
_IDS = re.compile(r"^## (L\d+-\d+)$", re.MULTILINE)


def folder_bytes(path: Path, skip: str | None = None) -> int:
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and (skip is None or skip not in p.relative_to(path).parts)
    )


def _prompt(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def responder(body: dict):
    """An extraction reply (the block's most frequent terms) or a report batch reply."""
    prompt = _prompt(body)
    ids = _IDS.findall(prompt)
    if ids:
        text = json.dumps(
            {
                i: {
                    "title": f"Community {i}",
                    "summary": "What these entities have in common, in two sentences.",
                    "findings": ["A finding about the main entity.", "Another.", "A third."],
                }
                for i in ids
            }
        )
    else:
        block = prompt.split("\n\n", 1)[-1]
        language = detect_language(block[:2000])
        counts = Counter(m.surface for m in terms_of(block, language))
        names = [name for name, _ in counts.most_common(15)]
        lines = [f'("entity", "{n}", "concept", "What {n} is in this text.")' for n in names]
        lines += [
            f'("relationship", "{a}", "{b}", "relates to", "How {a} relates to {b}.", 5)'
            for a, b in list(pairwise(names))[:10]
        ]
        text = "\n".join(lines)
    usage = {"input_tokens": estimate_tokens(prompt), "output_tokens": estimate_tokens(text)}
    return reply(text, usage=usage)


def measure(index_dir: Path, embedder_name: str | None) -> dict:
    index = load_index(index_dir)
    embedder = index_embedder(index.embedder_name, named=[embedder_name])
    settings = HiragBuildSettings(llm_graph=True, llm_reports=True)
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer(responder=responder) as fake:
        folder = Path(scratch)  # caches go here, never into the index folder
        client = AnthropicClient(KEY, base_url=fake.base_url, timeout=30, max_retries=0)
        started = time.perf_counter()
        first = build_hirag(index, embedder, settings, client=client, folder=str(folder))
        seconds = time.perf_counter() - started
        calls = len(fake.requests)
        again = build_hirag(index, embedder, settings, client=client, folder=str(folder))
        resent = len(fake.requests) - calls
        (folder / "manifest.json").write_text("{}", encoding="utf-8")  # save_hirag checks it
        hirag_bytes = folder_bytes(save_hirag(first, folder))
    meta = first.meta
    leaves = {c.source_node_id for c in index.chunks}
    return {
        "index": index_dir.name,
        "documents": len(index.documents),
        "leaves": len(leaves),
        "chunks": len(index.chunks),
        "embedder": embedder_name or index.embedder_name,
        "plain_bytes": folder_bytes(index_dir, skip=FOLDER),
        "hirag_bytes": hirag_bytes,
        "seconds_without_model_latency": round(seconds, 1),
        "stage_seconds": meta["seconds"],
        "graph_batches": meta["graph_llm_batches"],
        "graph_calls": meta["graph_llm_calls"],
        "graph_usage": meta["graph_usage"],
        "report_calls": meta["report_llm_calls"],
        "report_usage": meta["report_usage"],
        "counts": meta["counts"],
        "second_build_calls": resent,
        "second_build_cached": [again.meta["graph_cached"], again.meta["report_cached"]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", required=True, nargs="+", help="built index folders")
    parser.add_argument("--embedder", default=None, help="entity vectors (default: the index's)")
    args = parser.parse_args(argv)
    rows = [measure(Path(d), args.embedder) for d in args.index]
    print(json.dumps(rows, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
