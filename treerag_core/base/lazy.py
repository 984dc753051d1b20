"""Work left for first use: exports imported when first asked for, loaders run once.

A module whose export needs a heavy package (an LLM SDK, a PDF renderer) lists it with
`lazy_exports`, so importing the module stays light and the package loads only for a caller
that uses it. A registry that imports its plug-ins on first use does so with `run_once`.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(module: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `module`: each name in `sources` is imported from the
    module it maps to on first use; any other name is an AttributeError, as without one."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(source), name)

    return __getattr__


def run_once(load: Callable[[], None]) -> Callable[[], None]:
    """Decorator: `load` runs on the first call only, however many threads call at once (the
    others wait for it); one that raises does not count, so the next call runs it again."""
    lock = threading.Lock()
    done = False

    @functools.wraps(load)
    def once() -> None:
        nonlocal done
        if done:
            return
        with lock:
            if not done:
                load()
                done = True

    return once
