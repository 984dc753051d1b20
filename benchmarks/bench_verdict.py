"""The keyless answer's verdict on the dev sets: how often it refuses answerable questions and
how often it flags questions asked of another set's documents, per language and genre.

Positives: each set's answerable questions (doc scope) whose gold is in the top 5 passages
(page-level gold for the PDF filings). Negatives: each set's questions asked of every other
set's whole corpus. Every row is one real pipeline run (no LLM); the verdict is recomputed
from the same signals under the shipped rule and under the previous one (refuse below the
sentence bar), so both columns come from the same traces. Usage:

    python benchmarks/bench_verdict.py --cache data/eval-cache [--limit 40] \
        [--rows bench-results/verdict-rows.jsonl]
    python benchmarks/bench_verdict.py --from-rows bench-results/verdict-rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import add_dev_set_arguments, dev_engines, scored_sentences
from treerag_core import Engine, run
from treerag_core.answer.flags import NOT_ANSWERED_SCORE, Verdict, answer_signals, judge
from treerag_core.answer.synthesis import choose_sentences, shares_terms
from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import Trace
from treerag_core.evaluation import EvalQuestion, Passage, hits
from treerag_core.evaluation.metrics import page_hits

GENRES = {
    "qasper": ("papers", "en"),
    "gitlab_handbook": ("handbook", "en"),
    "lecoqa_laws": ("laws", "zh"),
    "financebench_pdf": ("filings", "en"),
}
TOP = 5  # "gold in the top 5": the passages an answer reads by default


def gold_in_top(trace: Trace, q: EvalQuestion, engine: Engine, top: int = TOP) -> bool:
    """The README's hit rule on the top passages (page-level gold for a PDF set)."""
    spans = [Passage(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in trace.reranked[:top]]
    if q.gold_pages:
        starts = {d.doc_id: d.page_starts for d in engine.index.documents}
        gold = [(g.doc, g.page, starts.get(g.doc, ())) for g in q.gold_pages]
        return any(page_hits(p, doc, page, st) for p in spans for doc, page, st in gold)
    return any(hits(p, ev) for p in spans for ev in q.evidences)


def signals_row(engine: Engine, q: EvalQuestion, settings: QuerySettings, scope) -> dict[str, Any]:
    """One question through the pipeline (no answer written): the signals the verdict reads."""
    trace = run(engine, q.question, settings, scope=scope, synthesize=False)
    scored = scored_sentences(engine, q.question, trace)
    best = choose_sentences(scored, 0.0).best
    signals = answer_signals(trace, best.score if best else None, shares_terms(scored))
    gold = gold_in_top(trace, q, engine)
    row = {"id": q.id, "question": q.question, "language": trace.language, "gold_top": gold}
    return {**row, **signals}


def previous_refuses(row: dict[str, Any]) -> bool:
    """The rule before: refuse when the best sentence scores below the language's bar."""
    best = row.get("best_sentence")
    return best is None or best < NOT_ANSWERED_SCORE[row["language"]]


def verdict_of(row: dict[str, Any]) -> Verdict:
    keys = ("best_sentence", "top_rerank", "top_dense", "cross_language", "language")
    keys += ("shares_terms",)
    return judge(**{k: row.get(k) for k in keys}).verdict


def share(flags: Sequence[bool]) -> str:
    return f"{sum(flags) / len(flags):.3f} ({sum(flags)}/{len(flags)})" if flags else "—"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Per language and genre: answerable questions refused / labelled weak, and questions
    asked of another set's corpus flagged (labelled weak or refused) / refused."""
    out = [
        "| set (genre, language) | answerable, gold in top 5: n | refused (previous rule) "
        "| **refused (now)** | labelled weak (now) | asked of another set's corpus: n "
        "| flagged (previous: refused) | **flagged (now: weak or refused)** | refused (now) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups = [(name, [r for r in rows if r["set"] == name]) for name in GENRES]
    groups.append(("all English", [r for r in rows if r["language"] == "en"]))
    groups.append(("all Chinese", [r for r in rows if r["language"] == "zh"]))
    for name, rs in groups:
        if not rs:
            continue
        pos = [r for r in rs if r["kind"] == "own" and r["gold_top"]]
        neg = [r for r in rs if r["kind"] == "off-set"]
        now_pos = [verdict_of(r) for r in pos]
        now_neg = [verdict_of(r) for r in neg]
        label = f"{name} ({GENRES[name][0]}, {GENRES[name][1]})" if name in GENRES else name
        out.append(
            f"| {label} | {len(pos)} | {share([previous_refuses(r) for r in pos])} "
            f"| {share([v == Verdict.NOT_ANSWERED for v in now_pos])} "
            f"| {share([v == Verdict.WEAK for v in now_pos])} | {len(neg)} "
            f"| {share([previous_refuses(r) for r in neg])} "
            f"| {share([v != Verdict.ANSWERED for v in now_neg])} "
            f"| {share([v == Verdict.NOT_ANSWERED for v in now_neg])} |"
        )
    return "\n".join(out)


def collect(args: argparse.Namespace, sink=None) -> list[dict[str, Any]]:
    """Every row; `sink(row)` hears each as it is made (a long run keeps what it measured)."""
    settings = QuerySettings().set("llm.enabled", False)
    sets = dev_engines(args.data, args.sets, args.embedder, args.cache)
    rows: list[dict[str, Any]] = []
    for name, (data, engine) in sets.items():
        for q in data.usable_questions[: args.limit]:
            row = signals_row(engine, q, settings, list(q.docs))
            rows.append(dict(row, kind="own", set=name, corpus=name))
            if sink is not None:
                sink(rows[-1])
        print(f"{name}: own questions done", file=sys.stderr)
    for asked in sets:
        for corpus in (c for c in sets if c != asked):
            for q in sets[asked][0].usable_questions[: args.limit // 2]:
                row = signals_row(sets[corpus][1], q, settings, None)
                rows.append(dict(row, kind="off-set", set=asked, corpus=corpus))
                if sink is not None:
                    sink(rows[-1])
            print(f"{asked} -> {corpus}: done", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dev_set_arguments(parser)
    parser.add_argument("--sets", nargs="+", default=list(GENRES), help="dev sets to score")
    parser.add_argument("--rows", type=Path, default=None, help="write one JSON line a question")
    parser.add_argument("--from-rows", type=Path, default=None, help="table from saved rows")
    args = parser.parse_args(argv)
    if args.from_rows:
        text = args.from_rows.read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        out = None
        if args.rows:
            args.rows.parent.mkdir(parents=True, exist_ok=True)
            out = args.rows.open("w", encoding="utf-8")

        def sink(row: dict[str, Any]) -> None:
            if out is not None:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()

        try:
            rows = collect(args, sink)
        finally:
            if out is not None:
                out.close()
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
