"""Chinese scorers built from what ships (no Chinese cross-encoder), over the whole scope.

Issue 9, idea 3: with no cross-encoder the window's fused order is the final order, so each
variant is exact without one. Variants: a second dense reading (the multilingual cosine of
`heading path + passage`) averaged with the passage's own or alone, and section evidence by
meaning (the question's cosine to each section's mean chunk vector, min-max over the scope's
sections, an equal third of the score) as a window score or only reordering the window, the same
meaning as the raw cosine (no min-max, so it counts as much as chapters really differ), and
each passage lifted by half its best neighbour's score in the same section. In
corpus scope each is also shown with treerag's checked routing, and the reordering with the
prior's range taken over the kept documents' sections only, when the cut is made. Scored
with the harness's `question_metrics`; the first rows reproduce the harness's flat-hybrid,
flat-structured and treerag; a second table gives each variant minus flat-structured with its
paired bootstrap 95% interval.

    python benchmarks/zh_scorers.py --data ../shared/eval/lecoqa_laws --scope doc \
        --cache data/eval-cache
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.dump_window_features import dev_set, path_vectors, scope_scores
from treerag_core.base.names import StrategyName
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation import Passage, question_metrics
from treerag_core.evaluation.intervals import paired_difference_interval
from treerag_core.search.fusion import fuse, minmax

KEYS = ("recall@1000c", "recall@2000c", "hit@5", "mrr@10")


def top(score: np.ndarray, size: int, keep: np.ndarray | None = None) -> np.ndarray:
    """The best `size` positions, ties in row order; with `keep`, only those compete."""
    if keep is not None:
        score = np.where(keep, score, -np.inf)
        size = min(size, int(keep.sum()))
    return np.argsort(-score, kind="stable")[:size]


def minmax_over(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Min-max of `values` with the range taken `among` the masked rows (clipped to [0, 1])."""
    low, high = values[among].min(), values[among].max()
    if high <= low:
        return np.zeros_like(values)
    return np.clip((values - low) / (high - low), 0.0, 1.0)


def best_neighbour(index, rows: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per scope row, the larger score of the passages just before and after it in the same
    section (0 where it has none in scope)."""
    position = {int(r): i for i, r in enumerate(rows.tolist())}
    by_leaf: dict[tuple[str, str], list[int]] = {}
    for r in position:
        chunk = index.chunks[r]
        by_leaf.setdefault((chunk.doc_id, chunk.source_node_id), []).append(r)
    out = np.zeros_like(score)
    for members in by_leaf.values():
        members.sort(key=lambda r: index.chunks[r].start)
        for before, after in itertools.pairwise(members):
            i, j = position[before], position[after]
            out[i] = max(out[i], score[j])
            out[j] = max(out[j], score[i])
    return out


def checked_route(score: np.ndarray, docs: Sequence[str], size: int) -> np.ndarray:
    """The routing of treerag with its check, where the fused order is the final reader: the two
    documents with the largest share of the window, kept only if the window's best is in
    one of them (as `structure.route` with no cross-encoder)."""
    window = top(score, size)
    floor = score[window].min()
    votes: dict[str, float] = {}
    for p in window.tolist():
        votes[docs[p]] = votes.get(docs[p], 0.0) + float(score[p] - floor) + 1e-9
    ranked = sorted(votes, key=lambda d: -votes[d])
    if len(ranked) <= 2 or docs[window[0]] not in ranked[:2]:
        return window
    return top(score, size, np.isin(np.asarray(docs), ranked[:2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--scope", choices=("doc", "corpus"), default="doc")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--embedder", default=None, help="the index's embedder (default: eval's)")
    args = parser.parse_args(argv)
    dataset, index, embedder = dev_set(args.data, args.cache, args.embedder)
    retrieve = QuerySettings().retrieve
    size = retrieve.candidate_window
    path_vec = path_vectors(index, embedder)
    centroid = {}
    for leaf in {c.source_node_id for c in index.chunks}:
        mean = index.embeddings[index.leaf_rows(leaf)].mean(axis=0)
        centroid[leaf] = mean / (np.linalg.norm(mean) + 1e-9)
    results: dict[str, list[dict[str, float]]] = {}
    for question in dataset.usable_questions:
        scope = list(question.docs) if args.scope == "doc" else None
        qvec = embedder.embed_query(question.question)
        rows, dense, _, flat, st = scope_scores(index, question.question, qvec, scope, retrieve)
        dense_path = path_vec[rows] @ np.asarray(qvec, dtype=np.float32)
        both = (np.asarray(dense) + dense_path) / 2
        averaged = np.asarray(fuse(both, st.bm25, retrieve.fusion, retrieve.dense_weight).fused)
        path_only = np.asarray(
            fuse(dense_path, st.bm25, retrieve.fusion, retrieve.dense_weight).fused
        )
        section = np.stack([centroid[leaf] for leaf in st.leaf_ids]) @ np.asarray(qvec)
        with_section = st.dense_norm + st.bm25_norm + minmax(section)[st.leaf_of_row]
        structured = top(st.score, size)
        raw_section = st.score + section[st.leaf_of_row]
        with_neighbour = st.score + 0.5 * best_neighbour(index, rows, np.asarray(st.score))
        orders = {
            StrategyName.FLAT_HYBRID.value: top(flat, size),
            StrategyName.FLAT_STRUCTURED.value: structured,
            "+ dense of path + passage, averaged": top(averaged, size),
            "dense of path + passage only": top(path_only, size),
            "+ section evidence by meaning": top(with_section, size),
            "same, reordering the window only": structured[
                np.argsort(-with_section[structured], kind="stable")
            ],
            "+ section meaning as the raw cosine": top(raw_section, size),
            "+ half the best same-section neighbour's score": top(with_neighbour, size),
        }
        if args.scope == "corpus":
            routed = checked_route(st.score, st.doc_of_row, size)
            orders["treerag (checked routing)"] = routed
            orders["+ section evidence, checked routing"] = checked_route(
                with_section, st.doc_of_row, size
            )
            orders["same, reordering the routed window only"] = routed[
                np.argsort(-with_section[routed], kind="stable")
            ]
            # Chapters compete only with chapters of the documents routing kept (no prior
            # when the check vetoed the cut): min-max over the kept documents' sections.
            kept = np.isin(np.asarray(st.doc_of_row), [st.doc_of_row[r] for r in routed])
            if not np.array_equal(routed, structured):
                inside = st.dense_norm + st.bm25_norm + minmax_over(section[st.leaf_of_row], kept)
                routed = routed[np.argsort(-inside[routed], kind="stable")]
            orders["same, prior over the kept documents' sections, only when cut"] = routed
        for name, order in orders.items():
            passages = [
                Passage(index.chunks[r].doc_id, index.chunks[r].start, index.chunks[r].end)
                for r in rows[order].tolist()
            ]
            results.setdefault(name, []).append(question_metrics(question, passages, None))
    print(f"| {dataset.name} / {args.scope} | n | " + " | ".join(KEYS) + " |")
    print("|---|---:|" + "---:|" * len(KEYS))
    for name, per in results.items():
        means = " | ".join(f"{np.mean([m[k] for m in per]):.3f}" for k in KEYS)
        print(f"| {name} | {len(per)} | {means} |")
    print_differences(results, StrategyName.FLAT_STRUCTURED.value)
    return 0


def print_differences(results: dict[str, list[dict[str, float]]], baseline: str) -> None:
    """Each variant minus `baseline` over the same questions, in points, with its paired
    bootstrap 95% interval (bold: the interval excludes 0), as `eval` reports them."""
    keys = KEYS[:3]
    print(f"\n| minus {baseline} | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    base = results[baseline]
    for name, per in results.items():
        if name in (baseline, StrategyName.FLAT_HYBRID.value):
            continue
        cells = []
        for k in keys:
            d = paired_difference_interval([m[k] for m in per], [m[k] for m in base])
            text = f"{100 * d.mean:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
            cells.append(f"**{text}**" if d.low > 0 or d.high < 0 else text)
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
