"""One sample question per HiRAG mode with its context sections, as Markdown (docs/hirag.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from treerag_core.config import IndexSettings  # noqa: E402
from treerag_core.embedders import get_embedder  # noqa: E402
from treerag_core.index import SourceDocument, build_index  # noqa: E402
from treerag_core.pipeline import Engine, run  # noqa: E402
from treerag_core.settings import LLMSettings, QuerySettings  # noqa: E402

MODES = ("hirag-naive", "hirag-local", "hirag-global", "hirag-bridge", "hirag")
ROWS_SHOWN = 3
CELL_CHARS = 90


def cell(value: object) -> str:
    text = str(value).replace("|", "/").replace("\n", " ")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--doc", default=str(REPO / "sample_docs" / "test_paper.md"))
    parser.add_argument("--question", default="How does the router decide which expert to use?")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    args = parser.parse_args(argv)
    path = Path(args.doc)
    embedder = get_embedder(args.embedder)
    index = build_index(
        [SourceDocument(path.name, path.read_text(encoding="utf-8"))],
        IndexSettings(embedder=args.embedder),
        embedder,
    )
    engine = Engine(index, embedder)
    settings = QuerySettings(llm=LLMSettings(enabled=False))
    print(f"Question: *{args.question}* ({path.name}, embedder {args.embedder})\n")
    for mode in MODES:
        trace = run(engine, args.question, settings, strategy=mode, synthesize=False)
        print(f"### `{mode}`\n")
        top = trace.reranked[0].chunk if trace.reranked else None
        if top is not None:
            print(
                f"Top passage ({top.heading_path}, chars {top.start}-{top.end}): "
                f"“{cell(top.text)}”\n"
            )
        for f in trace.fallbacks:
            if f.stage == "retrieve":
                print(f"Recorded: `{f.reason}`: {cell(f.detail)}\n")
        for section in trace.sections:
            rows = section.rows[:ROWS_SHOWN]
            columns = [
                k
                for k in rows[0]
                if k not in {"nodes", "entity_keys", "key", "source_key", "target_key"}
            ]
            print(f"**{section.title}** ({len(section.rows)} rows, first {len(rows)}):\n")
            print("| " + " | ".join(columns) + " |")
            print("|" + "---|" * len(columns))
            for row in rows:
                print("| " + " | ".join(cell(row[c]) for c in columns) + " |")
            print()
        if not trace.sections:
            print("No graph context (vector search only).\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
