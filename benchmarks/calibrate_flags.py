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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core.config import IndexSettings, QuerySettings
from treerag_core.embedders import get_embedder
from treerag_core.evaluation.dataset import load_dataset
from treerag_core.evaluation.harness import dataset_index
from treerag_core.flags import evidence_scores
from treerag_core.pipeline import Engine, run

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=60)
    args = parser.parse_args()
    settings = IndexSettings()
    embedder = get_embedder(settings.embedder)
    sets = {n: load_dataset(args.eval / n) for n in {p[0] for p in PAIRS} | {p[1] for p in PAIRS}}
    engines = {
        n: Engine(index=dataset_index(d, settings, args.cache), embedder=embedder)
        for n, d in sets.items()
    }
    query = QuerySettings(use_llm=False, final_top_k=10)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
