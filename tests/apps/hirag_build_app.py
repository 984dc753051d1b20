"""A small app showing the HiRAG build panel for an index folder (tests/test_ui_hirag_build.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from treerag_core.index.store import load_index  # noqa: E402
from ui.documents.hirag_build import hirag_panel  # noqa: E402

folder = Path(os.environ["HIRAG_TEST_INDEX"])
hirag_panel(load_index(folder), folder)
