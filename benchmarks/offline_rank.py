"""Score candidate orderings offline on a `dump_window_features.py` dump, with the harness's
own metric functions, so an idea costs seconds instead of a full eval run.

Each method picks one of the dumped windows (40 candidates) and an order over it; ties keep
the window's own order, as `rerank.rerank_chunks` does. Prints the means (Recall@1000c,
Recall@2000c, Hit@5, MRR@10) and, against the first method, per-question wins and losses.

    python benchmarks/offline_rank.py --data ../shared/eval/qasper feat-qasper-doc.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core.base.names import StrategyName
from treerag_core.evaluation import Passage, load_dataset, question_metrics

KEYS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10")
# A method: (question record) -> candidate positions, best first.
Method = Callable[[dict], list[int]]


def ordered(q: dict, window: str, score: Callable[[dict, list[dict]], np.ndarray]) -> list[int]:
    """The window's candidates sorted by `score` (higher first), ties in window order."""
    positions = q["windows"].get(window) or q["windows"]["structured"]
    cands = [q["candidates"][p] for p in positions]
    values = np.asarray(score(q, cands), dtype=np.float64)
    order = sorted(range(len(positions)), key=lambda i: (-values[i], i))
    return [positions[i] for i in order]


def window_order(window: str) -> Method:
    return lambda q: ordered(q, window, lambda _q, c: -np.arange(len(c)))


def by(window: str, score: Callable[[dict, list[dict]], np.ndarray]) -> Method:
    return lambda q: ordered(q, window, score)


def col(name: str) -> Callable[[dict, list[dict]], np.ndarray]:
    return lambda _q, cands: np.asarray([c[name] for c in cands], dtype=np.float64)


def ranks(values: np.ndarray) -> np.ndarray:
    """1-based rank of each value, higher first, ties in input order."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    out = np.empty(len(values))
    out[order] = np.arange(1, len(values) + 1)
    return out


def rrf(*scores: Callable[[dict, list[dict]], np.ndarray], k: int = 60):
    """Reciprocal rank fusion of several scores (the classic k = 60)."""
    return lambda q, c: sum(1.0 / (k + ranks(s(q, c))) for s in scores)


def total(*scores: Callable[[dict, list[dict]], np.ndarray]):
    return lambda q, c: sum(s(q, c) for s in scores)


def section_penalty(window: str, name: str, penalty: float = 1.0) -> Method:
    """Greedy order by `name`, each candidate losing `penalty` per passage of its section
    already placed (maximal marginal relevance by section): spreads the list over sections."""

    def method(q: dict) -> list[int]:
        left = list(q["windows"].get(window) or q["windows"]["structured"])
        cands, taken, out = q["candidates"], {}, []
        while left:
            best = max(
                range(len(left)),
                key=lambda i: (
                    cands[left[i]][name] - penalty * taken.get(cands[left[i]]["leaf"], 0),
                    -i,
                ),
            )
            pos = left.pop(best)
            out.append(pos)
            taken[cands[pos]["leaf"]] = taken.get(cands[pos]["leaf"], 0) + 1
        return out

    return method


def has_ce(q: dict) -> bool:
    return q["candidates"] and q["candidates"][0]["ce_plain"] is not None


def evaluate(data: Path, dump: Path, methods: dict[str, Method]) -> dict[str, dict[str, dict]]:
    """Per method: question id -> metrics."""
    dataset = load_dataset(data)
    questions = {q.id: q for q in dataset.usable_questions}
    records = json.loads(dump.read_text())["questions"]
    out: dict[str, dict[str, dict]] = {name: {} for name in methods}
    for rec in records:
        question = questions[rec["id"]]
        for name, method in methods.items():
            cands = rec["candidates"]
            passages = [
                Passage(cands[p]["doc"], cands[p]["start"], cands[p]["end"]) for p in method(rec)
            ]
            out[name][rec["id"]] = question_metrics(question, passages, None)
    return out


def report(results: dict[str, dict[str, dict]]) -> str:
    names = list(results)
    base = results[names[0]]
    lines = [
        "| method | n | " + " | ".join(KEYS) + " | R@2000c +/- vs first | Hit@5 +/- |",
        "|---|---:|" + "---:|" * len(KEYS) + "---|---|",
    ]
    for name in names:
        rows = results[name]
        ids = list(rows)
        means = [np.mean([rows[i].get(k, 0.0) for i in ids]) for k in KEYS]
        diff = {
            k: (
                sum(rows[i][k] > base[i][k] + 1e-9 for i in ids),
                sum(rows[i][k] < base[i][k] - 1e-9 for i in ids),
            )
            for k in ("recall@2000c", "hit@5")
        }
        lines.append(
            f"| {name} | {len(ids)} | "
            + " | ".join(f"{m:.3f}" for m in means)
            + f" | +{diff['recall@2000c'][0]}/-{diff['recall@2000c'][1]}"
            + f" | +{diff['hit@5'][0]}/-{diff['hit@5'][1]} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("dump", type=Path)
    args = parser.parse_args()
    methods: dict[str, Method] = {
        StrategyName.FLAT_HYBRID.value: window_order("flat"),
        StrategyName.FLAT_STRUCTURED.value: window_order("structured"),
        StrategyName.TREERAG.value: window_order("route2"),
    }
    first = json.loads(args.dump.read_text())["questions"][0]
    if has_ce(first):
        methods = {
            StrategyName.FLAT_HYBRID.value: by("flat", col("ce_plain")),
            f"{StrategyName.FLAT_STRUCTURED} (path CE)": by("structured", col("ce_path")),
            f"{StrategyName.TREERAG} (path CE)": by("route2", col("ce_path")),
            "structured, plain CE": by("structured", col("ce_plain")),
            "structured, plain + path CE": by("structured", total(col("ce_plain"), col("ce_path"))),
            "structured, RRF(plain, path)": by("structured", rrf(col("ce_plain"), col("ce_path"))),
            "structured, max(plain, path)": by(
                "structured", lambda q, c: np.maximum(col("ce_plain")(q, c), col("ce_path")(q, c))
            ),
            "flat window, plain + path CE": by("flat", total(col("ce_plain"), col("ce_path"))),
            "route2, plain + path CE": by("route2", total(col("ce_plain"), col("ce_path"))),
            "route2, plain CE": by("route2", col("ce_plain")),
            "structured, no CE": window_order("structured"),
            "structured, RRF(plain CE, fused)": by(
                "structured", rrf(col("ce_plain"), col("fused_struct"))
            ),
            "structured, RRF(path CE, fused)": by(
                "structured", rrf(col("ce_path"), col("fused_struct"))
            ),
            "structured, RRF(plain, path, fused)": by(
                "structured", rrf(col("ce_plain"), col("ce_path"), col("fused_struct"))
            ),
            "flat, RRF(plain CE, fused)": by("flat", rrf(col("ce_plain"), col("fused_flat"))),
            "structured, path CE, -1 logit per passage of its section placed": section_penalty(
                "structured", "ce_path"
            ),
            "route2, path CE, -1 logit per passage of its section placed": section_penalty(
                "route2", "ce_path"
            ),
        }
        if first["candidates"][0].get("ce_heading") is not None:  # dumps since the heading reading
            methods |= {
                "structured, plain CE + heading-alone CE": by(
                    "structured", total(col("ce_plain"), col("ce_heading"))
                ),
                "structured, RRF(plain, path, heading alone)": by(
                    "structured", rrf(col("ce_plain"), col("ce_path"), col("ce_heading"))
                ),
            }
    print(report(evaluate(args.data, args.dump, methods)))
