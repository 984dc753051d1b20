"""Names a module exports but imports only when first asked for (PEP 562 `__getattr__`).

A module whose export needs a heavy package (an LLM SDK, a PDF renderer) lists it here, so
importing the module stays light and the package loads only for a caller that uses it.
"""

from __future__ import annotations

import importlib
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
