"""The keyless answer on the dev sets: does its first sentence hold the gold evidence, and is
its "not answered" verdict right? Against the previous three-quote answer, same retrieval.

One run scores the new answer and the previous one on the same questions and the same traces
(QASPER and the GitLab handbook in English, the LeCoQA laws in Chinese), then calibrates the
"not answered" threshold per question language. Usage:

    python benchmarks/bench_extractive.py --cache data/eval-cache [--limit 40] \
        [--out bench-results/extractive.json] [--rows bench-results/extractive-rows.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import add_dev_set_arguments, dev_engines, scored_sentences
from treerag_core import Engine, question_flags, run
from treerag_core.answer.flags import NOT_ANSWERED_SCORE
from treerag_core.answer.synthesis import choose_sentences
from treerag_core.base.settings import QuerySettings
from treerag_core.base.text_rules import sentence_spans
from treerag_core.base.types import RetrievedChunk
from treerag_core.evaluation import EvalQuestion, Passage, hits

THRESHOLDS = [round(float(t), 2) for t in np.arange(0.10, 0.72, 0.02)]
# Off-set questions: each set's questions asked of another set's whole corpus.
OFF_SET = (
    ("qasper", "gitlab_handbook"),
    ("gitlab_handbook", "qasper"),
    ("lecoqa_laws", "qasper"),
    ("lecoqa_laws", "gitlab_handbook"),
    ("qasper", "lecoqa_laws"),
    ("gitlab_handbook", "lecoqa_laws"),
)
# Wrong-document questions: a set's question asked of another document of the same set (the
# next one in the set's order), a same-language negative. Not for QASPER: its questions
# rarely name their paper ("Which datasets do they evaluate on?"), so another paper answers.
WRONG_DOC_SETS = ("gitlab_handbook", "lecoqa_laws")


def three_quotes(
    question_vector: np.ndarray, hit_list: Sequence[RetrievedChunk], embed_many
) -> list[tuple[str, str, int, int]]:
    """(text, doc, start, end) of the previous keyless answer's quotes, in its order: the
    passage-local sentences of the top 3 passages, the 3 best by cosine alone (kept here only
    to compare)."""
    cands = []
    for hit in hit_list[:3]:
        text = hit.chunk.text
        for s, e in sentence_spans(text) or [(0, len(text))]:
            if len(text[s:e].strip()) >= 12:
                cands.append(
                    (text[s:e], hit.chunk.doc_id, hit.chunk.start + s, hit.chunk.start + e)
                )
    if not cands:
        return []
    sims = embed_many([c[0] for c in cands]) @ question_vector.astype(np.float32)
    return [cands[i] for i in sorted(range(len(cands)), key=lambda i: -float(sims[i]))[:3]]


def holds_gold(span: tuple[str, int, int] | None, question: EvalQuestion) -> bool:
    if span is None:
        return False
    passage = Passage(*span)
    return any(hits(passage, ev) for ev in question.evidences)


def retrieved_gold(trace, question: EvalQuestion, top: int | None = None) -> bool:
    spans = [Passage(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in trace.reranked[:top]]
    return any(hits(p, ev) for p in spans for ev in question.evidences)


def score_question(
    engine: Engine, q: EvalQuestion, settings: QuerySettings, scope: list[str] | None
) -> dict[str, Any]:
    """One question through the pipeline (no LLM), both keyless answers read off one trace."""
    embed_many = lambda texts: engine.embedder.embed(list(texts))  # noqa: E731
    trace = run(engine, q.question, settings, scope=scope, synthesize=False)
    scored = scored_sentences(engine, q.question, trace)
    # The selection alone (no verdict: the three quotes never refused), then the answer as
    # shipped (the verdict and the bar for further sentences at the language's threshold).
    result = choose_sentences(scored, 0.0)
    shipped = choose_sentences(scored, NOT_ANSWERED_SCORE[trace.language])
    # The previous rule, every top passage speaking (passages the cross-encoder judged
    # off-topic included), on the same trace.
    scored_all = scored_sentences(engine, q.question, trace, speaking_only=False)
    shipped_all = choose_sentences(scored_all, NOT_ANSWERED_SCORE[trace.language])
    first = result.sentences[0] if result.sentences else None
    quotes = three_quotes(engine.query_vector(q.question), trace.reranked, embed_many)

    def gold(s) -> bool:
        return holds_gold((s.doc, s.start, s.end), q)

    return {
        "id": q.id,
        "question": q.question,
        "language": trace.language,
        "best": result.best.score if result.best else 0.0,
        "flag_out_of_scope": question_flags(trace).out_of_scope,
        "new_first_gold": bool(first and gold(first)),
        "new_any_gold": any(gold(s) for s in result.sentences),
        "shipped_first_gold": bool(shipped.sentences and gold(shipped.sentences[0])),
        "shipped_any_gold": any(gold(s) for s in shipped.sentences),
        "shipped_sentences": len(shipped.sentences),
        "shipped_gold_sentences": sum(gold(s) for s in shipped.sentences),
        "all_passages_best": shipped_all.best.score if shipped_all.best else 0.0,
        "all_passages_any_gold": any(gold(s) for s in shipped_all.sentences),
        "all_passages_sentences": len(shipped_all.sentences),
        "all_passages_gold_sentences": sum(gold(s) for s in shipped_all.sentences),
        "best_scored_gold": bool(scored and gold(scored[0])),
        "old_first_gold": bool(quotes) and holds_gold(quotes[0][1:], q),
        "old_any_gold": any(holds_gold(quote[1:], q) for quote in quotes),
        "top_passage_gold": retrieved_gold(trace, q, 1) if q.evidences else False,
        "retrieved_gold": retrieved_gold(trace, q) if q.evidences else False,
        "new_first": first.text[:300] if first else "",
        "new_first_scores": [round(first.meaning, 3), round(first.overlap, 3)] if first else [],
        "old_first": quotes[0][0][:300] if quotes else "",
        "gold": q.evidences[0].text[:300] if q.evidences else "",
    }


def wrong_doc(doc_names: Sequence[str], own: Sequence[str]) -> str | None:
    """The document after the question's own in the set's order (cyclic), not one of its own;
    None when the set has no other."""
    names = list(doc_names)
    start = names.index(own[0]) if own and own[0] in names else 0
    for step in range(1, len(names) + 1):
        name = names[(start + step) % len(names)]
        if name not in own:
            return name
    return None


def share(rows: Sequence[dict[str, Any]], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else 0.0


def verdict(
    positives: Sequence[dict[str, Any]], negatives: Sequence[dict[str, Any]], t: float
) -> dict[str, float]:
    """Answered when the gold was retrieved, refused when the question is not answerable here."""
    answered = sum(r["best"] >= t for r in positives) / max(1, len(positives))
    refused = sum(r["best"] < t for r in negatives) / max(1, len(negatives))
    return {
        "answered_when_gold_retrieved": round(answered, 3),
        "refused_when_not_answerable": round(refused, 3),
        "balanced": round((answered + refused) / 2, 3),
    }


def best_threshold(positives: Sequence[dict], negatives: Sequence[dict]) -> float:
    """The threshold with the best balanced accuracy; when several tie, the middle one (the
    widest margin on both sides)."""
    balanced = {t: verdict(positives, negatives, t)["balanced"] for t in THRESHOLDS}
    top = max(balanced.values())
    tied = [t for t in THRESHOLDS if balanced[t] == top]
    return tied[(len(tied) - 1) // 2]


def calibrate(positives: list[dict], negatives: list[dict]) -> dict[str, Any]:
    """Every threshold's verdict, the one with the best balanced accuracy, and that choice
    checked out of sample (chosen on the even rows, scored on the odd ones and vice versa)."""
    table = {t: verdict(positives, negatives, t) for t in THRESHOLDS}
    best = best_threshold(positives, negatives)
    halves = []
    for k in (0, 1):
        t = best_threshold(positives[k::2], negatives[k::2])
        halves.append((t, verdict(positives[1 - k :: 2], negatives[1 - k :: 2], t)["balanced"]))
    return {
        "n_positive_gold_retrieved": len(positives),
        "n_negative": len(negatives),
        "best_threshold": best,
        "at_best": table[best],
        "held_out_balanced": [{"threshold": t, "balanced": b} for t, b in halves],
        "thresholds": {str(t): v for t, v in table.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dev_set_arguments(parser)
    parser.add_argument("--out", type=Path, default=None, help="the summary as JSON")
    parser.add_argument("--rows", type=Path, default=None, help="one JSON line per question")
    parser.add_argument(
        "--sets",
        nargs="+",
        default=["qasper", "gitlab_handbook", "lecoqa_laws"],
        help="dev sets to score",
    )
    args = parser.parse_args(argv)
    settings = QuerySettings().set("llm.enabled", False)
    sets = dev_engines(args.data, args.sets, args.embedder, args.cache)
    rows: list[dict[str, Any]] = []
    for name, (data, engine) in sets.items():
        for q in data.usable_questions[: args.limit]:
            rows.append(
                dict(score_question(engine, q, settings, list(q.docs)), kind="own", set=name)
            )
        for q in (q for q in data.questions if q.unanswerable):
            row = score_question(engine, q, settings, list(q.docs))
            rows.append(dict(row, kind="unanswerable", set=f"{name}:unanswerable"))
        print(f"{name}: done", file=sys.stderr)
    for name in (n for n in WRONG_DOC_SETS if n in sets):
        data, engine = sets[name]
        for q in data.usable_questions[: args.limit // 2]:
            other = wrong_doc(data.doc_names, q.docs)
            if other is not None:
                row = score_question(engine, q, settings, [other])
                rows.append(dict(row, kind="wrong-doc", set=f"{name}:wrong-doc"))
        print(f"{name} wrong doc: done", file=sys.stderr)
    for asked, corpus in ((a, c) for a, c in OFF_SET if a in sets and c in sets):
        for q in sets[asked][0].usable_questions[: args.limit // 2]:
            row = score_question(sets[corpus][1], q, settings, None)
            rows.append(dict(row, kind="off-set", set=f"{asked}->{corpus}"))
        print(f"{asked} -> {corpus}: done", file=sys.stderr)
    if args.rows:
        args.rows.parent.mkdir(parents=True, exist_ok=True)
        args.rows.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    own = {name: [r for r in rows if r["kind"] == "own" and r["set"] == name] for name in sets}
    report: dict[str, Any] = {
        "embedder": args.embedder,
        "first_sentence_holds_gold": {
            name: {
                "n": len(rs),
                "new": share(rs, "new_first_gold"),
                "three_quotes": share(rs, "old_first_gold"),
                "new_any_sentence": share(rs, "new_any_gold"),
                "three_quotes_any_sentence": share(rs, "old_any_gold"),
                "shipped_first": share(rs, "shipped_first_gold"),
                "shipped_any_sentence": share(rs, "shipped_any_gold"),
                "shipped_sentences_mean": share(rs, "shipped_sentences"),
                "shipped_gold_sentences_mean": share(rs, "shipped_gold_sentences"),
                "all_passages_any_sentence": share(rs, "all_passages_any_gold"),
                "all_passages_sentences_mean": share(rs, "all_passages_sentences"),
                "all_passages_gold_sentences_mean": share(rs, "all_passages_gold_sentences"),
                "best_scored_sentence": share(rs, "best_scored_gold"),
                "gold_in_top_passage": share(rs, "top_passage_gold"),
                "gold_retrieved": share(rs, "retrieved_gold"),
            }
            for name, rs in own.items()
        },
        "not_answered": {},
    }
    for language in ("en", "zh"):
        positives = [r for r in rows if r["kind"] == "own" and r["retrieved_gold"]]
        positives = [r for r in positives if r["language"] == language]
        negatives = [r for r in rows if r["kind"] != "own" and r["language"] == language]
        if not positives or not negatives:
            continue
        current = NOT_ANSWERED_SCORE[language]
        report["not_answered"][language] = {
            "current_threshold": current,
            "at_current": verdict(positives, negatives, current),
            "at_current_all_passages_speaking": verdict(
                [dict(r, best=r["all_passages_best"]) for r in positives],
                [dict(r, best=r["all_passages_best"]) for r in negatives],
                current,
            ),
            # The audit record's out-of-scope flag (flags.evidence_is_weak) on the same rows.
            "out_of_scope_flag": {
                "answered_when_gold_retrieved": share(
                    [{"ok": not r["flag_out_of_scope"]} for r in positives], "ok"
                ),
                "refused_when_not_answerable": share(
                    [{"ok": r["flag_out_of_scope"]} for r in negatives], "ok"
                ),
            },
            "negatives_by_set": {
                s: sum(r["set"] == s for r in negatives)
                for s in sorted({r["set"] for r in negatives})
            },
            "refused_by_set_at_current": {
                s: round(
                    float(np.mean([r["best"] < current for r in negatives if r["set"] == s])), 3
                )
                for s in sorted({r["set"] for r in negatives})
            },
            **calibrate(positives, negatives),
        }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
