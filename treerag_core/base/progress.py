"""Plain progress lines for logs and pipes: a stage's start, a line every few seconds, its end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

DEFAULT_EVERY_S = 10.0


class PlainProgress:
    """`update(stage, done, total)` prints "stage: done / total unit (p%)" lines to `stream`:
    when a stage starts, at most every `every_s` seconds while it runs, and when it is done."""

    def __init__(
        self,
        stream: TextIO,
        every_s: float = DEFAULT_EVERY_S,
        units: dict[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if every_s <= 0:
            raise ValueError(f"every_s must be > 0, but got {every_s}")
        self.stream = stream
        self.every_s = every_s
        self.units = units or {}
        self.clock = clock
        self._last: dict[str, float] = {}
        self._finished: set[str] = set()

    def update(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        first = stage not in self._last
        finished = total > 0 and done >= total
        if stage in self._finished or not (
            first or finished or now - self._last[stage] >= self.every_s
        ):
            return
        self._last[stage] = now
        if finished:
            self._finished.add(stage)
        unit = self.units.get(stage, "")
        share = f" ({100 * done / total:.0f}%)" if total else ""
        print(f"{stage}: {done:,} / {total:,}{' ' + unit if unit else ''}{share}", file=self.stream)
        self.stream.flush()
