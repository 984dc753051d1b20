"""A weak-structure copy of an eval set: the same documents with their Markdown heading lines
removed (so each document parses to almost no tree), the same questions (issue 27).

Routing and the heading-path readings were measured on well-structured sets; this one asks
what they do when the structure is gone. It writes a new folder and never touches the source.

    python benchmarks/make_weak_structure_set.py \
        --data ../shared/eval/lecoqa_laws --out data/eval-sets/lecoqa_laws_flat
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core.evaluation import load_dataset
from treerag_core.evaluation.dataset import DOCS_DIR, QUESTIONS_FILE

# An ATX heading line as CommonMark reads it: up to 3 spaces, 1-6 '#', then a space or the end.
HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$")


def strip_headings(text: str) -> str:
    """`text` without its Markdown heading lines (everything else byte for byte)."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not HEADING.match(line.rstrip("\r\n"))
    )


def make_weak_set(source: Path, out: Path) -> tuple[int, int]:
    """Write `out` (docs/ without headings, the same questions.jsonl) from the set `source`;
    returns (gold evidences found verbatim in the source, found in the copy)."""
    if out.resolve() == source.resolve():
        raise ValueError("the weak copy must go to a new folder, not over its source")
    docs = out / DOCS_DIR
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    for path in sorted((source / DOCS_DIR).glob("*.md")):
        text = path.read_text(encoding="utf-8")
        (docs / path.name).write_text(strip_headings(text), encoding="utf-8")
    shutil.copyfile(source / QUESTIONS_FILE, out / QUESTIONS_FILE)
    return load_dataset(source).n_evidence_found, load_dataset(out).n_evidence_found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the source eval set (docs/)")
    parser.add_argument("--out", type=Path, required=True, help="the new set's folder")
    args = parser.parse_args(argv)
    before, after = make_weak_set(args.data, args.out)
    print(
        f"{args.out}: {after} of {before} gold evidences still found verbatim "
        "(headings removed, questions unchanged)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
