"""HiRAG index cost against the plain index: build time, folder size, graph counts, LLM tokens."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import SourceDocument, build_index, get_embedder, save_index
from treerag_core.base.config import IndexSettings
from treerag_core.evaluation import load_dataset
from treerag_core.strategies.hirag.build import build_hirag
from treerag_core.strategies.hirag.store import FOLDER, save_hirag


def folder_bytes(path: Path, skip: str | None = None) -> int:
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and (skip is None or skip not in p.relative_to(path).parts)
    )


def measure(data_dir: Path, out_dir: Path, embedder_name: str) -> dict:
    dataset = load_dataset(data_dir)
    sources = [
        SourceDocument(name, (dataset.docs_dir / name).read_text(encoding="utf-8"))
        for name in dataset.doc_names
    ]
    embedder = get_embedder(embedder_name)
    getattr(embedder, "warm_up", lambda: None)()
    started = time.perf_counter()
    index = build_index(sources, IndexSettings(embedder=embedder_name), embedder)
    plain_seconds = time.perf_counter() - started
    folder = out_dir / f"{dataset.name}-{embedder_name}"
    save_index(index, folder)
    started = time.perf_counter()
    hindex = build_hirag(index, embedder)
    hirag_seconds = time.perf_counter() - started
    save_hirag(hindex, folder)
    return {
        "dataset": dataset.name,
        "documents": len(index.documents),
        "chunks": len(index.chunks),
        "embedder": embedder_name,
        "plain_seconds": round(plain_seconds, 1),
        "plain_bytes": folder_bytes(folder, skip=FOLDER),
        "hirag_seconds": round(hirag_seconds, 1),
        "hirag_stage_seconds": hindex.meta["seconds"],
        "hirag_bytes": folder_bytes(folder / FOLDER),
        "counts": hindex.meta["counts"],
        "llm_tokens": hindex.meta["report_usage"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, nargs="+", help="eval set folders")
    parser.add_argument("--out", default="bench-results/hirag", help="where indexes are written")
    parser.add_argument("--embedder", default="multilingual")
    args = parser.parse_args(argv)
    rows = [measure(Path(d), Path(args.out), args.embedder) for d in args.data]
    print(json.dumps(rows, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
