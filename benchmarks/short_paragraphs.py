"""How much of a document set chunker 1 could never retrieve: the paragraphs shorter than
`min_chunk_chars` inside the leaves it chunked (chunker 1 dropped them; chunker 2 joins them
to their neighbour, `chunking.paragraph_units`).

    python benchmarks/short_paragraphs.py --data ../shared/eval/lecoqa_laws
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treerag_core import CorpusIndex, SourceDocument, build_index, get_embedder
from treerag_core.base.config import IndexSettings
from treerag_core.ingest.chunking import paragraph_spans


def short_paragraphs(index: CorpusIndex) -> tuple[int, int, int]:
    """(short paragraphs, their characters, all paragraph characters) over the leaves."""
    count = short_chars = all_chars = 0
    for node in index.nodes.values():
        if not node.is_leaf:
            continue
        for start, end in paragraph_spans(index.texts[node.doc_id], node.start, node.end):
            all_chars += end - start
            if end - start < index.settings.min_chunk_chars:
                count, short_chars = count + 1, short_chars + end - start
    return count, short_chars, all_chars


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="an eval set folder (docs/)")
    args = parser.parse_args(argv)
    paths = sorted((args.data / "docs").glob("*.md"))
    sources = [SourceDocument(p.name, p.read_text(encoding="utf-8")) for p in paths]
    # The tree and its paragraphs do not depend on the embedder: hashing keeps this fast.
    index = build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))
    count, short_chars, all_chars = short_paragraphs(index)
    print(
        f"{count:,} paragraphs shorter than {index.settings.min_chunk_chars} characters in "
        f"{len(paths)} documents: {short_chars:,} of {all_chars:,} characters "
        f"({100 * short_chars / max(all_chars, 1):.1f} %)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
