"""Progress on stderr: tqdm bars on a terminal, plain periodic lines in a file or a pipe."""

from __future__ import annotations

import sys
from collections.abc import Callable

from tqdm import tqdm

from treerag_core.base.progress import PlainProgress

STAGE_LABELS = {
    "convert": "converting",
    "parse": "parsing",
    "embed": "embedding",
    "graph": "graphs",
    "index": "indexing",
}
STAGE_UNITS = {"convert": "files", "parse": "docs", "embed": "chunks", "index": "steps"}

Update = Callable[[str, int, int], None]


def progress_bars() -> tuple[Update, Callable[[], None]]:
    """(update(stage, done, total), close): bars on a terminal; plain periodic lines when
    stderr is a file or a pipe (CI, logs)."""
    if not sys.stderr.isatty():
        # PlainProgress hears the labels ("embedding"), so its units are keyed by label.
        units = {STAGE_LABELS.get(stage, stage): unit for stage, unit in STAGE_UNITS.items()}
        plain = PlainProgress(sys.stderr, units=units)

        def update_plain(stage: str, done: int, total: int) -> None:
            plain.update(STAGE_LABELS.get(stage, stage), done, total)

        return update_plain, lambda: None
    bars: dict[str, tqdm] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(
                total=total,
                desc=STAGE_LABELS.get(stage, stage),
                unit={"convert": "file", "parse": "doc", "embed": "chunk"}.get(stage, "step"),
                file=sys.stderr,
                leave=False,
            )
        bar.total = total
        bar.n = done
        bar.refresh()

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return update, close
