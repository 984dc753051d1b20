"""Where leaf graphs can act: eval report means over question subsets (long leaves, multi-section).

    python benchmarks/graph_subsets.py --data ../shared/eval/lecoqa_laws \
        --report laws-3000.json [--report laws-1500.json ...] --cache data/eval-cache \
        --graph-min-leaf-chars 3000

Subsets, from the gold evidence mapped to the leaves of the set's index:
- gold in a long leaf: an evidence lies in a leaf of at least the threshold (one with a graph);
- gold elsewhere: the other questions;
- gold in 2+ sections: evidences in two or more leaves (the nearest thing to multi-hop
  questions these dev sets hold: neither is labelled multi-hop);
- 2+ evidences in one long leaf: where the graph's links between paragraphs could matter.
Each report row is labelled by its strategy and the threshold its index was built with.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import CorpusIndex, dataset_index
from treerag_core.evaluation import EvalQuestion, load_dataset
from treerag_core.evaluation.analysis import report_index_settings
from treerag_core.strategies.graph.strategy import TreeRAGKG

METRICS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10")
SUBSETS = ("all", "gold in long leaf", "gold elsewhere", "gold in 2+ sections", "2+ in a long leaf")


def evidence_leaves(index: CorpusIndex, question: EvalQuestion) -> list[list[str]]:
    """Per gold evidence, the leaves its span overlaps."""
    out = []
    for evidence in question.evidences:
        out.append(
            [
                leaf.node_id
                for leaf in index.leaves(evidence.doc)
                if leaf.start < evidence.end and evidence.start < leaf.end
            ]
        )
    return out


def subsets_of(index: CorpusIndex, question: EvalQuestion, min_chars: int) -> set[str]:
    """The subsets a question belongs to."""
    per_evidence = evidence_leaves(index, question)
    leaves = {leaf for group in per_evidence for leaf in group}

    def long(leaf: str) -> bool:
        node = index.nodes[leaf]
        return node.end - node.start >= min_chars and len(index.leaf_rows(leaf)) > 0

    names = {"all"}
    names.add("gold in long leaf" if any(long(x) for x in leaves) else "gold elsewhere")
    if len(leaves) >= 2:
        names.add("gold in 2+ sections")
    counts: dict[str, int] = {}
    for group in per_evidence:
        for leaf in set(group):
            counts[leaf] = counts.get(leaf, 0) + 1
    if any(n >= 2 and long(leaf) for leaf, n in counts.items()):
        names.add("2+ in a long leaf")
    return names


def subset_means(
    report: Mapping, membership: Mapping[str, set[str]]
) -> dict[str, dict[str, tuple[int, dict[str, float]]]]:
    """strategy -> subset -> (n, {metric: mean})."""
    out: dict[str, dict[str, tuple[int, dict[str, float]]]] = {}
    for strategy, records in report["questions"].items():
        rows: dict[str, list[Mapping[str, float]]] = {s: [] for s in SUBSETS}
        for rec in records:
            for name in membership.get(str(rec["id"]), ()):
                rows[name].append(rec["metrics"])
        out[strategy] = {
            name: (
                len(recs),
                {m: sum(r.get(m, 0.0) for r in recs) / len(recs) if recs else 0.0 for m in METRICS},
            )
            for name, recs in rows.items()
        }
    return out


def table(rows: Sequence[tuple[str, str, tuple[int, dict[str, float]]]]) -> str:
    head = "| strategy (graphs from) | subset | n | " + " | ".join(METRICS) + " |"
    lines = [head, "|---|---|---:|" + "---:|" * len(METRICS)]
    for label, subset, (n, means) in rows:
        values = " | ".join(f"{means[m]:.3f}" for m in METRICS)
        lines.append(f"| {label} | {subset} | {n} | {values} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--report", action="append", required=True, help="an eval --out JSON")
    parser.add_argument("--cache", default="data/eval-cache")
    parser.add_argument("--graph-min-leaf-chars", type=int, default=3000, help="long leaf")
    args = parser.parse_args(argv)
    dataset = load_dataset(Path(args.data))
    reports = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.report]
    plain = replace(report_index_settings(reports[0], "multilingual"), graph_min_leaf_chars=0)
    index = dataset_index(dataset, plain, Path(args.cache))
    membership = {
        q.id: subsets_of(index, q, args.graph_min_leaf_chars) for q in dataset.usable_questions
    }
    rows = []
    for report in reports:
        built = report["settings"]["index"].get("graph_min_leaf_chars", 0)
        for strategy, subsets in subset_means(report, membership).items():
            label = f"{strategy} ({built})" if strategy == TreeRAGKG.name else strategy
            rows.extend((label, name, subsets[name]) for name in SUBSETS)
    rows.sort(key=lambda r: (SUBSETS.index(r[1]), r[0]))
    print(f"long leaf: >= {args.graph_min_leaf_chars} characters; {dataset.name}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
