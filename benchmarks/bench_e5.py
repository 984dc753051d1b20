"""e5's encoder backends side by side: torch float32 against the onnxruntime export.

Each variant encodes the same chunk texts (the first `--max-chunks` a build embeds, per data
set) in the same process, interleaved (A B C, then C B A, ...): the machine is shared, so
compare the ratios to torch, not the absolute rates. Agreement: cosine of each variant's
vectors against torch float32's on 67 texts (Chinese and English, short, and 4 of several
windows), as passages and as queries.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL, stderr
from benchmarks.bench_index import chunk_texts, load_sources
from treerag_core.index.e5_model import E5Model

BATCH = 32  # texts per encode call: what Embedder.embed passes


def agreement_texts(laws: Sequence[str], papers: Sequence[str]) -> list[str]:
    return [
        *laws[:25],
        *papers[:25],
        *laws[200:205],
        *papers[200:205],
        "x",
        "劳动合同",
        "The model.",
        " ".join(papers[:40]),  # several windows
        "".join(laws[:120]),
        "第一条 为了保护劳动者的合法权益，制定本法。" * 200,
        "The annotators labelled each tweet by hand. " * 150,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=EVAL)
    parser.add_argument("--max-chunks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    sets = {d: chunk_texts(load_sources(args.data / d / "docs"), args.max_chunks)
            for d in ("lecoqa_laws", "qasper")}  # fmt: skip
    model = E5Model()
    stderr(f"e5 backend: {model.backend}")
    session = model.session
    variants = {"torch": (None, BATCH), "onnxruntime": (session, BATCH)}
    # Whole sets in one call: sorted by length over all of them, less padding than per 32.
    variants[f"onnxruntime, {args.max_chunks} per call"] = (session, args.max_chunks)

    def run(name: str, texts: Sequence[str], query: bool = False) -> np.ndarray:
        model.session, per_call = variants[name]
        parts = [model.encode(texts[s : s + per_call], query=query)
                 for s in range(0, len(texts), per_call)]  # fmt: skip
        return np.concatenate(parts)

    agree = agreement_texts(sets["lecoqa_laws"], sets["qasper"])
    cosines: dict[str, np.ndarray] = {}
    for query in (False, True):
        reference = run("torch", agree, query)
        for name in variants:
            got = np.sum(run(name, agree, query) * reference, axis=1)
            cosines[name] = np.concatenate([cosines.get(name, np.empty(0)), got])
    rates: dict[tuple[str, str], list[float]] = {(n, d): [] for n in variants for d in sets}
    loads: list[float] = []
    for repeat in range(args.repeats):
        order = list(variants) if repeat % 2 == 0 else list(reversed(variants))
        for dataset, texts in sets.items():
            for name in order:
                started = time.perf_counter()
                run(name, texts)
                rates[(name, dataset)].append(len(texts) / (time.perf_counter() - started))
                loads.append(os.getloadavg()[0])
                stderr(f"{dataset} {name}: {rates[(name, dataset)][-1]:.1f} chunks/s")
    print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}\n")
    print("| variant | set | chunks/s (each run) | ratio to torch (mean) | min / mean cosine |")
    print("|---|---|---|---:|---|")
    for dataset in sets:
        for name in variants:
            got = rates[(name, dataset)]
            ratio = np.mean([a / b for a, b in zip(got, rates[("torch", dataset)], strict=True)])
            each = ", ".join(f"{r:.1f}" for r in got)
            cos = f"{cosines[name].min():.7f} / {cosines[name].mean():.7f}"
            print(f"| {name} | {dataset} | {each} | {ratio:.2f} | {cos} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
