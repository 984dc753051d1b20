"""Document-routing rules compared offline (issue 27).

For each question this reads, once, what every routing rule needs: the unrouted
heading-aware window (40 candidates), the documents by their share of it, the window taken
again inside the best two, and the final reader's score of every candidate (the
cross-encoder on `heading path + passage` in English, the fused order where step 2b keeps it,
Chinese). Each rule then decides to route or not, the final list is the reader's order over
the chosen window (ties in window order, as `rerank.rerank_chunks`), and it is scored with
the harness's own `question_metrics`, against `flat-structured` (never route), with the
harness's paired bootstrap intervals. The reads are kept in a JSON file (resumed), so a new
rule costs seconds.

    python benchmarks/route_rules.py --data ../shared/eval/lecoqa_laws \
        --cache data/eval-cache --reads data/route/reads-laws.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import dataset_index, get_reranker, index_embedder, tokenize
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.base.text_rules import detect_language
from treerag_core.evaluation import Passage, load_dataset, question_metrics
from treerag_core.evaluation.intervals import paired_difference_interval
from treerag_core.evaluation.report import DIFFERENCE_KEYS, PAGE_DIFFERENCE_KEYS
from treerag_core.search.rerank import OnnxCrossEncoder
from treerag_core.search.structure import document_votes, path_passage, structured_scores, window

ROUTE = 2  # documents kept, treerag's route_documents


def read_question(index, embedder, reranker, question: str, size: int, scope=None) -> dict:
    """One question's windows and reader scores over `scope` (None: the corpus), as treerag
    computes them."""
    retrieve = QuerySettings().retrieve
    st = structured_scores(
        index,
        scope,
        embedder.embed_query(question),
        tokenize(question),
        dense_weight=retrieve.dense_weight,
        section_weight=0.0,
        fusion=str(retrieve.fusion),
        rrf_k=retrieve.rrf_k,
    )
    votes = document_votes(st, size)
    flat = window(st, size).tolist()
    kept = [d for d, _ in votes[:ROUTE]] if len(votes) > ROUTE else []
    routed = window(st, size, kept).tolist() if kept else []
    union = list(dict.fromkeys(flat + routed))
    chunks = [index.chunks[int(st.rows[p])] for p in union]
    language = detect_language(question)
    reader = None
    if reranker is not None and language == "en":
        texts = [path_passage(c.heading_path, c.text) for c in chunks]
        reader = reranker.score(question, texts).tolist()
    at = {p: i for i, p in enumerate(union)}
    return {
        "language": language,
        "votes": votes[:5],
        "kept": kept,
        "flat": [at[p] for p in flat],
        "routed": [at[p] for p in routed],
        "candidates": [
            {"doc": c.doc_id, "start": c.start, "end": c.end, "chars": len(c.text)} for c in chunks
        ],
        "reader": reader,
    }


def reader_order(rec: dict, window_name: str) -> list[int]:
    """The window in the final reader's order: the cross-encoder's (ties in window order),
    or the window's own fused order when no cross-encoder runs."""
    positions = rec[window_name]
    if rec["reader"] is None:
        return list(positions)
    score = rec["reader"]
    return [
        positions[i] for i in sorted(range(len(positions)), key=lambda i: (-score[positions[i]], i))
    ]


# A rule: (question record, the unrouted window in the reader's order) -> route or not.
Rule = Callable[[dict, list[int]], bool]


def top_in_kept(depth: int) -> Rule:
    """Route when the reader's best `depth` passages of the unrouted window are all in the
    kept documents."""

    def rule(rec: dict, order: list[int]) -> bool:
        return all(rec["candidates"][p]["doc"] in rec["kept"] for p in order[:depth])

    return rule


def chars_in_kept(budget: int) -> Rule:
    """Route when the reader's passages that fill `budget` characters are all in the kept
    documents (at least one passage)."""

    def rule(rec: dict, order: list[int]) -> bool:
        used = 0
        for p in order:
            cand = rec["candidates"][p]
            if used and used + cand["chars"] > budget:
                break
            if cand["doc"] not in rec["kept"]:
                return False
            used += cand["chars"]
        return True

    return rule


def nothing_relevant_cut(rule: Rule, bound: float = OnnxCrossEncoder.relevant_above) -> Rule:
    """`rule`, and no passage of the unrouted window that the cross-encoder calls relevant
    (above `bound`, the model's own p = 0.5 point; the reads use the bundled model, whose
    bound the engine reads from the same attribute) lies outside the kept documents: the cut
    may add evidence from the kept documents, never drop evidence the final reader believes."""

    def checked(rec: dict, order: list[int]) -> bool:
        if rec["reader"] is None:
            return rule(rec, order)
        score = rec["reader"]
        cut_relevant = any(
            score[p] > bound and rec["candidates"][p]["doc"] not in rec["kept"] for p in order
        )
        return not cut_relevant and rule(rec, order)

    return checked


def second_reader(rule: Rule) -> Rule:
    """`rule`, but only where a reader other than the fused order (which proposed the cut)
    gives its opinion: with no cross-encoder (Chinese) never route."""
    return lambda rec, order: rec["reader"] is not None and rule(rec, order)


RULES: dict[str, Rule] = {
    "unchecked": lambda rec, order: True,
    "best 1 in kept": top_in_kept(1),
    "best 3 in kept": top_in_kept(3),
    "best 5 in kept": top_in_kept(5),
    "best 10 in kept": top_in_kept(10),
    "best filling 1000c in kept": chars_in_kept(1000),
    "best filling 2000c in kept": chars_in_kept(2000),
    "best 1 in kept, cross-encoder only (before)": second_reader(top_in_kept(1)),
    "best 5 in kept, cross-encoder only": second_reader(top_in_kept(5)),
    "best 1 in kept, nothing relevant cut, cross-encoder only (shipped)": second_reader(
        nothing_relevant_cut(top_in_kept(1))
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--reads", type=Path, required=True, help="the per-question reads (JSON)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--scope", choices=("doc", "corpus"), default="corpus")
    parser.add_argument("--only-score", action="store_true", help="score the reads kept")
    parser.add_argument(
        "--embedder", default=IndexSettings().embedder, help="the index's embedder (as eval's)"
    )
    args = parser.parse_args(argv)

    dataset = load_dataset(args.data)
    questions = list(dataset.usable_questions)[: args.limit]
    if args.scope == "doc":  # at most two documents: nothing to route under any rule
        print(
            f"{sum(len(q.docs) > ROUTE for q in questions)} of {len(questions)} questions "
            f"have more than {ROUTE} documents",
            file=sys.stderr,
        )
        questions = [q for q in questions if len(q.docs) > ROUTE]
    reads: dict[str, dict] = {}
    if args.reads.is_file():
        reads = json.loads(args.reads.read_text(encoding="utf-8"))
    index = dataset_index(dataset, IndexSettings(embedder=args.embedder), args.cache)
    page_map = {d.doc_id: d.page_starts for d in index.documents if d.page_starts}
    if not args.only_score:
        embedder = index_embedder(index.embedder_name)
        settings = QuerySettings()
        reranker = get_reranker(settings.rerank.model) if settings.rerank.enabled else None
        started = time.perf_counter()
        for n, q in enumerate(questions, start=1):
            if q.id in reads:
                continue
            size = settings.retrieve.candidate_window
            scope = list(q.docs) if args.scope == "doc" else None
            reads[q.id] = read_question(index, embedder, reranker, q.question, size, scope)
            if n % 10 == 0 or n == len(questions):
                args.reads.parent.mkdir(parents=True, exist_ok=True)
                args.reads.write_text(json.dumps(reads), encoding="utf-8")
                print(f"{n}/{len(questions)} {time.perf_counter() - started:.0f}s", file=sys.stderr)
        args.reads.write_text(json.dumps(reads), encoding="utf-8")

    keys = PAGE_DIFFERENCE_KEYS if dataset.paged else DIFFERENCE_KEYS
    scored = [q for q in questions if q.id in reads]

    def metrics(q, positions: list[int]) -> dict[str, float]:
        cands = reads[q.id]["candidates"]
        passages = [Passage(cands[p]["doc"], cands[p]["start"], cands[p]["end"]) for p in positions]
        return question_metrics(q, passages, None, page_map)

    flat = {q.id: metrics(q, reader_order(reads[q.id], "flat")) for q in scored}
    print(f"## {dataset.name}, {args.scope} scope, {len(scored)} questions\n")
    print("| rule | routed | " + " | ".join(keys) + " |")
    print("|---|---:|" + "---:|" * len(keys))
    means = " | ".join(f"{sum(flat[i][k] for i in flat) / len(flat):.3f}" for k in keys)
    print(f"| flat-structured (never) | 0 | {means} |")
    for name, rule in RULES.items():
        routed = 0
        per = {}
        for q in scored:
            rec = reads[q.id]
            order = reader_order(rec, "flat")
            go = bool(rec["kept"]) and rule(rec, order)
            routed += go
            per[q.id] = metrics(q, reader_order(rec, "routed")) if go else flat[q.id]
        cells = []
        for k in keys:
            ids = list(per)
            i = paired_difference_interval([per[q][k] for q in ids], [flat[q][k] for q in ids])
            mean = sum(per[q][k] for q in ids) / len(ids)
            cells.append(f"{mean:.3f} ({i.text()})")
        print(f"| {name} | {routed} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
