"""Command line: `python -m treerag_core index|query|interactive|eval|qdrant-push|milvus-push`.

A veneer over the engine API: one module per command (parse, call the API, print), shared
options in `options`, progress bars in `progress`.
"""

from treerag_core.cli.main import build_parser, main
from treerag_core.cli.options import SETTING_FLAGS, settings_from_args
from treerag_core.cli.options import llm_client as _llm_client
from treerag_core.cli.query import unused_option_notes

__all__ = [
    "SETTING_FLAGS",
    "_llm_client",
    "build_parser",
    "main",
    "settings_from_args",
    "unused_option_notes",
]
