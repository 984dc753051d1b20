"""The graph options of treerag-kg measured on an eval set: one eval run per option value.

    python benchmarks/graph_weights.py --data ../shared/eval/lecoqa_laws --cache data/eval-cache \
        --graph-min-leaf-chars 3000 --weights 0.1,0.3 --modes within,added [--limit 40]

Each row is `treerag-kg` with one `GraphSearchOptions` change (the eval CLI sets no strategy
options); the index (with graphs) comes from the eval cache, built there when missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import EvalConfig, evaluate
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.strategies.graph.search import GraphSearchOptions
from treerag_core.strategies.graph.strategy import TreeRAGKG

METRICS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10")


MODES = {"within": False, "added": True}  # mode -> GraphSearchOptions.in_pool


def variants(
    weights: Sequence[float], modes: Sequence[str]
) -> list[tuple[str, GraphSearchOptions]]:
    """within: the graph reorders chunks inside their leaf (the default); added: its column
    is added to the order across leaves (in_pool=True)."""
    return [
        (f"{mode}, weight {w:g}", GraphSearchOptions(graph_weight=w, in_pool=MODES[mode]))
        for mode in modes
        for w in weights
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", default="data/eval-cache")
    parser.add_argument("--scope", choices=("doc", "corpus"), default="doc")
    parser.add_argument("--graph-min-leaf-chars", type=int, default=3000)
    parser.add_argument("--weights", default="0.1,0.3", help="comma-separated graph weights")
    parser.add_argument("--modes", default="within,added", help="within and/or added")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",") if w.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in MODES for m in modes):
        parser.error(f"--modes takes {', '.join(MODES)}")
    index = IndexSettings(embedder=args.embedder, graph_min_leaf_chars=args.graph_min_leaf_chars)
    base = QuerySettings().set("answer.final_top_k", 10)
    print(
        f"| {TreeRAGKG.name}, graphs from {args.graph_min_leaf_chars} | n | " + " | ".join(METRICS)
    )
    print("|---|---:|" + "---:|" * len(METRICS))
    for label, options in variants(weights, modes):
        config = EvalConfig(
            strategies=(TreeRAGKG.name,),
            scope=args.scope,
            limit=args.limit,
            index_settings=index,
            query_settings=base.with_option(TreeRAGKG.name, options),
        )
        report = evaluate(Path(args.data), config, cache_dir=Path(args.cache))
        row = report["strategies"][TreeRAGKG.name]
        values = " | ".join(f"{row[m]:.3f}" for m in METRICS)
        print(f"| {label} | {row['n_questions']} | {values} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
