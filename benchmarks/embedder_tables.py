"""Dev tables for two embedders from eval reports: means, and paired 95% intervals.

For each (dataset, scope) pair of reports, one run per embedder on the same questions
(`python -m treerag_core eval --data ../shared/eval/<set> --scope doc|corpus --strategy
flat-hybrid,flat-structured,treerag --embedder <name> --out <set>-<name>-<scope>.json`):

- each strategy's means under each embedder;
- within each run, the strategy minus flat-hybrid (the interval `eval` keeps in the report);
- across the runs, the same strategy's paired difference (second embedder minus first).

    python benchmarks/embedder_tables.py --embedders multilingual,e5 FOLDER

Intervals are the harness's paired bootstrap (treerag_core.evaluation.intervals): a gain
counts only when its interval excludes zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core.base.names import StrategyName
from treerag_core.evaluation.intervals import Interval, paired_difference_interval

METRICS = ("recall@1000c", "recall@2000c", "hit@5")
STRATEGIES = tuple(
    s.value for s in (StrategyName.FLAT_HYBRID, StrategyName.FLAT_STRUCTURED, StrategyName.TREERAG)
)
BASELINE = StrategyName.FLAT_HYBRID.value


def per_question(report: dict[str, Any], strategy: str) -> dict[str, dict[str, float]]:
    return {str(r["id"]): r.get("metrics") or {} for r in report["questions"].get(strategy, [])}


def cross_interval(a: dict[str, Any], b: dict[str, Any], strategy: str, metric: str) -> Interval:
    """`strategy`'s metric in run b minus run a, paired over the questions both have."""
    mine, theirs = per_question(b, strategy), per_question(a, strategy)
    shared = [q for q in mine if q in theirs and metric in mine[q] and metric in theirs[q]]
    return paired_difference_interval(
        [float(mine[q][metric]) for q in shared], [float(theirs[q][metric]) for q in shared]
    )


def cell(interval: Interval | dict[str, float]) -> str:
    """`+1.2 [−0.4, +2.9]` in points; bold when the interval excludes zero."""
    if isinstance(interval, dict):
        mean, low, high = interval["mean"], interval["low"], interval["high"]
    else:
        mean, low, high = interval.mean, interval.low, interval.high
    text = f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
    return f"**{text}**" if low > 0 or high < 0 else text


def means(report: dict[str, Any], strategy: str) -> str:
    row = report["strategies"].get(strategy, {})
    return " / ".join(f"{row[m]:.3f}" if m in row else "—" for m in METRICS)


def table(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str]) -> list[str]:
    first, second = names
    n = len(a["questions"].get(BASELINE, []))
    lines = [
        f"**{a['dataset']}, {a['scope']} scope ({n} questions)**; means are " + " / ".join(METRICS),
        "",
        f"| strategy | {first} | {second} | "
        + " | ".join(f"{second} − {first}, {m}" for m in METRICS)
        + " |",
        "|---|---|---|" + "---|" * len(METRICS),
    ]
    for strategy in STRATEGIES:
        if strategy not in a["strategies"] or strategy not in b["strategies"]:
            continue
        crosses = [cell(cross_interval(a, b, strategy, m)) for m in METRICS]
        lines.append(
            f"| {strategy} | {means(a, strategy)} | {means(b, strategy)} | "
            + " | ".join(crosses)
            + " |"
        )
    lines += ["", f"| within the run: − {BASELINE} | metric | {first} | {second} |"]
    lines.append("|---|---|---|---|")
    for strategy in STRATEGIES[1:]:
        for metric in METRICS:
            got = [
                (r.get("differences") or {}).get(strategy, {}).get(BASELINE, {}).get(metric)
                for r in (a, b)
            ]
            if all(got):
                lines.append(f"| {strategy} | {metric} | {cell(got[0])} | {cell(got[1])} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="holds <set>-<embedder>-<scope>.json reports")
    parser.add_argument("--embedders", default="multilingual,e5")
    args = parser.parse_args(argv)
    names = args.embedders.split(",")
    if len(names) != 2 or not all(names):
        parser.error(f"--embedders takes two names, comma-separated (got {args.embedders!r})")
    first, second = names
    folder = Path(args.folder)
    for path in sorted(folder.glob(f"*-{first}-*.json")):
        other = path.with_name(path.name.replace(f"-{first}-", f"-{second}-"))
        if not other.is_file():
            print(f"(no {other.name}: {path.name} has no pair)\n")
            continue
        a = json.loads(path.read_text(encoding="utf-8"))
        b = json.loads(other.read_text(encoding="utf-8"))
        print("\n".join(table(a, b, (first, second))) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
