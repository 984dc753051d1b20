"""Two eval reports side by side (in-process vs Milvus), differences in points.

    python -m treerag_core eval --data ../shared/eval/qasper \
        --strategy treerag,flat-hybrid,drilldown --scope doc --out a.json
    python -m treerag_core eval ... --out b.json --vector-store milvus --milvus-uri data/m.db
    python benchmarks/milvus_eval_compare.py a.json b.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

METRICS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10", "section_hit@5")
BOUND = 0.5  # points: the bound for "the same tables"


def compare(left: dict, right: dict) -> list[str]:
    """Markdown rows: each strategy, each metric as `in-process / Milvus (diff)`."""
    head = ["strategy", *METRICS]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(METRICS)]
    for name, ours in left["strategies"].items():
        theirs = right["strategies"].get(name, {})
        cells = []
        for metric in METRICS:
            a, b = ours.get(metric), theirs.get(metric)
            if a is None or b is None:
                cells.append("—")
                continue
            diff = 100 * (b - a)
            mark = "**" if abs(diff) > BOUND else ""
            cells.append(f"{a:.3f} / {b:.3f} ({diff:+.1f}){mark}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def same_order(left: dict, right: dict) -> list[str]:
    """Per strategy, how many questions got other passages or sections (ids, in order): the
    metrics can agree while the rankings under them differ."""
    lines = []
    for name, records in left["questions"].items():
        theirs = {r["id"]: r for r in right["questions"].get(name, [])}
        differ = 0
        for record in records:
            other = theirs.get(record["id"], {})
            for key, item in (("top", "chunk_id"), ("picked", "node_id")):
                ours_ids = [x[item] for x in record.get(key) or []]
                if ours_ids != [x[item] for x in other.get(key) or []]:
                    differ += 1
                    break
        lines.append(f"{name}: {differ} of {len(records)} questions ranked otherwise")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("in_process", help="the eval report run in process")
    parser.add_argument("milvus", help="the same eval with --vector-store milvus")
    args = parser.parse_args(argv)
    left = json.loads(Path(args.in_process).read_text(encoding="utf-8"))
    right = json.loads(Path(args.milvus).read_text(encoding="utf-8"))
    n = len(next(iter(left["questions"].values()), []))  # per strategy: one record a question
    print(f"{left['dataset']}, {left['scope']} scope, {n} questions; in-process / Milvus")
    print(f"(points of difference; ** beyond {BOUND})")
    print("\n".join(compare(left, right)))
    print("\n".join(same_order(left, right)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
