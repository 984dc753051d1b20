"""Calibrate `flags.evidence_is_weak`: evidence scores of in-scope vs out-of-scope questions.

In scope: a dev set's answerable questions asked of that set's own corpus. Out of scope: the
questions of another set asked of it (and QASPER's unanswerable ones of their own corpus).
No LLM is called (local locator, extractive answer skipped). Usage:

    python benchmarks/calibrate_flags.py --eval ../shared/eval --cache data/eval-cache \
        --out bench-results/flags.json [--limit 60]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import Engine, dataset_index, get_embedder, run
from treerag_core.answer.flags import WEAK_DENSE_COSINE, WEAK_RERANK_LOGIT, evidence_scores
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation import load_dataset

# (questions from, asked of the corpus of, in scope?)
PAIRS = (
    ("qasper", "qasper", True),
    ("gitlab_handbook", "gitlab_handbook", True),
    ("lecoqa_laws", "lecoqa_laws", True),
    ("gitlab_handbook", "qasper", False),
    ("lecoqa_laws", "qasper", False),
    ("qasper", "gitlab_handbook", False),
    ("qasper", "lecoqa_laws", False),
)


def best_threshold(rows: list[dict], key: str) -> tuple[float, float]:
    """The threshold on `key` (weak below it) with the best balanced accuracy, and that value."""
    usable = [r for r in rows if r.get(key) is not None]
    best = (0.0, 0.0)
    for cut in sorted({r[key] for r in usable}):
        inside = [r[key] >= cut for r in usable if r["in_scope"]]
        outside = [r[key] < cut for r in usable if not r["in_scope"]]
        if inside and outside:
            score = (sum(inside) / len(inside) + sum(outside) / len(outside)) / 2
            if score > best[1]:
                best = (cut, score)
    return best


def verdict_table(rows: list[dict], rerank_cut: float, dense_cut: float) -> list[str]:
    """How often `evidence_is_weak` with these thresholds is right, per pair of sets."""
    out = ["| questions -> corpus | in scope | n | verdict right |", "|---|---|---:|---:|"]
    groups: dict[tuple, list[bool]] = {}
    for r in rows:
        if r["top_rerank"] is not None:
            weak = r["top_rerank"] < rerank_cut
        else:
            weak = r["top_dense"] is None or r["top_dense"] < dense_cut
        groups.setdefault((r["from"], r["corpus"], r["in_scope"]), []).append(weak != r["in_scope"])
    for (src, corpus, inside), right in groups.items():
        share = sum(right) / len(right)
        out.append(f"| {src} -> {corpus} | {inside} | {len(right)} | {share:.2f} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--analyse", action="store_true", help="only analyse an earlier --out")
    args = parser.parse_args()
    if args.analyse:
        return analyse(json.loads(args.out.read_text(encoding="utf-8")))
    settings = IndexSettings()
    embedder = get_embedder(settings.embedder)
    sets = {n: load_dataset(args.eval / n) for n in {p[0] for p in PAIRS} | {p[1] for p in PAIRS}}
    engines = {
        n: Engine(index=dataset_index(d, settings, args.cache), embedder=embedder)
        for n, d in sets.items()
    }
    query = QuerySettings().set("llm.enabled", False).set("answer.final_top_k", 10)
    rows = []
    for source, corpus, in_scope in PAIRS:
        questions = list(sets[source].questions)
        if in_scope:
            unanswerable = [q for q in questions if q.unanswerable]
            answerable = [q for q in questions if q.left_out_reason is None]
            picked = [(q, True) for q in answerable[: args.limit]] + [
                (q, False) for q in unanswerable
            ]
        else:
            picked = [(q, False) for q in questions[: args.limit]]
        for q, label in picked:
            trace = run(engines[corpus], q.question, query, synthesize=False)
            rows.append(
                {
                    "from": source,
                    "corpus": corpus,
                    "id": q.id,
                    "in_scope": label,
                    "language": trace.language,
                    **evidence_scores(trace.reranked, trace.candidates),
                }
            )
        print(f"{source} -> {corpus}: {len(picked)} questions", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return analyse(rows)


def analyse(rows: list[dict]) -> int:
    reranked = [r for r in rows if r["top_rerank"] is not None]
    plain = [r for r in rows if r["top_rerank"] is None]
    rerank_cut, rerank_acc = best_threshold(reranked, "top_rerank")
    dense_cut, dense_acc = best_threshold(plain, "top_dense")
    print(
        f"rerank logit cut {rerank_cut:.3f}: balanced accuracy {rerank_acc:.3f} ({len(reranked)})"
    )
    print(f"dense cosine cut {dense_cut:.3f}: balanced accuracy {dense_acc:.3f} ({len(plain)})")
    print("\n".join(verdict_table(rows, WEAK_RERANK_LOGIT, WEAK_DENSE_COSINE)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
