"""One sample question per HiRAG mode with its context sections, as Markdown (docs/hirag.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import REPO
from treerag_core import Engine, SourceDocument, build_index, get_embedder, run
from treerag_core.base.config import IndexSettings
from treerag_core.base.settings import LLMSettings, QuerySettings
from treerag_core.strategies.hirag.strategy import MODES as MODE_CLASSES
from treerag_core.strategies.hirag.strategy import Hirag

MODES = tuple(mode.name for mode in MODE_CLASSES)
HIDDEN = {"nodes", "entity_keys", "key", "source_key", "target_key"}
SHORT = {  # what one row of each section says, in the README's one-line form
    "entities": lambda r: f"{r['entity']} (score {r['score']}, {r['passages']} passages)",
    "relations": lambda r: f"{r['source']} — {r['target']}",
    "reports": lambda r: f"{r['community']} “{cell(r['title'])}”",
    "path": lambda r: r["path"],
}
ROWS_SHOWN = 3
CELL_CHARS = 90


def cell(value: object) -> str:
    text = str(value).replace("|", "/").replace("\n", " ")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def short_table(engine: Engine, question: str, settings: QuerySettings) -> None:
    """One row per mode: its top passage and the first row of each context section."""
    print("| mode | top passage | context sections (first row; rows in all) |")
    print("|---|---|---|")
    for mode in MODES:
        trace = run(engine, question, settings, strategy=mode, synthesize=False)
        top = trace.reranked[0].chunk if trace.reranked else None
        where = f"{top.heading_path}, chars {top.start}-{top.end}" if top else "none"
        parts = [
            f"**{s.title}** ({len(s.rows)}): {SHORT[s.kind](s.rows[0])}"
            for s in trace.sections
            if s.rows and s.kind in SHORT
        ]
        no_path = [f for f in trace.fallbacks if f.reason == "no_path"]
        if no_path:
            parts.append("`no_path` recorded")
        print(f"| `{mode}` | {where} | {'; '.join(parts) or 'none (vector search)'} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--doc", default=str(REPO / "sample_docs" / "test_paper.md"))
    parser.add_argument("--question", default="How does the router decide which expert to use?")
    parser.add_argument("--embedder", default=IndexSettings().embedder)
    parser.add_argument("--short", action="store_true", help="one table row per mode (README)")
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
    if args.short:
        short_table(engine, args.question, settings)
        return 0
    for mode in MODES:
        trace = run(engine, args.question, settings, strategy=mode, synthesize=mode == Hirag.name)
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
            columns = [k for k in rows[0] if k not in HIDDEN]
            print(f"**{section.title}** ({len(section.rows)} rows, first {len(rows)}):\n")
            print("| " + " | ".join(columns) + " |")
            print("|" + "---|" * len(columns))
            for row in rows:
                print("| " + " | ".join(cell(row[c]) for c in columns) + " |")
            print()
        if not trace.sections:
            print("No graph context (vector search only).\n")
        if trace.answer:
            graph = trace.answer.partition("Graph context:")[2].strip()
            print("The extractive answer ends with its cited graph context:\n")
            print("\n".join(f"> {line}" for line in graph.splitlines()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
