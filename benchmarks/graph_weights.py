"""treerag-kg's graph options measured on an eval set: one eval run per option value.

    python benchmarks/graph_weights.py --data ../shared/eval/lecoqa_laws --cache data/eval-cache \
        --graph-min-leaf-chars 3000 --weights 0.1,0.3 --out-of-pool [--limit 40]

Each row is `treerag-kg` with one `GraphSearchOptions` change (the eval CLI sets no strategy
options); the index (with graphs) comes from the eval cache, built there when missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python benchmarks/graph_weights.py` from anywhere
    sys.path.insert(0, str(REPO))

from treerag_core.config import IndexSettings  # noqa: E402
from treerag_core.evaluation.harness import EvalConfig, evaluate  # noqa: E402
from treerag_core.graph.search import GraphSearchOptions  # noqa: E402
from treerag_core.settings import QuerySettings  # noqa: E402

METRICS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10")


def variants(weights: Sequence[float], out_of_pool: bool) -> list[tuple[str, GraphSearchOptions]]:
    rows = [(f"graph weight {w:g}", GraphSearchOptions(graph_weight=w)) for w in weights]
    if out_of_pool:
        rows.append(("graph out of the order (in_pool=False)", GraphSearchOptions(in_pool=False)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", default="data/eval-cache")
    parser.add_argument("--scope", choices=("doc", "corpus"), default="doc")
    parser.add_argument("--graph-min-leaf-chars", type=int, default=3000)
    parser.add_argument("--weights", default="0.1,0.3", help="comma-separated graph weights")
    parser.add_argument("--out-of-pool", action="store_true", help="also in_pool=False")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",") if w.strip()]
    index = IndexSettings(embedder=args.embedder, graph_min_leaf_chars=args.graph_min_leaf_chars)
    base = QuerySettings().set("answer.final_top_k", 10)
    print(f"| treerag-kg, graphs from {args.graph_min_leaf_chars} | n | " + " | ".join(METRICS))
    print("|---|---:|" + "---:|" * len(METRICS))
    for label, options in variants(weights, args.out_of_pool):
        config = EvalConfig(
            strategies=("treerag-kg",),
            scope=args.scope,
            limit=args.limit,
            index_settings=index,
            query_settings=base.with_option("treerag-kg", options),
        )
        report = evaluate(Path(args.data), config, cache_dir=Path(args.cache))
        row = report["strategies"]["treerag-kg"]
        values = " | ".join(f"{row[m]:.3f}" for m in METRICS)
        print(f"| {label} | {row['n_questions']} | {values} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
