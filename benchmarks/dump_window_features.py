"""Per-question candidate windows and every score of each candidate, dumped as JSON.

Research aid for issue 9: rerunning the whole harness per idea is slow on a shared machine,
so this scores each question's candidate windows once (flat-hybrid's, flat-structured's, and
treerag's routed windows for 2 and 3 documents) with every signal a combination could use; the
combinations are then ranked and scored offline with the harness's own metric functions
(`benchmarks/offline_rank.py`).

Per candidate: dense cosine, BM25 plain and over `heading path + passage`, both fused
scores, the cross-encoder's logit on the passage alone, on `heading path + passage` and on
the heading path alone (English), the multilingual cosine of `heading path + passage` (a
second dense reading), the section's raw BM25 evidence, ids and spans.

    python benchmarks/dump_window_features.py --data ../shared/eval/qasper --scope doc \
        --cache data/eval-cache --out feat-qasper-doc.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import dataset_index, get_reranker, index_embedder, tokenize
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.base.text_rules import detect_language
from treerag_core.evaluation import load_dataset
from treerag_core.search.fusion import fuse
from treerag_core.search.rerank import BUNDLED_EN
from treerag_core.search.structure import document_votes, path_passage, structured_scores, window

ROUTES = (2, 3)  # routed windows dumped: the best N documents by their share of the window


def path_vectors(index, embedder, folder: Path | None = None) -> np.ndarray:
    """Every chunk's vector of `heading path + passage` (cached in `folder` when given)."""
    cache = folder / f"pathvec-{index.embedder_name}-{len(index.chunks)}.npy" if folder else None
    if cache is not None and cache.is_file():
        return np.load(cache)
    texts = [path_passage(c.heading_path, c.text) for c in index.chunks]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    if cache is not None:
        np.save(cache, vectors)
    return vectors


def dev_set(data: Path, cache: Path, embedder: str | None = None):
    """A dev set, its index as the harness builds it (default settings, or another
    embedder; cached) and the index's embedder: what every offline script of issue 9 starts
    from."""
    dataset = load_dataset(data)
    settings = IndexSettings(embedder=embedder) if embedder else IndexSettings()
    index = dataset_index(dataset, settings, cache)
    return dataset, index, index_embedder(index.embedder_name)


def scope_scores(index, question: str, qvec, scope, retrieve):
    """One question's scores over its scope, as the engine computes them: the rows, dense,
    BM25, flat-hybrid's fused score, and treerag's heading-aware scores (no section prior)."""
    qtok = tokenize(question)
    rows, dense, bm25 = index.score_scope(scope, qvec, qtok)
    flat = fuse(dense, bm25, retrieve.fusion, retrieve.dense_weight, retrieve.rrf_k).fused
    structured = structured_scores(
        index,
        scope,
        qvec,
        qtok,
        dense_weight=retrieve.dense_weight,
        section_weight=0.0,
        fusion=str(retrieve.fusion),
        rrf_k=retrieve.rrf_k,
    )
    return rows, dense, bm25, np.asarray(flat), structured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--scope", choices=("doc", "corpus"), default="doc")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--no-rerank", action="store_true", help="skip the cross-encoder")
    args = parser.parse_args(argv)

    dataset, index, embedder = dev_set(args.data, args.cache)
    retrieve = QuerySettings().retrieve
    size = retrieve.candidate_window
    pvec = path_vectors(index, embedder, args.out.parent)
    reranker = None if args.no_rerank else get_reranker(BUNDLED_EN)
    questions = list(dataset.usable_questions)[: args.limit]
    done: list[dict] = []
    if args.out.is_file():  # resume a partial dump
        done = json.loads(args.out.read_text())["questions"]
    seen = {q["id"] for q in done}
    started = time.perf_counter()
    pairs = 0
    for n, question in enumerate(questions, start=1):
        if question.id in seen:
            continue
        scope = list(question.docs) if args.scope == "doc" else None
        qvec = embedder.embed_query(question.question)
        rows, dense, bm25, flat, st = scope_scores(index, question.question, qvec, scope, retrieve)
        flat_window = np.argsort(-flat, kind="stable")[:size]
        votes = document_votes(st, size)
        windows = {"flat": flat_window.tolist(), "structured": window(st, size).tolist()}
        for k in ROUTES:
            if len(votes) > k:
                routed = [d for d, _ in votes[:k]]
                windows[f"route{k}"] = window(st, size, routed).tolist()
        union = list(dict.fromkeys(p for w in windows.values() for p in w))
        chunks = [index.chunks[int(rows[p])] for p in union]
        language = detect_language(question.question)
        plain = path = heading = None
        if reranker is not None and language == "en":
            plain = reranker.score(question.question, [c.text for c in chunks]).tolist()
            path = reranker.score(
                question.question, [path_passage(c.heading_path, c.text) for c in chunks]
            ).tolist()
            # The heading read alone: what the title says the section is for.
            titles = sorted({c.heading_path for c in chunks})
            by_title = dict(
                zip(titles, reranker.score(question.question, titles).tolist(), strict=True)
            )
            heading = [by_title[c.heading_path] for c in chunks]
            pairs += 2 * len(chunks) + len(titles)
        dense_path = (pvec[rows[union]] @ np.asarray(qvec, dtype=np.float32)).tolist()
        cands = []
        for i, (p, c) in enumerate(zip(union, chunks, strict=True)):
            cands.append(
                {
                    "chunk_id": c.chunk_id,
                    "doc": c.doc_id,
                    "leaf": c.source_node_id,
                    "path": c.heading_path,
                    "start": c.start,
                    "end": c.end,
                    "chars": len(c.text),
                    "dense": float(dense[p]),
                    "dense_path": float(dense_path[i]),
                    "bm25": float(bm25[p]),
                    "bm25_path": float(st.bm25[p]),
                    "fused_flat": float(flat[p]),
                    "fused_struct": float(st.fused[p]),
                    "section_raw": float(st.section_raw[st.leaf_of_row[p]]),
                    "ce_plain": None if plain is None else plain[i],
                    "ce_path": None if path is None else path[i],
                    "ce_heading": None if heading is None else heading[i],
                }
            )
        position = {p: i for i, p in enumerate(union)}
        done.append(
            {
                "id": question.id,
                "language": language,
                "n_docs_in_scope": len({st.doc_of_row[i] for i in range(len(st.rows))}),
                "votes": votes[:10],
                "windows": {k: [position[p] for p in w] for k, w in windows.items()},
                "candidates": cands,
            }
        )
        if n % 5 == 0 or n == len(questions):
            args.out.write_text(
                json.dumps({"dataset": dataset.name, "scope": args.scope, "questions": done})
            )
            rate = pairs / max(1e-9, time.perf_counter() - started)
            print(f"{n}/{len(questions)} questions, {rate:.0f} pairs/s", file=sys.stderr)
    args.out.write_text(
        json.dumps({"dataset": dataset.name, "scope": args.scope, "questions": done})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
