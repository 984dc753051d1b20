"""TreeRAG: locate sections on a document's heading tree, retrieve inside them, answer.

The engine's public API (`treerag_core.api`, its names listed once in `api.__all__`) is
exported here: `from treerag_core import index_folder, open_index, ask`. It is loaded on
first use, so importing a submodule such as `treerag_core.base.settings` stays light.
"""

from __future__ import annotations

from importlib.util import find_spec
from types import ModuleType
from typing import Any


def _api() -> ModuleType:
    from treerag_core import api

    return api


def __getattr__(name: str) -> Any:
    # A submodule's name (`from treerag_core import cli`) must fail here without loading the
    # API, so the import system goes on to import the submodule itself.
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is None:
        api = _api()
        if name in api.__all__:
            return getattr(api, name)
    raise AttributeError(f"module 'treerag_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_api().__all__])
