"""The keyless answer on the dev sets: does its first sentence hold the gold evidence, and is
its "not answered" verdict right? Against the previous three-quote answer, same retrieval."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python benchmarks/bench_extractive.py` from anywhere
    sys.path.insert(0, str(REPO))

from treerag_core.config import IndexSettings, data_dir  # noqa: E402
from treerag_core.evaluation.dataset import EvalQuestion, load_dataset  # noqa: E402
from treerag_core.evaluation.harness import dataset_index  # noqa: E402
from treerag_core.evaluation.metrics import Passage, hits  # noqa: E402
from treerag_core.pipeline import Engine, run  # noqa: E402
from treerag_core.settings import QuerySettings  # noqa: E402
from treerag_core.synthesis import extract  # noqa: E402
from treerag_core.text_rules import sentence_spans  # noqa: E402
from treerag_core.types import RetrievedChunk  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "eval"
THRESHOLDS = [round(t, 2) for t in np.arange(0.10, 0.62, 0.02)]


def three_quotes_first(
    question_vector: np.ndarray, hit_list: Sequence[RetrievedChunk], embed_many
) -> tuple[str, int, int] | None:
    """(doc, start, end) of the first quote of the previous keyless answer: the passage-local
    sentences of the top 3 passages ranked by cosine alone (kept here only to compare)."""
    cands = []
    for hit in hit_list[:3]:
        text = hit.chunk.text
        for s, e in sentence_spans(text) or [(0, len(text))]:
            if len(text[s:e].strip()) >= 12:
                cands.append(
                    (text[s:e], hit.chunk.doc_id, hit.chunk.start + s, hit.chunk.start + e)
                )
    if not cands:
        return None
    sims = embed_many([c[0] for c in cands]) @ question_vector.astype(np.float32)
    best = cands[int(np.argmax(sims))]
    return best[1], best[2], best[3]


def holds_gold(span: tuple[str, int, int] | None, question: EvalQuestion) -> bool:
    if span is None:
        return False
    passage = Passage(*span)
    return any(hits(passage, ev) for ev in question.evidences)


def retrieved_gold(trace, question: EvalQuestion) -> bool:
    spans = [Passage(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in trace.reranked]
    return any(hits(p, ev) for p in spans for ev in question.evidences)


def score_questions(
    engine: Engine, questions: Sequence[EvalQuestion], settings: QuerySettings, scope_own: bool
) -> list[dict[str, Any]]:
    embed_many = lambda texts: engine.embedder.embed(list(texts))  # noqa: E731
    rows = []
    for q in questions:
        scope = list(q.docs) if scope_own else None
        trace = run(engine, q.question, settings, scope=scope, synthesize=False)
        qvec = engine.query_vector(q.question)
        result = extract(q.question, qvec, trace.reranked, embed_many, engine.index.texts, 0.0)
        first = result.sentences[0] if result.sentences else None
        rows.append(
            {
                "id": q.id,
                "best": result.best.score if result.best else 0.0,
                "new_first_gold": holds_gold((first.doc, first.start, first.end), q)
                if first
                else False,
                "old_first_gold": holds_gold(
                    three_quotes_first(qvec, trace.reranked, embed_many), q
                ),
                "retrieved_gold": retrieved_gold(trace, q) if q.evidences else False,
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=60, help="questions per set")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--sets", nargs="+", default=["qasper", "gitlab_handbook"], help="dev sets to score"
    )
    args = parser.parse_args(argv)
    settings = QuerySettings().set("llm.enabled", False)
    index_settings = IndexSettings(embedder=args.embedder)
    cache = Path(data_dir()) / "eval-cache"
    sets = {}
    for name in args.sets:
        data = load_dataset(args.data / name)
        index = dataset_index(data, index_settings, cache)
        from treerag_core.embedders import get_embedder

        engine = Engine(index=index, embedder=get_embedder(args.embedder))
        sets[name] = (data, engine)
    positives: list[dict[str, Any]] = []
    negatives: list[dict[str, Any]] = []
    per_set = {}
    for name, (data, engine) in sets.items():
        usable = list(data.usable_questions[: args.limit])
        rows = score_questions(engine, usable, settings, scope_own=True)
        positives += [dict(r, set=name) for r in rows]
        per_set[name] = rows
        unanswerable = [q for q in data.questions if q.unanswerable]
        negatives += [
            dict(r, set=f"{name}:unanswerable")
            for r in score_questions(engine, unanswerable, settings, scope_own=True)
        ]
    # Off-topic: each set's questions asked of another set's documents (same language first).
    pairs = [("qasper", "gitlab_handbook"), ("gitlab_handbook", "qasper")]
    pairs = [(a, b) for a, b in pairs if a in sets and b in sets]
    for asked, docs in pairs:
        questions = list(sets[asked][0].usable_questions[: args.limit // 2])
        rows = score_questions(sets[docs][1], questions, settings, scope_own=False)
        negatives += [dict(r, set=f"{asked}->{docs}") for r in rows]
    pos_found = [r for r in positives if r["retrieved_gold"]]

    def accuracy(t: float) -> dict[str, float]:
        tp = sum(r["best"] >= t for r in pos_found) / max(1, len(pos_found))
        tn = sum(r["best"] < t for r in negatives) / max(1, len(negatives))
        return {"answered_when_gold_retrieved": tp, "not_answered_when_off_topic": tn}

    table = {t: accuracy(t) for t in THRESHOLDS}
    best_t = max(THRESHOLDS, key=lambda t: sum(table[t].values()))
    report = {
        "embedder": args.embedder,
        "n_positive": len(positives),
        "n_positive_gold_retrieved": len(pos_found),
        "n_negative": len(negatives),
        "negatives_by_kind": {
            k: sum(r["set"] == k for r in negatives) for k in {r["set"] for r in negatives}
        },
        "first_sentence_holds_gold": {
            name: {
                "new": float(np.mean([r["new_first_gold"] for r in rows])) if rows else 0.0,
                "three_quotes": float(np.mean([r["old_first_gold"] for r in rows]))
                if rows
                else 0.0,
                "gold_retrieved": float(np.mean([r["retrieved_gold"] for r in rows]))
                if rows
                else 0.0,
                "n": len(rows),
            }
            for name, rows in per_set.items()
        },
        "best_threshold": best_t,
        "at_best": table[best_t],
        "thresholds": {str(t): v for t, v in table.items()},
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
