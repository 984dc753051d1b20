"""How the heading path is shown to the cross-encoder: each presentation scored offline.

Issue 9 asked how the path is presented to the model. The default reads `path + "\\n" +
passage`; this scores other presentations over a `dump_window_features.py` dump (the same
windows, so only the cross-encoder's reading changes) and prints `offline_rank`'s table.
English only: no cross-encoder runs for Chinese.

    python benchmarks/path_presentations.py --data ../shared/eval/qasper \
        --cache data/eval-cache feat-qasper-doc.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.dump_window_features import dev_set
from benchmarks.offline_rank import Method, by, col, evaluate, report, total
from treerag_core import get_reranker
from treerag_core.base.names import StrategyName
from treerag_core.base.text_rules import path_leaf
from treerag_core.search.rerank import BUNDLED_EN

# name -> (heading path, passage) -> the text the cross-encoder reads
PRESENTATIONS: dict[str, Callable[[str, str], str]] = {
    "leaf title only": lambda path, text: f"{path_leaf(path)}\n{text}",
    "path after the passage": lambda path, text: f"{text}\n{path}",
    "path as a sentence": lambda path, text: f"{path}. {text}",
    "labelled 'Section:'": lambda path, text: f"Section: {path}\n{text}",
}


def presented(present: Callable[[str, str], str], path: str, text: str) -> str:
    """What the cross-encoder reads; a passage with no heading path reads alone, as in rerank."""
    return present(path, text) if path else text


def score_presentations(data: Path, cache: Path, dump: dict) -> None:
    """Add one `ce:<name>` column per presentation to every dumped candidate."""
    dataset, index, _ = dev_set(data, cache)
    questions = {q.id: q for q in dataset.usable_questions}
    chunks = {c.chunk_id: c for c in index.chunks}
    reranker = get_reranker(BUNDLED_EN)
    for record in dump["questions"]:
        cands = record["candidates"]
        pairs = [(chunks[c["chunk_id"]].heading_path, chunks[c["chunk_id"]].text) for c in cands]
        for name, present in PRESENTATIONS.items():
            texts = [presented(present, path, text) for path, text in pairs]
            logits = reranker.score(questions[record["id"]].question, texts).tolist()
            for cand, logit in zip(cands, logits, strict=True):
                cand[f"ce:{name}"] = logit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("dump", type=Path, help="an English dump_window_features.py dump")
    args = parser.parse_args(argv)
    dump = json.loads(args.dump.read_text(encoding="utf-8"))
    score_presentations(args.data, args.cache, dump)
    scored = args.dump.with_suffix(".presentations.json")
    scored.write_text(json.dumps(dump), encoding="utf-8")
    methods: dict[str, Method] = {
        StrategyName.FLAT_HYBRID.value: by("flat", col("ce_plain")),
        "path + newline + passage (default)": by("structured", col("ce_path")),
    }
    for name in PRESENTATIONS:
        methods[name] = by("structured", col(f"ce:{name}"))
        methods[f"{name}, summed with the plain reading"] = by(
            "structured", total(col("ce_plain"), col(f"ce:{name}"))
        )
    print(report(evaluate(args.data, scored, methods)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
