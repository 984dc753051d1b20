"""Tune on labelled questions: time per question and per setting, and whether its
cross-validated estimate is honest.

Imports the first N usable questions of a dev set as "my labelled questions" of a workspace
holding the set's documents (the same import the explorer's upload uses), tunes on them,
and scores the setting the tune picked, and the current one, on the set's remaining
questions, which the tune never saw. The estimate is honest when that held-out mean lies
inside the tune's reported interval.

    python benchmarks/bench_tune.py --data ../shared/eval/qasper --labelled 40
    python benchmarks/bench_tune.py --data ../shared/eval/qasper --labelled 20 --no-holdout

Run it under `nice` on a shared machine; the set's index is cached in --cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import Engine, dataset_index, get_embedder
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation import load_dataset
from treerag_core.evaluation.intervals import mean_interval, paired_difference_interval
from treerag_core.evaluation.labels import eval_questions, import_rows, refind
from treerag_core.evaluation.tune import DEFAULT_METRIC, Tuner, score_question


def _labelled_rows(folder: Path, n: int) -> tuple[bytes, set[str]]:
    """The first `n` usable questions' rows, as an uploaded questions.jsonl would hold them."""
    usable = {q.id for q in load_dataset(folder).usable_questions}
    rows = []
    for line in (folder / "questions.jsonl").read_text(encoding="utf-8").split("\n"):
        if line.strip() and json.loads(line)["id"] in usable and len(rows) < n:
            rows.append(line)
    return ("\n".join(rows) + "\n").encode("utf-8"), {json.loads(r)["id"] for r in rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="a dev set folder (docs/ + questions.jsonl)")
    p.add_argument("--labelled", type=int, default=40, help="questions the tune sees")
    p.add_argument("--metric", default=DEFAULT_METRIC)
    p.add_argument("--scope", choices=("corpus", "doc"), default="corpus")
    p.add_argument("--cache", default="data/eval-cache", help="where the set's index is cached")
    p.add_argument("--embedder", default=IndexSettings().embedder)
    p.add_argument("--no-holdout", action="store_true", help="skip scoring the other questions")
    args = p.parse_args()

    folder = Path(args.data)
    dataset = load_dataset(folder)
    settings = IndexSettings(embedder=args.embedder)
    index = dataset_index(dataset, settings, Path(args.cache))
    engine = Engine(index, get_embedder(args.embedder), None)
    raw, seen = _labelled_rows(folder, args.labelled)
    imported = import_rows(index, raw)
    print(f"imported: {imported.summary()}")
    questions = eval_questions(refind(index, imported.questions).questions)
    current = QuerySettings().set("llm.enabled", False)
    tuner = Tuner(engine, questions, current, metric=args.metric, scope=args.scope)

    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    started = time.perf_counter()
    estimate = tuner.estimate()
    est_s = time.perf_counter() - started
    print(f"estimate: {estimate:.0f} s ({len(tuner.candidates)} settings, {len(questions)} q; "
          f"measured in {est_s:.1f} s)")  # fmt: skip
    result = tuner.run(estimate_seconds=estimate)
    runs = result.tried * result.n_questions
    total = result.seconds + est_s
    print(
        f"tune: {total:.1f} s in all ({result.seconds:.1f} s search + {est_s:.1f} s estimate) "
        f"for {result.n_questions} questions x {result.tried} settings = {runs} runs; "
        f"{total / result.n_questions:.2f} s per labelled question, "
        f"{total / result.tried:.2f} s per setting, {1000 * result.seconds / runs:.1f} ms per run"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if result.partial:
        print(f"stopped early (Ctrl-C): {result.tried} of {result.planned} settings kept")
    print(f"metric {result.metric}, {result.n_folds}-fold cross-validation")
    print(f"current  {result.current.label}: {result.current_score.text()}")
    print(f"best     {result.best.label}: in-sample {result.best_in_sample:.3f}")
    print(f"cross-validated (what to expect on new questions): {result.cross_validated.text()}")
    print(f"gain over current (paired): {result.gain.text()}")
    for f in result.folds:
        print(f"  fold {f.index} (n={f.n_questions}): {f.chosen} {f.chosen_score:.3f} "
              f"vs current {f.current_score:.3f}")  # fmt: skip
    if result.warning:
        print(f"warning: {result.warning}")
    if args.no_holdout:
        return 0

    rest = [q for q in dataset.usable_questions if q.id not in seen]
    best = [score_question(engine, result.best.settings, q, args.metric, args.scope) for q in rest]
    base = [
        score_question(engine, result.current.settings, q, args.metric, args.scope) for q in rest
    ]
    best_iv, base_iv = mean_interval(best), mean_interval(base)
    inside = result.cross_validated.low <= best_iv.mean <= result.cross_validated.high
    print(f"\nheld-out check on the {len(rest)} questions the tune never saw:")
    print(f"  tuned setting   {best_iv.text()}")
    print(f"  current setting {base_iv.text()}")
    print(f"  gain (paired)   {paired_difference_interval(best, base).text()}")
    print(
        f"  the tune's cross-validated {result.cross_validated.mean:.3f} "
        f"[{result.cross_validated.low:.3f}, {result.cross_validated.high:.3f}] "
        f"{'holds' if inside else 'does NOT hold'} the held-out mean {best_iv.mean:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
