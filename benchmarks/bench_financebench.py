"""FinanceBench PDFs: ingest seconds per page (convert + index), headings found, and the
page-level retrieval metrics of treerag against flat-hybrid (no LLM)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL
from treerag_core import EvalConfig, build_index, convert_upload, evaluate, get_embedder, to_source
from treerag_core.base.config import IndexSettings
from treerag_core.base.names import StrategyName
from treerag_core.evaluation import difference_table, markdown_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(EVAL / "financebench_pdf"))
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    default = f"{StrategyName.TREERAG},{StrategyName.FLAT_HYBRID}"
    parser.add_argument("--strategy", default=default)
    parser.add_argument("--max-depth", type=int, default=IndexSettings().max_depth)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    data = Path(args.data)
    settings = IndexSettings(embedder=args.embedder, max_depth=args.max_depth)
    embedder = get_embedder(settings.embedder)
    embedder.embed(["warm up"])  # model load is not ingest time

    started = time.perf_counter()
    converted = [
        convert_upload(p.name, p.read_bytes(), 100 * 1024 * 1024)
        for p in sorted((data / "pdfs").glob("*.pdf"))
    ]
    convert_s = time.perf_counter() - started
    sources = [to_source(c)[0] for c in converted]
    started = time.perf_counter()
    index = build_index(sources, settings, embedder)
    index_s = time.perf_counter() - started
    pages = sum(c.document.n_pages for c in converted)
    leaves = {d.doc_id: len(index.leaves(d.doc_id)) for d in index.documents}
    print(f"{len(converted)} PDFs, {pages} pages: convert {convert_s:.1f} s, index "
          f"{index_s:.1f} s ({settings.embedder}) = {(convert_s + index_s) / pages:.3f} s/page "
          f"(convert alone {convert_s / pages:.3f} s/page)")  # fmt: skip
    print("| document | pages | headings | leaves | chunks |")
    print("|---|---:|---:|---:|---:|")
    for c in converted:
        name = c.document.name
        n_chunks = sum(1 for ch in index.chunks if ch.doc_id == name)
        print(f"| {name} | {c.document.n_pages} | {len(c.document.headings)} | {leaves[name]} "
              f"| {n_chunks} |")  # fmt: skip
    strategies = tuple(s.strip() for s in args.strategy.split(","))
    report = evaluate(data, EvalConfig(strategies=strategies, index_settings=settings), index=index)
    print()
    print(markdown_table(report))
    print(difference_table(report))
    if args.json:
        out = {
            "pages": pages,
            "convert_seconds": convert_s,
            "index_seconds": index_s,
            "headings": {c.document.name: len(c.document.headings) for c in converted},
            "report": report,
        }
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
